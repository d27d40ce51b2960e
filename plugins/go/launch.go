// The launch contract of docs/protocol.md: magic cookie, protocol version
// negotiation, the unix socket, the one handshake line on stdout, health,
// Shutdown, stdin EOF and signals. Nothing here is specific to this cloud.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Constants of the launch contract (sdk/protocol.ts is their source).
const (
	magicCookieKey      = "CCM_PLUGIN_MAGIC_COOKIE"
	magicCookieValue    = "b7c6c4f1a3e04d0e9d1f2a7c5e8b6a90-ccm-provider"
	envProtocolVersions = "CCM_PLUGIN_PROTOCOL_VERSIONS"
	envEndpoint         = "CCM_PLUGIN_ENDPOINT"
	envInstanceID       = "CCM_PLUGIN_INSTANCE_ID"
	envLogLevel         = "CCM_PLUGIN_LOG_LEVEL"
	envSidecarEndpoint  = "CCM_PROVIDER_ENDPOINT"
	envTestHooks        = "CCM_PROVIDER_TEST_HOOKS"
	healthServiceName   = "ccm.provider.v1"
	coreVersion         = 1
	maxMessageBytes     = 16 * 1024 * 1024
	maxSocketPathBytes  = 107
	// Grace period for stops not asked for by a Shutdown RPC (stdin EOF, signals).
	defaultGrace = 5 * time.Second
	maxGrace     = 120 * time.Second
)

// Protocol majors this provider speaks, and the minor of the newest one.
var supportedVersions = []int{1}

const protocolMinor = 0

const notByHand = "This binary is a ccm provider plugin; it is started by cloud-controller-manager, not by hand (set --plugin-path on the host, or run it as a sidecar with --endpoint=unix:///path/provider.sock)."

// launchMode is what the environment and arguments ask for.
type launchMode struct {
	exec       bool
	socketPath string
	protocol   int
	instanceID string
}

// fail prints one line on stderr and exits 1 (the host shows it to the operator).
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func endpointFromArgs(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--endpoint="); ok {
			return v
		}
		if a == "--endpoint" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// unixPath turns unix:///abs/path (or unix:/abs/path) into /abs/path.
func unixPath(endpoint string) (string, bool) {
	p, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		p, ok = strings.CutPrefix(endpoint, "unix:")
	}
	if !ok || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "", false
	}
	return p, true
}

// resolveMode decides exec mode (cookie matches), sidecar mode (no cookie,
// an endpoint given) or refusal (exits 1).
func resolveMode() launchMode {
	cookie, hasCookie := os.LookupEnv(magicCookieKey)
	if hasCookie && cookie == magicCookieValue {
		offered := []int{}
		for _, s := range strings.Split(os.Getenv(envProtocolVersions), ",") {
			if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && v > 0 {
				offered = append(offered, v)
			}
		}
		protocol := 0
		for _, v := range supportedVersions {
			if slices.Contains(offered, v) && v > protocol {
				protocol = v
			}
		}
		if protocol == 0 {
			fail("This provider speaks ccm protocol versions %s; the host offered %s (%s=%q): upgrade whichever side is older.",
				joinInts(supportedVersions), orNone(joinInts(offered)), envProtocolVersions, os.Getenv(envProtocolVersions))
		}
		path, ok := unixPath(os.Getenv(envEndpoint))
		if !ok {
			fail("%s=%q is not a unix:///absolute/path endpoint; the host must set it.", envEndpoint, os.Getenv(envEndpoint))
		}
		return launchMode{exec: true, socketPath: path, protocol: protocol, instanceID: os.Getenv(envInstanceID)}
	}
	endpoint := os.Getenv(envSidecarEndpoint)
	if e := endpointFromArgs(os.Args[1:]); e != "" {
		endpoint = e
	}
	if !hasCookie && endpoint != "" {
		path, ok := unixPath(endpoint)
		if !ok {
			fail("sidecar endpoint %q is not a unix:///absolute/path endpoint.", endpoint)
		}
		return launchMode{socketPath: path, protocol: slices.Max(supportedVersions), instanceID: randomInstanceID()}
	}
	fail("%s", notByHand)
	return launchMode{}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// listen binds the unix socket (0600), removing a stale socket file that
// nothing answers on; a live one or a non-socket file is refused.
func listen(path string) (net.Listener, error) {
	if len(path) > maxSocketPathBytes {
		return nil, fmt.Errorf("socket path %q is longer than %d bytes", path, maxSocketPathBytes)
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another process is listening on %s", path)
		}
		_ = os.Remove(path)
	}
	// Created owner-only: a chmod after the bind alone would leave a moment
	// in which the socket is open to others.
	previous := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(previous)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func newLogger() *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(os.Getenv(envLogLevel)) {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	// JSON lines on stderr with lowercase levels, which the host parses.
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.LevelKey {
				a.Value = slog.StringValue(strings.ToLower(a.Value.String()))
			}
			return a
		},
	}))
}

