// ccm-provider-memgo: a cloud provider for the grpc cloud-controller-manager,
// written in Go on the Go SDK (sdk/go), which does the whole launch contract.
// Its cloud is in memory (instances, load balancers, routes, volumes); see
// README.md.
package main

import (
	"os"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	tpb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/testing/v1"
	"google.golang.org/grpc"
)

func main() {
	c := newCloud()
	ccmsdk.Main(&provider{cloud: c}, ccmsdk.Options{
		Interceptors: []grpc.UnaryServerInterceptor{throttleInterceptor},
		Register: func(s grpc.ServiceRegistrar) {
			if os.Getenv(ccmsdk.EnvTestHooks) == "1" {
				tpb.RegisterTestHooksServiceServer(s, &testHooksServer{cloud: c})
			}
		},
	})
}
