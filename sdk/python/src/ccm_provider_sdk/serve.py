"""serve(provider): the launch contract of docs/protocol.md, the same as the
TypeScript SDK's serve() and the Go SDK's ccmsdk.Serve.

Exec mode (CCM_PLUGIN_MAGIC_COOKIE matches): negotiates the protocol from
CCM_PLUGIN_PROTOCOL_VERSIONS, listens on the unix socket CCM_PLUGIN_ENDPOINT
names (0600 from the bind on), prints the one handshake line on stdout (fd 1
points at stderr from the package's import on) and returns after a stop on
stdin EOF (the host died), a Shutdown RPC (within its grace period), SIGTERM
or SIGINT. A second signal during a stop exits 1 at once; a stop that hangs
exits 0 anyway.

Sidecar mode (no cookie; an endpoint from the argument, CCM_PROVIDER_ENDPOINT
or --endpoint=unix:///path.sock): listens there, no handshake, no stdin
watching, a random instance id per process (so a host can tell a restart);
Shutdown only aborts in-flight calls and the provider serves the next host;
SIGTERM/SIGINT stop it.

Both: grpc.health.v1 SERVING for "" and ccm.provider.v1 (NOT_SERVING once
stopping); IdentityService from provider.info and the methods the provider
implements; until the first successful Configure, cloud calls answer
FAILED_PRECONDITION/NOT_CONFIGURED and Probe answers ready=false; a stale
socket file nothing answers on is replaced, a live one or a non-socket is
refused; the socket is removed on stop."""
import functools
import os
import signal
import socket
import stat
import sys
import threading
import time
import traceback
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from ccm.provider.v1 import identity_pb2, lifecycle_pb2
from . import stdio
from .tracing import start_tracing
from .errors import ProviderError, not_configured, not_implemented
from .log import Logger
from .probe import PROBE_COMMAND, run_probe
from .protocol import HEALTH_SERVICE_NAME, MAX_MESSAGE_BYTES, MAX_UNIX_SOCKET_PATH_BYTES, PROTOCOL_MINOR, ModeError, format_handshake, resolve_mode
from .services import bind_services, derive_capabilities, is_cloud_method, message_class, provider_info

# The grace period of stops not asked for by a Shutdown RPC (signals, stdin
# EOF), and of a Shutdown without one.
DEFAULT_STOP_GRACE_S = 5.0
# The longest Shutdown grace period honoured; the host escalates to signals anyway.
MAX_SHUTDOWN_GRACE_S = 120.0
# provider.close() always gets at least this long.
MIN_CLOSE_S = 1.0
# Past grace + MIN_CLOSE_S + this, a stop that hangs exits the process anyway.
EXIT_BACKSTOP_S = 2.0
CALLER_METADATA_KEY = "x-ccm-caller"

_IDENTITY = identity_pb2.DESCRIPTOR.services_by_name["IdentityService"]
_LIFECYCLE = lifecycle_pb2.DESCRIPTOR.services_by_name["LifecycleService"]
_SHUTDOWN_METHOD = f"/{_LIFECYCLE.full_name}/Shutdown"
_HEALTH_PREFIX = "/grpc.health.v1.Health/"


class ServeError(Exception):
    """serve() cannot run: a refusal (ModeError), an invalid provider object
    or an unusable socket. main() prints the message on stderr and exits 1."""


def _shutting_down():
    return ProviderError(grpc.StatusCode.UNAVAILABLE, "provider is shutting down")


def _abort(context, error):
    context.abort_with_status(rpc_status.to_status(error.to_status()))


def handles_errors(method):
    """Decorator for servicer methods registered by hand (serve's register=,
    e.g. TestHooksService): a ProviderError raised answers the call with it."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except ProviderError as e:
            _abort(context, e)

    return wrapper


class CallContext:
    """What a provider method gets as `context`: the grpc.ServicerContext (all
    its methods work: time_remaining(), invocation_metadata(), abort(), ...)
    plus `done`, a threading.Event set when the host cancels the call or a
    stop or Shutdown aborts it (long cloud operations should watch it), and
    `caller`, the host's x-ccm-caller metadata ("" when absent)."""

    def __init__(self, context, method):
        self._context = context
        self.method = method
        self.done = threading.Event()
        self.aborted_by = None  # the ProviderError of a Shutdown or stop that aborted the call
        self._aborted_itself = False
        self.caller = next((v for k, v in (context.invocation_metadata() or ()) if k == CALLER_METADATA_KEY), "")

    def __getattr__(self, name):
        return getattr(self._context, name)

    def abort(self, code, details):
        self._aborted_itself = True
        self._context.abort(code, details)

    def abort_with_status(self, status):
        self._aborted_itself = True
        self._context.abort_with_status(status)


