/**
 * Errors a provider throws, and their mapping to gRPC status codes plus
 * google.rpc details (ErrorInfo reason, RetryInfo delay). The mapping lives in
 * one place, `toStatus`/`fromStatus`, used by the SDK when answering and by the
 * host when reading answers.
 */
import { Metadata, status as Code, type ServiceError } from '@grpc/grpc-js';
import { Any } from '../proto/gen/google/protobuf/any.js';
import { ErrorInfo, RetryInfo } from '../proto/gen/google/rpc/error_details.js';
import { Status } from '../proto/gen/google/rpc/status.js';
import { DEFERRED_REASON_KEY, DEFERRED_REASON_PATTERN, ERROR_DOMAIN, ErrorReason } from './protocol.js';

export { Code };

const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
const RETRY_INFO_TYPE = 'type.googleapis.com/google.rpc.RetryInfo';

export interface ProviderErrorOptions {
  /** ErrorInfo reason (see ErrorReason). */
  reason?: string;
  /** RetryInfo delay: the host retries after exactly this long. */
  retryAfterMs?: number;
  /** ErrorInfo metadata. */
  metadata?: Record<string, string>;
}

/** Base class: a gRPC code, a message and optional typed details. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly reason?: string;
  readonly retryAfterMs?: number;
  readonly metadata?: Record<string, string>;
  constructor(
    readonly code: Code,
    message: string,
    opts: ProviderErrorOptions = {},
  ) {
    super(message);
    this.reason = opts.reason;
    this.retryAfterMs = opts.retryAfterMs;
    this.metadata = opts.metadata;
  }
}

/** The instance named by the request does not exist (upstream InstanceNotFound). */
export class InstanceNotFoundError extends ProviderError {
  override name = 'InstanceNotFoundError';
  constructor(message = 'instance not found', metadata?: Record<string, string>) {
    super(Code.NOT_FOUND, message, { reason: ErrorReason.INSTANCE_NOT_FOUND, metadata });
  }
}

/** A cloud object named by the request does not exist. */
export class NotFoundError extends ProviderError {
  override name = 'NotFoundError';
  constructor(message: string) {
    super(Code.NOT_FOUND, message);
  }
}

/** An object with this identity exists with incompatible settings. */
export class AlreadyExistsError extends ProviderError {
  override name = 'AlreadyExistsError';
  constructor(message: string) {
    super(Code.ALREADY_EXISTS, message);
  }
}

/** The request is malformed; retrying it unchanged will fail again. */
export class InvalidArgumentError extends ProviderError {
  override name = 'InvalidArgumentError';
  constructor(message: string) {
    super(Code.INVALID_ARGUMENT, message);
  }
}

/** The cloud throttled us; retry after `retryAfterMs` (upstream RetryError). */
export class RateLimitedError extends ProviderError {
  override name = 'RateLimitedError';
  constructor(message: string, retryAfterMs: number) {
    super(Code.RESOURCE_EXHAUSTED, message, { reason: ErrorReason.RATE_LIMITED, retryAfterMs });
  }
}

/** Not done yet (e.g. an address is still being allocated); retry after the delay. */
export class RetryError extends ProviderError {
  override name = 'RetryError';
  constructor(message: string, retryAfterMs: number) {
    super(Code.UNAVAILABLE, message, { retryAfterMs });
  }
}

/** An account quota is exhausted. */
export class QuotaExceededError extends ProviderError {
  override name = 'QuotaExceededError';
  constructor(message: string) {
    super(Code.RESOURCE_EXHAUSTED, message, { reason: ErrorReason.QUOTA_EXCEEDED });
  }
}

/** Another implementation owns this object (upstream ImplementedElsewhere). */
export class ImplementedElsewhereError extends ProviderError {
  override name = 'ImplementedElsewhereError';
  constructor(message = 'implemented by alternate to cloud provider') {
    super(Code.FAILED_PRECONDITION, message, { reason: ErrorReason.IMPLEMENTED_ELSEWHERE });
  }
}

/** The object is still in use (e.g. a volume is attached). */
export class InUseError extends ProviderError {
  override name = 'InUseError';
  constructor(message: string) {
    super(Code.FAILED_PRECONDITION, message, { reason: ErrorReason.IN_USE });
  }
}

/**
 * Protocol 1.1, "not now": the request is fine but cannot be done yet (a
 * quota, a prerequisite that does not exist yet, eventual consistency).
 * `reason` is a CamelCase word saying why (e.g. "QuotaExhausted"; it becomes
 * the Service's LoadBalancerServing condition reason and a metric label, so
 * keep the set small); `retryAfterMs` the earliest retry (the host keeps it
 * within 1 s .. 5 min). The host records it in a condition and retries
 * without Warning events. On the wire: UNAVAILABLE, ErrorInfo DEFERRED with
 * metadata {reason}, RetryInfo; a 1.0 host reads that as a retry after the
 * delay. Throws RangeError for a reason that is not CamelCase.
 */
