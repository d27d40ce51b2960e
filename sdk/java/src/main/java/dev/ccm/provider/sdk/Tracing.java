package dev.ccm.provider.sdk;

import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.resources.Resource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Traces across the plugin boundary (protocol 1.1, docs/protocol.md
 * "Protocol 1.1"): the host sends the W3C trace context of its CLIENT span
 * (traceparent, tracestate) in the gRPC metadata of every call; with tracing
 * on, the server runs each call in a SERVER span named
 * {@code <service>/<method>} that continues that trace, so the spans a
 * handler starts with {@code GlobalOpenTelemetry.getTracer(...)} join it.
 *
 * <p>Off by default, by the rules of the TypeScript, Go and Python SDKs
 * ({@link #requested}): on when OTEL_SDK_DISABLED is not "true" and
 * OTEL_TRACES_EXPORTER names "otlp" or "console" ("none" turns it off) or,
 * with it unset, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. The OpenTelemetry SDK is then
 * configured from the standard OTEL_* variables (sampler, OTEL_BSP_*,
 * endpoint, headers, resource) by its autoconfigure module, exporting over
 * OTLP/HTTP protobuf (the default here, as in the other SDKs: no gRPC
 * exporter is shipped) or, for "console", as java.util.logging lines (so
 * JSON lines on stderr: stdout carries the handshake); no metrics or logs
 * are exported; service.name is OTEL_SERVICE_NAME (the host sets
 * ccm-provider-&lt;name&gt;) or "ccm-provider". It is registered globally.
 * Off, no exporter or SDK is started and no interceptor is installed.
 */
public final class Tracing {
  /** The instrumentation scope of the SDK's spans (the TS SDK's TRACER_NAME, the Go SDK's TracerName). */
  public static final String TRACER_NAME = "grpc-cloud-controller-manager";
  /** service.name when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
  public static final String DEFAULT_SERVICE_NAME = "ccm-provider";

  private static final AttributeKey<String> RPC_SYSTEM = AttributeKey.stringKey("rpc.system");
  private static final AttributeKey<String> RPC_SERVICE = AttributeKey.stringKey("rpc.service");
  private static final AttributeKey<String> RPC_METHOD = AttributeKey.stringKey("rpc.method");
  private static final AttributeKey<Long> RPC_GRPC_STATUS = AttributeKey.longKey("rpc.grpc.status_code");
  private static final AttributeKey<String> SERVICE_NAME = AttributeKey.stringKey("service.name");

  private final Tracer tracer;
  private final TextMapPropagator propagator;
  private final Runnable flush;

  /** A tracer and the propagator extracting the caller's context; `shutdown` flushes and stops the exporters (bounded by the caller). */
  Tracing(OpenTelemetry otel, Runnable shutdown) {
    this.tracer = otel.getTracer(TRACER_NAME);
    this.propagator = otel.getPropagators().getTextMapPropagator();
    this.flush = shutdown;
  }

  /** Whether the OTEL_* variables in `env` turn tracing on. Pure. */
  public static boolean requested(Map<String, String> env) {
    if ("true".equalsIgnoreCase(env.getOrDefault("OTEL_SDK_DISABLED", "").strip())) return false;
    String exporters = env.getOrDefault("OTEL_TRACES_EXPORTER", "").strip();
    if (!exporters.isEmpty()) {
      for (String e : exporters.split(",")) {
        String n = e.strip().toLowerCase(Locale.ROOT);
        if (n.equals("otlp") || n.equals("console")) return true;
      }
      return false;
    }
    return !env.getOrDefault("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").isEmpty() || !env.getOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT", "").isEmpty();
  }

  /**
   * The exporters to start for OTEL_TRACES_EXPORTER (unset: otlp), as the
   * autoconfigure module names them: otlp and console, each once; "none" and
   * unknown names (logged by the caller) are left out. Pure.
   */
  static List<String> exporters(String names, List<String> unknown) {
    if (names == null || names.isBlank()) names = "otlp";
    Set<String> out = new LinkedHashSet<>();
    for (String e : names.split(",")) {
      String n = e.strip().toLowerCase(Locale.ROOT);
      if (n.isEmpty() || n.equals("none")) continue;
      if (n.equals("otlp") || n.equals("console")) out.add(n);
      else unknown.add(n);
    }
    return new ArrayList<>(out);
  }

  /**
   * Starts the OpenTelemetry SDK when {@link #requested}; null when off.
   * Never fails the provider: an SDK that cannot be configured is logged and
   * the provider serves without traces (rather than not at all).
   */
  static Tracing start(Map<String, String> env, Log log) {
    if (!requested(env)) return null;
    List<String> unknown = new ArrayList<>();
    String exporters = String.join(",", exporters(env.get("OTEL_TRACES_EXPORTER"), unknown));
    for (String n : unknown) log.warn("OTEL_TRACES_EXPORTER: unknown exporter ignored (otlp, console or none)", "exporter", n);
    try {
      Supplier<Map<String, String>> defaults =
          () ->
              Map.of(
                  // The other SDKs' exporter; the variable still wins (only http/protobuf has a sender here).
                  "otel.exporter.otlp.protocol", "http/protobuf",
                  "otel.metrics.exporter", "none",
                  "otel.logs.exporter", "none");
      OpenTelemetrySdk sdk =
          AutoConfiguredOpenTelemetrySdk.builder()
              .addPropertiesSupplier(defaults)
              .addPropertiesCustomizer(cfg -> Map.of("otel.traces.exporter", exporters.isEmpty() ? "none" : exporters))
              .addResourceCustomizer(
                  (res, cfg) -> {
                    String name = res.getAttribute(SERVICE_NAME);
                    if (name != null && !name.isEmpty() && !name.startsWith("unknown_service")) return res;
                    return res.merge(Resource.create(Attributes.of(SERVICE_NAME, DEFAULT_SERVICE_NAME)));
                  })
              // The server flushes on its own stop (and ends the process with halt, which runs no hook).
              .disableShutdownHook()
              // Global, as the TS, Go and Python SDKs do: the provider's own spans join the call's trace.
              .setResultAsGlobal()
              .build()
              .getOpenTelemetrySdk();
      return new Tracing(sdk, () -> sdk.shutdown().join(5, TimeUnit.SECONDS));
    } catch (RuntimeException e) {
      log.warn("traces not started", "err", String.valueOf(e));
      return null;
    }
  }

  /** Flushes and stops the exporters, waiting at most timeoutMs. Never throws. */
  void shutdown(long timeoutMs, Log log) {
    Thread t = new Thread(flush, "ccm-trace-flush");
    t.setDaemon(true);
    t.start();
    try {
      t.join(Math.max(1, timeoutMs));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) log.warn("trace exporter did not flush in time", "timeoutMs", timeoutMs);
  }

  private static final TextMapGetter<Metadata> METADATA =
      new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Metadata carrier) {
          return carrier.keys();
        }

        @Override
        public String get(Metadata carrier, String key) {
          if (carrier == null || key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) return null;
          return carrier.get(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER));
        }
      };

  /**
   * The interceptor, outermost on every call: a SERVER span child of the
   * metadata's traceparent (a new root when there is none or it is malformed:
   * trace context never fails a call), current while the call's listener
   * runs (so while a synchronous handler runs), ended with the call's gRPC
   * status.
   */
  ServerInterceptor interceptor() {
    return new ServerInterceptor() {
      @Override
      public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
        MethodDescriptor<ReqT, RespT> md = call.getMethodDescriptor();
        String service = md.getServiceName() == null ? "" : md.getServiceName();
        String method = md.getBareMethodName() == null ? "" : md.getBareMethodName();
        Context parent;
        try {
          parent = propagator.extract(Context.root(), headers, METADATA);
        } catch (RuntimeException e) {
          parent = Context.root();
        }
        Span span =
            tracer
                .spanBuilder(service + "/" + method)
                .setParent(parent)
                .setSpanKind(SpanKind.SERVER)
                .setAttribute(RPC_SYSTEM, "grpc")
                .setAttribute(RPC_SERVICE, service)
                .setAttribute(RPC_METHOD, method)
                .startSpan();
        Context ctx = parent.with(span);
        ServerCall<ReqT, RespT> traced =
            new SimpleForwardingServerCall<>(call) {
              @Override
              public void close(Status status, Metadata trailers) {
                span.setAttribute(RPC_GRPC_STATUS, (long) status.getCode().value());
                if (!status.isOk()) span.setStatus(StatusCode.ERROR, status.getDescription() == null ? status.getCode().name() : status.getDescription());
                span.end();
                super.close(status, trailers);
              }
            };
        ServerCall.Listener<ReqT> inner;
        try (Scope ignored = ctx.makeCurrent()) {
          inner = next.startCall(traced, headers);
        }
        return new SimpleForwardingServerCallListener<>(inner) {
          @Override
          public void onMessage(ReqT message) {
            try (Scope ignored = ctx.makeCurrent()) {
              super.onMessage(message);
            }
          }

          @Override
          public void onHalfClose() {
            try (Scope ignored = ctx.makeCurrent()) {
              super.onHalfClose();
            }
          }

          @Override
          public void onCancel() {
            try (Scope ignored = ctx.makeCurrent()) {
              super.onCancel();
            } finally {
              // Cancelled by the client or a stop: no close() comes. end() twice is a no-op.
              span.end();
            }
          }

          @Override
          public void onComplete() {
            try (Scope ignored = ctx.makeCurrent()) {
              super.onComplete();
            }
          }

          @Override
          public void onReady() {
            try (Scope ignored = ctx.makeCurrent()) {
              super.onReady();
            }
          }
        };
      }
    };
  }
}
