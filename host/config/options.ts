/**
 * Step 1 and 2 of the options pipeline (user → defaults → compiled):
 * `HostOptions` holds what the operator typed, as text, exactly as on the
 * command line; `addDefaults()` fills in every flag that has a default. The
 * compiled, validated form is `HostConfig` (config.ts).
 *
 * Defaults are upstream's (kubernetes/cloud-provider:options and
 * controller-manager config/v1alpha1/defaults.go) except where noted.
 */
import { DEFAULT_SECURE_PORT, DEFAULT_WEBHOOK_SECURE_PORT } from '../names.js';

/**
 * Flag values as the operator gave them. Every field is optional text (or a
 * list of texts for repeatable flags); nothing is parsed or checked yet.
 * Boolean flags hold Go's spellings (`true`, `false`, `1`, `t`, ...).
 */
export interface HostOptions {
  cloudProvider?: string;
  cloudConfig?: string;
  cloudConfigOptional?: string;
  pluginPath?: string;
  pluginEndpoint?: string;
  /** `--providers-config`: a YAML file listing several providers (config/providers.ts). */
  providersConfig?: string;
  pluginStartTimeout?: string;
  pluginShutdownGrace?: string;
  pluginCallTimeout?: string;
  pluginMutationTimeout?: string;
  pluginAllowTcp?: string;
  pluginAllowExternalSocket?: string;
  /** `--plugin-env`, one entry per use: `NAME` or `NAME=VALUE`. */
  pluginEnv?: string[];
  /** `--provider-arg`, one entry per use: a word appended to the spawned plugin's command line. */
  providerArgs?: string[];
  kubeconfig?: string;
  master?: string;
  clusterName?: string;
  clusterUid?: string;
  /** `--controllers`, already split on commas. */
  controllers?: string[];
  concurrentNodeSyncs?: string;
  concurrentNodeStatusUpdates?: string;
  nodeStatusUpdateFrequency?: string;
  nodeMonitorPeriod?: string;
  kubeApiQps?: string;
  kubeApiBurst?: string;
  bindAddress?: string;
  securePort?: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDir?: string;
  tlsCipherSuites?: string[];
  tlsMinVersion?: string;
  tlsCurvePreferences?: string[];
  authenticationKubeconfig?: string;
  authenticationSkipLookup?: string;
  authenticationTokenWebhookCacheTtl?: string;
  authenticationTolerateLookupFailure?: string;
  clientCaFile?: string;
  requestheaderAllowedNames?: string[];
  requestheaderClientCaFile?: string;
  requestheaderExtraHeadersPrefix?: string[];
  requestheaderGroupHeaders?: string[];
  requestheaderUidHeaders?: string[];
  requestheaderUsernameHeaders?: string[];
  authorizationAlwaysAllowPaths?: string[];
  authorizationKubeconfig?: string;
  authorizationWebhookCacheAuthorizedTtl?: string;
  authorizationWebhookCacheUnauthorizedTtl?: string;
  leaderElect?: string;
  leaderElectLeaseDuration?: string;
  leaderElectRenewDeadline?: string;
  leaderElectRetryPeriod?: string;
  leaderElectResourceLock?: string;
  leaderElectResourceName?: string;
  leaderElectResourceNamespace?: string;
  pluginUnreadyLeaseReleaseTimeout?: string;
  useServiceAccountCredentials?: string;
  /** `-v` / `--v`. */
  verbosity?: string;
  loggingFormat?: string;
  minResyncPeriod?: string;
  configureCloudRoutes?: string;
  clusterCidr?: string;
  allocateNodeCidrs?: string;
  cidrAllocatorType?: string;
  routeReconciliationPeriod?: string;
  concurrentServiceSyncs?: string;
  lbResyncPeriod?: string;
  lbOrphanSweepPeriod?: string;
  lbOrphanGracePeriod?: string;
  lbOrphanSweepDryRun?: string;
  lbOrphanSweepLimit?: string;
  shardCount?: string;
  shardIndex?: string;
  cloudApiQps?: string;
  cloudApiBurst?: string;
  nodeDeletionGracePeriod?: string;
  nodeDeletionLimit?: string;
  nodeDeletionLimitWindow?: string;
  nodeCidrMaskSize?: string;
  nodeCidrMaskSizeIpv4?: string;
  nodeCidrMaskSizeIpv6?: string;
  nodeSelector?: string;
  nodeOwnershipPrefixes?: string;
  nodeOwnershipSelector?: string;
  watchNamespace?: string;
  volumeProvisionerName?: string;
  concurrentVolumeSyncs?: string;
  volumeAttachReconcilePeriod?: string;
  webhookSecurePort?: string;
  webhookBindAddress?: string;
  serviceValidationFailurePolicy?: string;
  webhookTlsCertFile?: string;
  webhookTlsPrivateKeyFile?: string;
  webhookCertDir?: string;
  webhookTlsCipherSuites?: string[];
  webhookTlsMinVersion?: string;
  webhookTlsCurvePreferences?: string[];
  webhookTlsSniCertKey?: string[];
}

