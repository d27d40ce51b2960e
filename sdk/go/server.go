package ccmsdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Grace periods and bounds of a stop.
const (
	// DefaultStopGrace is the grace period of stops not asked for by a
	// Shutdown RPC (signals, stdin EOF), and of a Shutdown without one.
	DefaultStopGrace = 5 * time.Second
	// MaxShutdownGrace is the longest grace period honoured; the host escalates to signals anyway.
	MaxShutdownGrace = 120 * time.Second
	// drainStreams: after in-flight calls finished, the longest wait for open streams (health Watch).
	drainStreams = time.Second
	// minDrainStreams: open streams always get this long, so an answered Shutdown is flushed.
	minDrainStreams = 200 * time.Millisecond
	// minClose: Closer.Close always gets at least this long.
	minClose = time.Second
	// exitBackstop: past grace + minClose + this, a stuck stop exits anyway.
	exitBackstop = 2 * time.Second
)

var (
	lifecycleShutdownMethod = "/" + pb.LifecycleService_ServiceDesc.ServiceName + "/Shutdown"
	healthServicePrefix     = "/" + healthpb.Health_ServiceDesc.ServiceName + "/"
)

// errShuttingDown answers calls refused or aborted because the provider stops.
var errShuttingDown = status.Error(codes.Unavailable, "provider is shutting down")

// inFlight tracks the calls running provider code, so Shutdown can cancel them.
type inFlight struct {
	mu      sync.Mutex
	cancels map[*context.CancelCauseFunc]struct{}
	closed  bool
	idle    chan struct{} // closed when the set becomes empty; nil while empty
}

func newInFlight() *inFlight {
	return &inFlight{cancels: map[*context.CancelCauseFunc]struct{}{}}
}

// begin starts tracking a call; false once closed (the call is refused).
func (f *inFlight) begin(ctx context.Context) (context.Context, func(), bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	key := &cancel
	f.cancels[key] = struct{}{}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	return ctx, func() {
		cancel(nil)
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.cancels, key)
		if len(f.cancels) == 0 && f.idle != nil {
			close(f.idle)
			f.idle = nil
		}
	}, true
}

// abortAll cancels every running call with errShuttingDown.
func (f *inFlight) abortAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.cancels {
		(*c)(errShuttingDown)
	}
}

// close refuses new calls from now on.
func (f *inFlight) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// waitIdle waits until no call runs, at most d; false when calls remain.
func (f *inFlight) waitIdle(d time.Duration) bool {
	f.mu.Lock()
	ch := f.idle
	f.mu.Unlock()
	if ch == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func (f *inFlight) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cancels)
}

// providerServer is the gRPC server of one provider: Identity, Lifecycle,
// grpc.health.v1, the provider's services and Options.Register's.
type providerServer struct {
	provider   Provider
	mode       Mode
	log        *slog.Logger
	grpc       *grpc.Server
	health     *health.Server
	inFlight   *inFlight
	configured atomic.Bool
	caps       *pb.GetPluginCapabilitiesResponse
	// onShutdown runs after a Shutdown RPC was answered (exec mode: stop and exit); nil in sidecar mode.
	onShutdown func(grace time.Duration)
	// tracing is nil unless the OTEL_* variables turn traces on (tracing.go).
	tracing *tracing

	stopOnce sync.Once
	stopped  chan struct{}
}

func newProviderServer(p Provider, mode Mode, log *slog.Logger, opts Options) (*providerServer, error) {
	bound, err := bindServices(p)
	if err != nil {
		return nil, err
	}
	s := &providerServer{
		provider: p, mode: mode, log: log, inFlight: newInFlight(),
		caps: deriveCapabilities(p, bound), stopped: make(chan struct{}),
	}
	var interceptors []grpc.UnaryServerInterceptor
	if s.tracing = startTracing(os.Getenv, log); s.tracing != nil {
		// First: the span covers the whole call, the SDK's refusals (not configured, stopping) included.
		interceptors = append(interceptors, s.tracing.intercept)
	}
	interceptors = append(append(interceptors, s.intercept), opts.Interceptors...)
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes), grpc.ChainUnaryInterceptor(interceptors...))
	s.health = health.NewServer()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(HealthServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	pb.RegisterIdentityServiceServer(s.grpc, &identityServer{s: s})
	pb.RegisterLifecycleServiceServer(s.grpc, &lifecycleServer{s: s})
	for _, e := range providerServices {
		if b := bound[e.name]; b != nil {
			s.grpc.RegisterService(b.serviceDesc(), nil)
		}
	}
	if opts.Register != nil {
		opts.Register(s.grpc)
	}
	return s, nil
}

