/**
 * Flags of the upstream cloud-controller-manager (k8s.io/cloud-provider
 * v0.34 to v0.37) that this host accepts but that change nothing here, each with why.
 * They are accepted so that existing upstream manifests start unchanged;
 * each one given is reported once at start as a configuration warning. The
 * full upstream list, hidden and deprecated flags included, is
 * test/fixtures/upstream-ccm-flags.txt (v0.34, the targeted version) and
 * upstream-ccm-flags-v0.37.2.txt (the newest; regenerate them with `npm run
 * upstream:flags [-- v0.37.2]`); a unit test fails on any flag of either this
 * host rejects.
 * Flags upstream no longer accepts are refused with their replacement
 * (REMOVED_FLAGS in provider-owned.ts).
 */

/** How an accepted-but-inert flag takes its value (as in flags.ts). */
export type InertKind = 'bool' | 'string' | 'list' | 'array';

export interface InertFlag {
  /** Long name without dashes. */
  name: string;
  kind: InertKind;
  /** Placeholder for the value in help. */
  value?: string;
  /** Why it has no effect, and what to use instead where there is something. */
  why: string;
  /** Upstream's deprecation message, for flags upstream hides and still accepts. */
  deprecated?: string;
}

const LOG_FORMAT = 'logs are written by pino, unbuffered and in one stream';

/** Every upstream flag this host accepts without acting on it, in upstream's help order. */
export const INERT_FLAGS: readonly InertFlag[] = [
  { name: 'contention-profiling', kind: 'bool', why: 'no profiling endpoint; use node --cpu-prof or --heap-prof' },
  { name: 'profiling', kind: 'bool', why: 'no /debug/pprof endpoint; use node --cpu-prof or --heap-prof' },
  {
    name: 'enable-leader-migration',
    kind: 'bool',
    why: 'leader migration moves controllers out of kube-controller-manager; this host only runs external cloud controllers',
  },
  { name: 'leader-migration-config', kind: 'string', value: 'file', why: 'leader migration is not supported (see --enable-leader-migration)' },
  { name: 'controller-start-interval', kind: 'string', value: 'duration', why: 'controllers start together once the plugin is ready' },
  {
    name: 'external-cloud-volume-plugin',
    kind: 'string',
    value: 'name',
    why: 'in-tree volume plugins do not exist here; the volume controllers talk to the provider plugin',
  },
  { name: 'feature-gates', kind: 'list', value: 'key=bool', why: "no upstream feature gate changes this host's behaviour" },
  { name: 'kube-api-content-type', kind: 'string', value: 'type', why: 'requests are JSON' },
  {
    name: 'webhooks',
    kind: 'list',
    value: 'names',
    why: 'the PersistentVolume label webhook is enabled with its controller in --controllers and --webhook-secure-port',
  },
  { name: 'disable-http2-serving', kind: 'bool', why: 'the --secure-port server speaks HTTP/1.1 only' },
  { name: 'http2-max-streams-per-connection', kind: 'string', value: 'int', why: 'the --secure-port server speaks HTTP/1.1 only' },
  // Added upstream in v0.36/v0.37.
  { name: 'webhook-disable-http2-serving', kind: 'bool', why: 'the webhook server speaks HTTP/1.1 only' },
  {
    name: 'concurrent-node-lifecycle-syncs',
    kind: 'string',
    value: 'int',
    why: 'the node lifecycle controller checks every Node each --node-monitor-period, with batched provider calls and bounded concurrency of its own',
  },
  { name: 'permit-address-sharing', kind: 'bool', why: 'the server does not set SO_REUSEADDR sharing options' },
  { name: 'permit-port-sharing', kind: 'bool', why: 'the server does not set SO_REUSEPORT' },
  {
    name: 'tls-sni-cert-key',
    kind: 'array',
    value: 'cert,key[:names]',
    why: 'one serving certificate (--tls-cert-file, or a self-signed one) is used for every name',
  },
  { name: 'log-flush-frequency', kind: 'string', value: 'duration', why: LOG_FORMAT },
  { name: 'log-text-info-buffer-size', kind: 'string', value: 'quantity', why: LOG_FORMAT },
  { name: 'log-text-split-stream', kind: 'bool', why: LOG_FORMAT },
  { name: 'vmodule', kind: 'string', value: 'pattern=N,...', why: 'verbosity is per process (-v), not per source file' },
  // Hidden and deprecated upstream (options/kubecloudshared.go), still accepted there: many providers' manifests pass them.
  {
    name: 'allow-untagged-cloud',
    kind: 'bool',
    why: 'this host always starts with a provider that does not tag cloud objects with the cluster (HasClusterID=false) and logs a warning, which is what the flag makes upstream do',
    deprecated: 'This flag is deprecated and will be removed in a future release. A cluster-id will be required on cloud instances.',
  },
  {
    name: 'node-sync-period',
    kind: 'string',
    value: 'duration',
    why: 'upstream made it a no-op; see --node-monitor-period and --route-reconciliation-period',
    deprecated: 'This flag is currently no-op and will be deleted.',
  },
];
