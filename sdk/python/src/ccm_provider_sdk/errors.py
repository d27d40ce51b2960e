"""Errors in the protocol's error model: a canonical gRPC code, a
google.rpc.ErrorInfo (domain ccm.provider.v1) whose reason tells the host what
the code alone cannot, and a google.rpc.RetryInfo meaning "retry after exactly
this long" (the host keeps it within 1 s .. 1 h).

Raise a ProviderError (the helpers below build the usual ones) from a provider
method and serve() answers the call with it; any other exception answers
INTERNAL and is logged with its traceback."""
import re

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

ERROR_DOMAIN = "ccm.provider.v1"

# ErrorInfo reasons; see the header of proto/ccm/provider/v1/common.proto.
INSTANCE_NOT_FOUND = "INSTANCE_NOT_FOUND"
RATE_LIMITED = "RATE_LIMITED"
QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
IMPLEMENTED_ELSEWHERE = "IMPLEMENTED_ELSEWHERE"
CLOUD_API_ERROR = "CLOUD_API_ERROR"
IN_USE = "IN_USE"
NOT_CONFIGURED = "NOT_CONFIGURED"
# Protocol 1.1: "not now"; see deferred().
DEFERRED = "DEFERRED"
# ErrorInfo metadata key of a DEFERRED answer's own reason.
DEFERRED_REASON_KEY = "reason"
# A Kubernetes condition reason (CamelCase), at most 64 characters.
_DEFERRED_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]{0,62}[A-Za-z0-9_])?$")

_ERROR_INFO = error_details_pb2.ErrorInfo.DESCRIPTOR.full_name
_RETRY_INFO = error_details_pb2.RetryInfo.DESCRIPTOR.full_name


class ProviderError(Exception):
    """A failed call: a grpc.StatusCode, a message, an optional ErrorInfo
    reason (with metadata) and an optional retry delay in milliseconds."""

    def __init__(self, code, message, reason=None, retry_after_ms=None, metadata=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.retry_after_ms = retry_after_ms
        self.metadata = dict(metadata or {})

    def to_status(self):
        """The google.rpc.Status of this error (also the per-item error of batch responses)."""
        details = []
        if self.reason:
            a = any_pb2.Any()
            a.Pack(error_details_pb2.ErrorInfo(reason=self.reason, domain=ERROR_DOMAIN, metadata=self.metadata))
            details.append(a)
        if self.retry_after_ms is not None:
            ms = max(0, int(self.retry_after_ms))
            a = any_pb2.Any()
            a.Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)))
            details.append(a)
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=details)


def instance_not_found(message="instance not found", metadata=None):
    """The instance does not exist (NOT_FOUND, INSTANCE_NOT_FOUND): the host may delete its Node."""
    return ProviderError(grpc.StatusCode.NOT_FOUND, message, reason=INSTANCE_NOT_FOUND, metadata=metadata)


def not_found(message):
    """An object other than an instance does not exist (NOT_FOUND)."""
    return ProviderError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message):
    """An object with this identity exists with other settings (ALREADY_EXISTS)."""
    return ProviderError(grpc.StatusCode.ALREADY_EXISTS, message)


def invalid_argument(message):
    """The request (or the cloud config) is wrong; retrying it unchanged fails again (INVALID_ARGUMENT)."""
    return ProviderError(grpc.StatusCode.INVALID_ARGUMENT, message)


def rate_limited(message, retry_after_ms):
    """The cloud API throttled us; retry after the delay (RESOURCE_EXHAUSTED, RATE_LIMITED, RetryInfo)."""
    return ProviderError(grpc.StatusCode.RESOURCE_EXHAUSTED, message, reason=RATE_LIMITED, retry_after_ms=retry_after_ms)


def retry(message, retry_after_ms):
    """Not done yet (e.g. an address is still being allocated); retry after the delay (UNAVAILABLE, RetryInfo)."""
    return ProviderError(grpc.StatusCode.UNAVAILABLE, message, retry_after_ms=retry_after_ms)