export class DeferredError extends ProviderError {
  override name = 'DeferredError';
  constructor(
    readonly deferredReason: string,
    message: string,
    retryAfterMs: number,
  ) {
    if (!DEFERRED_REASON_PATTERN.test(deferredReason))
      throw new RangeError(`deferral reason ${JSON.stringify(deferredReason)} is not a CamelCase word of at most 64 characters`);
    super(Code.UNAVAILABLE, message, { reason: ErrorReason.DEFERRED, retryAfterMs, metadata: { [DEFERRED_REASON_KEY]: deferredReason } });
  }
}

/** The cloud is unreachable or failed transiently; the operation may be in progress. */
export class UnavailableError extends ProviderError {
  override name = 'UnavailableError';
  constructor(message: string) {
    super(Code.UNAVAILABLE, message, { reason: ErrorReason.CLOUD_API_ERROR });
  }
}

/**
 * The provider has not received Configure yet. The SDK answers every cloud
 * call with it until the first successful Configure (see
 * LifecycleService.Configure); the host configures the provider again.
 */
export class NotConfiguredError extends ProviderError {
  override name = 'NotConfiguredError';
  constructor(message = 'the provider has not been configured yet (no Configure since it started); the host configures it and retries') {
    super(Code.FAILED_PRECONDITION, message, { reason: ErrorReason.NOT_CONFIGURED });
  }
}

/** The provider does not implement this call. */
export class NotImplementedError extends ProviderError {
  override name = 'NotImplementedError';
  constructor(message = 'not implemented by this provider') {
    super(Code.UNIMPLEMENTED, message);
  }
}

/** The decoded form of a google.rpc.Status. */
export interface DecodedStatus {
  code: Code;
  message: string;
  reason?: string;
  retryAfterMs?: number;
  metadata?: Record<string, string>;
}

/** Encodes an error as a google.rpc.Status message (used for per-item batch errors too). */
export function toStatus(err: unknown): Status {
  const e = err instanceof ProviderError ? err : new ProviderError(Code.INTERNAL, err instanceof Error ? err.message : String(err));
  const details: Any[] = [];
  if (e.reason) {
    details.push({
      typeUrl: ERROR_INFO_TYPE,
      value: Buffer.from(ErrorInfo.encode({ reason: e.reason, domain: ERROR_DOMAIN, metadata: e.metadata ?? {} }).finish()),
    });
  }
  if (e.retryAfterMs !== undefined) {
    const ms = Math.max(0, Math.round(e.retryAfterMs));
    details.push({
      typeUrl: RETRY_INFO_TYPE,
      value: Buffer.from(RetryInfo.encode({ retryDelay: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } }).finish()),
    });
  }
  return { code: e.code, message: e.message, details };
}

/** Decodes a google.rpc.Status; unknown detail types are ignored. */
export function fromStatus(s: Status): DecodedStatus {
  const out: DecodedStatus = { code: s.code as Code, message: s.message };
  for (const d of s.details) {
    try {
      if (d.typeUrl === ERROR_INFO_TYPE) {
        const info = ErrorInfo.decode(d.value);
        out.reason = info.reason;
        if (Object.keys(info.metadata).length) out.metadata = info.metadata;
      } else if (d.typeUrl === RETRY_INFO_TYPE) {
        const r = RetryInfo.decode(d.value);
        const delay = r.retryDelay ?? { seconds: 0, nanos: 0 };
        out.retryAfterMs = delay.seconds * 1000 + Math.round(delay.nanos / 1e6);
      }
    } catch {
      // A malformed detail is dropped; the code and message still stand.
    }
  }
  return out;
}

/** Builds the error a grpc-js handler passes to its callback. */
export function toServiceError(err: unknown): Partial<ServiceError> {
  const status = toStatus(err);
  const metadata = new Metadata();
  if (status.details.length) metadata.set(STATUS_DETAILS_KEY, Buffer.from(Status.encode(status).finish()));
  return { code: status.code, details: status.message, message: status.message, metadata };
}

/** Reads code, message and details from an error a grpc-js client call failed with. */
export function fromServiceError(err: Partial<ServiceError>): DecodedStatus {
  const code = (typeof err.code === 'number' ? err.code : Code.UNKNOWN) as Code;
  const message = err.details ?? err.message ?? 'unknown error';
  const raw = err.metadata?.get(STATUS_DETAILS_KEY)?.[0];
  if (raw instanceof Buffer || raw instanceof Uint8Array) {
    try {
      const decoded = fromStatus(Status.decode(raw));
      return { ...decoded, code, message };
    } catch {
      // Fall through: a broken trailer still leaves a usable code.
    }
  }
  return { code, message };
}
