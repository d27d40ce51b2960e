package main

import (
	"fmt"
	"os"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	cloudprovider "k8s.io/cloud-provider"

	_ "k8s.io/cloud-provider-vsphere/pkg/cloudprovider/vsphere"
)

func main() {
	cloud, err := cloudprovider.InitCloudProvider("vsphere", os.Getenv("VSPHERE_CLOUD_CONFIG"))
	if err != nil || cloud == nil {
		fmt.Fprintln(os.Stderr, "cannot build the vsphere cloud:", err)
		os.Exit(1)
	}
	bridge.Main(cloud, bridge.Options{VendorVersion: "k8s.io/cloud-provider-vsphere v1.36.0"})
}
