/**
 * The plugin handshake and launch contract, shared by the host and the SDK.
 * This file is the single source of these constants; docs/protocol.md
 * describes them for authors in other languages.
 *
 * Launch (exec mode): the host starts the provider executable with
 *   CCM_PLUGIN_MAGIC_COOKIE=<MAGIC_COOKIE_VALUE>
 *   CCM_PLUGIN_PROTOCOL_VERSIONS=1        (majors the host speaks, comma list)
 *   CCM_PLUGIN_ENDPOINT=unix:///dir/x.sock (where the provider must listen)
 *   CCM_PLUGIN_INSTANCE_ID=<uuid>          (echoed by GetPluginInfo)
 * The provider binds the socket, then prints exactly one line on stdout:
 *   CCMPLUGIN|<core>|<protocol>|unix|<socket path>|grpc
 * and nothing else on stdout afterwards. Logs go to stderr as JSON lines.
 * The provider exits when its stdin reaches EOF (the host died).
 */

/** Environment variable carrying the magic cookie. */
export const MAGIC_COOKIE_KEY = 'CCM_PLUGIN_MAGIC_COOKIE';
/**
 * Magic cookie value. Not a security measure: it only stops a person from
 * running a provider by hand and wondering why it waits silently.
 */
export const MAGIC_COOKIE_VALUE = 'b7c6c4f1a3e04d0e9d1f2a7c5e8b6a90-ccm-provider';
/** Environment variable with the protocol majors the host speaks. */
export const ENV_PROTOCOL_VERSIONS = 'CCM_PLUGIN_PROTOCOL_VERSIONS';
/** Environment variable with the endpoint the provider must listen on. */
export const ENV_ENDPOINT = 'CCM_PLUGIN_ENDPOINT';
/** Environment variable with the launch nonce echoed by GetPluginInfo. */
export const ENV_INSTANCE_ID = 'CCM_PLUGIN_INSTANCE_ID';
/** Environment variable with the log level the host wants (trace..error). */
export const ENV_LOG_LEVEL = 'CCM_PLUGIN_LOG_LEVEL';
/**
 * Sidecar mode: environment variable with the endpoint a provider started by
 * something other than the host (e.g. a container next to it) listens on.
 * Only read when the magic cookie is absent. Same as `--endpoint=<endpoint>`.
 */
export const ENV_SIDECAR_ENDPOINT = 'CCM_PROVIDER_ENDPOINT';

/**
 * Largest gRPC message either side sends or accepts (16 MiB). The host and
 * the SDK both set it explicitly so neither relies on grpc-js defaults (4 MiB
 * receive), which would differ between the two ends.
 */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** grpc-js channel/server options that apply MAX_MESSAGE_BYTES. */
export const GRPC_MESSAGE_SIZE_OPTIONS = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
} as const;
/** Longest unix socket path the kernel accepts (sun_path is 108 bytes with the NUL). */
export const MAX_UNIX_SOCKET_PATH_BYTES = 107;

/** First field of the handshake line. */
export const HANDSHAKE_PREFIX = 'CCMPLUGIN';
/** Version of the handshake line itself. */
export const CORE_PROTOCOL_VERSION = 1;
/** Protocol majors this build speaks (ccm.provider.v1). */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly number[] = [1];
/** Minor revision of protocol 1 this build implements. */
export const PROTOCOL_MINOR = 1;
/** A handshake line longer than this is rejected (a socket path is < 108). */
export const MAX_HANDSHAKE_LINE_BYTES = 1024;
/** Service name registered with grpc.health.v1. */
export const HEALTH_SERVICE_NAME = 'ccm.provider.v1';
/** ErrorInfo.domain of the protocol's error reasons. */
export const ERROR_DOMAIN = 'ccm.provider.v1';

/** ErrorInfo metadata key of a DEFERRED answer's own reason (CamelCase, e.g. "QuotaExhausted"). */
export const DEFERRED_REASON_KEY = 'reason';
/** What a deferral's own reason must look like: a Kubernetes condition reason (CamelCase), at most 64 characters. */
export const DEFERRED_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]{0,62}[A-Za-z0-9_])?$/;

/** ErrorInfo reasons; see proto/ccm/provider/v1/common.proto. */
export const ErrorReason = {
  INSTANCE_NOT_FOUND: 'INSTANCE_NOT_FOUND',
  RATE_LIMITED: 'RATE_LIMITED',
  QUOTA_EXCEEDED: 'QUOTA_EXCEEDED',
  IMPLEMENTED_ELSEWHERE: 'IMPLEMENTED_ELSEWHERE',
  CLOUD_API_ERROR: 'CLOUD_API_ERROR',
  IN_USE: 'IN_USE',
  NOT_CONFIGURED: 'NOT_CONFIGURED',
  /** Protocol 1.1: "not now", with the provider's own reason (DEFERRED_REASON_KEY) and an earliest retry (RetryInfo). */
  DEFERRED: 'DEFERRED',
} as const;
export type ErrorReason = (typeof ErrorReason)[keyof typeof ErrorReason];

