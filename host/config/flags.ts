/**
 * Command line → HostConfig. Flags follow Go's pflag conventions so upstream
 * cloud-controller-manager manifests work unchanged: `--flag value` and
 * `--flag=value`; boolean flags take `--flag`, `--flag=true` or
 * `--flag=false` (never a separate word, as in pflag); list flags repeat or
 * take commas; `-v 2`, `-v=2` and `--v=2` are the same.
 *
 * commander tokenizes. Values stay text until compileHostConfig parses and
 * validates them, so every mistake (unknown flags included) is reported in
 * one run rather than one per attempt.
 */
import { Command, CommanderError, Option } from 'commander';
import { COMPONENT_NAME, K8S_VERSION } from '../names.js';
import { HOST_VERSION } from '../version.js';
import { compileHostConfig, type HostConfig } from './config.js';
import { DEFAULT_OPTIONS, type HostOptions } from './options.js';
import { INERT_FLAGS } from './upstream-flags.js';
import {
  ownerOfCidrAllocator,
  ownerOfController,
  ownerOfFlag,
  passToProvider,
  providerOwnedLine,
  REMOVED_FLAGS,
  type OwnedItem,
} from './provider-owned.js';

/** How a flag takes its value. */
type FlagKind =
  /** One value; the last use wins. */
  | 'string'
  /** Go bool: `--flag`, `--flag=true`, `--flag=false`. */
  | 'bool'
  /** Repeatable; each use may hold several values separated by commas (pflag StringSlice). */
  | 'list'
  /** Repeatable; each use is one value, commas included (pflag StringArray). */
  | 'array';

interface FlagSpec {
  /** Long name without dashes. */
  name: string;
  key: keyof HostOptions;
  kind: FlagKind;
  /** Placeholder for the value in help, e.g. `duration`. */
  value?: string;
  /** One-letter alias. */
  short?: string;
  help: string;
}

