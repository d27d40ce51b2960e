/**
 * Start-up step: the providers. One supervisor per provider (exec or sidecar
 * mode) with the host's metrics and health wired to it, all started and
 * configured side by side; then the Cloud over each, the default provider's
 * checked by each enabled controller's preflight, gathered in the
 * ProviderRegistry (host/providers.ts).
 */
import type { CloudBudgetShare } from '../kube/cloud-budget.js';
import { BucketRateLimiter } from '../kube/ratelimiter.js';
import { tracingPluginEnv } from '../plugin/tracing.js';
import type { Cloud } from '../cloud.js';
import type { HostConfig, ProviderConfig } from '../config/config.js';
import { CONTROLLER_PREFLIGHTS } from '../controllers/registry.js';
import { HostStartError } from '../errors.js';
import type { CloudReachability, HostHealth } from '../health.js';
import { errorMessage, type Logger } from '../log.js';
import { observePluginRpc, type HostMetrics } from '../metrics.js';
import { GrpcCloud } from '../plugin/grpc-cloud.js';
import { PluginMetrics } from '../plugin/plugin-metrics.js';
import { PluginSupervisor, type PluginMode } from '../plugin/supervisor.js';
import { mergeExpositions } from '../plugin/validate-metrics.js';
import { ProviderRegistry, type Provider } from '../providers.js';
import { HOST_VERSION } from '../version.js';
import type { GetPluginInfoResponse } from '../../proto/gen/ccm/provider/v1/identity.js';

export interface PluginStepDeps {
  /** Each provider's cloud config bytes, by provider name (start/preflight.ts loadCloudConfigs). */
  cloudConfigs: ReadonlyMap<string, Buffer>;
  metrics: HostMetrics;
  health: HostHealth;
  /** The cluster UID (start/preflight.ts readClusterUid), sent in Configure and every RequestMeta. */
  clusterUid: string;
  /** Sent as the caller of every call (the leader-election identity). */
  identity: string;
  /** Asked before every mutating call; a reason refuses it (see sdk/mutations.ts). */
  refuseMutation: () => string | undefined;
  /** The lease granted to the provider's own controllers (ConfigureRequest.controllers_lease); absent without leader election. */
  controllersLeaseMs?: () => number;
  /** With --shard-index=auto and --cloud-api-qps: the share from the live shard Leases, instead of the static split. */
  cloudBudget?: CloudBudgetShare;
  log: Logger;
}

/** A provider's supervisor, not started. */
export interface Supervised {
  provider: ProviderConfig;
  supervisor: PluginSupervisor;
}

/**
 * Each provider's metric labels: `plugin` always (its name, as a one-provider
 * host has always had), and `provider` only with several, so a one-provider
 * host's series are exactly what they were.
 */
export function providerLabels(config: Pick<HostConfig, 'providers'>, name: string): { plugin: string; provider?: string } {
  return config.providers.length > 1 ? { plugin: name, provider: name } : { plugin: name };
}

/** One supervisor per configured provider, as configured, not started; the provider metrics of all of them on /metrics. */
export function pluginSupervisors(config: HostConfig, d: PluginStepDeps): Supervised[] {
  const several = config.providers.length > 1;
  const out = config.providers.map((provider) => ({ provider, supervisor: providerSupervisor(config, provider, several, d) }));
  const pluginMetrics = out.map(
    ({ provider, supervisor }) => new PluginMetrics(supervisor, d.log.child({ provider: provider.name }), providerLabels(config, provider.name)),
  );
  d.metrics.registry.append = async (hostText) => mergeExpositions(await Promise.all(pluginMetrics.map((m) => m.textAfter(hostText))));
  return out;
}

function providerSupervisor(config: HostConfig, provider: ProviderConfig, several: boolean, d: PluginStepDeps): PluginSupervisor {
  const mode: PluginMode =
    provider.plugin.kind === 'exec'
      ? {
          kind: 'exec',
          path: provider.plugin.file,
          args: [...provider.providerArgs],
          // The tracing variables first: the operator's --plugin-env wins.
          env: [...tracingPluginEnv(provider.name), ...Object.entries(provider.pluginEnv).map(([k, v]) => `${k}=${v}`)],
          allow: { tcp: config.pluginAllowTcp, externalSocket: config.pluginAllowExternalSocket },
        }
      : { kind: 'socket', endpoint: provider.plugin.endpoint };
  const labels = providerLabels(config, provider.name);
  const log = several ? d.log.child({ provider: provider.name }) : d.log;
  // Set once the supervisor exists (its readiness checks need it); calls come only after start.
  const cloudCalls: { reachability?: CloudReachability } = {};
  const supervisor = new PluginSupervisor({
    name: provider.name,
    mode,
    startTimeoutMs: config.pluginStartTimeoutMs,
    shutdownGraceMs: config.pluginShutdownGraceMs,
    configure: {
      cloudConfig: d.cloudConfigs.get(provider.name) ?? Buffer.alloc(0),
      clusterName: config.clusterName,
      clusterUid: d.clusterUid,
      hostVersion: HOST_VERSION,
      providerArgs: provider.providerFlags,
      // The host's scope, so the provider's own controllers act only on what this host manages.
      nodeSelector: config.nodeSelector,
      watchNamespace: config.watchNamespace,
      controllersLeaseMs: d.controllersLeaseMs,
    },
    log,
    pluginLogLevel: config.verbosity >= 4 ? 'trace' : config.verbosity >= 1 ? 'debug' : 'info',
    observeCall: (method, code, seconds) => {
      observePluginRpc(d.metrics, { ...labels, method, code }, seconds);
      cloudCalls.reachability?.observe(method, code);
    },
    callPolicy: {
      caller: d.identity,
      refuseMutation: d.refuseMutation,
      // --cloud-api-qps: this replica's share of the cloud-call budget, from the live shard Leases
      // (kube/cloud-budget.ts) or statically (config.ts divided it by --shard-count).
      budget: d.cloudBudget?.limiter() ?? (config.cloudApi.qps > 0 ? new BucketRateLimiter(config.cloudApi.qps, config.cloudApi.burst) : undefined),
    },
    onOutputDropped: (stream) => d.metrics.pluginOutputDropped.inc({ ...labels, stream }),
  });
  supervisor.on('state', (s: string) => d.metrics.pluginReady.set(labels, s === 'ready' ? 1 : 0));
  supervisor.on('restart', () => d.metrics.pluginRestarts.inc(labels));
  cloudCalls.reachability = d.health.watchPlugin(supervisor, provider.name, several);
  return supervisor;
}