/** A parsed handshake line. */
export interface Handshake {
  core: number;
  protocol: number;
  network: 'unix' | 'tcp';
  address: string;
  transport: 'grpc';
}

/** Formats the one line a provider prints on stdout (without newline). */
export function formatHandshake(h: Omit<Handshake, 'core' | 'transport'>): string {
  return [HANDSHAKE_PREFIX, CORE_PROTOCOL_VERSION, h.protocol, h.network, h.address, 'grpc'].join('|');
}

/** Outcome of reading one stdout line from a provider. */
export type HandshakeParse =
  | { kind: 'handshake'; handshake: Handshake }
  /** Not a handshake line at all: the host logs it and keeps waiting. */
  | { kind: 'other' }
  /** A handshake line that is wrong: the host rejects the provider. */
  | { kind: 'invalid'; reason: string };

/**
 * Parses one stdout line. Lines without the prefix are `other`; a line with
 * the prefix must be fully valid and name a protocol the host offered.
 */
export function parseHandshake(line: string, offered: readonly number[] = SUPPORTED_PROTOCOL_VERSIONS): HandshakeParse {
  const trimmed = line.replace(/\r?\n$/, '');
  if (!trimmed.startsWith(HANDSHAKE_PREFIX + '|')) return { kind: 'other' };
  if (Buffer.byteLength(trimmed) > MAX_HANDSHAKE_LINE_BYTES) {
    return { kind: 'invalid', reason: `handshake line is longer than ${MAX_HANDSHAKE_LINE_BYTES} bytes` };
  }
  const parts = trimmed.split('|');
  if (parts.length !== 6) {
    return { kind: 'invalid', reason: `handshake has ${parts.length} fields, want 6 (${HANDSHAKE_PREFIX}|core|protocol|network|address|grpc)` };
  }
  const [, coreS, protoS, network, address, transport] = parts as [string, string, string, string, string, string];
  const core = Number(coreS);
  const protocol = Number(protoS);
  if (!/^\d+$/.test(coreS) || core !== CORE_PROTOCOL_VERSION) {
    return {
      kind: 'invalid',
      reason: `handshake core version ${JSON.stringify(coreS)} is not ${CORE_PROTOCOL_VERSION}: rebuild the plugin with a matching SDK`,
    };
  }
  if (!/^\d+$/.test(protoS)) return { kind: 'invalid', reason: `protocol version ${JSON.stringify(protoS)} is not a number` };
  if (!offered.includes(protocol)) {
    const max = Math.max(...offered);
    const side = protocol > max ? 'upgrade the host' : 'upgrade the plugin';
    return { kind: 'invalid', reason: `plugin speaks protocol ${protocol}, host speaks ${offered.join(',')}: ${side}` };
  }
  if (network !== 'unix' && network !== 'tcp') return { kind: 'invalid', reason: `network ${JSON.stringify(network)} is not unix or tcp` };
  if (address.length === 0) return { kind: 'invalid', reason: 'handshake address is empty' };
  if (network === 'tcp' && !/^(127\.0\.0\.1|\[::1\]|localhost):\d{1,5}$/.test(address)) {
    return { kind: 'invalid', reason: `tcp address ${JSON.stringify(address)} is not a loopback host:port` };
  }
  if (transport !== 'grpc') return { kind: 'invalid', reason: `transport ${JSON.stringify(transport)} is not grpc` };
  return { kind: 'handshake', handshake: { core, protocol, network, address, transport: 'grpc' } };
}

/** Parses CCM_PLUGIN_PROTOCOL_VERSIONS ("1,2"); invalid entries are dropped. */
export function parseVersionList(value: string | undefined): number[] {
  if (!value) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => /^\d+$/.test(s))
    .map(Number);
}

/** Highest version both sides speak, or undefined. */
export function negotiateVersion(host: readonly number[], plugin: readonly number[]): number | undefined {
  const common = plugin.filter((v) => host.includes(v));
  return common.length ? Math.max(...common) : undefined;
}

/**
 * `unix:///abs/path.sock` or `unix:/abs/path` → `/abs/path.sock`; undefined if
 * not a unix endpoint with an absolute path (`unix://relative` names no
 * absolute path and is rejected rather than read as `//relative`).
 */
export function unixSocketPath(endpoint: string): string | undefined {
  const m = /^unix:(?:\/\/)?(\/[^/].*)$/.exec(endpoint);
  return m?.[1];
}