/** Every flag, in help order. */
export const FLAGS: readonly FlagSpec[] = [
  {
    name: 'cloud-provider',
    key: 'cloudProvider',
    kind: 'string',
    value: 'name',
    help: 'The provider name (required). Selects the plugin ccm-provider-<name>; "local" uses the built-in plugin.',
  },
  { name: 'cloud-config', key: 'cloudConfig', kind: 'string', value: 'file', help: 'Path of the provider configuration file, passed to the plugin.' },
  {
    name: 'cloud-config-optional',
    key: 'cloudConfigOptional',
    kind: 'bool',
    help: 'Start with an empty provider configuration when the --cloud-config file does not exist (e.g. an optional Secret that was not created); any other problem with the file still stops the host (not in upstream).',
  },
  {
    name: 'plugin-path',
    key: 'pluginPath',
    kind: 'string',
    value: 'path',
    help: 'The plugin executable, or a directory holding ccm-provider-<cloud-provider>[.js]. The host spawns it. Excludes --plugin-endpoint.',
  },
  {
    name: 'plugin-endpoint',
    key: 'pluginEndpoint',
    kind: 'string',
    value: 'unix:///path.sock',
    help: 'Socket of an already running plugin (e.g. a sidecar). Excludes --plugin-path.',
  },
  {
    name: 'providers-config',
    key: 'providersConfig',
    kind: 'string',
    value: 'file',
    help: 'A YAML file listing several providers, each with its name, plugin (path or endpoint), environment and cloud config; replaces --cloud-provider, --cloud-config, --cloud-config-optional, --plugin-path, --plugin-endpoint, --plugin-env and --provider-arg (not in upstream; docs/flags.md).',
  },
  {
    name: 'plugin-start-timeout',
    key: 'pluginStartTimeout',
    kind: 'string',
    value: 'duration',
    help: 'How long a spawned plugin may take to become ready.',
  },
  {
    name: 'plugin-shutdown-grace',
    key: 'pluginShutdownGrace',
    kind: 'string',
    value: 'duration',
    help: 'How long the plugin may take to exit before it is killed.',
  },
  { name: 'plugin-call-timeout', key: 'pluginCallTimeout', kind: 'string', value: 'duration', help: 'Deadline of read-only plugin calls.' },
  {
    name: 'plugin-mutation-timeout',
    key: 'pluginMutationTimeout',
    kind: 'string',
    value: 'duration',
    help: 'Deadline of plugin calls that change the cloud.',
  },
  {
    name: 'plugin-allow-tcp',
    key: 'pluginAllowTcp',
    kind: 'bool',
    help: 'Accept a spawned plugin whose handshake names a TCP loopback address instead of a Unix socket. Any local process can then reach the provider: keep it false unless the plugin cannot listen on a Unix socket.',
  },
  {
    name: 'plugin-allow-external-socket',
    key: 'pluginAllowExternalSocket',
    kind: 'bool',
    help: "Accept a spawned plugin listening on a Unix socket outside the private directory the host made for it (CCM_PLUGIN_ENDPOINT). The socket must still be 0600 and owned by the host's user or root.",
  },
  {
    name: 'plugin-env',
    key: 'pluginEnv',
    kind: 'array',
    value: 'NAME[=VALUE]',
    help: "Environment variable the plugin gets (repeatable): NAME passes the host's value, NAME=VALUE sets one. The plugin gets no other host variables.",
  },
  {
    name: 'provider-arg',
    key: 'providerArgs',
    kind: 'array',
    value: 'ARG',
    help: "A word appended to the spawned plugin's command line (repeatable, in order), for the provider's own flags, e.g. --provider-arg=--cluster-id=k8s. With --plugin-endpoint, put them in the provider container's args instead (not in upstream).",
  },
  {
    name: 'kubeconfig',
    key: 'kubeconfig',
    kind: 'string',
    value: 'file',
    help: 'Path of a kubeconfig file; without it, KUBECONFIG or the in-cluster service account is used.',
  },
  { name: 'master', key: 'master', kind: 'string', value: 'url', help: "API server address; overrides the kubeconfig's server." },
  {
    name: 'cluster-name',
    key: 'clusterName',
    kind: 'string',
    value: 'name',
    help: 'Cluster name passed to the cloud, e.g. in load balancer names; make it unique per cloud account.',
  },
  {
    name: 'cluster-uid',
    key: 'clusterUid',
    kind: 'string',
    value: 'uid',
    help: "Cluster UID passed to the cloud, which tags load balancers with it (the orphan sweep deletes only its own); default the kube-system Namespace's uid. Set it to the old cluster's UID when a cluster restored from backup must adopt its cloud objects (not in upstream).",
  },
  {
    name: 'controllers',
    key: 'controllers',
    kind: 'list',
    value: 'names',
    help: 'Controllers to run: * for all, a name to enable, -name to disable; the first entry naming a controller wins.',
  },
  { name: 'concurrent-node-syncs', key: 'concurrentNodeSyncs', kind: 'string', value: 'int', help: 'Node initialization workers.' },
  {
    name: 'concurrent-node-status-updates',
    key: 'concurrentNodeStatusUpdates',
    kind: 'string',
    value: 'int',
    help: 'Node status update workers; 0 means --concurrent-node-syncs.',
  },
  {
    name: 'node-status-update-frequency',
    key: 'nodeStatusUpdateFrequency',
    kind: 'string',
    value: 'duration',
    help: 'Period of the node address refresh.',
  },
  { name: 'node-monitor-period', key: 'nodeMonitorPeriod', kind: 'string', value: 'duration', help: 'Period of the node lifecycle check.' },
  { name: 'kube-api-qps', key: 'kubeApiQps', kind: 'string', value: 'number', help: 'Sustained API server requests per second, per client.' },
  {
    name: 'kube-api-burst',
    key: 'kubeApiBurst',
    kind: 'string',
    value: 'int',
    help: 'API server request burst, per client; at least --kube-api-qps.',
  },
  {
    name: 'bind-address',
    key: 'bindAddress',
    kind: 'string',
    value: 'ip',
    help: 'Address of the HTTPS server of /healthz, /readyz, /livez and /metrics.',
  },
  {
    name: 'secure-port',
    key: 'securePort',
    kind: 'string',
    value: 'port',
    help: 'HTTPS port of /healthz, /readyz, /livez and /metrics, with delegated authentication and authorization; 0 disables it.',
  },
  {
    name: 'tls-cert-file',
    key: 'tlsCertFile',
    kind: 'string',
    value: 'file',
    help: 'Serving certificate (PEM, intermediates after it); with --tls-private-key-file. Without both, a self-signed certificate is generated (in --cert-dir when given).',
  },
  { name: 'tls-private-key-file', key: 'tlsPrivateKeyFile', kind: 'string', value: 'file', help: 'Private key matching --tls-cert-file.' },
  {
    name: 'cert-dir',
    key: 'certDir',
    kind: 'string',
    value: 'dir',
    help: 'Where a self-signed certificate is written as cloud-controller-manager.crt/.key, and reused from on the next start. Ignored with --tls-cert-file. Default: kept in memory.',
  },
  {
    name: 'tls-min-version',
    key: 'tlsMinVersion',
    kind: 'string',
    value: 'version',
    help: "Minimum TLS version: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13. Default Node.js's (TLS 1.2).",
  },
  {
    name: 'tls-cipher-suites',
    key: 'tlsCipherSuites',
    kind: 'list',
    value: 'names',
    help: "TLS 1.2 cipher suites by Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (TLS 1.3 suites are always on, as in Go). Default Node.js's.",
  },
  {
    name: 'tls-curve-preferences',
    key: 'tlsCurvePreferences',
    kind: 'list',
    value: 'ids',
    help: "Key exchange groups by Go's numeric crypto/tls CurveID: 23 P-256, 24 P-384, 25 P-521, 29 X25519, 4588 X25519MLKEM768 (where this Node.js's OpenSSL has it). Default Node.js's.",
  },
  {
    name: 'authentication-kubeconfig',
    key: 'authenticationKubeconfig',
    kind: 'string',
    value: 'file',
    help: "Kubeconfig of the API server that reviews tokens (TokenReview) and holds the extension-apiserver-authentication ConfigMap. Default: in-cluster, else the host's own connection (--kubeconfig).",
  },
  {
    name: 'authentication-skip-lookup',
    key: 'authenticationSkipLookup',
    kind: 'bool',
    help: 'Do not read client CAs and request-header settings from ConfigMap kube-system/extension-apiserver-authentication.',
  },
  {
    name: 'authentication-token-webhook-cache-ttl',
    key: 'authenticationTokenWebhookCacheTtl',
    kind: 'string',
    value: 'duration',
    help: 'How long TokenReview answers are cached.',
  },
  {
    name: 'authentication-tolerate-lookup-failure',
    key: 'authenticationTolerateLookupFailure',
    kind: 'bool',
    help: 'Start even if the extension-apiserver-authentication ConfigMap cannot be read; requests may then be treated as anonymous.',
  },
  {
    name: 'client-ca-file',
    key: 'clientCaFile',
    kind: 'string',
    value: 'file',
    help: "CA bundle: a client certificate it signed authenticates as its common name, its organizations as groups. Default: the ConfigMap's client-ca-file.",
  },
  {
    name: 'requestheader-client-ca-file',
    key: 'requestheaderClientCaFile',
    kind: 'string',
    value: 'file',
    help: "CA bundle of front proxies whose identity headers (--requestheader-*-headers) are trusted. Default: the ConfigMap's.",
  },
  {
    name: 'requestheader-allowed-names',
    key: 'requestheaderAllowedNames',
    kind: 'list',
    value: 'names',
    help: "Common names a front proxy's certificate may have; empty allows any signed by --requestheader-client-ca-file.",
  },
  {
    name: 'requestheader-username-headers',
    key: 'requestheaderUsernameHeaders',
    kind: 'list',
    value: 'headers',
    help: 'Headers holding the user name; the first one set wins.',
  },
  { name: 'requestheader-uid-headers', key: 'requestheaderUidHeaders', kind: 'list', value: 'headers', help: "Headers holding the user's UID." },
  {
    name: 'requestheader-group-headers',
    key: 'requestheaderGroupHeaders',
    kind: 'list',
    value: 'headers',
    help: "Headers holding the user's groups.",
  },
  {
    name: 'requestheader-extra-headers-prefix',
    key: 'requestheaderExtraHeadersPrefix',
    kind: 'list',
    value: 'prefixes',
    help: 'Header prefixes whose headers hold extra user information.',
  },
  {
    name: 'authorization-kubeconfig',
    key: 'authorizationKubeconfig',
    kind: 'string',
    value: 'file',
    help: "Kubeconfig of the API server that authorizes requests (SubjectAccessReview). Default: in-cluster, else the host's own connection (--kubeconfig).",
  },
  {
    name: 'authorization-always-allow-paths',
    key: 'authorizationAlwaysAllowPaths',
    kind: 'list',
    value: 'paths',
    help: 'Paths served without authorization (exact, or a prefix ending in *), even to anonymous requests.',
  },
  {
    name: 'authorization-webhook-cache-authorized-ttl',
    key: 'authorizationWebhookCacheAuthorizedTtl',
    kind: 'string',
    value: 'duration',
    help: 'How long an allowing SubjectAccessReview answer is cached.',
  },
  {
    name: 'authorization-webhook-cache-unauthorized-ttl',
    key: 'authorizationWebhookCacheUnauthorizedTtl',
    kind: 'string',
    value: 'duration',
    help: 'How long a denying SubjectAccessReview answer is cached.',
  },
  {
    name: 'leader-elect',
    key: 'leaderElect',
    kind: 'bool',
    help: 'Run controllers only while holding a coordination.k8s.io/v1 Lease, so several replicas can run for high availability.',
  },
  {
    name: 'leader-elect-lease-duration',
    key: 'leaderElectLeaseDuration',
    kind: 'string',
    value: 'duration',
    help: 'How long a non-leader waits after the last observed renewal before it takes the lease over.',
  },
  {
    name: 'leader-elect-renew-deadline',
    key: 'leaderElectRenewDeadline',
    kind: 'string',
    value: 'duration',
    help: 'How long the leader keeps retrying a renewal before it gives up leadership (and exits); less than the lease duration.',
  },
  {
    name: 'leader-elect-retry-period',
    key: 'leaderElectRetryPeriod',
    kind: 'string',
    value: 'duration',
    help: 'How often candidates try to acquire and the leader renews.',
  },
  {
    name: 'leader-elect-resource-lock',
    key: 'leaderElectResourceLock',
    kind: 'string',
    value: 'type',
    help: 'Lock object type; only "leases" is supported.',
  },
  { name: 'leader-elect-resource-name', key: 'leaderElectResourceName', kind: 'string', value: 'name', help: 'Name of the Lease object.' },
  {
    name: 'leader-elect-resource-namespace',
    key: 'leaderElectResourceNamespace',
    kind: 'string',
    value: 'namespace',
    help: 'Namespace of the Lease object.',
  },
  {
    name: 'plugin-unready-lease-release-timeout',
    key: 'pluginUnreadyLeaseReleaseTimeout',
    kind: 'string',
    value: 'duration',
    help: 'With --leader-elect: a leader whose plugin stays unready (not SERVING, or not answering) this long stops its controllers and releases the Lease so a replica with a ready plugin takes over; a replica does not campaign while its plugin is unready. 0 disables both (not in upstream).',
  },
  {
    name: 'use-service-account-credentials',
    key: 'useServiceAccountCredentials',
    kind: 'bool',
    help: "Give each controller its own ServiceAccount (kube-system/ upstream's client name: node-controller, service-controller, route-controller; created if missing) and use the host's credentials only to request their tokens, as upstream. Needs the RBAC of deploy/components/per-controller-rbac.",
  },
  { name: 'v', short: 'v', key: 'verbosity', kind: 'string', value: 'level', help: 'Log verbosity: 0 info, 1-3 debug, 4+ trace.' },
  {
    name: 'logging-format',
    key: 'loggingFormat',
    kind: 'string',
    value: 'text|json',
    help: 'Log line format: text (klog, as upstream) or json (one object per line).',
  },
  { name: 'min-resync-period', key: 'minResyncPeriod', kind: 'string', value: 'duration', help: 'Informers resync every min-resync-period × [1,2).' },
  { name: 'configure-cloud-routes', key: 'configureCloudRoutes', kind: 'bool', help: 'Let the route controller create cloud routes for pod CIDRs.' },
  {
    name: 'cluster-cidr',
    key: 'clusterCidr',
    kind: 'string',
    value: 'cidrs',
    help: 'Pod CIDR, or an IPv4,IPv6 pair for dual-stack; needed by the route controller.',
  },
  {
    name: 'allocate-node-cidrs',
    key: 'allocateNodeCidrs',
    kind: 'bool',
    help: 'Let the node-ipam-controller give nodes without spec.podCIDRs ranges from --cluster-cidr.',
  },
  {
    name: 'cidr-allocator-type',
    key: 'cidrAllocatorType',
    kind: 'string',
    value: 'type',
    help: 'Pod CIDR allocator for --allocate-node-cidrs; this build has RangeAllocator.',
  },
  {
    name: 'node-cidr-mask-size',
    key: 'nodeCidrMaskSize',
    kind: 'string',
    value: 'int',
    help: 'Mask size of node pod CIDRs in a single-stack cluster; 0 = 24 (IPv4) or 64 (IPv6).',
  },
  { name: 'node-cidr-mask-size-ipv4', key: 'nodeCidrMaskSizeIpv4', kind: 'string', value: 'int', help: 'Mask size of IPv4 node pod CIDRs; 0 = 24.' },
  { name: 'node-cidr-mask-size-ipv6', key: 'nodeCidrMaskSizeIpv6', kind: 'string', value: 'int', help: 'Mask size of IPv6 node pod CIDRs; 0 = 64.' },
  {
    name: 'route-reconciliation-period',
    key: 'routeReconciliationPeriod',
    kind: 'string',
    value: 'duration',
    help: 'Period of the route reconciliation.',
  },
  {
    name: 'concurrent-service-syncs',
    key: 'concurrentServiceSyncs',
    kind: 'string',
    value: 'int',
    help: 'Service (load balancer) workers, and the fan-out of node → load balancer updates. Upstream defaults to 1.',
  },
  {
    name: 'lb-resync-period',
    key: 'lbResyncPeriod',
    kind: 'string',
    value: 'duration',
    help: "Re-ensure every LoadBalancer Service this often, so a load balancer deleted or changed behind the controller's back comes back (not in upstream); 0 disables.",
  },
  {
    name: 'lb-orphan-sweep-period',
    key: 'lbOrphanSweepPeriod',
    kind: 'string',
    value: 'duration',
    help: "List the provider's load balancers for this cluster this often and delete those whose Service no longer exists or no longer wants one (not in upstream; needs the provider's ListLoadBalancers); 0 disables.",
  },
  {
    name: 'lb-orphan-grace-period',
    key: 'lbOrphanGracePeriod',
    kind: 'string',
    value: 'duration',
    help: 'An orphaned load balancer is deleted only after two sweeps at least this far apart found it; 0 deletes on the first.',
  },
  {
    name: 'lb-orphan-sweep-dry-run',
    key: 'lbOrphanSweepDryRun',
    kind: 'bool',
    help: 'Report orphaned load balancers (log line, metric ccm_orphan_load_balancers_total{outcome="dry_run"}) without deleting them.',
  },
  {
    name: 'shard-count',
    key: 'shardCount',
    kind: 'string',
    value: 'int',
    help: 'Alpha: how many active replicas share the Nodes and Services by uid hash (docs/design/sharding.md); 1 = no sharding (not in upstream).',
  },
  {
    name: 'shard-index',
    key: 'shardIndex',
    kind: 'string',
    value: 'auto|int',
    help: "Alpha: which shard this replica serves, 0 to --shard-count - 1, or auto (default): campaign for every shard's Lease and serve the first one won, standing by while none is free (needs --leader-elect); shard 0 also runs the cluster-wide controllers (not in upstream).",
  },
  {
    name: 'cloud-api-qps',
    key: 'cloudApiQps',
    kind: 'string',
    value: 'number',
    help: 'Alpha: cloud calls per second toward each provider, shared by every shard (each takes 1/--shard-count); 0 = no limit (not in upstream).',
  },
  {
    name: 'cloud-api-burst',
    key: 'cloudApiBurst',
    kind: 'string',
    value: 'int',
    help: 'Alpha: burst of --cloud-api-qps, shared like it (not in upstream).',
  },
  {
    name: 'lb-orphan-sweep-limit',
    key: 'lbOrphanSweepLimit',
    kind: 'string',
    value: 'int',
    help: 'Most orphaned load balancers one sweep deletes; the others wait for the next sweep (not in upstream).',
  },
  {
    name: 'node-selector',
    key: 'nodeSelector',
    kind: 'string',
    value: 'selector',
    help: 'Label selector limiting the Nodes this host watches and manages, e.g. pool=a (not in upstream: for sharding and tests). Default all nodes.',
  },
  {
    name: 'node-ownership-prefixes',
    key: 'nodeOwnershipPrefixes',
    kind: 'string',
    value: 'prefixes',
    help: 'ProviderID prefixes of the Nodes the provider owns, comma-separated, e.g. aws://,hrobot:// (not in upstream; KEP-5778). Replaces what the provider declares. Default: its declaration, else <provider name>://.',
  },
  {
    name: 'node-ownership-selector',
    key: 'nodeOwnershipSelector',
    kind: 'string',
    value: 'selector',
    help: 'Label selector claiming Nodes without a providerID for the provider, e.g. topology.kubernetes.io/platform=aws (not in upstream; KEP-5778). Replaces what the provider declares. Default: its declaration, else every such Node.',
  },
  {
    name: 'watch-namespace',
    key: 'watchNamespace',
    kind: 'string',
    value: 'namespace',
    help: 'Namespace limiting the namespaced objects (Services, claims) this host watches (not in upstream). Default all namespaces.',
  },
  {
    name: 'volume-provisioner-name',
    key: 'volumeProvisionerName',
    kind: 'string',
    value: 'name',
    help: "Provisioner (CSI driver) name the volume controllers answer for: StorageClass.provisioner, VolumeAttachment.spec.attacher, PV spec.csi.driver. Replaces the names the provider declares (volume_provisioners); refused with two or more volume providers. Default: the provider's declared names, else the plugin's name.",
  },
  {
    name: 'concurrent-volume-syncs',
    key: 'concurrentVolumeSyncs',
    kind: 'string',
    value: 'int',
    help: 'Workers of each volume controller (provisioner, attacher, resizer, labeller).',
  },
  {
    name: 'volume-attach-reconcile-period',
    key: 'volumeAttachReconcilePeriod',
    kind: 'string',
    value: 'duration',
    help: "How often VolumeAttachments are compared with the cloud's attachments (ListVolumes) and drift is repaired.",
  },
  {
    name: 'webhook-secure-port',
    key: 'webhookSecurePort',
    kind: 'string',
    value: 'port',
    help: 'HTTPS port of the PersistentVolume label admission webhook (with persistentvolume-label-controller); 0 disables it.',
  },
  {
    name: 'service-validation-failure-policy',
    key: 'serviceValidationFailurePolicy',
    kind: 'string',
    value: 'Ignore|Fail',
    help: "What the Service validation webhook (with service-controller, on --webhook-secure-port) answers when it cannot check a Service because its provider is not ready: Ignore admits it (the check before ensure still runs), Fail denies it. Set the ValidatingWebhookConfiguration's failurePolicy to the same (not in upstream).",
  },
  { name: 'webhook-bind-address', key: 'webhookBindAddress', kind: 'string', value: 'ip', help: 'Address of the webhook server.' },
  {
    name: 'webhook-tls-cert-file',
    key: 'webhookTlsCertFile',
    kind: 'string',
    value: 'file',
    help: 'Serving certificate of the webhook; with --webhook-tls-private-key-file. Without both, a self-signed certificate is generated.',
  },
  {
    name: 'webhook-tls-private-key-file',
    key: 'webhookTlsPrivateKeyFile',
    kind: 'string',
    value: 'file',
    help: 'Private key matching --webhook-tls-cert-file.',
  },
  {
    name: 'webhook-cert-dir',
    key: 'webhookCertDir',
    kind: 'string',
    value: 'dir',
    help: 'Where a generated webhook certificate is written (webhook.crt, webhook.key), e.g. to build the caBundle. Default: kept in memory.',
  },
  {
    name: 'webhook-tls-cipher-suites',
    key: 'webhookTlsCipherSuites',
    kind: 'list',
    value: 'names',
    help: 'As --tls-cipher-suites, for the webhook server.',
  },
  {
    name: 'webhook-tls-min-version',
    key: 'webhookTlsMinVersion',
    kind: 'string',
    value: 'version',
    help: 'As --tls-min-version, for the webhook server.',
  },
  {
    name: 'webhook-tls-curve-preferences',
    key: 'webhookTlsCurvePreferences',
    kind: 'list',
    value: 'ids',
    help: 'As --tls-curve-preferences, for the webhook server.',
  },
  {
    name: 'webhook-tls-sni-cert-key',
    key: 'webhookTlsSniCertKey',
    kind: 'array',
    value: 'cert,key[:names]',
    help: 'A certificate and key the webhook serves to clients asking for one of names (TLS SNI; "*.example.com" matches one label; without names, the certificate\'s own DNS names and IPs). Repeatable; an exact name beats a wildcard, given names beat the certificate\'s. Others get --webhook-tls-cert-file or the generated certificate.',
  },
  {
    name: 'node-deletion-limit',
    key: 'nodeDeletionLimit',
    kind: 'string',
    value: 'N|P%',
    help: "At most this many Nodes whose instance is gone are deleted per --node-deletion-limit-window; the rest wait for a later pass (Warning event DeletingNodeHeldBack). P% (1–100) is a share of the Nodes the host sees, never fewer than 5. 0 turns the limit off (upstream); 0% is refused. The count is kept on the Lease cloud-controller-manager-node-deletions, so a restart or a new leader does not reset it; with --shard-count the limit is for all shards together (a share of every shard's Nodes).",
  },
  {
    name: 'node-deletion-limit-window',
    key: 'nodeDeletionLimitWindow',
    kind: 'string',
    value: 'duration',
    help: 'The sliding window of --node-deletion-limit.',
  },
  {
    name: 'node-deletion-grace-period',
    key: 'nodeDeletionGracePeriod',
    kind: 'string',
    value: 'duration',
    help: 'Keep a NotReady node whose instance is reported gone until it was reported gone on two consecutive checks at least this far apart; 0 deletes at once, as upstream (which has no such flag).',
  },
];

