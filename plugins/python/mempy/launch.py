"""The launch contract of docs/protocol.md: magic cookie, protocol version
negotiation, the unix socket, the one handshake line on stdout, health,
Shutdown, stdin EOF and signals. Nothing here is specific to this cloud."""
import json
import os
import signal
import socket
import stat
import sys
import threading
import time
import uuid
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from .errors import NOT_CONFIGURED, RATE_LIMITED, ProviderError

MAGIC_COOKIE_KEY = "CCM_PLUGIN_MAGIC_COOKIE"
MAGIC_COOKIE_VALUE = "b7c6c4f1a3e04d0e9d1f2a7c5e8b6a90-ccm-provider"
ENV_PROTOCOL_VERSIONS = "CCM_PLUGIN_PROTOCOL_VERSIONS"
ENV_ENDPOINT = "CCM_PLUGIN_ENDPOINT"
ENV_INSTANCE_ID = "CCM_PLUGIN_INSTANCE_ID"
ENV_LOG_LEVEL = "CCM_PLUGIN_LOG_LEVEL"
ENV_SIDECAR_ENDPOINT = "CCM_PROVIDER_ENDPOINT"
ENV_TEST_HOOKS = "CCM_PROVIDER_TEST_HOOKS"
HEALTH_SERVICE_NAME = "ccm.provider.v1"
CORE_VERSION = 1
SUPPORTED_VERSIONS = [1]
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_SOCKET_PATH_BYTES = 107
DEFAULT_GRACE_S = 5.0
NOT_BY_HAND = ("This binary is a ccm provider plugin; it is started by cloud-controller-manager, not by hand "
               "(set --plugin-path on the host, or run it as a sidecar with --endpoint=unix:///path/provider.sock).")
LEVELS = {"trace": 10, "debug": 10, "info": 20, "warn": 30, "error": 40}


