"""Traces: the OTEL_* rules (off by default), and the SERVER span that
continues the host's trace from the traceparent in the call's metadata."""
import unittest

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ccm_provider_sdk.tracing import Tracing, start_tracing, tracing_requested

TRACE_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
METHOD = "/ccm.provider.v1.LoadBalancersService/EnsureLoadBalancer"


class _Context:
    """The part of grpc.ServicerContext the wrapper reads."""

    def __init__(self, metadata):
        self.metadata = metadata

    def invocation_metadata(self):
        return self.metadata

    def code(self):
        return None


class _Log:
    def warn(self, *args, **fields):
        pass


class TracingTest(unittest.TestCase):
    def test_tracing_follows_the_otel_variables(self):
        for env, want in [
            ({}, False),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
            ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, False),
            ({"OTEL_TRACES_EXPORTER": "zipkin, console"}, True),
            ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "TRUE"}, False),
        ]:
            with self.subTest(env=env):
                self.assertEqual(tracing_requested(env), want)
        self.assertIsNone(start_tracing(_Log(), {}))

    def test_server_span_continues_the_callers_trace(self):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        seen = {}

        def handle(request, context):
            seen["current"] = trace.get_current_span().get_span_context().span_id
            return "ok"

        wrapped = Tracing(provider, TraceContextTextMapPropagator()).wrap(METHOD, handle)
        for name, metadata, parent in [
            ("the host's traceparent: a child of its client span", (("traceparent", f"00-{TRACE_ID}-{PARENT_ID}-01"),), PARENT_ID),
            ("a malformed traceparent: a new root, the call still answered", (("traceparent", "00-zz-01"),), None),
            ("no metadata: a new root", (), None),
        ]:
            with self.subTest(name):
                exporter.clear()
                self.assertEqual(wrapped(None, _Context(metadata)), "ok")
                (span,) = exporter.get_finished_spans()
                self.assertEqual(
                    (span.name, span.kind, format(span.parent.span_id, "016x") if span.parent else None, seen["current"] == span.context.span_id),
                    ("ccm.provider.v1.LoadBalancersService/EnsureLoadBalancer", trace.SpanKind.SERVER, parent, True))
                if parent:
                    self.assertEqual(format(span.context.trace_id, "032x"), TRACE_ID)


if __name__ == "__main__":
    unittest.main()