class _InFlight:
    """The calls running provider code, so Shutdown and stops can abort them."""

    def __init__(self):
        self._cond = threading.Condition()
        self._calls = set()
        self._closed = False

    def begin(self, call):
        with self._cond:
            if self._closed:
                return False
            self._calls.add(call)
            return True

    def end(self, call):
        with self._cond:
            self._calls.discard(call)
            self._cond.notify_all()

    def abort_all(self, error):
        with self._cond:
            for c in self._calls:
                c.aborted_by = c.aborted_by or error
                c.done.set()

    def close(self):
        with self._cond:
            self._closed = True

    def wait_idle(self, timeout):
        with self._cond:
            return self._cond.wait_for(lambda: not self._calls, timeout)

    def __len__(self):
        with self._cond:
            return len(self._calls)


class _Refusals(grpc.ServerInterceptor):
    """First on every call: refuses calls once the provider stops
    (UNAVAILABLE) and cloud calls before Configure (NOT_CONFIGURED). Shutdown
    and health are never refused (Shutdown stays idempotent)."""

    def __init__(self, state):
        self.state = state

    def intercept_service(self, continuation, details):
        method = details.method
        if method == _SHUTDOWN_METHOD or method.startswith(_HEALTH_PREFIX):
            return continuation(details)
        error = None
        if self.state.stopping:
            error = _shutting_down()
        elif is_cloud_method(method) and not self.state.configured and self.state.declares(method):
            # Every method of a declared service, implemented or not; an
            # undeclared service answers UNIMPLEMENTED, configured or not.
            error = not_configured()
        if error is None:
            return continuation(details)
        status = rpc_status.to_status(error.to_status())
        return grpc.unary_unary_rpc_method_handler(lambda request, context: context.abort_with_status(status))


