/**
 * Step 3 of the options pipeline: `compileHostConfig()` parses and validates
 * `HostOptions` (with defaults) into the frozen `HostConfig` the rest of the
 * host reads. Durations become `...Ms` numbers, relative paths become
 * absolute, and every problem is reported at once.
 */
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import type { LogFormat } from '../log.js';
import { shardLeaseName, type ControllerName } from '../names.js';
import { controllerSpecErrors, resolveEnabledControllers } from './controllers.js';
import { nodeCidrMaskSizes as nodeCidrMaskSizes_ } from './node-cidr.js';
import { addDefaults, type DefaultedKey, type HostOptions, type HostOptionsWithDefaults } from './options.js';
import { resolvePluginSource, type PluginSource } from './plugin.js';
import { readProvidersFile, resolvePluginEnv, SINGLE_PROVIDER_FLAGS, type ProviderConfig } from './providers.js';
import { isAbsent, Problems } from './validate.js';
import { parseGoBool } from './values.js';
import { JITTER_FACTOR } from '../kube/leader-election.js';
import { compileVolumeConfig, type VolumeConfig } from './volumes.js';
import { compileServingConfig, type ServingConfig } from './serving.js';
import { parseDeletionLimit, type DeletionLimit } from '../controllers/lifecycle/deletion-brake.js';
import { parseLabelSelector } from '../ownership/selector.js';
import { prefixProblem } from '../ownership/nodes.js';

export { resolveEnabledControllers } from './controllers.js';
export type { PluginSource } from './plugin.js';
export type { ProviderConfig } from './providers.js';

export type { ServingConfig, TlsFiles } from './serving.js';

