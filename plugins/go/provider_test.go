package main

import (
	"slices"
	"testing"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

// What memgo announced when its capabilities were a hand-written list; the
// SDK now derives them from the methods present.
func TestCapabilitiesDerivedByTheSDK(t *testing.T) {
	res, err := ccmsdk.DeriveCapabilities(&provider{cloud: newCloud()})
	if err != nil {
		t.Fatal(err)
	}
	wantServices := []pb.Service{pb.Service_SERVICE_INSTANCES, pb.Service_SERVICE_LOAD_BALANCERS, pb.Service_SERVICE_ROUTES, pb.Service_SERVICE_VOLUMES}
	wantCaps := []pb.Capability{
		pb.Capability_CAPABILITY_INSTANCES_BATCH, pb.Capability_CAPABILITY_LOAD_BALANCER_BATCH_HOSTS,
		pb.Capability_CAPABILITY_ROUTES_RECONCILE, pb.Capability_CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES,
		pb.Capability_CAPABILITY_VOLUMES_EXPAND_ONLINE, pb.Capability_CAPABILITY_LOAD_BALANCER_LIST,
		pb.Capability_CAPABILITY_PROVIDER_SCHEMA,
	}
	slices.Sort(wantCaps)
	if !slices.Equal(res.Services, wantServices) || !slices.Equal(res.Capabilities, wantCaps) || res.ProviderName != "memgo" || !res.HasClusterId {
		t.Fatalf("capabilities = %v", res)
	}
}
