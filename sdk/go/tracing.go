package ccmsdk

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Traces across the plugin boundary (protocol 1.1, docs/protocol.md
// "Protocol 1.1"): the host sends the W3C trace context of its CLIENT span
// (traceparent, tracestate) in the gRPC metadata of every call; with tracing
// on, the SDK runs each handler in a SERVER span that continues that trace,
// so a handler's own spans (from ctx) join it too.
//
// Off by default, by the same rules as the TypeScript SDK (sdk/tracing.ts):
// on when OTEL_SDK_DISABLED is not "true" and OTEL_TRACES_EXPORTER names
// "otlp" or "console" ("none" turns it off) or, with it unset,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is set.
// The exporter (OTLP/HTTP protobuf), sampler and batch settings are the OTel
// SDK's own standard variables; service.name is OTEL_SERVICE_NAME (the host
// sets ccm-provider-<name>) or "ccm-provider". Off, no exporter or SDK is
// started and no interceptor is installed.

// TracerName is the instrumentation scope of the SDK's spans (the TS SDK's TRACER_NAME).
const TracerName = "grpc-cloud-controller-manager"

// tracingRequested reports whether the OTEL_* variables turn tracing on. Pure.
func tracingRequested(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporters != "" {
		for _, e := range strings.Split(exporters, ",") {
			switch strings.ToLower(strings.TrimSpace(e)) {
			case "otlp", "console":
				return true
			}
		}
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// tracing is a started tracer provider and the W3C propagator the interceptor extracts with.
type tracing struct {
	provider   *sdktrace.TracerProvider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// startTracing starts the OTel SDK when [tracingRequested]; nil when off.
// Never fails the provider: an exporter that cannot be built is logged and
// skipped (a provider serves without traces rather than not at all).
func startTracing(getenv func(string) string, log *slog.Logger) *tracing {
	if !tracingRequested(getenv) {
		return nil
	}
	names := getenv("OTEL_TRACES_EXPORTER")
	if strings.TrimSpace(names) == "" {
		names = "otlp"
	}
	var opts []sdktrace.TracerProviderOption
	seen := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" || n == "none" || seen[n] {
			continue
		}
		seen[n] = true
		var exp sdktrace.SpanExporter
		var err error
		switch n {
		case "otlp":
			// Endpoint, headers, timeout and TLS from OTEL_EXPORTER_OTLP_[TRACES_]*; no connection is made here.
			exp, err = otlptracehttp.New(context.Background())
		case "console":
			// To stderr: stdout carries the handshake.
			exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
		default:
			log.Warn("OTEL_TRACES_EXPORTER: unknown exporter ignored (otlp, console or none)", "exporter", n)
			continue
		}
		if err != nil {
			log.Warn("trace exporter not started", "exporter", n, "err", err.Error())
			continue
		}
		// Batch settings from OTEL_BSP_*.
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	// OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES win over the default name.
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", "ccm-provider")),
		resource.Environment(),
	)
	if err != nil {
		res = resource.Environment()
	}
	// The sampler comes from OTEL_TRACES_SAMPLER[_ARG] (default parentbased_always_on).
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	// Global, as the TS and Python SDKs do: the provider's own otel.Tracer(...) spans join the call's trace.
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(prop)
	return &tracing{provider: tp, tracer: tp.Tracer(TracerName), propagator: prop}
}

// shutdown flushes and stops the exporters, bounded by timeout. Idempotent; nil-safe.
func (t *tracing) shutdown(timeout time.Duration, log *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		log.Warn("trace exporter did not flush", "err", err.Error())
	}
}

// metadataCarrier reads the incoming gRPC metadata as a TextMapCarrier (keys are lower-case there).
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }
func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// intercept runs the handler in a SERVER span named `<service>/<method>`
// with the rpc.* attributes, child of the traceparent in the metadata (a new
// root when there is none or it is malformed: a bad traceparent never fails
// the call), ended with the call's gRPC status.
func (t *tracing) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = t.propagator.Extract(ctx, metadataCarrier(md))
	}
	service, method, _ := strings.Cut(strings.TrimPrefix(info.FullMethod, "/"), "/")
	ctx, span := t.tracer.Start(ctx, service+"/"+method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("rpc.system", "grpc"),
			attribute.String("rpc.service", service),
			attribute.String("rpc.method", method),
		))
	defer span.End()
	resp, err := handler(ctx, req)
	code := status.Code(err)
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)))
	if err != nil {
		span.SetStatus(codes.Error, status.Convert(err).Message())
	}
	return resp, err
}
