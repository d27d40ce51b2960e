package ccmsdk

// Process-level tests: the test binary re-runs itself as a provider
// (CCMSDK_TEST_CHILD=1, see TestMain) and is driven like the host drives a
// provider: environment, stdout handshake, gRPC on the socket, stdin, signals.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

const childEnv = "CCMSDK_TEST_CHILD"

// strayInstances writes to stdout on every call: none of it may reach the host's stdout pipe.
type strayInstances struct{}

func (strayInstances) InstanceExists(_ context.Context, req *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error) {
	fmt.Println("stray output from a provider method")
	if req.GetNode().GetName() == "gone" {
		return nil, InstanceNotFound("no instance gone")
	}
	return &pb.InstanceExistsResponse{Exists: true}, nil
}

type childProvider struct{}

func (childProvider) Info() Info {
	return Info{Name: "sdktest.ccm.example", VendorVersion: "1.2.3", ProviderName: "sdktest", Manifest: map[string]string{"language": "go"}}
}
func (childProvider) Instances() any { return strayInstances{} }

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		fmt.Println("stray output before Serve") // Reaches stdout only outside exec mode.
		Main(childProvider{}, Options{Args: []string{}})
	}
	os.Exit(m.Run())
}

// socketDir is short: unix socket paths are limited to 107 bytes.
func socketDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ccmsdk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *strings.Builder
	waited bool
}

