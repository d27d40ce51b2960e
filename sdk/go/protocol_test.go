package ccmsdk

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseVersionListAndNegotiate(t *testing.T) {
	if got := ParseVersionList(" 2, 1,x,,-3,1.5"); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("ParseVersionList = %v", got)
	}
	if v, ok := NegotiateVersion([]int{3, 1, 2}, []int{1, 2}); !ok || v != 2 {
		t.Fatalf("NegotiateVersion = %d %v, want 2", v, ok)
	}
	if _, ok := NegotiateVersion([]int{3}, []int{1, 2}); ok {
		t.Fatal("NegotiateVersion found a common version in disjoint lists")
	}
}

func TestFormatHandshake(t *testing.T) {
	if got := FormatHandshake(1, "/run/p.sock"); got != "CCMPLUGIN|1|1|unix|/run/p.sock|grpc" {
		t.Fatalf("FormatHandshake = %q", got)
	}
}

func TestUnixSocketPath(t *testing.T) {
	for in, want := range map[string]string{"unix:///a/b.sock": "/a/b.sock", "unix:/a/b": "/a/b", "unix://rel": "", "tcp://x:1": "", "/a/b": "", "unix:rel": ""} {
		got, ok := UnixSocketPath(in)
		if got != want || ok != (want != "") {
			t.Errorf("UnixSocketPath(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestResolveModeExecNegotiatesTheVersion(t *testing.T) {
	m, err := ResolveMode(env(map[string]string{MagicCookieKey: MagicCookieValue, EnvProtocolVersions: "3,1", EnvEndpoint: "unix:///tmp/x.sock", EnvInstanceID: "nonce"}), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if m != (Mode{Kind: ModeExec, SocketPath: "/tmp/x.sock", Protocol: 1, InstanceID: "nonce"}) {
		t.Fatalf("mode = %+v", m)
	}
}

func TestResolveModeRefusesAVersionItDoesNotSpeak(t *testing.T) {
	_, err := ResolveMode(env(map[string]string{MagicCookieKey: MagicCookieValue, EnvProtocolVersions: "2", EnvEndpoint: "unix:///tmp/x.sock"}), nil, "")
	var me *ModeError
	if !errors.As(err, &me) || !strings.Contains(me.Message, "the host offered 2: upgrade the plugin") {
		t.Fatalf("err = %v", err)
	}
	_, err = ResolveMode(env(map[string]string{MagicCookieKey: MagicCookieValue, EnvEndpoint: "unix:///tmp/x.sock"}), nil, "")
	if err == nil || !strings.Contains(err.Error(), "the host set no valid "+EnvProtocolVersions) {
		t.Fatalf("err = %v", err)
	}
}

func TestResolveModeRefusesWithoutOrWithAWrongCookie(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"no cookie, no endpoint": {},
		"wrong cookie":           {MagicCookieKey: "nope", EnvEndpoint: "unix:///tmp/x.sock", EnvProtocolVersions: "1"},
		"wrong cookie, sidecar":  {MagicCookieKey: "nope", EnvSidecarEndpoint: "unix:///tmp/x.sock"},
	} {
		_, err := ResolveMode(env(e), nil, "")
		if err == nil || err.Error() != NotByHandMessage {
			t.Errorf("%s: err = %v, want the not-by-hand message", name, err)
		}
	}
}

func TestResolveModeSidecar(t *testing.T) {
	m, err := ResolveMode(env(map[string]string{}), []string{"--endpoint", "unix:///tmp/s.sock"}, "")
	if err != nil || m.Kind != ModeSidecar || m.SocketPath != "/tmp/s.sock" || m.Protocol != 1 {
		t.Fatalf("mode = %+v, err = %v", m, err)
	}
	m, _ = ResolveMode(env(map[string]string{EnvSidecarEndpoint: "unix:///tmp/env.sock"}), []string{"--endpoint=unix:///tmp/arg.sock"}, "")
	if m.SocketPath != "/tmp/env.sock" {
		t.Fatalf("CCM_PROVIDER_ENDPOINT should win over --endpoint: %+v", m)
	}
	m, _ = ResolveMode(env(map[string]string{EnvSidecarEndpoint: "unix:///tmp/env.sock"}), nil, "unix:///tmp/opt.sock")
	if m.SocketPath != "/tmp/opt.sock" {
		t.Fatalf("Options.Endpoint should win: %+v", m)
	}
	if _, err := ResolveMode(env(map[string]string{}), []string{"--endpoint=unix://relative"}, ""); err == nil {
		t.Fatal("a relative sidecar endpoint was accepted")
	}
}

func TestErrorHelpersCarryReasonAndRetryInfo(t *testing.T) {
	err := RateLimited("slow down", 3*time.Second)
	if status.Code(err) != codes.ResourceExhausted || ErrorReason(err) != ReasonRateLimited {
		t.Fatalf("RateLimited = %v (%s)", err, ErrorReason(err))
	}
	if d, ok := RetryAfter(err); !ok || d != 3*time.Second {
		t.Fatalf("RetryAfter = %v %v", d, ok)
	}
	for _, c := range []struct {
		err    error
		code   codes.Code
		reason string
	}{
		{InstanceNotFound("x"), codes.NotFound, ReasonInstanceNotFound},
		{QuotaExceeded("x"), codes.ResourceExhausted, ReasonQuotaExceeded},
		{ImplementedElsewhere(""), codes.FailedPrecondition, ReasonImplementedElsewhere},
		{InUse("x"), codes.FailedPrecondition, ReasonInUse},
		{CloudUnavailable("x"), codes.Unavailable, ReasonCloudAPIError},
		{NotConfigured(), codes.FailedPrecondition, ReasonNotConfigured},
		{InvalidArgument("x"), codes.InvalidArgument, ""},
		{Retry("x", time.Second), codes.Unavailable, ""},
	} {
		if status.Code(c.err) != c.code || ErrorReason(c.err) != c.reason {
			t.Errorf("%v: code %v reason %q, want %v %q", c.err, status.Code(c.err), ErrorReason(c.err), c.code, c.reason)
		}
	}
	if _, ok := RetryAfter(InUse("x")); ok {
		t.Error("InUse carries a RetryInfo")
	}
	if p := StatusProto(errors.New("boom")); codes.Code(p.Code) != codes.Internal || p.Message != "boom" {
		t.Errorf("StatusProto(plain error) = %v", p)
	}
}

func TestDeferredCarriesItsReasonAndRetryInfo(t *testing.T) {
	err := Deferred("QuotaExhausted", "quota of 2 reached", 7*time.Second)
	if status.Code(err) != codes.Unavailable || ErrorReason(err) != ReasonDeferred {
		t.Fatalf("Deferred = %v (%s)", err, ErrorReason(err))
	}
	if r, ok := DeferredReason(err); !ok || r != "QuotaExhausted" {
		t.Fatalf("DeferredReason = %q %v", r, ok)
	}
	if d, ok := RetryAfter(err); !ok || d != 7*time.Second {
		t.Fatalf("RetryAfter = %v %v", d, ok)
	}
	if _, ok := DeferredReason(Retry("x", time.Second)); ok {
		t.Error("Retry reads as deferred")
	}
	defer func() {
		if recover() == nil {
			t.Error("Deferred with a reason that is not CamelCase did not panic")
		}
	}()
	_ = Deferred("quota exhausted!", "x", time.Second)
}