/** The validated, frozen host configuration. One field per flag unless noted. */
export interface HostConfig {
  /** `--cloud-provider`: the provider's name, e.g. `local`; with --providers-config, the default provider's name. */
  readonly cloudProvider: string;
  /**
   * Every provider the host runs, in order; exactly one is `default` (the
   * one the host's controllers use today). One entry built from the flags
   * above, or the --providers-config file's. With the file, cloudProvider,
   * cloudConfigPath, cloudConfigOptional, plugin, pluginEnv and providerArgs
   * are the default provider's.
   */
  readonly providers: readonly ProviderConfig[];
  /** `--providers-config`: absolute path of the providers file, or undefined (one provider, from the flags). */
  readonly providersConfigPath: string | undefined;
  /** `--cloud-config`: absolute path of a readable file (or, with cloudConfigOptional, of none), passed to the plugin's Configure. */
  readonly cloudConfigPath: string | undefined;
  /** `--cloud-config-optional`: a cloudConfigPath that does not exist means an empty cloud config. */
  readonly cloudConfigOptional: boolean;
  /** From `--plugin-path` / `--plugin-endpoint` / the built-in local plugin. */
  readonly plugin: PluginSource;
  readonly pluginStartTimeoutMs: number;
  readonly pluginShutdownGraceMs: number;
  /** `--plugin-call-timeout`: deadline of read-only plugin calls. */
  readonly pluginCallTimeoutMs: number;
  /** `--plugin-mutation-timeout`: deadline of plugin calls that change the cloud. */
  readonly pluginMutationTimeoutMs: number;
  /** `--plugin-allow-tcp`: a spawned plugin may hand shake on a TCP loopback address (default: Unix sockets only). */
  readonly pluginAllowTcp: boolean;
  /** `--plugin-allow-external-socket`: a spawned plugin may listen outside its private directory. */
  readonly pluginAllowExternalSocket: boolean;
  /**
   * `--plugin-env`, resolved: the only host variables the plugin inherits
   * (besides the protocol's CCM_PLUGIN_*). `NAME` entries take the host's
   * value and are left out when the host has none (see `warnings`).
   */
  readonly pluginEnv: Readonly<Record<string, string>>;
  /**
   * `--provider-arg`: words appended, in order, to the spawned plugin's
   * command line, for a provider's own flags (empty with --plugin-endpoint,
   * where the provider container has its own args).
   */
  readonly providerArgs: readonly string[];
  /**
   * Flags of the provider's own (host/config/provider-owned.ts, an entry
   * declaredBy this --cloud-provider) found on the host's command line, each
   * word as written: sent in ConfigureRequest.provider_args.
   */
  readonly providerFlags: readonly string[];
  /** The provider's own controllers enabled by --controllers: sent in ConfigureRequest.controllers while leading. */
  readonly providerControllers: readonly string[];
  /** `--kubeconfig`: absolute path of a readable file. */
  readonly kubeconfig: string | undefined;
  readonly master: string | undefined;
  readonly clusterName: string;
  /** True when `--cluster-name` was not given: main warns, since LB names derive from it. */
  readonly clusterNameDefaulted: boolean;
  /** `--cluster-uid`: overrides the cluster UID read at start (the kube-system Namespace's uid); '' = read it. */
  readonly clusterUid: string;
  /** `--controllers` as given (split on commas). */
  readonly controllers: readonly string[];
  /** What `controllers` enables, canonical names in start order. */
  readonly enabledControllers: readonly ControllerName[];
  readonly concurrentNodeSyncs: number;
  /** `--concurrent-node-status-updates`, with 0 already replaced by concurrentNodeSyncs. */
  readonly concurrentNodeStatusUpdates: number;
  readonly nodeStatusUpdateFrequencyMs: number;
  readonly nodeMonitorPeriodMs: number;
  readonly kubeApiQps: number;
  readonly kubeApiBurst: number;
  readonly bindAddress: string;
  /** `--secure-port`; 0 means no health/metrics server. */
  readonly securePort: number;
  /** TLS, delegated authentication and authorization of the `--secure-port` server (and the webhook's authentication). */
  readonly serving: ServingConfig;
  /** `--leader-elect`. */
  readonly leaderElect: boolean;
  /** The `--leader-elect-*` settings (validated only when leaderElect is true). */
  readonly leaderElection: LeaderElectionSettings;
  /**
   * `--use-service-account-credentials`: each controller's API clients (and
   * its Events) authenticate as its ServiceAccount (upstream's names,
   * names.ts ControllerServiceAccounts) with a token the host requests (host/kube/service-account-credentials.ts).
   */
  readonly useServiceAccountCredentials: boolean;
  /** `-v`. */
  readonly verbosity: number;
  readonly loggingFormat: LogFormat;
  readonly minResyncPeriodMs: number;
  readonly configureCloudRoutes: boolean;
  /** `--cluster-cidr` split on commas: empty, one CIDR, or an IPv4 + IPv6 pair. */
  readonly clusterCidrs: readonly string[];
  readonly allocateNodeCidrs: boolean;
  readonly cidrAllocatorType: string;
  /** Node pod CIDR mask size per entry of clusterCidrs (resolved; empty unless allocateNodeCidrs). */
  readonly nodeCidrMaskSizes: readonly number[];
  readonly routeReconciliationPeriodMs: number;
  readonly concurrentServiceSyncs: number;
  /** `--lb-resync-period`: every LoadBalancer Service is re-ensured this often; 0 = never (upstream). */
  readonly lbResyncPeriodMs: number;
  /** `--lb-orphan-sweep-period`, `--lb-orphan-grace-period`, `--lb-orphan-sweep-dry-run`, `--lb-orphan-sweep-limit` (orphan-sweep.ts); period 0 = off. */
  readonly lbOrphanSweep: { readonly periodMs: number; readonly graceMs: number; readonly dryRun: boolean; readonly limit: number };
  /** `--service-validation-failure-policy`: the Service validation webhook's answer when a provider is not ready (service/admission.ts). */
  readonly serviceValidationFailurePolicy: 'Ignore' | 'Fail';
  readonly nodeDeletionGracePeriodMs: number;
  /** `--node-deletion-limit`: the lifecycle controller's mass-deletion brake; null = off. */
  readonly nodeDeletionLimit: DeletionLimit | null;
  readonly nodeDeletionLimitWindowMs: number;
  /**
   * `--shard-count` / `--shard-index` (alpha, docs/design/sharding.md): this
   * replica serves the Nodes and Services whose uid hashes to `index`; count 1
   * = no sharding. With count > 1 the leader-election Lease is the shard's
   * and only shard 0 runs the cluster-wide controllers. Static index:
   * `leaderElection.resourceName` already carries the `-shard-<index>`
   * suffix. `fromLeases` (--shard-index=auto with count > 1): the shard is
   * the first whose Lease this replica wins; until then `index` is -1 (a
   * view of shard -1 holds nothing, and -1 is not shard 0), and the config
   * a term runs with is {@link configForShard}'s.
   */
  readonly shard: ShardSettings;
  /**
   * `--cloud-api-qps` / `--cloud-api-burst` (alpha): the cloud-call budget
   * toward each provider, already divided by the shard count (this replica's
   * static share); qps 0 = no limit.
   */
  readonly cloudApi: { readonly qps: number; readonly burst: number };
  /**
   * The same flags as given: the budget of all shards together. With
   * `shard.fromLeases` and qps > 0 each replica's share follows the live
   * shard Leases instead of {@link cloudApi} (kube/budget-share.ts).
   */
  readonly cloudApiBudget: { readonly qps: number; readonly burst: number };
  /** `--node-selector`: label selector for the Nodes informer; '' = all nodes. */
  readonly nodeSelector: string;
  /**
   * `--node-ownership-prefixes` / `--node-ownership-selector`: the operator's
   * override of the provider's node ownership declarations
   * (host/ownership/nodes.ts); undefined = the provider's own.
   */
  readonly nodeOwnership: { readonly prefixes?: readonly string[]; readonly selector?: string };
  /** `--watch-namespace`: namespace for namespaced informers; '' = all namespaces. */
  readonly watchNamespace: string;
  /** Volume controllers and PV label webhook (volumes.ts). */
  readonly volumes: VolumeConfig;
  /** Accepted but questionable settings, one line each, for main to log (cluster-name excluded: see clusterNameDefaulted). */
  readonly warnings: readonly string[];
  /**
   * Every flag's effective value as /flagz shows it (pflag's text: lists as
   * `[a,b]`, secrets as CLASSIFIED); set by parseHostArgs, absent in configs
   * built another way (then /flagz lists nothing).
   */
  readonly flagz?: Readonly<Record<string, string>>;
}

