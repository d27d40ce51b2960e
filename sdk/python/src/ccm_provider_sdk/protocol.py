"""Constants of the launch contract and the pure functions of the start-up
decision. sdk/protocol.ts is the source of these values; docs/protocol.md
describes them; test/integration/providers/python-sdk.test.ts checks that
they are equal."""
import uuid
from dataclasses import dataclass

MAGIC_COOKIE_KEY = "CCM_PLUGIN_MAGIC_COOKIE"
# Not a security measure: it only stops a person from running a provider by
# hand and wondering why it waits silently.
MAGIC_COOKIE_VALUE = "b7c6c4f1a3e04d0e9d1f2a7c5e8b6a90-ccm-provider"
ENV_PROTOCOL_VERSIONS = "CCM_PLUGIN_PROTOCOL_VERSIONS"
ENV_ENDPOINT = "CCM_PLUGIN_ENDPOINT"
ENV_INSTANCE_ID = "CCM_PLUGIN_INSTANCE_ID"
ENV_LOG_LEVEL = "CCM_PLUGIN_LOG_LEVEL"
# Sidecar mode; read only when the magic cookie is absent. Same as --endpoint.
ENV_SIDECAR_ENDPOINT = "CCM_PROVIDER_ENDPOINT"
# "1": serve ccm.provider.testing.v1.TestHooksService (the conformance kit sets it).
ENV_TEST_HOOKS = "CCM_PROVIDER_TEST_HOOKS"

HANDSHAKE_PREFIX = "CCMPLUGIN"
CORE_PROTOCOL_VERSION = 1
SUPPORTED_PROTOCOL_VERSIONS = [1]
PROTOCOL_MINOR = 1
HEALTH_SERVICE_NAME = "ccm.provider.v1"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# sun_path is 108 bytes with the NUL.
MAX_UNIX_SOCKET_PATH_BYTES = 107

NOT_BY_HAND_MESSAGE = (
    "This binary is a ccm provider plugin; it is started by cloud-controller-manager, not by hand "
    "(set --plugin-path on the host, or run it as a sidecar with --endpoint=unix:///path/provider.sock).")


def parse_version_list(value):
    """CCM_PLUGIN_PROTOCOL_VERSIONS ("1,2") as ints; invalid entries are dropped."""
    return [int(s) for s in (x.strip() for x in (value or "").split(",")) if s.isdigit() and s.isascii()]


def negotiate_version(host, plugin):
    """The highest version both sides speak, or None."""
    common = [v for v in plugin if v in host]
    return max(common) if common else None


def version_mismatch_message(host, plugin):
    if not host:
        hint = f"the host set no valid {ENV_PROTOCOL_VERSIONS}"
    elif max(host) > max(plugin):
        hint = "upgrade the plugin"
    else:
        hint = "upgrade the host"
    offered = ",".join(map(str, host)) or "none"
    return f"This provider speaks ccm protocol versions {','.join(map(str, plugin))}; the host offered {offered}: {hint}."


def format_handshake(protocol, socket_path):
    """The one line an exec-mode provider prints on stdout (without newline)."""
    return "|".join([HANDSHAKE_PREFIX, str(CORE_PROTOCOL_VERSION), str(protocol), "unix", socket_path, "grpc"])


def unix_socket_path(endpoint):
    """unix:///abs/path.sock or unix:/abs/path -> /abs/path.sock; None if the
    endpoint names no absolute unix path (unix://relative is rejected rather
    than read as //relative)."""
    for prefix in ("unix://", "unix:"):
        if endpoint.startswith(prefix):
            p = endpoint[len(prefix):]
            return p if p.startswith("/") and not p.startswith("//") else None
    return None


def endpoint_from_args(args):
    """The value of --endpoint=X or --endpoint X, or ""."""
    for i, a in enumerate(args):
        if a.startswith("--endpoint="):
            return a[len("--endpoint="):]
        if a == "--endpoint" and i + 1 < len(args):
            return args[i + 1]
    return ""


class ModeError(Exception):
    """A refusal to run (started by hand, no common protocol, a bad
    endpoint): main() prints the message on stderr and exits 1."""


@dataclass(frozen=True)
class Mode:
    exec: bool  # True: launched by the host (the magic cookie matches); False: sidecar
    socket_path: str
    protocol: int  # negotiated (exec) or the newest supported (sidecar)
    instance_id: str  # the launch nonce (exec) or a random id per process (sidecar)


def resolve_mode(env, args, endpoint=None):
    """Exec mode (the cookie matches), sidecar mode (no cookie; endpoint, else
    CCM_PROVIDER_ENDPOINT, else --endpoint in args) or ModeError."""
    cookie = env.get(MAGIC_COOKIE_KEY)
    if cookie == MAGIC_COOKIE_VALUE:
        host = parse_version_list(env.get(ENV_PROTOCOL_VERSIONS, ""))
        protocol = negotiate_version(host, SUPPORTED_PROTOCOL_VERSIONS)
        if protocol is None:
            raise ModeError(version_mismatch_message(host, SUPPORTED_PROTOCOL_VERSIONS))
        path = unix_socket_path(env.get(ENV_ENDPOINT, ""))
        if not path:
            raise ModeError(f"{ENV_ENDPOINT}={env.get(ENV_ENDPOINT, '')!r} is not a unix:///absolute/path endpoint; the host must set it.")
        return Mode(True, path, protocol, env.get(ENV_INSTANCE_ID, ""))
    sidecar = endpoint or env.get(ENV_SIDECAR_ENDPOINT, "") or endpoint_from_args(args)
    if cookie is None and sidecar:
        path = unix_socket_path(sidecar)
        if not path:
            raise ModeError(f"sidecar endpoint {sidecar!r} is not a unix:///absolute/path endpoint.")
        # No launch nonce in sidecar mode: a per-process id lets the host notice a restart.
        return Mode(False, path, max(SUPPORTED_PROTOCOL_VERSIONS), str(uuid.uuid4()))
    raise ModeError(NOT_BY_HAND_MESSAGE)