/**
 * Result of parseHostArgs: a config, or problems (and the help text when
 * --help was asked for, or the version text for --version).
 */
export type ParseHostArgsResult = { config: HostConfig } | { errors: string[]; help?: string };

/** Test seams of parseHostArgs. */
export interface ParseHostArgsOptions {
  /** Built-in local plugin file. Default BUILTIN_LOCAL_PLUGIN_PATH. */
  localPluginPath?: string;
}

/**
 * Parses command line flags (without the node and script names) into a
 * validated HostConfig. Never exits or prints: `--help`/`-h` returns
 * `{ errors: [], help }`, and problems come back as one line each.
 */
export function parseHostArgs(argv: string[], env: NodeJS.ProcessEnv = process.env, opts: ParseHostArgsOptions = {}): ParseHostArgsResult {
  const parsed = parseFlags(argv);
  if ('help' in parsed) return { errors: [], help: parsed.help };
  const compiled = compileHostConfig(parsed.options, { env, localPluginPath: opts.localPluginPath });
  if ('config' in compiled && parsed.errors.length === 0) {
    const fp = parsed.forProvider;
    return {
      config: Object.freeze({
        ...compiled.config,
        ...(fp?.flags.length || fp?.controllers.length
          ? {
              providerFlags: Object.freeze([...fp.flags]),
              providerControllers: Object.freeze([...fp.controllers]),
              // One provider (flags only: --providers-config excludes --cloud-provider, so nothing is declared then).
              providers: compiled.config.providers.map((p) =>
                Object.freeze({ ...p, providerFlags: Object.freeze([...fp.flags]), controllers: Object.freeze([...fp.controllers]) }),
              ),
            }
          : {}),
        warnings: parsed.inert.length === 0 ? compiled.config.warnings : Object.freeze([...compiled.config.warnings, ...parsed.inert]),
        flagz: flagzValues(parsed.options),
      }),
    };
  }
  return { errors: [...parsed.errors, ...('errors' in compiled ? compiled.errors : [])] };
}

