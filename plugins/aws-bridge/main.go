// ccm-provider-aws: k8s.io/cloud-provider-aws's provider (pkg/providers/v1,
// registered as "aws"), unmodified, served through the bridge. It is built
// from its cloud config file, named by $CLOUD_CONFIG, before the host's
// Configure; docs/providers/aws.md says how to run it.
package main

import (
	"fmt"
	"os"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	cloudprovider "k8s.io/cloud-provider"
	_ "k8s.io/cloud-provider-aws/pkg/providers/v1"
)

func main() {
	path := os.Getenv("CLOUD_CONFIG")
	cloud, err := cloudprovider.InitCloudProvider("aws", path)
	if err != nil || cloud == nil {
		fmt.Fprintf(os.Stderr, "cannot build the aws cloud provider from CLOUD_CONFIG=%q: %v\n", path, err)
		os.Exit(1)
	}
	bridge.Main(cloud, bridge.Options{
		VendorVersion: "k8s.io/cloud-provider-aws " + bridge.ModuleVersion("k8s.io/cloud-provider-aws"),
		Configure:     bridge.CloudConfigFile(path),
	})
}