def quota_exceeded(message):
    """An account quota is exhausted (RESOURCE_EXHAUSTED, QUOTA_EXCEEDED)."""
    return ProviderError(grpc.StatusCode.RESOURCE_EXHAUSTED, message, reason=QUOTA_EXCEEDED)


def implemented_elsewhere(message="implemented by alternate to cloud provider"):
    """Another implementation owns this object (FAILED_PRECONDITION, IMPLEMENTED_ELSEWHERE)."""
    return ProviderError(grpc.StatusCode.FAILED_PRECONDITION, message, reason=IMPLEMENTED_ELSEWHERE)


def in_use(message):
    """The object is still in use, e.g. a volume is attached (FAILED_PRECONDITION, IN_USE)."""
    return ProviderError(grpc.StatusCode.FAILED_PRECONDITION, message, reason=IN_USE)


def deferred(reason, message, retry_after_ms):
    """Protocol 1.1, "not now": the request is fine but cannot be done yet (a
    quota, a prerequisite that does not exist yet, eventual consistency).
    reason is a CamelCase word saying why (e.g. "QuotaExhausted"; it becomes
    the Service's LoadBalancerServing condition reason and a metric label, so
    keep the set small); retry_after_ms the earliest retry (the host keeps it
    within 1 s .. 5 min). The host records it in a condition and retries
    without Warning events. On the wire: UNAVAILABLE, ErrorInfo DEFERRED with
    metadata {reason}, RetryInfo; a 1.0 host reads it as a retry after the
    delay. Raises ValueError for a reason that is not CamelCase."""
    if not isinstance(reason, str) or not _DEFERRED_REASON.match(reason):
        raise ValueError(f"deferral reason {reason!r} is not a CamelCase word of at most 64 characters")
    return ProviderError(grpc.StatusCode.UNAVAILABLE, message, reason=DEFERRED, retry_after_ms=retry_after_ms,
                         metadata={DEFERRED_REASON_KEY: reason})


def deferred_reason(status):
    """The provider's own reason of a DEFERRED google.rpc.Status, or None when it is not one."""
    for d in status.details:
        if d.TypeName() == _ERROR_INFO:
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            if info.domain == ERROR_DOMAIN and info.reason == DEFERRED:
                return info.metadata.get(DEFERRED_REASON_KEY, "")
    return None


def cloud_unavailable(message):
    """The cloud is unreachable or failed transiently; the operation may be in progress (UNAVAILABLE, CLOUD_API_ERROR)."""
    return ProviderError(grpc.StatusCode.UNAVAILABLE, message, reason=CLOUD_API_ERROR)


def not_configured():
    """What serve() answers every cloud call with until the first successful
    Configure (FAILED_PRECONDITION, NOT_CONFIGURED)."""
    return ProviderError(grpc.StatusCode.FAILED_PRECONDITION,
                         "the provider has not been configured yet (no Configure since it started); the host configures it and retries",
                         reason=NOT_CONFIGURED)


def not_implemented(message="not implemented by this provider"):
    """UNIMPLEMENTED."""
    return ProviderError(grpc.StatusCode.UNIMPLEMENTED, message)


def status_proto(error):
    """The google.rpc.Status of an exception, for the per-item errors of batch
    responses: a ProviderError as it is, anything else INTERNAL."""
    if isinstance(error, ProviderError):
        return error.to_status()
    return status_pb2.Status(code=grpc.StatusCode.INTERNAL.value[0], message=str(error))


def error_reason(status):
    """The ErrorInfo reason (domain ccm.provider.v1) of a google.rpc.Status, or ""."""
    for d in status.details:
        if d.TypeName() == _ERROR_INFO:
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            if info.domain == ERROR_DOMAIN:
                return info.reason
    return ""


def retry_after_ms(status):
    """The RetryInfo delay of a google.rpc.Status in milliseconds, or None."""
    for d in status.details:
        if d.TypeName() == _RETRY_INFO:
            info = error_details_pb2.RetryInfo()
            d.Unpack(info)
            return info.retry_delay.ToMilliseconds()
    return None
