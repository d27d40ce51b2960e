/**
 * Errors the cloud layer rejects with. Controllers branch on these classes
 * the way upstream branches on InstanceNotFound, ImplementedElsewhere and
 * RetryError; the work queue reads `retryAfterMs` (clamped, see runWorkers)
 * to choose the requeue delay.
 */

/** A cloud call failed; `code` is the gRPC status code name (e.g. "UNAVAILABLE"). */
export class CloudCallError extends Error {
  override name = 'CloudCallError';
  constructor(
    readonly method: string,
    readonly code: string,
    message: string,
    readonly reason?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
  /** UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED, RESOURCE_EXHAUSTED (not quota), INTERNAL. */
  get transient(): boolean {
    if (this.reason === 'QUOTA_EXCEEDED') return false;
    return ['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'ABORTED', 'CANCELLED', 'RESOURCE_EXHAUSTED', 'INTERNAL', 'UNKNOWN'].includes(this.code);
  }
}

/** The cloud has no such instance (upstream cloudprovider.InstanceNotFound). */
export class InstanceNotFoundError extends CloudCallError {
  override name = 'InstanceNotFoundError';
}

/** Another implementation owns the object (upstream ImplementedElsewhere). */
export class ImplementedElsewhereError extends CloudCallError {
  override name = 'ImplementedElsewhereError';
}

/** The provider does not implement the method (UNIMPLEMENTED). */
export class NotImplementedError extends CloudCallError {
  override name = 'NotImplementedError';
}

/** The provider asked to be retried after a fixed delay (RetryInfo; upstream api.RetryError). */
export class RetryAfterError extends CloudCallError {
  override name = 'RetryAfterError';
  constructor(
    method: string,
    code: string,
    message: string,
    reason: string | undefined,
    readonly retryAfterMs: number,
  ) {
    super(method, code, message, reason);
  }
}

/**
 * The provider answered "not now" (protocol 1.1, ErrorInfo DEFERRED): a
 * wait, not a failure. `deferredReason` is the provider's reason (CamelCase;
 * "Unspecified" when it sent none or an invalid one), `retryAfterMs` its
 * earliest retry (undefined without a RetryInfo: the caller's backoff).
 * Callers record it (condition, metric) and retry without Warning events.
 */
export class DeferredError extends CloudCallError {
  override name = 'DeferredError';
  constructor(
    method: string,
    code: string,
    message: string,
    readonly deferredReason: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(method, code, message, 'DEFERRED');
  }
}

/** The plugin is not running or not ready; the call was not sent or was cut off. */
export class PluginUnavailableError extends Error {
  override name = 'PluginUnavailableError';
  readonly transient = true;
}

/**
 * The provider answered NOT_CONFIGURED: it lost (or never had) its
 * configuration. "Not ready", never an answer; the supervisor configures it
 * again.
 */
export class PluginNotConfiguredError extends PluginUnavailableError {
  override name = 'PluginNotConfiguredError';
}

/** The provider answered something invalid; nothing was written to Kubernetes. */
export class InvalidCloudResponseError extends Error {
  override name = 'InvalidCloudResponseError';
  constructor(
    readonly method: string,
    readonly problems: string[],
  ) {
    super(
      `provider returned an invalid ${method} response: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`,
    );
  }
}

/**
 * CreateVolume succeeded in the cloud but its answer is unusable (capacity
 * outside the claim's range, too much volume_context, no volume, ...): a
 * volume named as requested exists, so the caller must not treat this as
 * "nothing created". `volumeId` is the answered id when it passed validation
 * (DeleteVolume may be called with it), else undefined (the volume cannot be
 * named to the cloud).
 */
export class UnusableVolumeError extends InvalidCloudResponseError {
  override name = 'UnusableVolumeError';
  constructor(
    problems: string[],
    readonly volumeId: string | undefined,
  ) {
    super('CreateVolume', problems);
  }
}

/**
 * A start-up problem the operator must fix (also thrown by a controller
 * factory for a configuration it cannot run with); main prints its message
 * as one line and exits non-zero.
 */
export class HostStartError extends Error {
  override name = 'HostStartError';
}
