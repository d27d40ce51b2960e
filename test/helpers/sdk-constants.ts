/**
 * The protocol constants every SDK must spell as sdk/protocol.ts does, with
 * their names in the Go and Python SDKs and the source text each must have
 * (a string literal, or a number). The Go and Python SDK tests check their
 * sources against this one table, so a new constant is added once.
 */
import {
  CORE_PROTOCOL_VERSION,
  DEFERRED_REASON_KEY,
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_LOG_LEVEL,
  ENV_PROTOCOL_VERSIONS,
  ENV_SIDECAR_ENDPOINT,
  ERROR_DOMAIN,
  HANDSHAKE_PREFIX,
  HEALTH_SERVICE_NAME,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  MAX_UNIX_SOCKET_PATH_BYTES,
  PROTOCOL_MINOR,
} from '../../sdk/protocol.js';

export const SDK_CONSTANTS: { go: string; python: string; source: string }[] = [
  { go: 'MagicCookieKey', python: 'MAGIC_COOKIE_KEY', source: JSON.stringify(MAGIC_COOKIE_KEY) },
  { go: 'MagicCookieValue', python: 'MAGIC_COOKIE_VALUE', source: JSON.stringify(MAGIC_COOKIE_VALUE) },
  { go: 'EnvProtocolVersions', python: 'ENV_PROTOCOL_VERSIONS', source: JSON.stringify(ENV_PROTOCOL_VERSIONS) },
  { go: 'EnvEndpoint', python: 'ENV_ENDPOINT', source: JSON.stringify(ENV_ENDPOINT) },
  { go: 'EnvInstanceID', python: 'ENV_INSTANCE_ID', source: JSON.stringify(ENV_INSTANCE_ID) },
  { go: 'EnvLogLevel', python: 'ENV_LOG_LEVEL', source: JSON.stringify(ENV_LOG_LEVEL) },
  { go: 'EnvSidecarEndpoint', python: 'ENV_SIDECAR_ENDPOINT', source: JSON.stringify(ENV_SIDECAR_ENDPOINT) },
  { go: 'HandshakePrefix', python: 'HANDSHAKE_PREFIX', source: JSON.stringify(HANDSHAKE_PREFIX) },
  { go: 'CoreProtocolVersion', python: 'CORE_PROTOCOL_VERSION', source: String(CORE_PROTOCOL_VERSION) },
  { go: 'ProtocolMinor', python: 'PROTOCOL_MINOR', source: String(PROTOCOL_MINOR) },
  { go: 'HealthServiceName', python: 'HEALTH_SERVICE_NAME', source: JSON.stringify(HEALTH_SERVICE_NAME) },
  { go: 'ErrorDomain', python: 'ERROR_DOMAIN', source: JSON.stringify(ERROR_DOMAIN) },
  { go: 'DeferredReasonKey', python: 'DEFERRED_REASON_KEY', source: JSON.stringify(DEFERRED_REASON_KEY) },
  { go: 'MaxUnixSocketPathBytes', python: 'MAX_UNIX_SOCKET_PATH_BYTES', source: String(MAX_UNIX_SOCKET_PATH_BYTES) },
];
