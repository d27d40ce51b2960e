package ccmsdk

import (
	"slices"
	"strconv"
	"strings"
)

// Constants of the launch contract. sdk/protocol.ts is their source;
// docs/protocol.md describes them.
const (
	// MagicCookieKey is the environment variable carrying the magic cookie.
	MagicCookieKey = "CCM_PLUGIN_MAGIC_COOKIE"
	// MagicCookieValue is not a security measure: it only stops a person
	// from running a provider by hand and wondering why it waits silently.
	MagicCookieValue = "b7c6c4f1a3e04d0e9d1f2a7c5e8b6a90-ccm-provider"
	// EnvProtocolVersions holds the protocol majors the host speaks ("1,2").
	EnvProtocolVersions = "CCM_PLUGIN_PROTOCOL_VERSIONS"
	// EnvEndpoint is where an exec-mode provider must listen (unix:///abs/path.sock).
	EnvEndpoint = "CCM_PLUGIN_ENDPOINT"
	// EnvInstanceID is the launch nonce GetPluginInfo echoes.
	EnvInstanceID = "CCM_PLUGIN_INSTANCE_ID"
	// EnvLogLevel is the log level the host wants (trace..error).
	EnvLogLevel = "CCM_PLUGIN_LOG_LEVEL"
	// EnvSidecarEndpoint is the endpoint of sidecar mode; read only when the
	// magic cookie is absent. Same as --endpoint=<endpoint>.
	EnvSidecarEndpoint = "CCM_PROVIDER_ENDPOINT"
	// EnvTestHooks is set to "1" by the conformance kit and tests that want
	// ccm.provider.testing.v1.TestHooksService served.
	EnvTestHooks = "CCM_PROVIDER_TEST_HOOKS"

	// HandshakePrefix is the first field of the handshake line.
	HandshakePrefix = "CCMPLUGIN"
	// CoreProtocolVersion is the version of the handshake line itself.
	CoreProtocolVersion = 1
	// ProtocolMinor is the minor revision of protocol 1 this SDK implements.
	ProtocolMinor = 1
	// HealthServiceName is the service name registered with grpc.health.v1.
	HealthServiceName = "ccm.provider.v1"
	// MaxMessageBytes is the largest gRPC message either side sends or accepts.
	MaxMessageBytes = 16 * 1024 * 1024
	// MaxUnixSocketPathBytes: sun_path is 108 bytes with the NUL.
	MaxUnixSocketPathBytes = 107
)

// SupportedProtocolVersions are the protocol majors this SDK speaks.
var SupportedProtocolVersions = []int{1}

// NotByHandMessage is printed on stderr (exit 1) when the executable is run without the host.
const NotByHandMessage = "This binary is a ccm provider plugin; it is started by cloud-controller-manager, not by hand (set --plugin-path on the host, or run it as a sidecar with --endpoint=unix:///path/provider.sock)."