/**
 * Starts every provider side by side (rejects with HostStartError naming the
 * first that failed, as soon as one fails) and returns the registry of
 * their Clouds, after each enabled controller's preflight on the default
 * provider's Cloud and the registry.
 */
export async function openProviders(
  config: HostConfig,
  supervised: readonly Supervised[],
  signal: AbortSignal,
  log: Logger,
): Promise<ProviderRegistry> {
  const several = supervised.length > 1;
  const what = (p: ProviderConfig) => (several ? `provider ${p.name} of --providers-config` : `--cloud-provider=${p.name}`);
  // The first failure ends the start at once and is the one reported: the host's stop (app.ts) then stops
  // every supervisor, ending the others' starts (a sidecar's would otherwise redial until it answers).
  const abort = new AbortController();
  const onAbort = () => abort.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  let first: { provider: ProviderConfig; err: unknown } | undefined;
  await new Promise<void>((resolve) => {
    let left = supervised.length;
    for (const { provider, supervisor } of supervised) {
      supervisor.start(abort.signal).then(
        () => {
          if (--left === 0) resolve();
        },
        (err: unknown) => {
          first ??= { provider, err };
          abort.abort();
          resolve();
        },
      );
    }
  }).finally(() => signal.removeEventListener('abort', onAbort));
  if (first) throw new HostStartError(`cannot start plugin for ${what(first.provider)}: ${errorMessage(first.err)}`);
  const providers: Provider[] = [];
  for (const { provider, supervisor } of supervised) {
    const undeclared = undeclaredByProvider(
      { providerFlags: provider.providerFlags, providerControllers: provider.controllers },
      supervisor.identity?.info,
    );
    if (undeclared.length > 0) {
      throw new HostStartError(
        `${undeclared.join(', ')} ${undeclared.length > 1 ? 'are' : 'is'} not declared by the plugin for ${what(provider)} (${supervisor.identity?.info.name ?? '?'} ${supervisor.identity?.info.vendorVersion ?? ''}), so it would not act on ${undeclared.length > 1 ? 'them' : 'it'}: use a provider build that declares ${undeclared.length > 1 ? 'them' : 'it'} (GetPluginInfo provider_flags/provider_controllers), or remove ${undeclared.length > 1 ? 'them' : 'it'}`,
      );
    }
    const cloud: Cloud = new GrpcCloud(supervisor, { readMs: config.pluginCallTimeoutMs, mutateMs: config.pluginMutationTimeoutMs });
    if (!cloud.info().hasClusterId) {
      log.warn({ provider: provider.name }, 'the cloud provider does not tag cloud objects with the cluster name (HasClusterID=false)');
    }
    providers.push({
      name: provider.name,
      isDefault: provider.default,
      config: provider,
      supervisor,
      cloud,
      capabilities: () => supervisor.identity!.capabilities,
      info: () => supervisor.identity!.info,
    });
  }
  const registry = new ProviderRegistry(providers);
  for (const name of config.enabledControllers) {
    const preflight = CONTROLLER_PREFLIGHTS[name];
    if (preflight) (await preflight())(config, registry);
  }
  return registry;
}

/**
 * The provider's own flags and controllers of the command line
 * (config.providerFlags, providerControllers) that the running plugin does
 * not declare in GetPluginInfo: as `--tags` and `--controllers=tagging`.
 */
export function undeclaredByProvider(
  config: Pick<HostConfig, 'providerFlags' | 'providerControllers'>,
  info: Pick<GetPluginInfoResponse, 'providerFlags' | 'providerControllers'> | undefined,
): string[] {
  const flags = new Set(info?.providerFlags ?? []);
  const controllers = new Set(info?.providerControllers ?? []);
  return [
    ...config.providerFlags.map((w) => w.split('=')[0]!).filter((f) => !flags.has(f.replace(/^-+/, ''))),
    ...config.providerControllers.filter((c) => !controllers.has(c)).map((c) => `--controllers=${c}`),
  ];
}