/**
 * Flags whose values may carry credentials (a plugin's environment, a
 * provider's own arguments): /flagz shows them as CLASSIFIED, as upstream
 * shows flags annotated "classified".
 */
const CLASSIFIED_FLAGS = new Set(['plugin-env', 'provider-arg']);

/** Every flag's effective value as pflag prints it (`[a,b]` for lists, '' when unset without a default), for /flagz. */
export function flagzValues(options: HostOptions): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of FLAGS) {
    const v = (options[f.key] ?? (DEFAULT_OPTIONS as Partial<HostOptions>)[f.key]) as string | readonly string[] | undefined;
    let text = Array.isArray(v)
      ? `[${v.join(',')}]`
      : ((v as string | undefined) ?? (f.kind === 'list' || f.kind === 'array' ? '[]' : f.kind === 'bool' ? 'false' : ''));
    if (CLASSIFIED_FLAGS.has(f.name) && text !== '' && text !== '[]') text = 'CLASSIFIED';
    out[f.name] = text;
  }
  return Object.freeze(out);
}

/** The text `--version` prints: ours and the Kubernetes version this build targets (`raw`: as JSON). */
function versionText(raw = false): string {
  if (!raw) return `${COMPONENT_NAME} ${HOST_VERSION} (Kubernetes ${K8S_VERSION})`;
  return JSON.stringify(
    {
      component: COMPONENT_NAME,
      version: HOST_VERSION,
      kubernetesVersion: K8S_VERSION,
      nodeVersion: process.version,
      platform: `${process.platform}/${process.arch}`,
    },
    null,
    2,
  );
}

