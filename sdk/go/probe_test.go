package ccmsdk

// The probe subcommand as the kubelet runs it: the test binary itself with
// "probe" as its first argument (this package's init answers it), against a
// sidecar child process.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
)

// runProbe runs `<test binary> probe args...` with env and returns its exit code and output.
func runProbe(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{ProbeCommand}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

func TestProbeSubcommand(t *testing.T) {
	socket := filepath.Join(socketDir(t), "side.sock")
	endpoint := "unix://" + socket
	type row struct {
		name string
		env  []string
		args []string
		code int
		says string
	}
	check := func(rows []row) {
		t.Helper()
		for _, r := range rows {
			code, out := runProbe(t, r.env, r.args...)
			if code != r.code || !strings.Contains(out, r.says) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
				t.Errorf("%s: exit %d, output %q; want exit %d and one line with %q", r.name, code, out, r.code, r.says)
			}
		}
	}
	check([]row{
		{"nothing listens", nil, []string{"--endpoint=" + endpoint}, ProbeFailed, "probe failed: " + endpoint},
		{"no endpoint", nil, nil, ProbeUsage, "is not unix:///absolute/path.sock"},
		{"stray argument", nil, []string{"--endpoint=" + endpoint, "extra"}, ProbeUsage, `unexpected argument "extra"`},
		{"unknown flag", nil, []string{"--endpoint=" + endpoint, "--nope"}, ProbeUsage, "nope"},
	})

	c := startChild(t, EnvSidecarEndpoint+"="+endpoint)
	conn := dial(t, socket)
	if _, err := pb.NewIdentityServiceClient(conn).GetPluginInfo(ctx(t), &pb.GetPluginInfoRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	check([]row{
		{"serving (liveness)", nil, []string{"--endpoint=" + endpoint}, ProbeOK, "probe ok: " + endpoint + ": grpc.health.v1 SERVING"},
		{"endpoint from the environment", []string{EnvSidecarEndpoint + "=" + endpoint}, nil, ProbeOK, "SERVING"},
		{"not configured yet (readiness)", nil, []string{"--endpoint", endpoint, "--ready"}, ProbeFailed, "ready=false"},
	})
	if _, err := pb.NewLifecycleServiceClient(conn).Configure(ctx(t), &pb.ConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	check([]row{{"configured (readiness)", nil, []string{"--endpoint=" + endpoint, "--ready"}, ProbeOK, "IdentityService/Probe ready"}})

	// Wedged: the process is alive and its socket accepts connections, but nothing answers.
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	check([]row{{"wedged (SIGSTOP)", nil, []string{"--endpoint=" + endpoint, "--timeout=500ms"}, ProbeFailed, "no answer to grpc.health.v1 Check within 500ms"}})
	_ = c.cmd.Process.Signal(syscall.SIGCONT)
	check([]row{{"resumed", nil, []string{"--endpoint=" + endpoint}, ProbeOK, "SERVING"}})
}