/**
 * Default of `--concurrent-service-syncs`. Upstream ships 1, and a single
 * worker is the most reported service-controller problem in upstream's issue
 * tracker: one slow EnsureLoadBalancer (minutes on some clouds) stalls every other
 * Service, and after a restart every LB Service is re-ensured one by one
 * (1,000 Services × 200 ms = over 3 minutes). Workers here are async tasks,
 * not threads, so they cost almost nothing, and one Service is still never
 * handled by two at once. 10 brings 1,000 new Services under a minute at
 * 200 ms per cloud call (docs/benchmarks.md) while staying where kops found
 * cloud APIs stop getting faster and start throttling (no gain beyond 10,
 * throttling at 30); node-set changes use one batch call when the provider
 * has one, so the fan-out rarely uses them all.
 */
export const DEFAULT_CONCURRENT_SERVICE_SYNCS = 10;

/** The `--cluster-name` default (upstream); main warns when it is used. */
const DEFAULT_CLUSTER_NAME = 'kubernetes';

/** Default of `--kube-api-qps`: sustained API requests per second, per client (upstream's). */
export const DEFAULT_KUBE_API_QPS = 20;
/** Default of `--kube-api-burst`: API requests allowed in a burst, per client (upstream's). */
export const DEFAULT_KUBE_API_BURST = 30;