/**
 * Upstream's `--version[=true|raw|false|vX.Y.Z]`: true and raw print (as the
 * help does: a result, not an error), false is nothing, and a version to
 * report has no effect here (a warning). Removed from `argv`.
 */
function takeVersion(argv: readonly string[], inert: string[]): { rest: string[]; print?: string } {
  const rest: string[] = [];
  let print: string | undefined;
  for (const [i, word] of argv.entries()) {
    if (word === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const m = /^--version(?:=(.*))?$/.exec(word);
    if (!m) {
      rest.push(word);
      continue;
    }
    const value = m[1] ?? 'true';
    if (value === 'true') print = versionText();
    else if (value === 'raw') print = versionText(true);
    else if (value !== 'false') inert.push(`--version=${value} has no effect: this host reports its own version (${HOST_VERSION})`);
  }
  return { rest, print };
}

/**
 * Step 1: argv → HostOptions (text values) plus tokenizing problems and the
 * warnings for upstream flags that have no effect here, or the help text.
 */
function parseFlags(
  argv: readonly string[],
): { options: HostOptions; errors: string[]; inert: string[]; forProvider?: { flags: string[]; controllers: string[] } } | { help: string } {
  const errors: string[] = [];
  const inert: string[] = [];
  const version = takeVersion(argv, inert);
  if (version.print !== undefined) return { help: version.print };
  let tokens = normalize(version.rest, errors);
  for (;;) {
    const program = newProgram();
    let out = '';
    program.configureOutput({ writeOut: (s) => (out += s), writeErr: () => {} });
    try {
      program.parse(tokens, { from: 'user' });
    } catch (err) {
      if (!(err instanceof CommanderError)) throw err;
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help') return { help: out };
      if (err.code === 'commander.optionMissingArgument' && tokens.length > 0) {
        // Only the last word can lack its value: value flags take the next word whatever it is.
        const flag = tokens[tokens.length - 1]!;
        errors.push(`${flag} needs a value: pass ${flag.startsWith('--') ? `${flag}=VALUE` : `${flag} VALUE`}`);
        tokens = tokens.slice(0, -1);
        continue;
      }
      errors.push(err.message.replace(/^error: /, ''));
      return { options: {}, errors, inert };
    }
    const owned: OwnedItem[] = [];
    errors.push(...leftoverErrors(program.args, owned));
    inert.push(...inertWarnings(program));
    const options = takeProviderOwned(collect(program), owned, inert);
    // The provider named by --cloud-provider declares them: they are its, passed on (checked against its declaration at start).
    const provider = options.cloudProvider;
    const isDeclared = (i: OwnedItem) => provider !== undefined && (i.entry.declaredBy ?? []).includes(provider);
    const line = providerOwnedLine(owned.filter((i) => !isDeclared(i)));
    if (line !== undefined) errors.push(line);
    const declared = owned.filter(isDeclared);
    const forProvider = {
      flags: declared.flatMap((i) => (i.word !== undefined ? [i.word] : [])),
      controllers: declared.flatMap((i) => (i.controller !== undefined ? [i.controller] : [])),
    };
    return { options, errors, inert, forProvider };
  }
}

function newProgram(): Command {
  const program = new Command(COMPONENT_NAME)
    .description('Kubernetes cloud-controller-manager whose cloud provider is an out-of-process gRPC plugin.')
    .exitOverride()
    .allowUnknownOption()
    .allowExcessArguments()
    .helpOption('-h, --help', 'Show this help.');
  for (const f of FLAGS) program.addOption(toOption(f));
  for (const f of INERT_FLAGS) {
    program.addOption(
      toOption({
        name: f.name,
        key: f.name as keyof HostOptions,
        kind: f.kind,
        value: f.value,
        help: `Accepted for upstream compatibility; no effect: ${f.why}.`,
      }),
    );
  }
  program.addOption(new Option('--version [raw]', 'Print the version (raw: as JSON) and exit.'));
  return program;
}

/** One warning per upstream flag given that has no effect here. */
function inertWarnings(program: Command): string[] {
  const values = program.opts<Record<string, unknown>>();
  return INERT_FLAGS.filter((f) => values[program.options.find((o) => o.long === `--${f.name}`)!.attributeName()] !== undefined).map(
    (f) => `--${f.name} has no effect: ${f.why}${f.deprecated ? ` (deprecated upstream: ${f.deprecated})` : ''}`,
  );
}

/**
 * Takes a provider's own controllers out of --controllers and a provider's
 * own CIDR allocator (when allocating) out of the node IPAM flags, recording them in `owned`
 * (reported as one line), so that compileHostConfig does not report them a
 * second time. Disabling a provider's controller (`-tagging`) asks for what
 * already holds here: a warning, no error.
 */
function takeProviderOwned(options: HostOptions, owned: OwnedItem[], warnings: string[]): HostOptions {
  const out = { ...options };
  if (out.controllers !== undefined) {
    out.controllers = out.controllers.filter((entry) => {
      const disable = entry.startsWith('-');
      const entryOwner = ownerOfController(disable ? entry.slice(1) : entry);
      if (entryOwner === undefined) return true;
      if (disable) warnings.push(`--controllers=${entry} has no effect: ${entry.slice(1)} belongs to ${entryOwner.owner}, not to this host`);
      else owned.push({ what: `--controllers=${entry}`, controller: entry, entry: entryOwner });
      return false;
    });
  }
  // As upstream, the allocator matters only when allocating.
  const allocating = out.allocateNodeCidrs !== undefined && /^(1|t|T|true|TRUE|True)$/.test(out.allocateNodeCidrs);
  const allocator = allocating && out.cidrAllocatorType !== undefined ? ownerOfCidrAllocator(out.cidrAllocatorType) : undefined;
  if (allocator !== undefined) {
    owned.push({ what: `--cidr-allocator-type=${out.cidrAllocatorType!}`, entry: allocator });
    delete out.cidrAllocatorType;
    delete out.allocateNodeCidrs;
  }
  return out;
}

function toOption(f: FlagSpec): Option {
  const long = f.short ? `-${f.short}, --${f.name}` : `--${f.name}`;
  const flags = f.kind === 'bool' ? `${long} [bool]` : `${long} <${f.value ?? 'value'}>`;
  const dflt = defaultText(f.key);
  const option = new Option(flags, dflt === undefined ? f.help : `${f.help} (default ${dflt})`);
  if (f.kind === 'list' || f.kind === 'array') {
    option.argParser((value: string, previous: string[] | undefined) => [
      ...(previous ?? []),
      ...(f.kind === 'list'
        ? value
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '')
        : [value]),
    ]);
  }
  return option;
}

