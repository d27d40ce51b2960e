package dev.ccm.provider.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Traces: off unless the OTEL_* variables ask (the other SDKs' rules); on, each call is a SERVER span continuing the caller's traceparent. */
class TracingTest {
  record Env(String what, Map<String, String> env, boolean on) {}

  static Map<String, String> env(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
    return m;
  }

  @Test
  void requestedByTheStandardVariablesOnly() {
    for (Env e :
        List.of(
            new Env("nothing set", env(), false),
            new Env("an OTLP endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), true),
            new Env("an OTLP traces endpoint", env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"), true),
            new Env("exporter otlp", env("OTEL_TRACES_EXPORTER", "otlp"), true),
            new Env("exporter console among others", env("OTEL_TRACES_EXPORTER", "zipkin, Console"), true),
            new Env("exporter none beats an endpoint", env("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"), false),
            new Env("SDK disabled", env("OTEL_SDK_DISABLED", "TRUE", "OTEL_TRACES_EXPORTER", "otlp"), false),
            new Env("SDK disabled false", env("OTEL_SDK_DISABLED", "false", "OTEL_TRACES_EXPORTER", "otlp"), true))) {
      assertEquals(e.on(), Tracing.requested(e.env()), e.what());
    }
  }

  @Test
  void exportersAreOtlpAndConsoleOnceEach() {
    List<String> unknown = new ArrayList<>();
    assertEquals(List.of("otlp"), Tracing.exporters(null, unknown));
    assertEquals(List.of("otlp"), Tracing.exporters(" ", unknown));
    assertEquals(List.of("console", "otlp"), Tracing.exporters("console,OTLP, console,none,jaeger", unknown));
    assertEquals(List.of("jaeger"), unknown);
    assertEquals(List.of(), Tracing.exporters("none", new ArrayList<>()));
  }

  @Test
  void offStartsNothing() {
    assertEquals(null, Tracing.start(env(), Log.named("test")));
  }

  static final MethodDescriptor<String, String> PROBE =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("ccm.provider.v1.IdentityService/Probe")
          .setRequestMarshaller(new Text())
          .setResponseMarshaller(new Text())
          .build();

  static final class Text implements MethodDescriptor.Marshaller<String> {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes());
    }

    @Override
    public String parse(InputStream stream) {
      return "";
    }
  }

  /** A call the interceptor sees: what it closes with is recorded. */
  static final class Call extends ServerCall<String, String> {
    Status closed;

    @Override
    public void request(int numMessages) {}

    @Override
    public void sendHeaders(Metadata headers) {}

    @Override
    public void sendMessage(String message) {}

    @Override
    public void close(Status status, Metadata trailers) {
      closed = status;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public Attributes getAttributes() {
      return Attributes.EMPTY;
    }

    @Override
    public MethodDescriptor<String, String> getMethodDescriptor() {
      return PROBE;
    }
  }

  static Metadata headers(String... kv) {
    Metadata m = new Metadata();
    for (int i = 0; i < kv.length; i += 2) m.put(Metadata.Key.of(kv[i], Metadata.ASCII_STRING_MARSHALLER), kv[i + 1]);
    return m;
  }

  /** Runs one call through the interceptor; the handler records the span current while it runs and closes with `status`. */
  static String runCall(Tracing tracing, Metadata headers, Status status) {
    String[] inHandler = new String[1];
    ServerCallHandler<String, String> handler =
        (call, h) ->
            new ServerCall.Listener<>() {
              @Override
              public void onHalfClose() {
                inHandler[0] = Span.current().getSpanContext().getSpanId();
                call.close(status, new Metadata());
              }

              @Override
              public void onComplete() {}
            };
    Call call = new Call();
    ServerCall.Listener<String> l = tracing.interceptor().interceptCall(call, headers, handler);
    l.onMessage("");
    l.onHalfClose();
    l.onComplete();
    assertEquals(status.getCode(), call.closed.getCode(), "the call closes as the handler said");
    return inHandler[0];
  }

  @Test
  void aCallIsAServerSpanContinuingTheTraceparent() {
    InMemorySpanExporter spans = InMemorySpanExporter.create();
    SdkTracerProvider tp = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build();
    OpenTelemetrySdk otel = OpenTelemetrySdk.builder().setTracerProvider(tp).setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance())).build();
    Tracing tracing = new Tracing(otel, tp::close);
    String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    String parent = "00f067aa0ba902b7";

    String current = runCall(tracing, headers("traceparent", "00-" + traceId + "-" + parent + "-01", "tracestate", "ccm-conformance=1"), Status.OK);
    SpanData s = spans.getFinishedSpanItems().get(0);
    assertEquals("ccm.provider.v1.IdentityService/Probe", s.getName());
    assertEquals(SpanKind.SERVER, s.getKind());
    assertEquals(traceId, s.getTraceId());
    assertEquals(parent, s.getParentSpanId());
    assertEquals(s.getSpanId(), current, "the span is current while the handler runs");
    assertEquals("grpc", s.getAttributes().get(AttributeKey.stringKey("rpc.system")));
    assertEquals("ccm.provider.v1.IdentityService", s.getAttributes().get(AttributeKey.stringKey("rpc.service")));
    assertEquals("Probe", s.getAttributes().get(AttributeKey.stringKey("rpc.method")));
    assertEquals(0L, s.getAttributes().get(AttributeKey.longKey("rpc.grpc.status_code")));
    assertEquals(StatusCode.UNSET, s.getStatus().getStatusCode());
    spans.reset();

    // A malformed traceparent never fails the call: a new root.
    runCall(tracing, headers("traceparent", "not-a-traceparent"), Status.NOT_FOUND.withDescription("no such instance"));
    SpanData root = spans.getFinishedSpanItems().get(0);
    assertFalse(root.getParentSpanContext().isValid());
    assertNotEquals(traceId, root.getTraceId());
    assertEquals(StatusCode.ERROR, root.getStatus().getStatusCode());
    assertEquals("no such instance", root.getStatus().getDescription());
    assertEquals((long) Status.Code.NOT_FOUND.value(), root.getAttributes().get(AttributeKey.longKey("rpc.grpc.status_code")));
    spans.reset();

    tracing.shutdown(1000, Log.named("test"));
    assertTrue(spans.getFinishedSpanItems().isEmpty());
  }
}