func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append([]string{childEnv + "=1", "PATH=" + os.Getenv("PATH")}, env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &strings.Builder{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// wait reads the rest of stdout and waits for the exit (bounded, so a
// broken stop fails the test instead of hanging it).
func (c *child) wait(t *testing.T) (rest string, code int) {
	t.Helper()
	type result struct {
		rest string
		err  error
	}
	c.waited = true
	done := make(chan result, 1)
	go func() {
		// stdout to EOF first: Wait closes the pipe.
		b, _ := io.ReadAll(c.stdout)
		done <- result{string(b), c.cmd.Wait()}
	}()
	select {
	case r := <-done:
		return r.rest, c.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		t.Fatalf("provider did not exit; stderr:\n%s", c.stderr.String())
	}
	return "", -1
}

func execEnv(socket string, versions string) []string {
	return []string{MagicCookieKey + "=" + MagicCookieValue, EnvProtocolVersions + "=" + versions, EnvEndpoint + "=unix://" + socket, EnvInstanceID + "=nonce-1"}
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestExecModeHandshakeServesAndExitsOnStdinEOF(t *testing.T) {
	socket := filepath.Join(socketDir(t), "p.sock")
	c := startChild(t, execEnv(socket, "7,1")...)
	line, err := c.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("no handshake: %v; stderr:\n%s", err, c.stderr.String())
	}
	if want := "CCMPLUGIN|1|1|unix|" + socket + "|grpc\n"; line != want {
		t.Fatalf("handshake = %q, want %q", line, want)
	}
	if st, err := os.Stat(socket); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, %v", st, err)
	}
	conn := dial(t, socket)
	h, err := healthpb.NewHealthClient(conn).Check(ctx(t), &healthpb.HealthCheckRequest{Service: HealthServiceName})
	if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", h, err)
	}
	id := pb.NewIdentityServiceClient(conn)
	info, err := id.GetPluginInfo(ctx(t), &pb.GetPluginInfoRequest{})
	if err != nil || info.ProtocolVersion != 1 || info.InstanceId != "nonce-1" || info.Name != "sdktest.ccm.example" || info.Manifest["language"] != "go" {
		t.Fatalf("GetPluginInfo = %v, %v", info, err)
	}
	caps, err := id.GetPluginCapabilities(ctx(t), &pb.GetPluginCapabilitiesRequest{})
	if err != nil || len(caps.Services) != 1 || caps.Services[0] != pb.Service_SERVICE_INSTANCES || caps.ProviderName != "sdktest" {
		t.Fatalf("GetPluginCapabilities = %v, %v", caps, err)
	}
	inst := pb.NewInstancesServiceClient(conn)
	req := &pb.InstanceExistsRequest{Node: &pb.NodeRef{Name: "n1"}}
	if _, err := inst.InstanceExists(ctx(t), req); ErrorReason(err) != ReasonNotConfigured {
		t.Fatalf("before Configure: %v, want NOT_CONFIGURED", err)
	}
	if p, err := id.Probe(ctx(t), &pb.ProbeRequest{}); err != nil || p.Ready {
		t.Fatalf("Probe before Configure = %v, %v", p, err)
	}
	if _, err := pb.NewLifecycleServiceClient(conn).Configure(ctx(t), &pb.ConfigureRequest{CloudConfig: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if p, err := id.Probe(ctx(t), &pb.ProbeRequest{}); err != nil || !p.Ready {
		t.Fatalf("Probe after Configure = %v, %v", p, err)
	}
	if r, err := inst.InstanceExists(ctx(t), req); err != nil || !r.Exists {
		t.Fatalf("InstanceExists = %v, %v", r, err)
	}
	if _, err := inst.InstanceExists(ctx(t), &pb.InstanceExistsRequest{Node: &pb.NodeRef{Name: "gone"}}); status.Code(err) != codes.NotFound || ErrorReason(err) != ReasonInstanceNotFound {
		t.Fatalf("InstanceExists(gone) = %v", err)
	}
	if _, err := inst.GetInstancesStatus(ctx(t), &pb.GetInstancesStatusRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a missing method answered %v", err)
	}
	if _, err := pb.NewRoutesServiceClient(conn).ListRoutes(ctx(t), &pb.ListRoutesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("a missing service answered %v", err)
	}
	c.stdin.Close()
	rest, code := c.wait(t)
	if code != 0 || rest != "" {
		t.Fatalf("exit %d, more stdout %q; stderr:\n%s", code, rest, c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), "stray output before Serve") || !strings.Contains(c.stderr.String(), "stray output from a provider method") {
		t.Fatalf("stdout writes did not go to stderr:\n%s", c.stderr.String())
	}
	if !regexp.MustCompile(`(?m)^\{"time":"[^"]+","level":"info","msg":"provider stopping","name":"sdktest","component":"ccm-sdk","reason":"stdin closed"`).MatchString(c.stderr.String()) {
		t.Fatalf("no JSON stop line on stderr:\n%s", c.stderr.String())
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestExecModeShutdownRPCStopsTheProcess(t *testing.T) {
	socket := filepath.Join(socketDir(t), "p.sock")
	c := startChild(t, execEnv(socket, "1")...)
	if _, err := c.stdout.ReadString('\n'); err != nil {
		t.Fatal(err, c.stderr.String())
	}
	if _, err := pb.NewLifecycleServiceClient(dial(t, socket)).Shutdown(ctx(t), &pb.ShutdownRequest{}); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	if _, code := c.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.stderr.String())
	}
}

func TestExecModeSIGTERMStopsAndRemovesTheSocket(t *testing.T) {
	socket := filepath.Join(socketDir(t), "p.sock")
	c := startChild(t, execEnv(socket, "1")...)
	if _, err := c.stdout.ReadString('\n'); err != nil {
		t.Fatal(err, c.stderr.String())
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	if _, code := c.wait(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, c.stderr.String())
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestExecModeRemovesAStaleSocketAndRefusesALiveOne(t *testing.T) {
	dir := socketDir(t)
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // The file stays; nothing answers on it.
	c := startChild(t, execEnv(stale, "1")...)
	if line, err := c.stdout.ReadString('\n'); err != nil || !strings.HasPrefix(line, "CCMPLUGIN|") {
		t.Fatalf("handshake over a stale socket: %q %v; stderr:\n%s", line, err, c.stderr.String())
	}
	c.stdin.Close()
	c.wait(t)

	live := filepath.Join(dir, "live.sock")
	l, err = net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c = startChild(t, execEnv(live, "1")...)
	if rest, code := c.wait(t); code != 1 || rest != "" || !strings.Contains(c.stderr.String(), "another process is listening on "+live) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, rest, c.stderr.String())
	}
}

func TestRefusalsExit1WithOneMessageOnStderr(t *testing.T) {
	socket := filepath.Join(socketDir(t), "p.sock")
	for name, c := range map[string]struct {
		env  []string
		want string
	}{
		"run by hand":        {nil, NotByHandMessage},
		"wrong cookie":       {[]string{MagicCookieKey + "=wrong", EnvEndpoint + "=unix://" + socket, EnvProtocolVersions + "=1"}, NotByHandMessage},
		"no common protocol": {execEnv(socket, "2,3"), "the host offered 2,3: upgrade the plugin"},
		"no endpoint":        {[]string{MagicCookieKey + "=" + MagicCookieValue, EnvProtocolVersions + "=1"}, EnvEndpoint + `="" is not a unix:///absolute/path endpoint`},
	} {
		t.Run(name, func(t *testing.T) {
			p := startChild(t, c.env...)
			rest, code := p.wait(t)
			if code != 1 || strings.Contains(rest, HandshakePrefix) || !strings.Contains(p.stderr.String(), c.want) {
				t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, rest, p.stderr.String())
			}
		})
	}
}

func TestSidecarModeKeepsServingAfterShutdown(t *testing.T) {
	socket := filepath.Join(socketDir(t), "side.sock")
	c := startChild(t, EnvSidecarEndpoint+"=unix://"+socket)
	conn := dial(t, socket)
	id := pb.NewIdentityServiceClient(conn)
	var info *pb.GetPluginInfoResponse
	var err error
	for range 200 { // No handshake in sidecar mode: wait for the socket.
		if info, err = id.GetPluginInfo(ctx(t), &pb.GetPluginInfoRequest{}, grpc.WaitForReady(true)); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(info.InstanceId) {
		t.Fatalf("GetPluginInfo = %v, %v", info, err)
	}
	if _, err := pb.NewLifecycleServiceClient(conn).Shutdown(ctx(t), &pb.ShutdownRequest{}); err != nil {
		t.Fatal(err)
	}
	again, err := id.GetPluginInfo(ctx(t), &pb.GetPluginInfoRequest{})
	if err != nil || again.InstanceId != info.InstanceId {
		t.Fatalf("after Shutdown: %v, %v", again, err)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	if rest, code := c.wait(t); code != 0 || strings.Contains(rest, HandshakePrefix) {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, rest, c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), `"reason":"SIGTERM"`) {
		t.Fatalf("stop reason not logged:\n%s", c.stderr.String())
	}
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}