function defaultText(key: keyof HostOptions): string | undefined {
  const d = (DEFAULT_OPTIONS as Record<string, string | readonly string[]>)[key];
  if (d === undefined) return undefined;
  if (typeof d === 'string') return d;
  return d.length ? d.join(',') : undefined;
}

function collect(program: Command): HostOptions {
  const values = program.opts<Record<string, unknown>>();
  const options: Record<string, unknown> = {};
  for (const f of FLAGS) {
    const attr = program.options.find((o) => o.long === `--${f.name}`)!.attributeName();
    const v = values[attr];
    if (v === undefined) continue;
    options[f.key] = v === true ? 'true' : v;
  }
  return options as HostOptions;
}

const BOOL_FLAGS = new Set([...FLAGS, ...INERT_FLAGS].filter((f) => f.kind === 'bool').map((f) => `--${f.name}`));
const SHORT_FLAGS = new Map(FLAGS.filter((f) => f.short).map((f) => [`-${f.short}`, `--${f.name}`]));

/**
 * pflag spellings commander lacks: `-v=2` → `--v=2`; a bare boolean flag
 * becomes `--flag=true` so it never swallows the next word. Words after `--`
 * are positional arguments, which this program does not take.
 */
function normalize(argv: readonly string[], errors: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--') {
      for (const rest of argv.slice(i + 1)) errors.push(unexpectedArgument(rest));
      break;
    }
    const eq = word.indexOf('=');
    const head = eq < 0 ? word : word.slice(0, eq);
    const long = SHORT_FLAGS.get(head);
    if (long !== undefined && eq >= 0) {
      out.push(`${long}${word.slice(eq)}`);
    } else if (BOOL_FLAGS.has(word)) {
      out.push(`${word}=true`);
      const next = argv[i + 1];
      if (next !== undefined && /^(true|false|t|f|TRUE|FALSE|True|False|0|1)$/.test(next)) {
        errors.push(`unexpected argument "${next}" after ${word}: boolean flags take a value only with =, e.g. ${word}=${next}`);
        i++;
      }
    } else {
      out.push(word);
    }
  }
  return out;
}

