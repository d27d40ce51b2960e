// Command upstream-ccm is the upstream Go cloud-controller-manager
// (k8s.io/cloud-provider's app package, unchanged) with
// k8s.io/cloud-provider-aws linked in, as AWS's own CCM runs it. The
// tests run it beside the host running the same provider through the bridge
// and compare the Nodes both make (test/integration/providers/real-provider-parity.test.ts).
// Test-only; never shipped.
package main

import (
	"os"

	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	_ "k8s.io/cloud-provider-aws/pkg/providers/v1"
)

func main() {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("cannot build cloud-controller-manager options: %v", err)
	}
	cmd := app.NewCloudControllerManagerCommand(opts, initCloud, app.DefaultInitFuncConstructors, names.CCMControllerAliases(), cliflag.NamedFlagSets{}, wait.NeverStop)
	os.Exit(cli.Run(cmd))
}

// initCloud builds the provider named by --cloud-provider from --cloud-config, as upstream CCMs do.
func initCloud(c *config.CompletedConfig) cloudprovider.Interface {
	shared := c.ComponentConfig.KubeCloudShared
	cloud, err := cloudprovider.InitCloudProvider(shared.CloudProvider.Name, shared.CloudProvider.CloudConfigFile)
	if err != nil || cloud == nil {
		klog.Fatalf("cloud provider %q could not be initialized: %v", shared.CloudProvider.Name, err)
	}
	return cloud
}
