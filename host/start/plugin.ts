/**
 * Start-up step: the provider. Its supervisor (exec or sidecar mode) with
 * the host's metrics and health wired to it, started and configured; then
 * the Cloud the controllers use, checked by each enabled controller's
 * preflight.
 */
import type { Cloud } from '../cloud.js';
import type { HostConfig } from '../config/config.js';
import { CONTROLLER_PREFLIGHTS } from '../controllers/registry.js';
import { HostStartError } from '../errors.js';
import type { HostHealth } from '../health.js';
import { errorMessage, type Logger } from '../log.js';
import { observePluginRpc, type HostMetrics } from '../metrics.js';
import { GrpcCloud } from '../plugin/grpc-cloud.js';
import { PluginMetrics } from '../plugin/plugin-metrics.js';
import { PluginSupervisor, type PluginMode } from '../plugin/supervisor.js';
import { HOST_VERSION } from '../version.js';
import type { GetPluginInfoResponse } from '../../proto/gen/ccm/provider/v1/identity.js';

export interface PluginStepDeps {
  cloudConfig: Buffer;
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
  /** Aborts a start still in progress (the host is stopping). */
  signal: AbortSignal;
  log: Logger;
}

/** The supervisor as configured by the flags, not started. */
export function pluginSupervisor(config: HostConfig, d: Omit<PluginStepDeps, 'signal'>): PluginSupervisor {
  const mode: PluginMode =
    config.plugin.kind === 'exec'
      ? {
          kind: 'exec',
          path: config.plugin.file,
          args: [...config.providerArgs],
          env: Object.entries(config.pluginEnv).map(([k, v]) => `${k}=${v}`),
          allow: { tcp: config.pluginAllowTcp, externalSocket: config.pluginAllowExternalSocket },
        }
      : { kind: 'socket', endpoint: config.plugin.endpoint };
  const supervisor = new PluginSupervisor({
    name: config.cloudProvider,
    mode,
    startTimeoutMs: config.pluginStartTimeoutMs,
    shutdownGraceMs: config.pluginShutdownGraceMs,
    configure: {
      cloudConfig: d.cloudConfig,
      clusterName: config.clusterName,
      clusterUid: d.clusterUid,
      hostVersion: HOST_VERSION,
      providerArgs: config.providerFlags,
      // The host's scope, so the provider's own controllers act only on what this host manages.
      nodeSelector: config.nodeSelector,
      watchNamespace: config.watchNamespace,
      controllersLeaseMs: d.controllersLeaseMs,
    },
    log: d.log,
    pluginLogLevel: config.verbosity >= 4 ? 'trace' : config.verbosity >= 1 ? 'debug' : 'info',
    observeCall: (method, code, seconds) => {
      observePluginRpc(d.metrics, { plugin: config.cloudProvider, method, code }, seconds);
      d.health.cloud.observe(method, code);
    },
    callPolicy: { caller: d.identity, refuseMutation: d.refuseMutation },
    onOutputDropped: (stream) => d.metrics.pluginOutputDropped.inc({ plugin: config.cloudProvider, stream }),
  });
  const pluginMetrics = new PluginMetrics(supervisor, d.log, config.cloudProvider);
  d.metrics.registry.append = (hostText) => pluginMetrics.textAfter(hostText);
  const labels = { plugin: config.cloudProvider };
  supervisor.on('state', (s: string) => d.metrics.pluginReady.set(labels, s === 'ready' ? 1 : 0));
  supervisor.on('restart', () => d.metrics.pluginRestarts.inc(labels));
  d.health.watchPlugin(supervisor, config.cloudProvider);
  return supervisor;
}

/**
 * Starts `supervisor` (rejects with HostStartError naming the provider) and
 * returns the Cloud over it, after each enabled controller's preflight.
 */
export async function openCloud(config: HostConfig, supervisor: PluginSupervisor, signal: AbortSignal, log: Logger): Promise<Cloud> {
  try {
    await supervisor.start(signal);
  } catch (err) {
    throw new HostStartError(`cannot start plugin for --cloud-provider=${config.cloudProvider}: ${errorMessage(err)}`);
  }
  const undeclared = undeclaredByProvider(config, supervisor.identity?.info);
  if (undeclared.length > 0) {
    throw new HostStartError(
      `${undeclared.join(', ')} ${undeclared.length > 1 ? 'are' : 'is'} not declared by the plugin for --cloud-provider=${config.cloudProvider} (${supervisor.identity?.info.name ?? '?'} ${supervisor.identity?.info.vendorVersion ?? ''}), so it would not act on ${undeclared.length > 1 ? 'them' : 'it'}: use a provider build that declares ${undeclared.length > 1 ? 'them' : 'it'} (GetPluginInfo provider_flags/provider_controllers), or remove ${undeclared.length > 1 ? 'them' : 'it'}`,
    );
  }
  const cloud = new GrpcCloud(supervisor, { readMs: config.pluginCallTimeoutMs, mutateMs: config.pluginMutationTimeoutMs });
  if (!cloud.info().hasClusterId) log.warn('the cloud provider does not tag cloud objects with the cluster name (HasClusterID=false)');
  for (const name of config.enabledControllers) {
    const preflight = CONTROLLER_PREFLIGHTS[name];
    if (preflight) (await preflight())(config, cloud);
  }
  return cloud;
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