def fail(message):
    """One line on stderr, exit 1: the host shows it to the operator."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os._exit(1)


class Log:
    """JSON lines on stderr ({"level","msg",...}), which the host parses."""

    def __init__(self):
        self.min = LEVELS.get(os.environ.get(ENV_LOG_LEVEL, "info").lower(), 20)

    def _write(self, level, msg, fields):
        if LEVELS[level] >= self.min:
            sys.stderr.write(json.dumps({"level": level, "msg": msg, **fields}) + "\n")
            sys.stderr.flush()

    def info(self, msg, **fields):
        self._write("info", msg, fields)

    def warn(self, msg, **fields):
        self._write("warn", msg, fields)

    def error(self, msg, **fields):
        self._write("error", msg, fields)


def unix_path(endpoint):
    for prefix in ("unix://", "unix:"):
        if endpoint.startswith(prefix):
            p = endpoint[len(prefix):]
            if p.startswith("/") and not p.startswith("//"):
                return p
            return None
    return None


def endpoint_from_args(args):
    for i, a in enumerate(args):
        if a.startswith("--endpoint="):
            return a[len("--endpoint="):]
        if a == "--endpoint" and i + 1 < len(args):
            return args[i + 1]
    return ""


def resolve_mode(env, args):
    """(exec?, socket path, protocol, instance id); exits 1 when run by hand or on a version mismatch."""
    cookie = env.get(MAGIC_COOKIE_KEY)
    if cookie == MAGIC_COOKIE_VALUE:
        raw = env.get(ENV_PROTOCOL_VERSIONS, "")
        offered = [int(s) for s in (x.strip() for x in raw.split(",")) if s.isdigit()]
        common = [v for v in SUPPORTED_VERSIONS if v in offered]
        if not common:
            fail(f"This provider speaks ccm protocol versions {','.join(map(str, SUPPORTED_VERSIONS))}; "
                 f"the host offered {','.join(map(str, offered)) or 'none'} ({ENV_PROTOCOL_VERSIONS}={raw!r}): upgrade whichever side is older.")
        path = unix_path(env.get(ENV_ENDPOINT, ""))
        if not path:
            fail(f"{ENV_ENDPOINT}={env.get(ENV_ENDPOINT, '')!r} is not a unix:///absolute/path endpoint; the host must set it.")
        return True, path, max(common), env.get(ENV_INSTANCE_ID, "")
    endpoint = endpoint_from_args(args) or env.get(ENV_SIDECAR_ENDPOINT, "")
    if cookie is None and endpoint:
        path = unix_path(endpoint)
        if not path:
            fail(f"sidecar endpoint {endpoint!r} is not a unix:///absolute/path endpoint.")
        # No launch nonce in sidecar mode: a per-process id lets the host notice a restart.
        return False, path, max(SUPPORTED_VERSIONS), str(uuid.uuid4())
    fail(NOT_BY_HAND)


def prepare_socket(path):
    """Refuses unusable paths; removes a stale socket file nothing answers on."""
    if len(path.encode()) > MAX_SOCKET_PATH_BYTES:
        raise OSError(f"socket path {path!r} is longer than {MAX_SOCKET_PATH_BYTES} bytes")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise OSError(f"{path} exists and is not a socket; refusing to replace it")
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(1)
    try:
        s.connect(path)
        raise OSError(f"another process is listening on {path}")
    except (ConnectionRefusedError, FileNotFoundError):
        os.unlink(path)
    finally:
        s.close()


def cloud_method(method):
    """A call of a cloud service (not Identity, Lifecycle, health or the test hooks)."""
    exempt = ("/ccm.provider.v1.IdentityService/", "/ccm.provider.v1.LifecycleService/")
    return method.startswith("/ccm.provider.v1.") and not method.startswith(exempt)


def _fail_with(error):
    status = rpc_status.to_status(error.to_status())
    return grpc.unary_unary_rpc_method_handler(lambda request, context: context.abort_with_status(status))


class NotConfigured(grpc.ServerInterceptor):
    """Until the first successful Configure, cloud-service calls fail with
    FAILED_PRECONDITION and reason NOT_CONFIGURED (never an answer from an
    empty state)."""

    def __init__(self, cloud):
        self.cloud = cloud

    def intercept_service(self, continuation, details):
        if self.cloud.configured or not cloud_method(details.method):
            return continuation(details)
        return _fail_with(ProviderError(grpc.StatusCode.FAILED_PRECONDITION,
                                        "the provider has not been configured yet (no Configure since it started)",
                                        reason=NOT_CONFIGURED))


class Throttle(grpc.ServerInterceptor):
    """Test hook: while cloud.throttle is set, cloud-service calls fail with
    RESOURCE_EXHAUSTED, reason RATE_LIMITED and a RetryInfo."""

    def __init__(self, cloud):
        self.cloud = cloud

    def intercept_service(self, continuation, details):
        delay = self.cloud.throttle
        if delay is None or not cloud_method(details.method):
            return continuation(details)
        return _fail_with(ProviderError(grpc.StatusCode.RESOURCE_EXHAUSTED, "cloud API rate limit exceeded",
                                        reason=RATE_LIMITED, retry_after_ms=delay))


def serve(cloud, register):
    """Runs the provider until it is told to stop, then exits the process.
    register(server, exec_mode, protocol, instance_id, on_shutdown) adds the services."""
    exec_mode, path, protocol, instance_id = resolve_mode(os.environ, sys.argv[1:])
    log = Log()
    done = threading.Event()
    stopping = threading.Lock()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), interceptors=[NotConfigured(cloud), Throttle(cloud)],
                         options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                                  ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
    health_servicer = health.HealthServicer()
    for name in ("", HEALTH_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    def stop(reason, grace_s):
        if not stopping.acquire(blocking=False):
            return
        log.info("provider stopping", reason=reason, graceMs=int(grace_s * 1000))
        health_servicer.enter_graceful_shutdown()
        server.stop(grace_s).wait(grace_s + 1)
        try:
            os.unlink(path)
        except OSError:
            pass
        done.set()

    def on_shutdown(grace_s):
        if exec_mode:
            stop("shutdown requested", grace_s)
        # Sidecar mode: keep serving the next host.

    register(server, exec_mode, protocol, instance_id, on_shutdown)
    try:
        prepare_socket(path)
        # Created owner-only: a chmod after the bind would leave a moment in
        # which the socket is open to others (and a checker can see it so).
        previous_umask = os.umask(0o177)
        try:
            server.add_insecure_port("unix://" + path)
            server.start()
        finally:
            os.umask(previous_umask)
        os.chmod(path, 0o600)
    except Exception as e:  # noqa: BLE001 - any failure to listen ends the process with one line
        fail(f"cannot serve on {path}: {e}")

    def on_signal(signum, _frame):
        if stopping.locked():
            os._exit(1)  # A second signal during the stop: exit at once.
        threading.Thread(target=stop, args=(signal.Signals(signum).name, DEFAULT_GRACE_S), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    if exec_mode:
        sys.stdout.write(f"CCMPLUGIN|{CORE_VERSION}|{protocol}|unix|{path}|grpc\n")
        sys.stdout.flush()
        # From now on fd 1 is stderr: a stray print (or a C library) cannot corrupt the protocol.
        os.dup2(2, 1)
        sys.stdout = sys.stderr

        def watch_stdin():
            while sys.stdin.buffer.read(65536):
                pass  # Data is discarded; only EOF (the host is gone) matters.
            stop("stdin closed", DEFAULT_GRACE_S)

        threading.Thread(target=watch_stdin, daemon=True).start()
    log.info("provider serving", exec=exec_mode, socket=path, protocolVersion=protocol)
    while not done.wait(1):
        pass
    log.info("provider stopped")
    sys.stderr.flush()
    os._exit(0)
