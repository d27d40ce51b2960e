// ccm-provider-memgo: a cloud provider for the grpc cloud-controller-manager,
// written in Go against the generated ccm.provider.v1 code. Its cloud is in
// memory (instances, load balancers, routes, volumes); see README.md.
package main

import (
	"os"
	"time"

	tpb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/testing/v1"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
)

func main() {
	c := newCloud()
	serve(func(s *grpc.Server, mode launchMode, onShutdown func(time.Duration)) {
		pb.RegisterIdentityServiceServer(s, &identityServer{mode: mode})
		pb.RegisterLifecycleServiceServer(s, &lifecycleServer{cloud: c, onShutdown: onShutdown})
		pb.RegisterInstancesServiceServer(s, &instancesServer{cloud: c})
		pb.RegisterLoadBalancersServiceServer(s, &loadBalancersServer{cloud: c})
		pb.RegisterRoutesServiceServer(s, &routesServer{cloud: c})
		pb.RegisterVolumesServiceServer(s, &volumesServer{cloud: c})
		if os.Getenv(envTestHooks) == "1" {
			tpb.RegisterTestHooksServiceServer(s, &testHooksServer{cloud: c})
		}
	})
}