/** `--shard-count` / `--shard-index`, parsed (HostConfig.shard). */
export interface ShardSettings {
  readonly count: number;
  /** The shard served; -1 with `fromLeases` until a shard Lease is won. */
  readonly index: number;
  /** --shard-index=auto with --shard-count > 1: membership from the shard Leases (kube/shard-election.ts). */
  readonly fromLeases: boolean;
}

/**
 * The config of a term serving `index` won by Lease (--shard-index=auto):
 * the shard's index, and its Lease as `leaderElection.resourceName` (the
 * deletion brake keys its record by it, as with a static index). Only for a
 * `fromLeases` config, whose resourceName is still the base name.
 */
export function configForShard(config: HostConfig, index: number): HostConfig {
  if (!config.shard.fromLeases) throw new Error('configForShard: the shard is static (--shard-index)');
  return {
    ...config,
    shard: { ...config.shard, index },
    leaderElection: { ...config.leaderElection, resourceName: shardLeaseName(config.leaderElection.resourceName, index) },
  };
}

/** `--leader-elect-*`, parsed. */
export interface LeaderElectionSettings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** Always `leases`: the only lock type (as upstream controller managers today). */
  readonly resourceLock: 'leases';
  /**
   * The Lease: `--leader-elect-resource-name`, with `-shard-<index>` for a
   * static --shard-index with --shard-count > 1. With --shard-index=auto the
   * name itself, the base of every shard Lease's name (names.ts shardLeaseName).
   */
  readonly resourceName: string;
  readonly resourceNamespace: string;
  /**
   * `--plugin-unready-lease-release-timeout` (not in upstream): a leader whose
   * plugin stays unready this long releases the Lease, and a replica with an
   * unready plugin does not campaign (kube/plugin-lease-guard.ts); 0 disables both.
   */
  readonly pluginUnreadyReleaseMs: number;
}

/** Dependencies of compileHostConfig that tests replace. */
export interface CompileOptions {
  /** Environment `--plugin-env NAME` entries read from. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Built-in local plugin file. Default BUILTIN_LOCAL_PLUGIN_PATH. */
  localPluginPath?: string;
}

/** Result of compiling: a config, or every problem found. */
export type CompileResult = { config: HostConfig } | { errors: string[] };

/** A DNS label: what `ccm-provider-<name>` and providerID schemes can hold. */
const PROVIDER_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const POSITIVE_INT = { min: 1, want: 'an integer greater than 0' };
const NON_NEGATIVE_INT = { min: 0, want: 'an integer of 0 or more' };

/** Parses and validates `opts` (defaults are added here). Returns every problem at once. */
export function compileHostConfig(opts: HostOptions, deps: CompileOptions = {}): CompileResult {
  const o = addDefaults(opts);
  const p = new Problems();
  const warnings: string[] = [];
  const provider = providerSection(o, p, deps, warnings);
  const config: HostConfig = {
    ...provider,
    plugin: provider.plugin!,
    ...apiSection(o, p),
    ...controllerSection(o, p, warnings),
    ...nodeSection(o, p),
    ...servingSection(o, p),
    ...routeSection(o, p),
    ...serviceSection(o, p),
    ...lifecycleSection(o, p),
    // An invalid --leader-elect is reported by servingSection; only a valid false makes auto membership a problem.
    ...shardSection(o, p, parseGoBool(o.leaderElect) !== false),
    nodeOwnership: nodeOwnershipOverride(o, p),
    volumes: compileVolumeConfig(o, p),
    warnings: Object.freeze(warnings),
  };
  if (p.errors.length > 0 || provider.plugin === undefined) return { errors: p.errors };
  return { config: deepFreeze(config) };
}

type Section<K extends keyof HostConfig> = Pick<HostConfig, K>;

