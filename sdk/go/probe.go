package ccmsdk

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// ProbeCommand, as the first argument of any executable that links this
// package, makes it its own kubelet exec probe instead of a provider: it
// dials a running provider's socket and exits 0 or 1 (see [RunProbe]). It is
// handled in this package's init, before the executable's main builds its
// cloud: a probe never reads the cloud config or calls the cloud.
const ProbeCommand = "probe"

// DefaultProbeTimeout bounds a probe (dial and every call) unless --timeout says otherwise.
const DefaultProbeTimeout = 3 * time.Second

// Exit codes of a probe.
const (
	ProbeOK     = 0
	ProbeFailed = 1
	// ProbeUsage: the probe's own command line is wrong (still a failed probe for the kubelet).
	ProbeUsage = 2
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == ProbeCommand {
		os.Exit(RunProbe(os.Args[2:], os.LookupEnv, os.Stdout))
	}
}

// RunProbe is `<provider> probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready]`:
//
//   - without --ready (liveness): the provider's gRPC server answers
//     grpc.health.v1 Health/Check for "ccm.provider.v1" with SERVING. Nothing
//     about the cloud: a cloud outage must not restart the provider.
//   - with --ready (readiness): SERVING and IdentityService/Probe answers
//     ready=true (configured by the host, and the provider's own Prober).
//
// The endpoint is --endpoint, else CCM_PROVIDER_ENDPOINT (what sidecar mode
// serves on). The whole probe (dial and calls) is bounded by --timeout. It
// writes one line on out saying why, and returns ProbeOK, ProbeFailed or
// ProbeUsage. Read-only: safe to run at any rate, on any process.
func RunProbe(args []string, lookup func(string) (string, bool), out io.Writer) int {
	fs := flag.NewFlagSet(ProbeCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	endpoint := fs.String("endpoint", "", "the provider's endpoint, unix:///abs/path.sock (default $"+EnvSidecarEndpoint+")")
	timeout := fs.Duration("timeout", DefaultProbeTimeout, "bound of the whole probe")
	ready := fs.Bool("ready", false, "also require IdentityService/Probe ready=true (readiness)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(out, "probe: %v (usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready])\n", err)
		return ProbeUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(out, "probe: unexpected argument %q (usage: probe [--endpoint=unix:///path.sock] [--timeout=3s] [--ready])\n", fs.Arg(0))
		return ProbeUsage
	}
	if *endpoint == "" {
		*endpoint, _ = lookup(EnvSidecarEndpoint)
	}
	if _, ok := UnixSocketPath(*endpoint); !ok {
		fmt.Fprintf(out, "probe: endpoint %q is not unix:///absolute/path.sock (--endpoint or $%s)\n", *endpoint, EnvSidecarEndpoint)
		return ProbeUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(out, "probe: --timeout=%s must be positive\n", *timeout)
		return ProbeUsage
	}
	msg, err := CheckProvider(*endpoint, *ready, *timeout)
	if err != nil {
		fmt.Fprintf(out, "probe failed: %s: %v\n", *endpoint, err)
		return ProbeFailed
	}
	fmt.Fprintf(out, "probe ok: %s: %s\n", *endpoint, msg)
	return ProbeOK
}

// CheckProvider asks the provider at endpoint what [RunProbe] asks, all
// within timeout; nil error with what it answered when it passes. No answer
// in time means a process that accepts connections but answers nothing
// (wedged). Read-only, idempotent.
func CheckProvider(endpoint string, ready bool, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// Not wait-for-ready: a missing or refused socket fails at once
	// (UNAVAILABLE); one that connects but never finishes the HTTP/2
	// handshake keeps the call waiting until the deadline.
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: HealthServiceName})
	if err != nil {
		return "", describeCallError("grpc.health.v1 Check", timeout, err)
	}
	if h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return "", fmt.Errorf("grpc.health.v1 Check answered %s", h.GetStatus())
	}
	if !ready {
		return "grpc.health.v1 SERVING", nil
	}
	p, err := pb.NewIdentityServiceClient(conn).Probe(ctx, &pb.ProbeRequest{})
	if err != nil {
		return "", describeCallError("IdentityService/Probe", timeout, err)
	}
	if !p.GetReady() {
		return "", errors.New("SERVING, but IdentityService/Probe answered ready=false (not configured by the host yet, or the provider says it is not ready)")
	}
	return "grpc.health.v1 SERVING, IdentityService/Probe ready", nil
}

func describeCallError(call string, timeout time.Duration, err error) error {
	if status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("no answer to %s within %s (a process that accepts connections but answers nothing is wedged)", call, timeout)
	}
	return fmt.Errorf("%s failed: %s: %s", call, status.Code(err), strconv.Quote(status.Convert(err).Message()))
}
