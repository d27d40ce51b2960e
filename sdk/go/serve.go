package ccmsdk

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
)

// Options of [Serve]. All optional; the zero value is what executables want.
type Options struct {
	// Endpoint is the sidecar endpoint (unix:///abs/path.sock); it overrides
	// CCM_PROVIDER_ENDPOINT and --endpoint. Ignored in exec mode.
	Endpoint string
	// Logger for the SDK's own lines; default NewLogger(Info().ProviderName, nil, nil).
	Logger *slog.Logger
	// Args to read --endpoint from; default os.Args[1:].
	Args []string
	// StopGrace is the grace period of stops not asked for by a Shutdown
	// RPC (SIGTERM/SIGINT, stdin EOF); default DefaultStopGrace (5 s).
	StopGrace time.Duration
	// Register adds services of the provider's own to the server, e.g.
	// ccm.provider.testing.v1.TestHooksService when EnvTestHooks is "1".
	Register func(grpc.ServiceRegistrar)
	// Interceptors run on every unary call after the SDK's own (which
	// refuses cloud calls before Configure and calls during a stop); use
	// IsCloudMethod to pick the cloud calls.
	Interceptors []grpc.UnaryServerInterceptor
}

// Serve serves p until the process is told to stop, then returns nil after
// a graceful stop. See the package documentation for what it does.
//
// Exec mode (CCM_PLUGIN_MAGIC_COOKIE matches): negotiates the protocol from
// CCM_PLUGIN_PROTOCOL_VERSIONS, listens on the unix socket named by
// CCM_PLUGIN_ENDPOINT (0600), prints the one handshake line on stdout and
// returns after a graceful stop on stdin EOF (the host died), a Shutdown RPC
// (within its grace period), SIGTERM or SIGINT. A second signal during the
// stop exits 1 at once; a stop that hangs past its bound exits 0.
//
// Sidecar mode (no magic cookie, an endpoint from Options.Endpoint,
// CCM_PROVIDER_ENDPOINT or --endpoint=unix:///path.sock): listens there, no
// handshake, no stdin watching; GetPluginInfo reports a random instance id
// made at start, so a host can tell this process from the next one behind
// the same socket. A Shutdown RPC only cancels in-flight calls; the provider
// keeps serving the next host. SIGTERM/SIGINT stop it and remove the socket.
//
// Both modes: cloud calls answer FAILED_PRECONDITION/NOT_CONFIGURED and
// Probe answers ready=false until the first successful Configure.
//
// It returns an error without serving when it must not run (started by
// hand, wrong cookie, no common protocol version: a [*ModeError]), when a
// service object is invalid, or when the socket is unusable. The caller
// prints it on stderr and exits 1; [Main] does exactly that.
func Serve(p Provider, opts Options) error {
	args := opts.Args
	if args == nil {
		args = os.Args[1:]
	}
	mode, err := ResolveMode(os.LookupEnv, args, opts.Endpoint)
	if err != nil {
		return err
	}
	log := opts.Logger
	if log == nil {
		name := p.Info().ProviderName
		if name == "" {
			name = "provider"
		}
		log = NewLogger(name, nil, nil)
	}
	log = log.With("component", "ccm-sdk")
	grace := opts.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	if mode.Kind == ModeExec {
		guardStdout()
		// EPIPE on the standard streams after the host died must not kill a stop in progress.
		signal.Ignore(syscall.SIGPIPE)
	} else {
		// No launch nonce: a per-process id lets the host notice a restart.
		if mode.InstanceID, err = randomInstanceID(); err != nil {
			return err
		}
	}

	s, err := newProviderServer(p, mode, log, opts)
	if err != nil {
		return err
	}
	lis, err := listenUnix(mode.SocketPath)
	if err != nil {
		return fmt.Errorf("cannot serve on %s: %w", mode.SocketPath, err)
	}

	// One stop per process: the first request wins; later ones are dropped,
	// except a signal, which then exits at once (the host may close stdin and
	// send SIGTERM right after).
	var stopping atomic.Bool
	stopRequests := make(chan func(), 1)
	request := func(reason string, grace time.Duration) bool {
		if !stopping.CompareAndSwap(false, true) {
			return false
		}
		stopRequests <- func() {
			// A stop that hangs past its bound still ends the process.
			backstop := time.AfterFunc(grace+minClose+exitBackstop, func() {
				log.Warn("provider stop did not finish; exiting anyway", "reason", reason)
				removeSocketFile(mode.SocketPath)
				os.Exit(0)
			})
			defer backstop.Stop()
			s.stop(reason, grace)
		}
		return true
	}
	if mode.Kind == ModeExec {
		s.onShutdown = func(grace time.Duration) { request("shutdown requested", grace) }
	}

	// Hooks go in before the handshake: the host may signal or close stdin
	// the moment it reads the line.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	go func() {
		for sig := range signals {
			name := signalName(sig)
			if !request(name, grace) {
				log.Warn("signal during stop; exiting now", "signal", name)
				removeSocketFile(mode.SocketPath)
				os.Exit(1)
			}
		}
	}()

	served := make(chan error, 1)
	go func() { served <- s.grpc.Serve(lis) }()
	go func() {
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("grpc server failed", "err", err.Error())
			request("server failed", 0)
		}
	}()

	if mode.Kind == ModeExec {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin) // Data is discarded; only EOF matters.
			request("stdin closed", grace)
		}()
		if err := writeHandshake(FormatHandshake(mode.Protocol, mode.SocketPath)); err != nil {
			s.stop("handshake failed", 0)
			return fmt.Errorf("cannot write the handshake line on stdout: %w", err)
		}
	}
	log.Info("provider serving", "mode", string(mode.Kind), "endpoint", "unix://"+mode.SocketPath, "protocolVersion", mode.Protocol, "instanceId", mode.InstanceID)
	(<-stopRequests)()
	log.Info("provider stopped")
	return nil
}

// Main serves p with [Serve] and ends the process: exit 0 after a graceful
// stop; the error on stderr and exit 1 when Serve could not run.
func Main(p Provider, opts Options) {
	if err := Serve(p, opts); err != nil {
		fmt.Fprintln(os.Stderr, err.Error())
		os.Exit(1)
	}
	os.Exit(0)
}

// randomInstanceID is a random UUID (version 4).
func randomInstanceID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cannot read random bytes for the instance id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return sig.String()
}
