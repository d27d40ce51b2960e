package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"k8s.io/klog/v2"
)

func TestCloudConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte("[Global]\nRegion = us-east-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, path, host, warning string
	}{
		{"no --cloud-config on the host", path, "", ""},
		{"the same bytes", path, "[Global]\nRegion = us-east-1\n", ""},
		{"other bytes", path, "[Global]\nRegion = eu-west-1\n", "differs from the config file " + path},
		{"no file, host bytes", "", "x", "built without a config file"},
		{"unreadable file", filepath.Join(t.TempDir(), "gone"), "x", "cannot be read again"},
	} {
		w, err := CloudConfigFile(c.path)(ctx, []byte(c.host))
		if err != nil {
			t.Fatalf("%s: error %v (warnings only: the cloud is built already)", c.name, err)
		}
		if c.warning == "" && len(w) != 0 {
			t.Errorf("%s: warnings %q, want none", c.name, w)
		}
		if c.warning != "" && (len(w) != 1 || !strings.Contains(w[0], c.warning)) {
			t.Errorf("%s: warnings %q, want one containing %q", c.name, w, c.warning)
		}
	}
}

func TestModuleVersion(t *testing.T) {
	info := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/provider", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "k8s.io/cloud-provider-aws", Version: "v1.34.4"},
			{Path: "example.com/forked", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1"}},
			{Path: "example.com/local", Version: "v0.0.0", Replace: &debug.Module{Path: "../local"}},
		},
	}
	for path, want := range map[string]string{
		"k8s.io/cloud-provider-aws": "v1.34.4",
		"example.com/forked":        "v1.0.1",
		"example.com/local":         "v0.0.0",
		"example.com/provider":      "(devel)",
		"example.com/absent":        "",
	} {
		if got := moduleVersion(info, path); got != want {
			t.Errorf("moduleVersion(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestKlogWritesTheSDKsJSONLines(t *testing.T) {
	var buf bytes.Buffer
	routeKlog(ccmsdk.NewLogger("testcloud", &buf, nil))
	defer routeKlog(ccmsdk.NewLogger("cloudprovider", nil, nil))
	klog.Infof("Building %s cloudprovider", "test")
	klog.Errorf("describing %s failed", "i-1")
	klog.Flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %q", len(lines), buf.String())
	}
	for i, want := range []struct{ level, msg string }{{"info", "Building test cloudprovider"}, {"error", "describing i-1 failed"}} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %q", i, lines[i])
		}
		if rec["level"] != want.level || rec["msg"] != want.msg || rec["name"] != "testcloud" || rec["component"] != "klog" {
			t.Errorf("line %d = %v, want level %q, msg %q, name testcloud, component klog", i, rec, want.level, want.msg)
		}
	}
}

func TestLaunchedAsProvider(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want bool
	}{
		{"exec mode", map[string]string{ccmsdk.MagicCookieKey: ccmsdk.MagicCookieValue}, nil, true},
		{"a provider's client (CCM_PROVIDER_ENDPOINT only)", map[string]string{ccmsdk.EnvSidecarEndpoint: "unix:///p.sock"}, nil, false},
		{"sidecar by flag", nil, []string{"--endpoint=unix:///p.sock"}, true},
		{"a wrong cookie", map[string]string{ccmsdk.MagicCookieKey: "x"}, nil, false},
		{"another program", nil, []string{"--cloud-provider=grpc", "--v=2"}, false},
	} {
		if got := launchedAsProvider(env(c.env), c.args); got != c.want {
			t.Errorf("%s: launchedAsProvider = %v, want %v", c.name, got, c.want)
		}
	}
}
