// Command upstream-ccm is the upstream Go cloud-controller-manager
// (k8s.io/cloud-provider's app package, unchanged) with one cloud provider
// registered: "grpc", which forwards every cloudprovider.Interface call to a
// provider plugin over this repository's gRPC protocol (sidecar mode). The
// benchmarks run it next to our host so every figure has the upstream CCM
// doing the same work against the same provider.
//
// Usage:
//
//	CCM_PROVIDER_ENDPOINT=unix:///run/provider.sock upstream-ccm \
//	  --cloud-provider=grpc --kubeconfig=... [--cloud-config=FILE] [upstream flags]
//
// The provider must already listen on the endpoint. The --cloud-config file's
// bytes go to the provider's Configure unchanged, with --cluster-name.
package main

import (
	"context"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go request metrics on /metrics, as upstream CCMs have
	"k8s.io/klog/v2"
)

// configureTimeout bounds the start-up handshake with the provider.
const configureTimeout = 60 * time.Second

func main() {
	cloudprovider.RegisterCloudProvider(providerName, newGRPCCloud)
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("cannot build cloud-controller-manager options: %v", err)
	}
	cmd := app.NewCloudControllerManagerCommand(opts, initCloud, app.DefaultInitFuncConstructors, names.CCMControllerAliases(), cliflag.NamedFlagSets{}, wait.NeverStop)
	os.Exit(cli.Run(cmd))
}

// initCloud builds the registered provider and configures the plugin behind
// it with --cluster-name before any controller calls the cloud.
func initCloud(c *config.CompletedConfig) cloudprovider.Interface {
	shared := c.ComponentConfig.KubeCloudShared
	cloud, err := cloudprovider.InitCloudProvider(shared.CloudProvider.Name, shared.CloudProvider.CloudConfigFile)
	if err != nil || cloud == nil {
		klog.Fatalf("cloud provider %q could not be initialized (use --cloud-provider=%s): %v", shared.CloudProvider.Name, providerName, err)
	}
	g, ok := cloud.(*grpcCloud)
	if !ok {
		klog.Fatalf("cloud provider %q is not the gRPC forwarder; use --cloud-provider=%s", shared.CloudProvider.Name, providerName)
	}
	ctx, cancel := context.WithTimeout(context.Background(), configureTimeout)
	defer cancel()
	if err := g.configure(ctx, shared.ClusterName); err != nil {
		klog.Fatalf("provider at %s could not be configured: %v", g.endpoint, err)
	}
	if !g.HasClusterID() && !shared.AllowUntaggedCloud {
		klog.Fatalf("provider does not tag cloud objects with the cluster name; pass --allow-untagged-cloud to run anyway")
	}
	return g
}
