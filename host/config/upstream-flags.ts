/**
 * Flags of the upstream cloud-controller-manager (k8s.io/cloud-provider
 * v0.34) that this host accepts but that change nothing here, each with why.
 * They are accepted so that existing upstream manifests start unchanged;
 * each one given is reported once at start as a configuration warning. The
 * full upstream list is test/fixtures/upstream-ccm-flags.txt (regenerate it
 * with `npm run upstream:flags`); a unit test fails on any flag of it this
 * host rejects.
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
}

const SERVING_AUTH =
  'the /healthz and /metrics server does not authenticate or authorize requests yet (issue 14): keep --bind-address on 127.0.0.1 or protect the port with a NetworkPolicy';
const LOG_FORMAT = 'logs are written by pino, unbuffered and in one stream';

/** Every upstream flag this host accepts without acting on it, in upstream's help order. */
export const INERT_FLAGS: readonly InertFlag[] = [
  { name: 'contention-profiling', kind: 'bool', why: 'no profiling endpoint; use node --cpu-prof or --heap-prof' },
  { name: 'profiling', kind: 'bool', why: 'no /debug/pprof endpoint; use node --cpu-prof or --heap-prof' },
  { name: 'enable-leader-migration', kind: 'bool', why: 'leader migration moves controllers out of kube-controller-manager; this host only runs external cloud controllers' },
  { name: 'leader-migration-config', kind: 'string', value: 'file', why: 'leader migration is not supported (see --enable-leader-migration)' },
  { name: 'controller-start-interval', kind: 'string', value: 'duration', why: 'controllers start together once the plugin is ready' },
  { name: 'external-cloud-volume-plugin', kind: 'string', value: 'name', why: 'in-tree volume plugins do not exist here; the volume controllers talk to the provider plugin' },
  { name: 'feature-gates', kind: 'list', value: 'key=bool', why: 'no upstream feature gate changes this host\'s behaviour' },
  { name: 'kube-api-content-type', kind: 'string', value: 'type', why: 'requests are JSON' },
  { name: 'webhooks', kind: 'list', value: 'names', why: 'the PersistentVolume label webhook is enabled with its controller in --controllers and --webhook-secure-port' },
  { name: 'cert-dir', kind: 'string', value: 'dir', why: 'no self-signed certificate is generated for the /healthz and /metrics server; give --tls-cert-file and --tls-private-key-file for HTTPS' },
  { name: 'disable-http2-serving', kind: 'bool', why: 'the /healthz and /metrics server speaks HTTP/1.1 only' },
  { name: 'http2-max-streams-per-connection', kind: 'string', value: 'int', why: 'the /healthz and /metrics server speaks HTTP/1.1 only' },
  { name: 'permit-address-sharing', kind: 'bool', why: 'the server does not set SO_REUSEADDR sharing options' },
  { name: 'permit-port-sharing', kind: 'bool', why: 'the server does not set SO_REUSEPORT' },
  { name: 'tls-cipher-suites', kind: 'list', value: 'names', why: 'Node.js\'s default TLS cipher suites are used' },
  { name: 'tls-min-version', kind: 'string', value: 'version', why: 'Node.js\'s default minimum TLS version (1.2) is used' },
  { name: 'tls-sni-cert-key', kind: 'array', value: 'cert,key[:names]', why: 'one serving certificate (--tls-cert-file) is used for every name' },
  { name: 'authentication-kubeconfig', kind: 'string', value: 'file', why: SERVING_AUTH },
  { name: 'authentication-skip-lookup', kind: 'bool', why: SERVING_AUTH },
  { name: 'authentication-token-webhook-cache-ttl', kind: 'string', value: 'duration', why: SERVING_AUTH },
  { name: 'authentication-tolerate-lookup-failure', kind: 'bool', why: SERVING_AUTH },
  { name: 'client-ca-file', kind: 'string', value: 'file', why: SERVING_AUTH },
  { name: 'requestheader-allowed-names', kind: 'list', value: 'names', why: SERVING_AUTH },
  { name: 'requestheader-client-ca-file', kind: 'string', value: 'file', why: SERVING_AUTH },
  { name: 'requestheader-extra-headers-prefix', kind: 'list', value: 'prefixes', why: SERVING_AUTH },
  { name: 'requestheader-group-headers', kind: 'list', value: 'headers', why: SERVING_AUTH },
  { name: 'requestheader-uid-headers', kind: 'list', value: 'headers', why: SERVING_AUTH },
  { name: 'requestheader-username-headers', kind: 'list', value: 'headers', why: SERVING_AUTH },
  { name: 'authorization-always-allow-paths', kind: 'list', value: 'paths', why: SERVING_AUTH },
  { name: 'authorization-kubeconfig', kind: 'string', value: 'file', why: SERVING_AUTH },
  { name: 'authorization-webhook-cache-authorized-ttl', kind: 'string', value: 'duration', why: SERVING_AUTH },
  { name: 'authorization-webhook-cache-unauthorized-ttl', kind: 'string', value: 'duration', why: SERVING_AUTH },
  { name: 'log-flush-frequency', kind: 'string', value: 'duration', why: LOG_FORMAT },
  { name: 'log-text-info-buffer-size', kind: 'string', value: 'quantity', why: LOG_FORMAT },
  { name: 'log-text-split-stream', kind: 'bool', why: LOG_FORMAT },
  { name: 'vmodule', kind: 'string', value: 'pattern=N,...', why: 'verbosity is per process (-v), not per source file' },
];