/**
 * Words commander did not consume: unknown flags (with their value, if
 * separate) and positional arguments. Flags of a known provider go to
 * `owned` (one line for all of them); flags upstream removed name their
 * replacement; any other unknown flag says where a provider's own flag goes.
 */
function leftoverErrors(args: readonly string[], owned: OwnedItem[]): string[] {
  const errors: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (!word.startsWith('-') || word === '-') {
      errors.push(unexpectedArgument(word));
      continue;
    }
    const name = word.split('=')[0]!;
    const bare = name.replace(/^-+/, '');
    const next = args[i + 1];
    const takesNext = !word.includes('=') && next !== undefined && !next.startsWith('-');
    if (takesNext) i++; // its value
    const asArg = takesNext ? `${name}=${next!}` : word;
    const owner = ownerOfFlag(bare);
    if (owner !== undefined) {
      owned.push({ what: name, word: asArg, entry: owner });
      continue;
    }
    const removed = REMOVED_FLAGS[bare];
    if (removed !== undefined) {
      errors.push(`${name} is not accepted: ${removed}`);
      continue;
    }
    const hint = suggest(name);
    errors.push(
      `unknown flag ${name}: ${hint ? `did you mean --${hint}? ` : ''}run with --help to list the flags; if it is your provider's own flag, ${passToProvider([asArg])}`,
    );
  }
  return errors;
}

function unexpectedArgument(word: string): string {
  return `unexpected argument ${JSON.stringify(word)}: ${COMPONENT_NAME} takes only flags; write values as --flag=value`;
}

/** The known flag closest to `given` (edit distance ≤ 2, or a prefix), if any. */
function suggest(given: string): string | undefined {
  const bare = given.replace(/^-+/, '');
  let best: { name: string; d: number } | undefined;
  for (const f of FLAGS) {
    const d = f.name.startsWith(bare) && bare.length >= 3 ? 1 : editDistance(bare, f.name);
    if (d <= 2 && (best === undefined || d < best.d)) best = { name: f.name, d };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}
