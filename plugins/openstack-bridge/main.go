package main

import (
	"fmt"
	"os"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	cloudprovider "k8s.io/cloud-provider"

	_ "k8s.io/cloud-provider-openstack/pkg/openstack"
)

func main() {
	cloud, err := cloudprovider.InitCloudProvider("openstack", os.Getenv("OPENSTACK_CLOUD_CONFIG"))
	if err != nil || cloud == nil {
		fmt.Fprintln(os.Stderr, "cannot build the openstack cloud:", err)
		os.Exit(1)
	}
	bridge.Main(cloud, bridge.Options{VendorVersion: "k8s.io/cloud-provider-openstack v1.34.1"})
}
