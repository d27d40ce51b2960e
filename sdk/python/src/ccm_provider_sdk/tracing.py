"""OpenTelemetry traces across the plugin boundary (protocol 1.1,
docs/protocol.md "Protocol 1.1"): the host sends the W3C trace context of its
CLIENT span (``traceparent``, ``tracestate``) in the gRPC metadata of every
call; with tracing on, the SDK runs each handler in a SERVER span that
continues that trace (and is the current span, so the provider's own spans
join it).

Off by default, by the same rules as the TypeScript and Go SDKs: on when
OTEL_SDK_DISABLED is not "true" and OTEL_TRACES_EXPORTER names "otlp" or
"console" ("none" turns it off) or, with it unset,
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set.
Only then is the OpenTelemetry SDK imported. The exporter (OTLP/HTTP
protobuf), sampler and batch settings are the OTel SDK's own standard
variables; service.name is OTEL_SERVICE_NAME (the host sets
ccm-provider-<name>) or "ccm-provider".
"""

import os

TRACER_NAME = "grpc-cloud-controller-manager"
_EXPORTERS = ("otlp", "console")


def tracing_requested(env=None):
    """Whether the OTEL_* variables in `env` (default os.environ) turn tracing on. Pure."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporters:
        return any(e.strip() in _EXPORTERS for e in exporters.split(","))
    return bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


class Tracing:
    """A started tracer provider (registered globally) and the W3C propagator
    the handlers extract with."""

    def __init__(self, provider, propagator):
        self.provider = provider
        self.tracer = provider.get_tracer(TRACER_NAME)
        self.propagator = propagator

    def wrap(self, full, handle):
        """`handle` (request, context) run in a SERVER span named
        ``<service>/<method>``, child of the traceparent in the call's
        metadata (a new root when there is none or it is malformed: a bad
        traceparent never fails the call), ended with the call's status."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        service, _, method = full.lstrip("/").partition("/")
        name = f"{service}/{method}"
        attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}

        def traced(request, context):
            carrier = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
            parent = self.propagator.extract(carrier)
            with self.tracer.start_as_current_span(name, context=parent, kind=SpanKind.SERVER, attributes=attributes,
                                                   record_exception=False, set_status_on_exception=False) as span:
                try:
                    result = handle(request, context)
                except BaseException as e:
                    code = _code(context)
                    span.set_attribute("rpc.grpc.status_code", code if code is not None else 2)
                    span.set_status(Status(StatusCode.ERROR, str(e) or type(e).__name__))
                    raise
                span.set_attribute("rpc.grpc.status_code", 0)
                return result

        return traced

    def shutdown(self):
        """Flushes and stops the exporters (the BatchSpanProcessor's own bounds)."""
        self.provider.shutdown()


def _code(context):
    """The numeric gRPC status a handler aborted with, when grpc tells it."""
    try:
        code = context.code()
    except Exception:  # noqa: BLE001 - older grpc has no code(); the status attribute is then UNKNOWN
        return None
    return code.value[0] if code is not None else None


def start_tracing(log, env=None):
    """Starts the OTel SDK when :func:`tracing_requested`; None when off.
    Never fails the provider: an exporter or an SDK that cannot be loaded is
    logged and tracing stays off (or goes on without that exporter)."""
    env = os.environ if env is None else env
    if not tracing_requested(env):
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError as e:
        log.warn("tracing not started: the opentelemetry packages are not installed", err=str(e))
        return None
    # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win over the default name.
    resource = Resource.create({})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "ccm-provider"}))
    # The sampler comes from OTEL_TRACES_SAMPLER[_ARG], the batch settings from OTEL_BSP_*.
    provider = TracerProvider(resource=resource)
    names = [n.strip().lower() for n in (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")]
    for name in dict.fromkeys(n for n in names if n and n != "none"):
        try:
            if name == "otlp":
                # Endpoint, headers and timeout from OTEL_EXPORTER_OTLP_[TRACES_]*.
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
                exporter = OTLPSpanExporter()
            elif name == "console":
                import sys
                exporter = ConsoleSpanExporter(out=sys.stderr)  # stdout carries the handshake
            else:
                log.warn("OTEL_TRACES_EXPORTER: unknown exporter ignored (otlp, console or none)", exporter=name)
                continue
        except Exception as e:  # noqa: BLE001 - a provider serves without traces rather than not at all
            log.warn("trace exporter not started", exporter=name, err=str(e))
            continue
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return Tracing(provider, TraceContextTextMapPropagator())