// stopper runs one graceful stop: health NOT_SERVING, GracefulStop bounded by
// the grace period, then Stop; the listener's socket file is removed.
type stopper struct {
	once   sync.Once
	done   chan struct{}
	server *grpc.Server
	health *health.Server
	socket string
	log    *slog.Logger
}

func (s *stopper) stop(reason string, grace time.Duration) {
	s.once.Do(func() {
		go func() {
			s.log.Info("provider stopping", "reason", reason, "graceMs", grace.Milliseconds())
			s.health.Shutdown()
			finished := make(chan struct{})
			go func() { s.server.GracefulStop(); close(finished) }()
			select {
			case <-finished:
			case <-time.After(grace):
				s.log.Warn("in-flight calls outlived the grace period")
				s.server.Stop()
			}
			_ = os.Remove(s.socket)
			close(s.done)
		}()
	})
}

// serve runs the provider until it is told to stop, then returns.
func serve(register func(*grpc.Server, launchMode, func(time.Duration))) {
	mode := resolveMode()
	log := newLogger()
	lis, err := listen(mode.socketPath)
	if err != nil {
		fail("cannot serve on %s: %v", mode.socketPath, err)
	}
	server := grpc.NewServer(grpc.MaxRecvMsgSize(maxMessageBytes), grpc.MaxSendMsgSize(maxMessageBytes), grpc.ChainUnaryInterceptor(notConfiguredInterceptor, throttleInterceptor))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(healthServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, hs)
	st := &stopper{done: make(chan struct{}), server: server, health: hs, socket: mode.socketPath, log: log}

	onShutdown := func(grace time.Duration) {
		if mode.exec {
			st.stop("shutdown requested", grace)
		} // Sidecar mode: keep serving the next host.
	}
	register(server, mode, onShutdown)

	go func() {
		if err := server.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("grpc server failed", "err", err.Error())
			st.stop("server failed", 0)
		}
	}()

	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		st.stop("signal", defaultGrace)
		<-signals
		os.Exit(1) // A second signal during the stop: exit at once.
	}()

	if mode.exec {
		// The one stdout line. Afterwards os.Stdout points at stderr, so a
		// stray print anywhere in the program cannot corrupt the protocol.
		fmt.Fprintf(os.Stdout, "CCMPLUGIN|%d|%d|unix|%s|grpc\n", coreVersion, mode.protocol, mode.socketPath)
		os.Stdout = os.Stderr
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin) // EOF: the host is gone.
			st.stop("stdin closed", defaultGrace)
		}()
	}
	log.Info("provider serving", "exec", mode.exec, "socket", mode.socketPath, "protocolVersion", mode.protocol)
	<-st.done
	log.Info("provider stopped")
}

// graceOf clamps a Shutdown grace period (unset = default).
func graceOf(d time.Duration, set bool) time.Duration {
	if !set {
		return defaultGrace
	}
	return max(0, min(d, maxGrace))
}