/** The provider: its name, --cloud-config, where the plugin comes from, its environment and call bounds. */
function providerSection(o: HostOptionsWithDefaults, p: Problems, deps: CompileOptions, warnings: string[]) {
  const bounds = {
    pluginStartTimeoutMs: p.duration('plugin-start-timeout', o.pluginStartTimeout, { positive: true }),
    pluginShutdownGraceMs: p.duration('plugin-shutdown-grace', o.pluginShutdownGrace),
    pluginCallTimeoutMs: p.duration('plugin-call-timeout', o.pluginCallTimeout, { positive: true }),
    pluginMutationTimeoutMs: p.duration('plugin-mutation-timeout', o.pluginMutationTimeout, { positive: true }),
    pluginAllowTcp: p.bool('plugin-allow-tcp', o.pluginAllowTcp),
    pluginAllowExternalSocket: p.bool('plugin-allow-external-socket', o.pluginAllowExternalSocket),
    // Set by parseHostArgs from the command line's provider-owned words.
    providerFlags: [] as readonly string[],
    providerControllers: [] as readonly string[],
  };
  if (o.providersConfig !== undefined) return { ...bounds, ...providersFromFile(o, o.providersConfig, p, deps, warnings) };
  const cloudProvider = checkCloudProvider(o.cloudProvider, p);
  const cloudConfigOptional = p.bool('cloud-config-optional', o.cloudConfigOptional);
  if (o.cloudConfig === undefined) {
    if (cloudConfigOptional)
      p.add('--cloud-config-optional=true needs --cloud-config: pass the path of the file that may be absent, or leave --cloud-config-optional out');
  } else if (!(cloudConfigOptional && isAbsent(o.cloudConfig))) {
    p.readableFile('cloud-config', o.cloudConfig);
  }
  const single = {
    cloudProvider: cloudProvider ?? '',
    cloudConfigPath: o.cloudConfig === undefined ? undefined : path.resolve(o.cloudConfig),
    cloudConfigOptional,
    plugin: resolvePluginSource(
      { cloudProvider, pluginPath: o.pluginPath, pluginEndpoint: o.pluginEndpoint, localPluginPath: deps.localPluginPath },
      p,
    ),
    pluginEnv: resolvePluginEnv(o.pluginEnv, deps.env ?? process.env, p, warnings),
    providerArgs: checkProviderArgs(o.providerArgs, o.pluginEndpoint, p),
  };
  const { cloudProvider: name, plugin, ...rest } = single;
  const providers: ProviderConfig[] = plugin ? [{ name, plugin, ...rest, default: true, providerFlags: [], controllers: [], routes: false }] : [];
  return { ...bounds, ...single, providers, providersConfigPath: undefined };
}

/** --providers-config: the file's providers; the single-provider fields are the default provider's. */
function providersFromFile(o: HostOptionsWithDefaults, file: string, p: Problems, deps: CompileOptions, warnings: string[]) {
  const given = SINGLE_PROVIDER_FLAGS.filter((f) => {
    const key = camel(f);
    const v = o[key] as unknown;
    return v !== undefined && !o.defaulted.has(key as DefaultedKey) && !(Array.isArray(v) && v.length === 0);
  });
  if (given.length > 0) {
    p.add(
      `--providers-config conflicts with ${given.map((f) => `--${f}`).join(', ')}: with a providers file, set each provider's name, plugin, environment and cloud config in the file (docs/flags.md, "Several providers")`,
    );
  }
  const providers = readProvidersFile(path.resolve(file), p, warnings, { env: deps.env ?? process.env, localPluginPath: deps.localPluginPath }) ?? [];
  const overrides = (['node-ownership-prefixes', 'node-ownership-selector'] as const).filter((f) => o[camel(f)] !== undefined);
  if (providers.length > 1 && overrides.length > 0) {
    p.add(
      `${overrides.map((f) => `--${f}`).join(' and ')} ${overrides.length > 1 ? 'replace' : 'replaces'} one provider's node ownership declarations, and --providers-config has ${providers.length}: each provider declares its own (e.g. the local cloud's LOCALCLOUD_NODE_SELECTOR in its pluginEnv; docs/flags.md, "Several providers")`,
    );
  }
  const d = providers.find((x) => x.default);
  return {
    cloudProvider: d?.name ?? '',
    cloudConfigPath: d?.cloudConfigPath,
    cloudConfigOptional: d?.cloudConfigOptional ?? false,
    plugin: d?.plugin,
    pluginEnv: d?.pluginEnv ?? {},
    providerArgs: d?.providerArgs ?? [],
    providers,
    providersConfigPath: path.resolve(file),
  };
}

/** `plugin-env` → `pluginEnv`. */
function camel(flag: string): keyof HostOptionsWithDefaults {
  return flag.replace(/-(.)/g, (_, c: string) => c.toUpperCase()) as keyof HostOptionsWithDefaults;
}

/** The API server, its client limits and the cluster's name. */
function apiSection(
  o: HostOptionsWithDefaults,
  p: Problems,
): Section<
  | 'kubeconfig'
  | 'master'
  | 'clusterName'
  | 'clusterNameDefaulted'
  | 'clusterUid'
  | 'kubeApiQps'
  | 'kubeApiBurst'
  | 'useServiceAccountCredentials'
  | 'minResyncPeriodMs'
> {
  if (o.kubeconfig !== undefined) p.readableFile('kubeconfig', o.kubeconfig);
  if (o.clusterName === '') p.add('--cluster-name must not be empty: pass a name unique among clusters sharing the cloud account');
  const kubeApiQps = p.float('kube-api-qps', o.kubeApiQps, { above: 0, want: 'a number greater than 0, e.g. 20' });
  const kubeApiBurst = p.int('kube-api-burst', o.kubeApiBurst, POSITIVE_INT);
  if (kubeApiBurst < kubeApiQps) {
    p.add(`--kube-api-burst=${o.kubeApiBurst} is smaller than --kube-api-qps=${o.kubeApiQps}: raise --kube-api-burst to at least the QPS`);
  }
  return {
    kubeconfig: o.kubeconfig === undefined ? undefined : path.resolve(o.kubeconfig),
    master: o.master,
    clusterName: o.clusterName,
    clusterNameDefaulted: o.defaulted.has('clusterName'),
    clusterUid: checkClusterUid(o.clusterUid, p),
    kubeApiQps,
    kubeApiBurst,
    useServiceAccountCredentials: p.bool('use-service-account-credentials', o.useServiceAccountCredentials),
    minResyncPeriodMs: p.duration('min-resync-period', o.minResyncPeriod, { positive: true }),
  };
}