// intercept runs first on every unary call: it refuses calls once the
// provider stops (UNAVAILABLE) and cloud calls before Configure
// (NOT_CONFIGURED), gives the call a context Shutdown cancels, recovers
// panics, and maps errors that are not gRPC statuses (a cancelled context
// → CANCELLED/DEADLINE_EXCEEDED/UNAVAILABLE; anything else → INTERNAL).
func (s *providerServer) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (res any, err error) {
	if info.FullMethod == lifecycleShutdownMethod || strings.HasPrefix(info.FullMethod, healthServicePrefix) {
		return handler(ctx, req) // Never refused or cancelled: Shutdown stays idempotent.
	}
	callCtx, done, ok := s.inFlight.begin(ctx)
	if !ok {
		return nil, errShuttingDown
	}
	defer done()
	if IsCloudMethod(info.FullMethod) && !s.configured.Load() {
		return nil, NotConfigured()
	}
	started := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("provider method panicked", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res, err = nil, status.Errorf(codes.Internal, "%s panicked: %v", strings.TrimPrefix(info.FullMethod, "/"), r)
		}
	}()
	res, err = handler(callCtx, req)
	if err == nil {
		s.log.Debug("call succeeded", "method", info.FullMethod, "ms", time.Since(started).Milliseconds())
		return res, nil
	}
	err = s.answerError(callCtx, info.FullMethod, err)
	s.log.Debug("call failed", "method", info.FullMethod, "code", status.Code(err).String(), "err", status.Convert(err).Message(), "ms", time.Since(started).Milliseconds())
	return nil, err
}

func (s *providerServer) answerError(ctx context.Context, method string, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		if _, ok := status.FromError(cause); ok {
			return cause // Shutdown aborted the call.
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return status.Error(codes.DeadlineExceeded, "call deadline exceeded")
		}
		return status.Error(codes.Canceled, "call cancelled by the host")
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	s.log.Error("provider method returned an error that is not a gRPC status", "method", method, "err", err.Error())
	return status.Error(codes.Internal, err.Error())
}

// stop stops serving once: refuses new calls, cancels in-flight ones,
// health NOT_SERVING, waits up to grace for the calls, closes the listener
// and connections (bounded), runs Closer.Close (at least 1 s), removes the
// socket file. Returns when done; later calls wait for the first.
func (s *providerServer) stop(reason string, grace time.Duration) {
	s.stopOnce.Do(func() {
		defer close(s.stopped)
		deadline := time.Now().Add(grace)
		s.log.Info("provider stopping", "reason", reason, "graceMs", grace.Milliseconds())
		s.inFlight.close()
		s.inFlight.abortAll()
		s.health.Shutdown()
		if !s.inFlight.waitIdle(grace) {
			s.log.Warn("in-flight calls outlived the grace period", "inFlight", s.inFlight.size(), "graceMs", grace.Milliseconds())
		}
		streams := min(drainStreams, max(minDrainStreams, time.Until(deadline)))
		finished := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(streams):
			s.grpc.Stop()
		}
		if c, ok := s.provider.(Closer); ok {
			ctx, cancel := context.WithTimeout(context.Background(), max(minClose, time.Until(deadline)))
			closed := make(chan error, 1)
			go func() { closed <- c.Close(ctx) }()
			select {
			case err := <-closed:
				if err != nil {
					s.log.Error("provider close failed", "err", err.Error())
				}
			case <-ctx.Done():
				s.log.Warn("provider close did not finish in time")
			}
			cancel()
		}
		// The last spans (Shutdown's own included) go out before the process exits.
		s.tracing.shutdown(max(minClose, time.Until(deadline)), s.log)
		removeSocketFile(s.mode.SocketPath)
		s.log.Debug("provider server stopped", "socket", s.mode.SocketPath)
	})
	<-s.stopped
}

