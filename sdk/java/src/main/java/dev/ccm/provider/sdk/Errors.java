package dev.ccm.provider.sdk;

import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Code;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Map;

/**
 * Errors in the protocol's error model (docs/protocol.md, "Error model"): a
 * canonical gRPC code, a google.rpc.ErrorInfo (domain ccm.provider.v1) whose
 * reason tells the host what the code alone cannot, and a google.rpc.RetryInfo
 * meaning "retry after exactly this long" (the host keeps it within 1 s .. 1 h).
 *
 * <p>Each helper returns a {@link StatusRuntimeException} carrying the details
 * in the standard grpc-status-details-bin trailer. Throw it from a handler (the
 * server installs {@code TransmitStatusRuntimeExceptionInterceptor}, without
 * which grpc-java answers a thrown exception with UNKNOWN and drops the
 * details) or pass it to {@code responseObserver.onError}. For the per-item
 * errors of batch responses use {@link #toStatus(Throwable)}.
 */
public final class Errors {
  private Errors() {}

  public static final String ERROR_DOMAIN = "ccm.provider.v1";

  // ErrorInfo reasons; see the header of proto/ccm/provider/v1/common.proto.
  public static final String INSTANCE_NOT_FOUND = "INSTANCE_NOT_FOUND";
  public static final String RATE_LIMITED = "RATE_LIMITED";
  public static final String QUOTA_EXCEEDED = "QUOTA_EXCEEDED";
  public static final String IMPLEMENTED_ELSEWHERE = "IMPLEMENTED_ELSEWHERE";
  public static final String CLOUD_API_ERROR = "CLOUD_API_ERROR";
  public static final String IN_USE = "IN_USE";
  public static final String NOT_CONFIGURED = "NOT_CONFIGURED";
  /** Protocol 1.1: "not now"; see {@link #deferred(String, String, long)}. */
  public static final String DEFERRED = "DEFERRED";
  /** ErrorInfo metadata key of a DEFERRED answer's own reason. */
  public static final String DEFERRED_REASON_KEY = "reason";

  private static final java.util.regex.Pattern DEFERRED_REASON = java.util.regex.Pattern.compile("^[A-Za-z]([A-Za-z0-9_,:]{0,62}[A-Za-z0-9_])?$");

  /**
   * Protocol 1.1, "not now": the request is fine but cannot be done yet (a
   * quota, a prerequisite that does not exist yet, eventual consistency).
   * reason is a CamelCase word saying why (it becomes the Service's
   * LoadBalancerServing condition reason and a metric label: keep the set
   * small); retryAfterMs the earliest retry (the host keeps it within 1 s ..
   * 5 min). On the wire: UNAVAILABLE, ErrorInfo DEFERRED with metadata
   * {reason}, RetryInfo; a 1.0 host reads it as a retry after the delay.
   *
   * @throws IllegalArgumentException if reason is not such a word (a programming error)
   */
  public static StatusRuntimeException deferred(String reason, String message, long retryAfterMs) {
    if (reason == null || !DEFERRED_REASON.matcher(reason).matches()) {
      throw new IllegalArgumentException("Errors.deferred: reason \"" + reason + "\" is not a CamelCase word of at most 64 characters");
    }
    return error(Status.Code.UNAVAILABLE, message, DEFERRED, Math.max(0, retryAfterMs), Map.of(DEFERRED_REASON_KEY, reason));
  }

  /**
   * A status with an optional ErrorInfo reason (with metadata) and an optional
   * RetryInfo delay (retryAfterMs &lt; 0: none), as a throwable.
   */
  public static StatusRuntimeException error(Status.Code code, String message, String reason, long retryAfterMs, Map<String, String> metadata) {
    return StatusProto.toStatusRuntimeException(rpcStatus(code, message, reason, retryAfterMs, metadata));
  }

  /** The google.rpc.Status of such an error (also the per-item error of batch responses). */
  public static com.google.rpc.Status rpcStatus(Status.Code code, String message, String reason, long retryAfterMs, Map<String, String> metadata) {
    com.google.rpc.Status.Builder b = com.google.rpc.Status.newBuilder().setCode(code.value()).setMessage(message == null ? "" : message);
    if (reason != null && !reason.isEmpty()) {
      b.addDetails(Any.pack(ErrorInfo.newBuilder().setReason(reason).setDomain(ERROR_DOMAIN).putAllMetadata(metadata == null ? Map.of() : metadata).build()));
    }
    if (retryAfterMs >= 0) {
      Duration d = Duration.newBuilder().setSeconds(retryAfterMs / 1000).setNanos((int) (retryAfterMs % 1000) * 1_000_000).build();
      b.addDetails(Any.pack(RetryInfo.newBuilder().setRetryDelay(d).build()));
    }
    return b.build();
  }

  private static StatusRuntimeException plain(Status.Code code, String message) {
    return error(code, message, null, -1, null);
  }

  /** The instance does not exist (NOT_FOUND, INSTANCE_NOT_FOUND): the host may delete its Node. */
  public static StatusRuntimeException instanceNotFound(String message) {
    return error(Status.Code.NOT_FOUND, message, INSTANCE_NOT_FOUND, -1, null);
  }

  /** An object other than an instance does not exist (NOT_FOUND). */
  public static StatusRuntimeException notFound(String message) {
    return plain(Status.Code.NOT_FOUND, message);
  }