/** --controllers, and what it enables. */
function controllerSection(o: HostOptionsWithDefaults, p: Problems, warnings: string[]): Section<'controllers' | 'enabledControllers'> {
  const errors = controllerSpecErrors(o.controllers);
  errors.forEach((e) => p.add(e));
  const enabled = errors.length === 0 ? resolveEnabledControllers([...o.controllers]) : new Set<ControllerName>();
  if (errors.length === 0 && enabled.size === 0) {
    warnings.push(`--controllers=${o.controllers.join(',')} enables no controller: the host will only serve /healthz and /metrics`);
  }
  return { controllers: Object.freeze([...o.controllers]), enabledControllers: Object.freeze([...(enabled as Set<ControllerName>)]) };
}

/** The cloud node controller's workers and address refresh, and the lifecycle controller's period. */
function nodeSection(
  o: HostOptionsWithDefaults,
  p: Problems,
): Section<'concurrentNodeSyncs' | 'concurrentNodeStatusUpdates' | 'nodeStatusUpdateFrequencyMs' | 'nodeMonitorPeriodMs'> {
  const concurrentNodeSyncs = p.int('concurrent-node-syncs', o.concurrentNodeSyncs, POSITIVE_INT);
  const statusUpdates = p.int('concurrent-node-status-updates', o.concurrentNodeStatusUpdates, {
    min: 0,
    want: 'an integer of 0 or more (0 means the same as --concurrent-node-syncs)',
  });
  return {
    concurrentNodeSyncs,
    concurrentNodeStatusUpdates: statusUpdates === 0 ? concurrentNodeSyncs : statusUpdates,
    nodeStatusUpdateFrequencyMs: p.duration('node-status-update-frequency', o.nodeStatusUpdateFrequency, { positive: true }),
    nodeMonitorPeriodMs: p.duration('node-monitor-period', o.nodeMonitorPeriod, { positive: true }),
  };
}

/** The secure serving endpoint, leader election and logging. */
function servingSection(
  o: HostOptionsWithDefaults,
  p: Problems,
): Section<'bindAddress' | 'securePort' | 'serving' | 'leaderElect' | 'leaderElection' | 'verbosity' | 'loggingFormat'> {
  checkIp('bind-address', o.bindAddress, p);
  checkIp('webhook-bind-address', o.webhookBindAddress, p);
  const leaderElect = p.bool('leader-elect', o.leaderElect);
  return {
    bindAddress: o.bindAddress,
    securePort: p.int('secure-port', o.securePort, { min: 0, max: 65535, want: 'a port from 1 to 65535, or 0 to disable the server' }),
    serving: compileServingConfig(o, p),
    leaderElect,
    leaderElection: checkLeaderElection(o, leaderElect, p),
    verbosity: p.int('v', o.verbosity, NON_NEGATIVE_INT),
    loggingFormat: p.oneOf<LogFormat>('logging-format', o.loggingFormat, ['json', 'text']),
  };
}

/** The pod network: cloud routes and node IPAM. */
function routeSection(
  o: HostOptionsWithDefaults,
  p: Problems,
): Section<
  'configureCloudRoutes' | 'clusterCidrs' | 'allocateNodeCidrs' | 'cidrAllocatorType' | 'nodeCidrMaskSizes' | 'routeReconciliationPeriodMs'
> {
  const clusterCidrs = checkClusterCidrs(o.clusterCidr, p);
  const allocateNodeCidrs = p.bool('allocate-node-cidrs', o.allocateNodeCidrs);
  if (o.cidrAllocatorType === '') p.add('--cidr-allocator-type must not be empty: leave it out to use RangeAllocator');
  else if (allocateNodeCidrs && o.cidrAllocatorType !== 'RangeAllocator') {
    // Provider-owned allocators (CloudAllocator, ...) were already reported and dropped by flags.ts.
    p.add(`--cidr-allocator-type=${JSON.stringify(o.cidrAllocatorType)} is not supported by this build: use RangeAllocator`);
  }
  const maskFlags = {
    size: p.int('node-cidr-mask-size', o.nodeCidrMaskSize, { min: 0, max: 128, want: 'an integer from 0 (unset) to 128' }),
    ipv4: p.int('node-cidr-mask-size-ipv4', o.nodeCidrMaskSizeIpv4, { min: 0, max: 32, want: 'an integer from 0 (unset) to 32' }),
    ipv6: p.int('node-cidr-mask-size-ipv6', o.nodeCidrMaskSizeIpv6, { min: 0, max: 128, want: 'an integer from 0 (unset) to 128' }),
  };
  return {
    configureCloudRoutes: p.bool('configure-cloud-routes', o.configureCloudRoutes),
    clusterCidrs,
    allocateNodeCidrs,
    cidrAllocatorType: o.cidrAllocatorType,
    nodeCidrMaskSizes: allocateNodeCidrs ? nodeCidrMaskSizes_(clusterCidrs, maskFlags, p) : [],
    routeReconciliationPeriodMs: p.duration('route-reconciliation-period', o.routeReconciliationPeriod, { positive: true }),
  };
}

