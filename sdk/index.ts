/**
 * The provider SDK's public surface. A provider executable is:
 *
 *   import { serve, InstanceNotFoundError, type CloudProvider } from '<sdk>/index.js';
 *   const provider: CloudProvider = { info: {...}, instances: { async instanceExists(req, ctx) {...} } };
 *   await serve(provider);
 *
 * Test helpers (startInProcess, typed clients) live in ./testing.js, so
 * production code does not load them.
 */
export { serve, type ServeHandle, type ServeOptions } from './serve.js';
export { checkProvider, DEFAULT_PROBE_TIMEOUT_MS, PROBE_COMMAND, probeIfAsked, runProbe } from './probe.js';
export type {
  AsyncService,
  CallContext,
  CloudProvider,
  ClustersProvider,
  InstancesProvider,
  LoadBalancersProvider,
  ProviderInfo,
  ProviderSchema,
  RoutesProvider,
  VolumesProvider,
  ZonesProvider,
} from './provider.js';
export {
  AlreadyExistsError,
  Code,
  DeferredError,
  ImplementedElsewhereError,
  InstanceNotFoundError,
  InUseError,
  NotConfiguredError,
  InvalidArgumentError,
  NotFoundError,
  NotImplementedError,
  ProviderError,
  QuotaExceededError,
  RateLimitedError,
  RetryError,
  UnavailableError,
  toStatus,
  type ProviderErrorOptions,
} from './errors.js';
export { SchemaObjectKind, SchemaValueType } from '../proto/gen/ccm/provider/v1/identity.js';
export { createProviderLogger, type Logger, type ProviderLoggerOptions } from './log.js';
export {
  ENV_SIDECAR_ENDPOINT,
  ErrorReason,
  DEFERRED_REASON_KEY,
  HEALTH_SERVICE_NAME,
  MAX_MESSAGE_BYTES,
  PROTOCOL_MINOR,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './protocol.js';
export { podBackendsOf, podTargets, type PodBackendsView, type PodTarget } from './pod-backends.js';