  /** An object with this identity exists with other settings (ALREADY_EXISTS). */
  public static StatusRuntimeException alreadyExists(String message) {
    return plain(Status.Code.ALREADY_EXISTS, message);
  }

  /** The request (or the cloud config) is wrong; retrying it unchanged fails again (INVALID_ARGUMENT). */
  public static StatusRuntimeException invalidArgument(String message) {
    return plain(Status.Code.INVALID_ARGUMENT, message);
  }

  /** The cloud API throttled us; retry after the delay (RESOURCE_EXHAUSTED, RATE_LIMITED, RetryInfo). */
  public static StatusRuntimeException rateLimited(String message, long retryAfterMs) {
    return error(Status.Code.RESOURCE_EXHAUSTED, message, RATE_LIMITED, Math.max(0, retryAfterMs), null);
  }

  /** Not done yet (e.g. an address is still being allocated); retry after the delay (UNAVAILABLE, RetryInfo). */
  public static StatusRuntimeException retry(String message, long retryAfterMs) {
    return error(Status.Code.UNAVAILABLE, message, null, Math.max(0, retryAfterMs), null);
  }

  /** An account quota is exhausted (RESOURCE_EXHAUSTED, QUOTA_EXCEEDED). */
  public static StatusRuntimeException quotaExceeded(String message) {
    return error(Status.Code.RESOURCE_EXHAUSTED, message, QUOTA_EXCEEDED, -1, null);
  }

  /** Another implementation owns this object (FAILED_PRECONDITION, IMPLEMENTED_ELSEWHERE). */
  public static StatusRuntimeException implementedElsewhere(String message) {
    return error(Status.Code.FAILED_PRECONDITION, message, IMPLEMENTED_ELSEWHERE, -1, null);
  }

  /** The object is still in use, e.g. a volume is attached (FAILED_PRECONDITION, IN_USE). */
  public static StatusRuntimeException inUse(String message) {
    return error(Status.Code.FAILED_PRECONDITION, message, IN_USE, -1, null);
  }

  /** The cloud is unreachable or failed transiently; the operation may be in progress (UNAVAILABLE, CLOUD_API_ERROR). */
  public static StatusRuntimeException cloudUnavailable(String message) {
    return error(Status.Code.UNAVAILABLE, message, CLOUD_API_ERROR, -1, null);
  }

  /** What the server answers every cloud call with until the first successful Configure (FAILED_PRECONDITION, NOT_CONFIGURED). */
  public static StatusRuntimeException notConfigured() {
    return error(
        Status.Code.FAILED_PRECONDITION,
        "the provider has not been configured yet (no Configure since it started); the host configures it and retries",
        NOT_CONFIGURED,
        -1,
        null);
  }

  /** UNIMPLEMENTED. */
  public static StatusRuntimeException notImplemented(String message) {
    return plain(Status.Code.UNIMPLEMENTED, message);
  }

  /**
   * The google.rpc.Status of any throwable, for the per-item errors of batch
   * responses: a StatusRuntimeException/StatusException with its details as it
   * is, anything else INTERNAL with its message.
   */
  public static com.google.rpc.Status toStatus(Throwable t) {
    com.google.rpc.Status s = StatusProto.fromThrowable(t);
    if (s != null) return s;
    Status st = Status.fromThrowable(t);
    if (st.getCode() != Status.Code.UNKNOWN || t instanceof StatusRuntimeException || t instanceof StatusException) {
      return com.google.rpc.Status.newBuilder().setCode(st.getCode().value()).setMessage(st.getDescription() == null ? "" : st.getDescription()).build();
    }
    return com.google.rpc.Status.newBuilder().setCode(Code.INTERNAL_VALUE).setMessage(String.valueOf(t.getMessage())).build();
  }

  /** The ErrorInfo reason (domain ccm.provider.v1) of a google.rpc.Status, or "". */
  public static String reason(com.google.rpc.Status status) {
    for (Any d : status.getDetailsList()) {
      if (d.is(ErrorInfo.class)) {
        try {
          ErrorInfo info = d.unpack(ErrorInfo.class);
          if (ERROR_DOMAIN.equals(info.getDomain())) return info.getReason();
        } catch (InvalidProtocolBufferException e) {
          return "";
        }
      }
    }
    return "";
  }

  /**
   * The provider's own reason (ErrorInfo metadata "reason") of a DEFERRED
   * google.rpc.Status, "" when it gave none, null when the status is not
   * DEFERRED (the Python SDK's deferred_reason).
   */
  public static String deferredReason(com.google.rpc.Status status) {
    for (Any d : status.getDetailsList()) {
      if (d.is(ErrorInfo.class)) {
        try {
          ErrorInfo info = d.unpack(ErrorInfo.class);
          if (ERROR_DOMAIN.equals(info.getDomain()) && DEFERRED.equals(info.getReason())) return info.getMetadataOrDefault(DEFERRED_REASON_KEY, "");
        } catch (InvalidProtocolBufferException e) {
          return null;
        }
      }
    }
    return null;
  }

  /** The RetryInfo delay of a google.rpc.Status in milliseconds, or -1. */
  public static long retryAfterMs(com.google.rpc.Status status) {
    for (Any d : status.getDetailsList()) {
      if (d.is(RetryInfo.class)) {
        try {
          Duration x = d.unpack(RetryInfo.class).getRetryDelay();
          return x.getSeconds() * 1000 + x.getNanos() / 1_000_000;
        } catch (InvalidProtocolBufferException e) {
          return -1;
        }
      }
    }
    return -1;
  }
}
