"""Errors in the protocol's error model: a canonical code, a google.rpc.ErrorInfo
reason (domain ccm.provider.v1) where the code alone is ambiguous, and a
google.rpc.RetryInfo for "retry after this long" (the host keeps it within
1 s .. 1 h)."""
import functools

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

ERROR_DOMAIN = "ccm.provider.v1"
INSTANCE_NOT_FOUND = "INSTANCE_NOT_FOUND"
RATE_LIMITED = "RATE_LIMITED"
QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
IN_USE = "IN_USE"
NOT_CONFIGURED = "NOT_CONFIGURED"


class ProviderError(Exception):
    """A failed call: gRPC code, message, optional reason and retry delay."""

    def __init__(self, code, message, reason=None, retry_after_ms=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.retry_after_ms = retry_after_ms

    def to_status(self):
        """The google.rpc.Status of this error (also used for per-item batch errors)."""
        details = []
        if self.reason:
            a = any_pb2.Any()
            a.Pack(error_details_pb2.ErrorInfo(reason=self.reason, domain=ERROR_DOMAIN))
            details.append(a)
        if self.retry_after_ms is not None:
            a = any_pb2.Any()
            ms = max(0, int(self.retry_after_ms))
            a.Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)))
            details.append(a)
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=details)


def invalid(message):
    return ProviderError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message):
    return ProviderError(grpc.StatusCode.NOT_FOUND, message)


def instance_not_found(what):
    return ProviderError(grpc.StatusCode.NOT_FOUND, f"no instance {what}", reason=INSTANCE_NOT_FOUND)


def already_exists(message):
    return ProviderError(grpc.StatusCode.ALREADY_EXISTS, message)


def rpc(method):
    """Turns a ProviderError raised by a servicer method into the call's status."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except ProviderError as e:
            context.abort_with_status(rpc_status.to_status(e.to_status()))

    return wrapper
