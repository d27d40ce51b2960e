package ccmsdk

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func TestTracingRequestedFollowsTheOtelVariables(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin, OTLP"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "TRUE"}, false},
	} {
		if got := tracingRequested(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("tracingRequested(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestTracingOffStartsNothing(t *testing.T) {
	if tr := startTracing(func(string) string { return "" }, NewLogger("t", nil, nil)); tr != nil {
		t.Fatal("startTracing with no OTEL_* variables started an SDK")
	}
}

func TestTracingInterceptorContinuesTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := &tracing{provider: tp, tracer: tp.Tracer(TracerName), propagator: propagation.TraceContext{}}
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	info := &grpc.UnaryServerInfo{FullMethod: "/ccm.provider.v1.LoadBalancersService/EnsureLoadBalancer"}
	var inHandler trace.SpanContext
	handler := func(ctx context.Context, _ any) (any, error) {
		inHandler = trace.SpanContextFromContext(ctx)
		return "ok", nil
	}
	for _, c := range []struct {
		name        string
		traceparent string
		wantParent  string
	}{
		{"with the host's traceparent: a child of its client span", "00-" + traceID + "-" + parentID + "-01", parentID},
		{"with a malformed traceparent: a new root, the call still answered", "00-zz-" + parentID + "-01", ""},
		{"without metadata: a new root", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec.Reset()
			ctx := context.Background()
			if c.traceparent != "" {
				ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("traceparent", c.traceparent))
			}
			resp, err := tr.intercept(ctx, nil, info, handler)
			if err != nil || resp != "ok" {
				t.Fatalf("intercept = %v, %v", resp, err)
			}
			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans ended, want 1", len(spans))
			}
			s := spans[0]
			got := map[string]any{
				"name":   s.Name(),
				"kind":   s.SpanKind(),
				"parent": "",
				"active": inHandler.SpanID() == s.SpanContext().SpanID(),
			}
			if s.Parent().IsValid() {
				got["parent"] = s.Parent().SpanID().String()
			}
			want := map[string]any{
				"name":   "ccm.provider.v1.LoadBalancersService/EnsureLoadBalancer",
				"kind":   trace.SpanKindServer,
				"parent": c.wantParent,
				"active": true,
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s = %v, want %v", k, got[k], want[k])
				}
			}
			if c.wantParent != "" && s.SpanContext().TraceID().String() != traceID {
				t.Errorf("trace id = %s, want the host's %s", s.SpanContext().TraceID(), traceID)
			}
		})
	}
}