/** The service controller: workers, resync, the orphan sweep, and which Services and Nodes it watches. */
function serviceSection(
  o: HostOptionsWithDefaults,
  p: Problems,
): Section<'concurrentServiceSyncs' | 'lbResyncPeriodMs' | 'lbOrphanSweep' | 'serviceValidationFailurePolicy' | 'nodeSelector' | 'watchNamespace'> {
  return {
    concurrentServiceSyncs: p.int('concurrent-service-syncs', o.concurrentServiceSyncs, POSITIVE_INT),
    lbResyncPeriodMs: p.duration('lb-resync-period', o.lbResyncPeriod),
    lbOrphanSweep: {
      periodMs: p.duration('lb-orphan-sweep-period', o.lbOrphanSweepPeriod),
      graceMs: p.duration('lb-orphan-grace-period', o.lbOrphanGracePeriod),
      dryRun: p.bool('lb-orphan-sweep-dry-run', o.lbOrphanSweepDryRun),
      limit: p.int('lb-orphan-sweep-limit', o.lbOrphanSweepLimit, POSITIVE_INT),
    },
    serviceValidationFailurePolicy: p.oneOf<'Ignore' | 'Fail'>('service-validation-failure-policy', o.serviceValidationFailurePolicy, [
      'Ignore',
      'Fail',
    ]),
    nodeSelector: checkLabelSelector(o.nodeSelector, p),
    watchNamespace: checkNamespace(o.watchNamespace, p),
  };
}

/**
 * Alpha sharding and the cloud-call budget. The static split: each of
 * `count` replicas takes qps/count and burst/count (at least 1), so all
 * shards together stay within what the operator gave, without talking to
 * each other (docs/design/sharding.md says why this split and not a shared
 * holder). With membership from the Leases the split follows the live shards
 * instead (kube/budget-share.ts), from the whole budget.
 */
function shardSection(o: HostOptionsWithDefaults, p: Problems, leaderElect: boolean): Section<'shard' | 'cloudApi' | 'cloudApiBudget'> {
  const count = p.int('shard-count', o.shardCount, POSITIVE_INT);
  const auto = o.shardIndex === SHARD_INDEX_AUTO;
  const index = auto ? (count > 1 ? -1 : 0) : p.int('shard-index', o.shardIndex, { min: 0, want: `${SHARD_INDEX_AUTO} or an integer of 0 or more` });
  if (index >= count) p.add(`--shard-index=${o.shardIndex} is out of range: want 0 to --shard-count - 1 (${o.shardCount} shards)`);
  const fromLeases = auto && count > 1;
  if (fromLeases && !leaderElect) {
    p.add(
      `--shard-count=${o.shardCount} with --shard-index=${SHARD_INDEX_AUTO} (the default) needs --leader-elect=true: the shard is the first whose Lease this replica wins; without leader election pass --shard-index=0 to ${count - 1}`,
    );
  }
  const qps = p.float('cloud-api-qps', o.cloudApiQps, { min: 0, want: 'a number of 0 (no limit) or more, e.g. 10' });
  const burst = p.int('cloud-api-burst', o.cloudApiBurst, POSITIVE_INT);
  const shards = count >= 1 ? count : 1;
  return {
    shard: { count, index, fromLeases },
    cloudApi: { qps: qps / shards, burst: Math.max(1, Math.floor(burst / shards)) },
    cloudApiBudget: { qps, burst },
  };
}

/** The node lifecycle controller's deletion grace and brake. */
function lifecycleSection(
  o: HostOptionsWithDefaults,
  p: Problems,
): Section<'nodeDeletionGracePeriodMs' | 'nodeDeletionLimit' | 'nodeDeletionLimitWindowMs'> {
  return {
    nodeDeletionGracePeriodMs: p.duration('node-deletion-grace-period', o.nodeDeletionGracePeriod),
    nodeDeletionLimit: deletionLimit(o.nodeDeletionLimit, p),
    nodeDeletionLimitWindowMs: p.duration('node-deletion-limit-window', o.nodeDeletionLimitWindow, { positive: true }),
  };
}

/**
 * client-go's validation (tools/leaderelection NewLeaderElector), checked only
 * with --leader-elect=true as upstream: all durations > 0, lease duration >
 * renew deadline > retry period × JITTER_FACTOR.
 */