class _Provider:
    """One serving provider: its gRPC server, health, in-flight calls and stop."""

    def __init__(self, provider, mode, log, stop_grace_s):
        self.provider = provider
        self.mode = mode
        self.log = log
        self.stop_grace_s = stop_grace_s
        self.info = provider_info(provider)
        try:
            self.bound = bind_services(provider)
        except TypeError as e:
            raise ServeError(str(e)) from None
        self.caps = derive_capabilities(provider, self.bound)
        self.configured = False
        self.stopping = False
        self.in_flight = _InFlight()
        self.health = health.HealthServicer()
        self.done = threading.Event()
        self._stop_lock = threading.Lock()
        self.server = None
        # None unless the OTEL_* variables turn traces on (tracing.py).
        self.tracing = start_tracing(log)

    # ---- dispatch ----

    def _handler(self, full, fn, response_class, tracked=True):
        log = self.log

        def handle(request, context):
            call = CallContext(context, full)
            if tracked and not self.in_flight.begin(call):
                _abort(context, _shutting_down())
            context.add_callback(call.done.set)  # Runs when the call ends, also when the host cancels it.
            started = time.monotonic()
            try:
                result = fn(request, call)
            except ProviderError as e:
                log.debug("call failed", method=full, code=e.code.name, err=e.message, ms=int((time.monotonic() - started) * 1000))
                _abort(context, e)
            except Exception as e:  # noqa: BLE001 - every other failure answers the call, never kills the server
                if call._aborted_itself:
                    raise  # context.abort() raised: the status is already set.
                if call.aborted_by is not None:
                    _abort(context, call.aborted_by)
                if not context.is_active():
                    _abort(context, ProviderError(grpc.StatusCode.CANCELLED, "call cancelled by the host"))
                log.error("provider method raised an unexpected exception", method=full, err=str(e), traceback=traceback.format_exc())
                _abort(context, ProviderError(grpc.StatusCode.INTERNAL, f"{full.lstrip('/')}: {e}"))
            finally:
                if tracked:
                    self.in_flight.end(call)
            if result is None:
                return response_class()
            if not isinstance(result, response_class):
                _abort(context, ProviderError(grpc.StatusCode.INTERNAL, f"{full.lstrip('/')} returned a {type(result).__name__}, want {response_class.__name__}"))
            log.debug("call succeeded", method=full, ms=int((time.monotonic() - started) * 1000))
            return result

        if self.tracing is not None:
            return self.tracing.wrap(full, handle)
        return handle

    def _generic_handler(self, descriptor, impls, untracked=()):
        handlers = {}
        for m in descriptor.methods:
            full = f"/{descriptor.full_name}/{m.name}"
            req, res = message_class(m.input_type), message_class(m.output_type)
            fn = impls.get(m.name)
            if fn is None:
                msg = f"{full.lstrip('/')} is not implemented by this provider"

                def fn(request, context, msg=msg):
                    raise not_implemented(msg)
            handlers[m.name] = grpc.unary_unary_rpc_method_handler(
                self._handler(full, fn, res, tracked=m.name not in untracked),
                request_deserializer=req.FromString, response_serializer=res.SerializeToString)
        return grpc.method_handlers_generic_handler(descriptor.full_name, handlers)

    # ---- IdentityService and LifecycleService ----

    def get_plugin_info(self, request, context):
        return identity_pb2.GetPluginInfoResponse(
            name=self.info.name, vendor_version=self.info.vendor_version, protocol_version=self.mode.protocol,
            protocol_minor=PROTOCOL_MINOR, instance_id=self.mode.instance_id, manifest=self.info.manifest)

    def get_plugin_capabilities(self, request, context):
        return self.caps

    def probe(self, request, context):
        if not self.configured:
            return identity_pb2.ProbeResponse(ready=False)
        probe = getattr(self.provider, "probe", None)
        return identity_pb2.ProbeResponse(ready=bool(probe(context)) if callable(probe) else True)

    def get_metrics(self, request, context):
        metrics = getattr(self.provider, "metrics", None)
        if not callable(metrics):
            raise not_implemented("this provider exports no metrics (no metrics() method)")
        return identity_pb2.GetMetricsResponse(text=metrics(context))

    def get_provider_schema(self, request, context):
        schema = getattr(self.provider, "provider_schema", None)
        if not callable(schema):
            raise not_implemented("this provider publishes no schema (no provider_schema() method)")
        return schema() or identity_pb2.GetProviderSchemaResponse()

    def configure(self, request, context):
        """The provider's configure(); success marks the provider configured (a failure leaves it as it was)."""
        res = None
        configure = getattr(self.provider, "configure", None)
        if callable(configure):
            res = configure(request, context)
        self.configured = True
        return res

    def shutdown(self, request, context):
        """Aborts in-flight calls and answers; in exec mode the stop (and exit)
        begins once the answer is sent. In sidecar mode the provider keeps
        serving the next host."""
        grace = DEFAULT_STOP_GRACE_S
        if request.HasField("grace_period"):
            grace = min(MAX_SHUTDOWN_GRACE_S, max(0.0, request.grace_period.ToMilliseconds() / 1000))
        self.log.info("shutdown requested", graceMs=int(grace * 1000), inFlight=len(self.in_flight))
        self.in_flight.abort_all(_shutting_down())
        if self.mode.exec:
            def begin_stop():
                threading.Thread(target=self.stop, args=("shutdown requested", grace), daemon=True).start()
            if not context.add_callback(begin_stop):
                begin_stop()
        return lifecycle_pb2.ShutdownResponse()

    def declares(self, method):
        """Whether `method` belongs to a cloud service the provider declares."""
        return any(method.startswith(f"/{b.entry.descriptor.full_name}/") for b in self.bound.values())

    # ---- serving ----

    def build(self, register, interceptors, max_workers):
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ccm-call"),
            interceptors=[_Refusals(self), *interceptors],
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
        for name in ("", HEALTH_SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        handlers = [
            self._generic_handler(_IDENTITY, {"GetPluginInfo": self.get_plugin_info, "GetPluginCapabilities": self.get_plugin_capabilities,
                                              "Probe": self.probe, "GetMetrics": self.get_metrics,
                                              "GetProviderSchema": self.get_provider_schema}),
            self._generic_handler(_LIFECYCLE, {"Configure": self.configure, "Shutdown": self.shutdown}, untracked=("Shutdown",)),
        ]
        for b in self.bound.values():
            handlers.append(self._generic_handler(b.entry.descriptor, b.methods))
        self.server.add_generic_rpc_handlers(handlers)
        if register is not None:
            register(self.server)

    def listen(self):
        path = self.mode.socket_path
        try:
            prepare_socket(path)
            # Created owner-only: a chmod after the bind would leave a moment
            # in which the socket is open to others.
            previous_umask = os.umask(0o177)
            try:
                if self.server.add_insecure_port("unix://" + path) == 0:
                    raise OSError("grpc could not bind the socket")
                self.server.start()
            finally:
                os.umask(previous_umask)
            os.chmod(path, 0o600)
        except OSError as e:
            raise ServeError(f"cannot serve on {path}: {e}") from None

    def stop(self, reason, grace_s):
        """Stops once: refuses new calls, aborts in-flight ones, health
        NOT_SERVING, waits up to grace for the calls, stops the server
        (bounded), runs provider.close() (at least 1 s), removes the socket.
        Returns False when a stop had already begun."""
        with self._stop_lock:
            if self.stopping:
                return False
            self.stopping = True
        backstop = threading.Timer(grace_s + MIN_CLOSE_S + EXIT_BACKSTOP_S, self._exit_anyway, args=(reason,))
        backstop.daemon = True
        backstop.start()
        deadline = time.monotonic() + grace_s
        self.log.info("provider stopping", reason=reason, graceMs=int(grace_s * 1000))
        self.in_flight.close()
        self.in_flight.abort_all(_shutting_down())
        self.health.enter_graceful_shutdown()
        if not self.in_flight.wait_idle(grace_s):
            self.log.warn("in-flight calls outlived the grace period", inFlight=len(self.in_flight), graceMs=int(grace_s * 1000))
        # Open streams (health Watch) get 0.2 .. 1 s, so an answered Shutdown is flushed.
        streams = min(1.0, max(0.2, deadline - time.monotonic()))
        self.server.stop(streams).wait(streams + 1)
        close = getattr(self.provider, "close", None)
        if callable(close):
            t = threading.Thread(target=self._close, args=(close,), daemon=True)
            t.start()
            t.join(max(MIN_CLOSE_S, deadline - time.monotonic()))
            if t.is_alive():
                self.log.warn("provider close did not finish in time")
        if self.tracing is not None:
            # The last spans (Shutdown's own included) go out before the process exits.
            self.tracing.shutdown()
        remove_socket_file(self.mode.socket_path)
        backstop.cancel()
        self.done.set()
        return True

    def _close(self, close):
        try:
            close()
        except Exception as e:  # noqa: BLE001 - a failed close is logged; the stop goes on
            self.log.error("provider close failed", err=str(e))

    def _exit_anyway(self, reason):
        self.log.warn("provider stop did not finish; exiting anyway", reason=reason)
        remove_socket_file(self.mode.socket_path)
        _flush_and_exit(0)


def prepare_socket(path):
    """Refuses an unusable path; removes a stale socket file nothing answers
    on; refuses a live socket or a file that is not a socket."""
    if len(path.encode()) > MAX_UNIX_SOCKET_PATH_BYTES:
        raise OSError(f"socket path {path!r} is longer than {MAX_UNIX_SOCKET_PATH_BYTES} bytes")
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


def remove_socket_file(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _flush_and_exit(code):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def serve(provider, endpoint=None, args=None, stop_grace_s=DEFAULT_STOP_GRACE_S, register=None, interceptors=(), logger=None, max_workers=16):
    """Serves `provider` until the process is told to stop; returns after the
    stop. Call it from the main thread (it installs the SIGTERM/SIGINT handlers).

    provider: an object with
      info: a ccm_provider_sdk.Info (or a method returning one); required;
      configure(request, context) -> ConfigureResponse or None (optional):
        the cloud config; raise invalid_argument(...) for a bad one;
      probe(context) -> bool (optional): readiness once configured;
      metrics(context) -> str (optional): Prometheus text (announces CAPABILITY_METRICS);
      provider_schema() -> identity_pb2.GetProviderSchemaResponse (optional): the
        Service annotations the provider reads and the prefixes it owns, fixed for
        the life of the process (announces CAPABILITY_PROVIDER_SCHEMA; the host
        checks Services against it before every ensure);
      close() (optional): once on stop, after in-flight calls ended or the grace period ran out;
      instances, zones, clusters, load_balancers, routes, volumes (optional,
        None: not served): objects with any subset of the service's RPCs as
        methods named like the RPC, Method(request, context) -> response
        (None answers an empty response). Methods inherited from the
        generated XServiceServicer do not count (subclassing it is fine);
        missing ones answer UNIMPLEMENTED, and GetPluginCapabilities is derived
        from those present (see derive_capabilities).
    `context` is a CallContext. Raise a ProviderError (ccm_provider_sdk's
    helpers) to answer with a code and reason; anything else answers INTERNAL.

    endpoint: the sidecar endpoint, overriding CCM_PROVIDER_ENDPOINT and --endpoint.
    args: where --endpoint is read from (default sys.argv[1:]).
    stop_grace_s: grace period of stops on signals and stdin EOF.
    register(server): adds services of your own, e.g. TestHooksService when
      CCM_PROVIDER_TEST_HOOKS is "1" (see handles_errors).
    interceptors: grpc.ServerInterceptor run on every call after the SDK's own
      refusals (use is_cloud_method to pick the cloud calls).

    `probe` as the first argument: runs the kubelet's exec probe of a
    running sidecar instead (probe.py) and raises SystemExit with its code.

    Raises ServeError without serving when it must not run (started by hand,
    wrong cookie, no common protocol version), when the provider object is
    invalid or the socket unusable; main() prints it and exits 1."""
    argv = sys.argv[1:] if args is None else args
    if argv and argv[0] == PROBE_COMMAND:
        # `<provider> probe ...`: the kubelet's exec probe of a running sidecar (probe.py), never a server.
        raise SystemExit(run_probe(argv[1:], os.environ, print))
    try:
        mode = resolve_mode(os.environ, argv, endpoint)
    except ModeError as e:
        raise ServeError(str(e)) from None
    try:
        info = provider_info(provider)
    except TypeError as e:
        raise ServeError(str(e)) from None
    log = (logger or Logger(info.provider_name or "provider")).with_fields(component="ccm-sdk")
    if mode.exec:
        stdio.guard_stdout()
    p = _Provider(provider, mode, log, stop_grace_s)
    p.build(register, interceptors, max_workers)
    p.listen()

    def on_signal(signum, _frame):
        name = signal.Signals(signum).name
        if p.stopping:
            log.warn("signal during stop; exiting now", signal=name)
            remove_socket_file(mode.socket_path)
            _flush_and_exit(1)
        threading.Thread(target=p.stop, args=(name, stop_grace_s), daemon=True).start()

    # Hooks go in before the handshake: the host may signal or close stdin the moment it reads the line.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if mode.exec:
        def watch_stdin():
            try:
                while os.read(0, 65536):
                    pass  # Data is discarded; only EOF (the host is gone) matters.
            except OSError:
                pass
            p.stop("stdin closed", stop_grace_s)

        threading.Thread(target=watch_stdin, daemon=True, name="ccm-stdin").start()
        try:
            stdio.write_handshake(format_handshake(mode.protocol, mode.socket_path))
        except OSError as e:
            p.stop("handshake failed", 0)
            raise ServeError(f"cannot write the handshake line on stdout: {e}") from None
    log.info("provider serving", mode="exec" if mode.exec else "sidecar", endpoint="unix://" + mode.socket_path,
             protocolVersion=mode.protocol, instanceId=mode.instance_id)
    while not p.done.wait(0.5):
        pass  # A timed wait keeps the main thread free to run signal handlers.
    log.info("provider stopped")


def main(provider, **options):
    """serve(provider, **options), then ends the process: exit 0 after a
    stop; the error on stderr and exit 1 when serve() could not run."""
    try:
        serve(provider, **options)
    except ServeError as e:
        sys.stderr.write(str(e) + "\n")
        _flush_and_exit(1)
    # os._exit: a provider method still stuck past the grace period must not keep the process alive.
    _flush_and_exit(0)
