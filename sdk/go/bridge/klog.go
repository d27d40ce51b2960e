package bridge

import (
	"log/slog"
	"os"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"k8s.io/klog/v2"
)

// Existing providers log through k8s.io/klog/v2, whose default output is
// text (`I1127 00:10:32.269011 25974 aws.go:568] …`). The host forwards a
// plugin's stderr line by line and keeps the level and fields of JSON lines
// only, so a provider on the bridge sends klog's records to the SDK's JSON
// logger ([ccmsdk.NewLogger]) with component "klog": from [New] on with the
// provider's logger (its name and level), and, in a process launched as a
// provider, from package initialisation on, so that the cloud's constructor
// (which runs before New) logs JSON too. Any other program importing the
// package (e.g. tools/upstream-ccm, for the conversions) keeps its klog
// setup. klog's verbosity (-v, 0 unless the program sets it) still decides
// which V(n) records are written.
func init() {
	if launchedAsProvider(os.Getenv, os.Args[1:]) {
		routeKlog(ccmsdk.NewLogger("cloudprovider", nil, nil))
	}
}

// launchedAsProvider is whether the process runs in exec mode (the host's
// magic cookie) or was given --endpoint (sidecar mode). CCM_PROVIDER_ENDPOINT
// alone does not count: a client of a provider names the provider's socket
// that way too (tools/upstream-ccm does), and a sidecar started with it only
// has its constructor's lines in klog's text format (New switches them).
func launchedAsProvider(getenv func(string) string, args []string) bool {
	return getenv(ccmsdk.MagicCookieKey) == ccmsdk.MagicCookieValue || ccmsdk.EndpointFromArgs(args) != ""
}

func routeKlog(log *slog.Logger) {
	klog.SetSlogLogger(log.With("component", "klog"))
}
