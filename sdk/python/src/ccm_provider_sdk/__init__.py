"""ccm_provider_sdk: write a cloud provider for the grpc cloud-controller-manager
in Python. serve(provider) (or main(provider)) does the whole launch contract
of docs/protocol.md; see README.md. The generated protocol modules are
ccm.provider.v1 (and ccm.provider.testing.v1), shipped in the same package."""
import os as _os

from .protocol import MAGIC_COOKIE_KEY as _COOKIE_KEY, MAGIC_COOKIE_VALUE as _COOKIE_VALUE
from .stdio import guard_stdout as _guard_stdout

if _os.environ.get(_COOKIE_KEY) == _COOKIE_VALUE:
    # Exec mode: stdout is the host's handshake channel from the first moment
    # the provider's code can print, not from serve() on.
    _guard_stdout()

from .errors import (  # noqa: E402
    CLOUD_API_ERROR,
    DEFERRED,
    DEFERRED_REASON_KEY,
    ERROR_DOMAIN,
    IMPLEMENTED_ELSEWHERE,
    IN_USE,
    INSTANCE_NOT_FOUND,
    NOT_CONFIGURED,
    QUOTA_EXCEEDED,
    RATE_LIMITED,
    ProviderError,
    already_exists,
    cloud_unavailable,
    deferred,
    deferred_reason,
    error_reason,
    implemented_elsewhere,
    in_use,
    instance_not_found,
    invalid_argument,
    not_configured,
    not_found,
    not_implemented,
    quota_exceeded,
    rate_limited,
    retry,
    retry_after_ms,
    status_proto,
)
from .log import Logger  # noqa: E402
from .pod_backends import PodTarget, has_pod_backends, pod_targets  # noqa: E402
from .protocol import ENV_TEST_HOOKS, Mode, ModeError, resolve_mode  # noqa: E402
from .serve import CallContext, ServeError, handles_errors, main, serve  # noqa: E402
from .services import Info, derive_capabilities, is_cloud_method  # noqa: E402

__version__ = "0.1.0"