// shutdownGrace is a Shutdown request's grace period, defaulted and clamped.
func shutdownGrace(req *pb.ShutdownRequest) time.Duration {
	if req.GetGracePeriod() == nil {
		return DefaultStopGrace
	}
	return max(0, min(req.GetGracePeriod().AsDuration(), MaxShutdownGrace))
}

type identityServer struct {
	pb.UnimplementedIdentityServiceServer
	s *providerServer
}

func (i *identityServer) GetPluginInfo(context.Context, *pb.GetPluginInfoRequest) (*pb.GetPluginInfoResponse, error) {
	info := i.s.provider.Info()
	manifest := info.Manifest
	if manifest == nil {
		manifest = map[string]string{}
	}
	return &pb.GetPluginInfoResponse{
		Name: info.Name, VendorVersion: info.VendorVersion,
		ProtocolVersion: uint32(i.s.mode.Protocol), ProtocolMinor: ProtocolMinor,
		InstanceId: i.s.mode.InstanceID, Manifest: manifest,
		ProviderFlags: info.ProviderFlags, ProviderControllers: info.ProviderControllers,
	}, nil
}

// GetPluginCapabilities: derived once at start, fixed for the life of the process.
func (i *identityServer) GetPluginCapabilities(context.Context, *pb.GetPluginCapabilitiesRequest) (*pb.GetPluginCapabilitiesResponse, error) {
	return i.s.caps, nil
}

func (i *identityServer) Probe(ctx context.Context, _ *pb.ProbeRequest) (*pb.ProbeResponse, error) {
	if !i.s.configured.Load() {
		return &pb.ProbeResponse{Ready: false}, nil
	}
	if p, ok := i.s.provider.(Prober); ok {
		ready, err := p.Probe(ctx)
		if err != nil {
			return nil, err
		}
		return &pb.ProbeResponse{Ready: ready}, nil
	}
	return &pb.ProbeResponse{Ready: true}, nil
}

func (i *identityServer) GetMetrics(ctx context.Context, _ *pb.GetMetricsRequest) (*pb.GetMetricsResponse, error) {
	m, ok := i.s.provider.(MetricsExporter)
	if !ok {
		return nil, NotImplemented("this provider exports no metrics (ccmsdk.MetricsExporter)")
	}
	text, err := m.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	return &pb.GetMetricsResponse{Text: text}, nil
}

func (i *identityServer) GetProviderSchema(_ context.Context, _ *pb.GetProviderSchemaRequest) (*pb.GetProviderSchemaResponse, error) {
	sp, ok := i.s.provider.(SchemaPublisher)
	if !ok {
		return nil, NotImplemented("this provider publishes no schema (ccmsdk.SchemaPublisher)")
	}
	if schema := sp.ProviderSchema(); schema != nil {
		return schema, nil
	}
	return &pb.GetProviderSchemaResponse{}, nil
}

type lifecycleServer struct {
	pb.UnimplementedLifecycleServiceServer
	s *providerServer
}

// Configure runs the provider's Configure; success marks the provider
// configured (a failure leaves it as it was).
func (l *lifecycleServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	res := &pb.ConfigureResponse{}
	if c, ok := l.s.provider.(Configurer); ok {
		r, err := c.Configure(ctx, req)
		if err != nil {
			return nil, err
		}
		if r != nil {
			res = r
		}
	}
	l.s.configured.Store(true)
	return res, nil
}

// Shutdown cancels every in-flight call and answers; in exec mode the stop
// (and exit) begins then, and waits for this answer to be sent. In sidecar
// mode the provider keeps serving the next host.
func (l *lifecycleServer) Shutdown(_ context.Context, req *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	grace := shutdownGrace(req)
	l.s.log.Info("shutdown requested", "graceMs", grace.Milliseconds(), "inFlight", l.s.inFlight.size())
	l.s.inFlight.abortAll()
	if l.s.onShutdown != nil {
		go l.s.onShutdown(grace)
	}
	return &pb.ShutdownResponse{}, nil
}