// ParseVersionList parses CCM_PLUGIN_PROTOCOL_VERSIONS ("1,2"); invalid entries are dropped.
func ParseVersionList(value string) []int {
	out := []int{}
	if value == "" {
		return out
	}
	for _, s := range strings.Split(value, ",") {
		s = strings.TrimSpace(s)
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			continue
		}
		if v, err := strconv.Atoi(s); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// NegotiateVersion is the highest version both sides speak, or false.
func NegotiateVersion(host, plugin []int) (int, bool) {
	best, ok := 0, false
	for _, v := range plugin {
		if slices.Contains(host, v) && (!ok || v > best) {
			best, ok = v, true
		}
	}
	return best, ok
}

// VersionMismatchMessage is the stderr message for a host whose protocol versions the provider does not speak.
func VersionMismatchMessage(host, plugin []int) string {
	var hint string
	switch {
	case len(host) == 0:
		hint = "the host set no valid " + EnvProtocolVersions
	case slices.Max(host) > slices.Max(plugin):
		hint = "upgrade the plugin"
	default:
		hint = "upgrade the host"
	}
	offered := joinInts(host)
	if offered == "" {
		offered = "none"
	}
	return "This provider speaks ccm protocol versions " + joinInts(plugin) + "; the host offered " + offered + ": " + hint + "."
}

// FormatHandshake is the one line an exec-mode provider prints on stdout (without newline).
func FormatHandshake(protocol int, socketPath string) string {
	return strings.Join([]string{HandshakePrefix, strconv.Itoa(CoreProtocolVersion), strconv.Itoa(protocol), "unix", socketPath, "grpc"}, "|")
}

// UnixSocketPath turns unix:///abs/path.sock (or unix:/abs/path) into
// /abs/path.sock; false if the endpoint names no absolute unix path
// (unix://relative is rejected rather than read as //relative).
func UnixSocketPath(endpoint string) (string, bool) {
	p, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok {
		p, ok = strings.CutPrefix(endpoint, "unix:")
	}
	if !ok || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "", false
	}
	return p, true
}

// EndpointFromArgs is the value of --endpoint=X or --endpoint X, if present.
func EndpointFromArgs(args []string) string {
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

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// ModeKind is how Serve runs.
type ModeKind string

const (
	// ModeExec: the host launched the process (the magic cookie matches).
	ModeExec ModeKind = "exec"
	// ModeSidecar: no cookie, an endpoint was given; no handshake, no stdin watching.
	ModeSidecar ModeKind = "sidecar"
)

// Mode is what the environment and arguments ask for, already validated.
type Mode struct {
	Kind ModeKind
	// SocketPath is the absolute path to listen on.
	SocketPath string
	// Protocol is the negotiated major (exec) or the newest supported one (sidecar).
	Protocol int
	// InstanceID is the launch nonce (exec); empty in sidecar mode (Serve makes one up).
	InstanceID string
}

// ModeError is a refusal to run: Serve prints Message on stderr and exits 1.
type ModeError struct{ Message string }

func (e *ModeError) Error() string { return e.Message }

// ResolveMode decides exec mode (the magic cookie matches), sidecar mode (no
// cookie, an endpoint from endpoint, then CCM_PROVIDER_ENDPOINT, then
// --endpoint in args) or a refusal (*ModeError). lookup reads the environment.
func ResolveMode(lookup func(string) (string, bool), args []string, endpoint string) (Mode, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	cookie, hasCookie := lookup(MagicCookieKey)
	if hasCookie && cookie == MagicCookieValue {
		host := ParseVersionList(get(EnvProtocolVersions))
		protocol, ok := NegotiateVersion(host, SupportedProtocolVersions)
		if !ok {
			return Mode{}, &ModeError{VersionMismatchMessage(host, SupportedProtocolVersions)}
		}
		path, ok := UnixSocketPath(get(EnvEndpoint))
		if !ok {
			return Mode{}, &ModeError{EnvEndpoint + "=" + strconv.Quote(get(EnvEndpoint)) + " is not a unix:///absolute/path endpoint; the host must set it."}
		}
		return Mode{Kind: ModeExec, SocketPath: path, Protocol: protocol, InstanceID: get(EnvInstanceID)}, nil
	}
	sidecar := endpoint
	if sidecar == "" {
		sidecar = get(EnvSidecarEndpoint)
	}
	if sidecar == "" {
		sidecar = EndpointFromArgs(args)
	}
	if !hasCookie && sidecar != "" {
		path, ok := UnixSocketPath(sidecar)
		if !ok {
			return Mode{}, &ModeError{"sidecar endpoint " + strconv.Quote(sidecar) + " is not a unix:///absolute/path endpoint."}
		}
		return Mode{Kind: ModeSidecar, SocketPath: path, Protocol: slices.Max(SupportedProtocolVersions)}, nil
	}
	return Mode{}, &ModeError{NotByHandMessage}
}