function checkLeaderElection(o: HostOptionsWithDefaults, enabled: boolean, p: Problems): LeaderElectionSettings {
  const q = enabled ? p : new Problems();
  const lease = q.duration('leader-elect-lease-duration', o.leaderElectLeaseDuration, { positive: true });
  const renew = q.duration('leader-elect-renew-deadline', o.leaderElectRenewDeadline, { positive: true });
  const retry = q.duration('leader-elect-retry-period', o.leaderElectRetryPeriod, { positive: true });
  if (!(lease > renew) && !Number.isNaN(lease) && !Number.isNaN(renew)) {
    q.add(
      `--leader-elect-lease-duration=${o.leaderElectLeaseDuration} must be greater than --leader-elect-renew-deadline=${o.leaderElectRenewDeadline}: a leader must give up before others may take over`,
    );
  }
  if (!(renew > retry * JITTER_FACTOR) && !Number.isNaN(renew) && !Number.isNaN(retry)) {
    q.add(
      `--leader-elect-renew-deadline=${o.leaderElectRenewDeadline} must be greater than ${JITTER_FACTOR} × --leader-elect-retry-period=${o.leaderElectRetryPeriod}: the leader needs room for at least one jittered retry`,
    );
  }
  if (o.leaderElectResourceLock !== 'leases') {
    // Upstream (client-go v0.34 resourcelock.New) refuses the others too: endpoints, configmaps and their *leases pairs were removed.
    q.add(
      `--leader-elect-resource-lock=${JSON.stringify(o.leaderElectResourceLock)} is not supported (upstream removed every lock but leases): use leases (coordination.k8s.io/v1 Lease)`,
    );
  }
  if (!DNS_SUBDOMAIN.test(o.leaderElectResourceName)) {
    q.add(
      `--leader-elect-resource-name=${JSON.stringify(o.leaderElectResourceName)} is invalid: want a Lease name (lowercase DNS subdomain), e.g. cloud-controller-manager`,
    );
  }
  if (!DNS_LABEL.test(o.leaderElectResourceNamespace)) {
    q.add(
      `--leader-elect-resource-namespace=${JSON.stringify(o.leaderElectResourceNamespace)} is invalid: want a namespace name (a DNS label), e.g. kube-system`,
    );
  }
  return {
    leaseDurationMs: lease,
    renewDeadlineMs: renew,
    retryPeriodMs: retry,
    resourceLock: 'leases',
    // Alpha sharding: each shard elects its own leader on its own Lease (docs/design/sharding.md).
    resourceName: shardedLeaseName(o),
    resourceNamespace: o.leaderElectResourceNamespace,
    pluginUnreadyReleaseMs: q.duration('plugin-unready-lease-release-timeout', o.pluginUnreadyLeaseReleaseTimeout),
  };
}

/**
 * `--leader-elect-resource-name`, with `-shard-<index>` when --shard-count > 1
 * and the index is static; with --shard-index=auto the name itself, the base
 * of the shard Leases' names (an invalid shard flag is reported by shardSection).
 */
function shardedLeaseName(o: HostOptionsWithDefaults): string {
  const count = Number(o.shardCount);
  const sharded = Number.isInteger(count) && count > 1 && o.shardIndex !== SHARD_INDEX_AUTO;
  return sharded ? shardLeaseName(o.leaderElectResourceName, o.shardIndex) : o.leaderElectResourceName;
}

/**
 * `--leader-elect-resource-name` as given: `leaderElection.resourceName`
 * without the shard suffix shardedLeaseName adds. What every shard of one
 * CCM shares (e.g. the node deletion brake's one count for the cluster).
 */
export function unshardedLeaseName(config: Pick<HostConfig, 'leaderElection' | 'shard'>): string {
  const name = config.leaderElection.resourceName;
  const suffix = `-shard-${config.shard.index}`;
  return config.shard.count > 1 && name.endsWith(suffix) ? name.slice(0, -suffix.length) : name;
}
/** `--shard-index=auto`: membership from the shard Leases. */
export const SHARD_INDEX_AUTO = 'auto';

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function checkCloudProvider(name: string | undefined, p: Problems): string | undefined {
  if (name === undefined || name === '') {
    p.add('--cloud-provider is required: pass the provider name, e.g. --cloud-provider=local');
    return undefined;
  }
  if (!PROVIDER_NAME.test(name)) {
    p.add(
      `--cloud-provider=${JSON.stringify(name)} is invalid: use lowercase letters, digits and "-" (a DNS label, at most 63 characters), e.g. --cloud-provider=local`,
    );
    return undefined;
  }
  return name;
}

/**
 * `--provider-arg` goes to a plugin the host spawns; a plugin behind
 * --plugin-endpoint was started by someone else, with its own arguments.
 */
function checkProviderArgs(args: readonly string[], pluginEndpoint: string | undefined, p: Problems): readonly string[] {
  if (args.length > 0 && pluginEndpoint !== undefined) {
    p.add(
      `--provider-arg=${args[0]!} has no plugin to go to: with --plugin-endpoint the host does not start the provider, so put ${args.length > 1 ? 'these' : 'it'} in the provider container's args instead`,
    );
  }
  return Object.freeze([...args]);
}

/** Go's net.ParseIP: dotted-quad IPv4 or IPv6, without a zone. */
function isIp(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || (ipaddr.IPv6.isValid(text) && !text.includes('%'));
}

function checkIp(flag: string, text: string, p: Problems): void {
  if (!isIp(text)) p.add(`--${flag}=${JSON.stringify(text)} is invalid: want an IP address, e.g. 0.0.0.0, 127.0.0.1 or ::`);
}