/** Defaults, in the same text form as the flags. */
export const DEFAULT_OPTIONS = Object.freeze({
  pluginStartTimeout: '60s',
  pluginShutdownGrace: '10s',
  pluginCallTimeout: '10s',
  pluginMutationTimeout: '60s',
  pluginAllowTcp: 'false',
  pluginAllowExternalSocket: 'false',
  /** Not in upstream (where a missing --cloud-config file is fatal): see flags.ts. */
  cloudConfigOptional: 'false',
  pluginEnv: [] as readonly string[],
  /** Not in upstream (whose provider is in-process and reads its flags from the same command line). */
  providerArgs: [] as readonly string[],
  clusterName: DEFAULT_CLUSTER_NAME,
  controllers: ['*'] as readonly string[],
  concurrentNodeSyncs: '1',
  concurrentNodeStatusUpdates: '0',
  nodeStatusUpdateFrequency: '5m',
  nodeMonitorPeriod: '5s',
  kubeApiQps: String(DEFAULT_KUBE_API_QPS),
  kubeApiBurst: String(DEFAULT_KUBE_API_BURST),
  bindAddress: '0.0.0.0',
  securePort: String(DEFAULT_SECURE_PORT),
  authenticationSkipLookup: 'false',
  authenticationTokenWebhookCacheTtl: '10s',
  authenticationTolerateLookupFailure: 'false',
  requestheaderUsernameHeaders: ['x-remote-user'] as readonly string[],
  requestheaderGroupHeaders: ['x-remote-group'] as readonly string[],
  requestheaderExtraHeadersPrefix: ['x-remote-extra-'] as readonly string[],
  /** So the kubelet probes health and readiness without a token (upstream). */
  authorizationAlwaysAllowPaths: ['/healthz', '/readyz', '/livez'] as readonly string[],
  authorizationWebhookCacheAuthorizedTtl: '10s',
  authorizationWebhookCacheUnauthorizedTtl: '10s',
  leaderElect: 'true',
  leaderElectLeaseDuration: '15s',
  leaderElectRenewDeadline: '10s',
  leaderElectRetryPeriod: '2s',
  leaderElectResourceLock: 'leases',
  leaderElectResourceName: 'cloud-controller-manager',
  leaderElectResourceNamespace: 'kube-system',
  pluginUnreadyLeaseReleaseTimeout: '60s',
  useServiceAccountCredentials: 'false',
  verbosity: '0',
  /** klog text, as upstream (component-base); json on request. */
  loggingFormat: 'text',
  minResyncPeriod: '12h',
  configureCloudRoutes: 'true',
  allocateNodeCidrs: 'false',
  cidrAllocatorType: 'RangeAllocator',
  routeReconciliationPeriod: '10s',
  concurrentServiceSyncs: String(DEFAULT_CONCURRENT_SERVICE_SYNCS),
  /** Not in upstream (which never re-ensures an unchanged Service): periodic drift repair. */
  lbResyncPeriod: '10m',
  /** Not in upstream: deletes load balancers whose Service is gone (needs the provider's ListLoadBalancers). */
  lbOrphanSweepPeriod: '10m',
  /** An orphan is deleted only when seen on two sweeps at least this far apart. */
  lbOrphanGracePeriod: '5m',
  lbOrphanSweepDryRun: 'false',
  lbOrphanSweepLimit: '10',
  /** Not in upstream (one active leader only): alpha sharding, off. */
  shardCount: '1',
  /** With --shard-count > 1: the first shard whose Lease this replica wins (docs/design/sharding.md); with 1: shard 0. */
  shardIndex: 'auto',
  /** Not in upstream (each provider limits its own SDK calls): no host-side budget. */
  cloudApiQps: '0',
  cloudApiBurst: '10',
  nodeDeletionGracePeriod: '0s',
  /** Not in upstream (which has no brake): at most max(10% of the nodes, 5) deletions per window. */
  nodeDeletionLimit: '10%',
  nodeDeletionLimitWindow: '5m',
  /** 0 = unset: 24 for IPv4 and 64 for IPv6 (upstream). */
  nodeCidrMaskSize: '0',
  nodeCidrMaskSizeIpv4: '0',
  nodeCidrMaskSizeIpv6: '0',
  concurrentVolumeSyncs: '20',
  volumeAttachReconcilePeriod: '1m',
  webhookSecurePort: String(DEFAULT_WEBHOOK_SECURE_PORT),
  webhookBindAddress: '0.0.0.0',
  serviceValidationFailurePolicy: 'Ignore',
});

/** Flags that have a default. */
export type DefaultedKey = keyof typeof DEFAULT_OPTIONS;

/** HostOptions after addDefaults: every defaulted flag is present. */
export type HostOptionsWithDefaults = Omit<HostOptions, DefaultedKey> & {
  [K in DefaultedKey]-?: (typeof DEFAULT_OPTIONS)[K] extends string ? string : readonly string[];
} & {
  /** Flags the operator left out (so their value is the default). */
  readonly defaulted: ReadonlySet<DefaultedKey>;
};

/** Step 2: fills every flag the operator left out with its default. Does not modify `opts`. */
export function addDefaults(opts: HostOptions): HostOptionsWithDefaults {
  const defaulted = new Set<DefaultedKey>();
  const out: Record<string, unknown> = { ...opts };
  for (const key of Object.keys(DEFAULT_OPTIONS) as DefaultedKey[]) {
    if (out[key] === undefined) {
      out[key] = DEFAULT_OPTIONS[key];
      defaulted.add(key);
    }
  }
  return { ...(out as Omit<HostOptionsWithDefaults, 'defaulted'>), defaulted };
}