/** Upstream processCIDRs: one CIDR, or two forming a dual-stack (IPv4 + IPv6) pair. */
function checkClusterCidrs(text: string | undefined, p: Problems): readonly string[] {
  if (text === undefined || text.trim() === '') return [];
  const cidrs = text.split(',').map((c) => c.trim());
  const how = 'want one CIDR or an IPv4,IPv6 pair, e.g. 10.244.0.0/16 or 10.244.0.0/16,fd00:10:244::/56';
  const bad = cidrs.filter((c) => !ipaddr.IPv4.isValidCIDRFourPartDecimal(c) && !ipaddr.IPv6.isValidCIDR(c));
  if (bad.length > 0) {
    p.add(`--cluster-cidr=${JSON.stringify(text)} is invalid: ${bad.map((b) => JSON.stringify(b)).join(', ')} is not a CIDR; ${how}`);
  } else if (cidrs.length > 2) {
    p.add(`--cluster-cidr=${JSON.stringify(text)} is invalid: at most 2 CIDRs are allowed; ${how}`);
  } else if (cidrs.length === 2 && ipaddr.IPv4.isValidCIDR(cidrs[0]!) === ipaddr.IPv4.isValidCIDR(cidrs[1]!)) {
    p.add(`--cluster-cidr=${JSON.stringify(text)} is invalid: two CIDRs must be one IPv4 and one IPv6 (dual-stack); ${how}`);
  }
  return Object.freeze(cidrs);
}

/** Label selector terms: `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`. */
const SELECTOR_TERM =
  /^\s*(!?[A-Za-z0-9./_-]+|[A-Za-z0-9./_-]+\s*(==|=|!=)\s*[A-Za-z0-9._-]*|[A-Za-z0-9./_-]+\s+(in|notin)\s+\([A-Za-z0-9._,\s-]*\))\s*$/;

/** Splits on commas outside parentheses and checks each term's shape; the API server has the last word. */
/** `--node-ownership-prefixes` and `--node-ownership-selector` (KEP-5778 node ownership; absent: the provider's declarations). */
function nodeOwnershipOverride(o: HostOptionsWithDefaults, p: Problems): HostConfig['nodeOwnership'] {
  const out: { prefixes?: readonly string[]; selector?: string } = {};
  if (o.nodeOwnershipPrefixes !== undefined) {
    const prefixes = o.nodeOwnershipPrefixes
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const bad = prefixes.map(prefixProblem).filter((x) => x !== undefined);
    if (prefixes.length === 0) p.add('--node-ownership-prefixes is empty: give at least one prefix, e.g. aws://, or leave the flag out');
    for (const why of bad) p.add(`--node-ownership-prefixes=${JSON.stringify(o.nodeOwnershipPrefixes)} is invalid: ${why}`);
    out.prefixes = Object.freeze(prefixes);
  }
  if (o.nodeOwnershipSelector !== undefined) {
    try {
      out.selector = parseLabelSelector(o.nodeOwnershipSelector).text;
    } catch (err) {
      p.add(`--node-ownership-selector=${JSON.stringify(o.nodeOwnershipSelector)} is invalid: ${(err as Error).message}`);
    }
  }
  return out;
}

function checkLabelSelector(text: string | undefined, p: Problems): string {
  if (text === undefined || text.trim() === '') return '';
  const terms = text.split(/,(?![^(]*\))/);
  const bad = terms.filter((t) => !SELECTOR_TERM.test(t));
  if (bad.length > 0) {
    p.add(
      `--node-selector=${JSON.stringify(text)} is invalid: ${bad.map((b) => JSON.stringify(b.trim())).join(', ')} is not a label selector term; want e.g. pool=a or pool in (a,b)`,
    );
  }
  return text.trim();
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function checkNamespace(text: string | undefined, p: Problems): string {
  if (text === undefined || text === '') return '';
  if (!DNS_LABEL.test(text))
    p.add(`--watch-namespace=${JSON.stringify(text)} is invalid: want a namespace name (a DNS label), or leave it out to watch all namespaces`);
  return text;
}

/** `--cluster-uid`: empty (read the kube-system Namespace's uid) or a uid such as that Namespace's metadata.uid. */
function checkClusterUid(text: string | undefined, p: Problems): string {
  if (text === undefined || text === '') return '';
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(text))
    p.add(
      `--cluster-uid=${JSON.stringify(text.slice(0, 140))} is invalid: want a uid (letters, digits, '.', '_', '-', at most 128), e.g. the old kube-system Namespace's metadata.uid, or leave it out`,
    );
  return text;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** `--node-deletion-limit`: `N` or `P%` (1–100); 0 turns the brake off, 0% is refused (parseDeletionLimit). */
function deletionLimit(text: string, p: Problems): DeletionLimit | null {
  const limit = parseDeletionLimit(text);
  if (limit === undefined) {
    p.add(
      `--node-deletion-limit=${JSON.stringify(text)} is invalid: use a count of nodes (e.g. 5; 0 turns the limit off) or a percentage of the nodes from 1% to 100% (e.g. 10%)`,
    );
    return null;
  }
  return limit;
}
