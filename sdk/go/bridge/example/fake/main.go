// ccm-provider-fake: upstream's test double k8s.io/cloud-provider/fake,
// unmodified, served through the bridge. It is how the repository tests the
// bridge on code nobody here wrote (test/integration/conformance/kit.test.ts).
//
// The fake is configured only through its exported fields: Instances (v1)
// and Zones, no InstancesV2, so every instance call takes the bridge's
// fallback path; load balancers, routes and clusters. With
// CCM_PROVIDER_TEST_HOOKS=1 it also serves TestHooksService, whose
// CreateTestInstance and DeleteTestInstance edit those fields (see
// testHooks). The fake keeps a few answers cloud-wide rather than per
// object; the kit's checks that need them per object are listed in the test.
// With FAKE_CLOUD_RECORD_FILE set (tests only) it writes the Service and
// Nodes of the last EnsureLoadBalancer there, as the fake received them
// (record.go).
package main

import (
	"context"
	"net"
	"os"
	"slices"
	"sync"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	tpb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/testing/v1"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"
)

func main() {
	f := &fake.Cloud{
		Zone:          cloudprovider.Zone{FailureDomain: "fake-zone-a", Region: "fake-region-1"},
		Addresses:     []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.240.0.10"}, {Type: v1.NodeHostName, Address: "fake-node"}},
		ExternalIP:    net.ParseIP("192.0.2.10"),
		ExtID:         map[types.NodeName]string{},
		ExtIDErr:      map[types.NodeName]error{},
		InstanceTypes: map[types.NodeName]string{},
		ProviderID:    map[types.NodeName]string{},
		RouteMap:      map[string]*fake.Route{},
		Balancers:     map[string]fake.Balancer{},
		ClusterList:   []string{"fake-cluster"},
		MasterName:    "127.0.0.1",
	}
	if path := os.Getenv(EnvRecordFile); path != "" {
		f.EnsureCallCb = func(c fake.UpdateBalancerCall) { recordEnsure(path, c) }
	}
	hooks := &testHooks{cloud: f, instances: map[string]bool{}}
	bridge.Main(f, bridge.Options{
		Name:          "fake.cloudprovider.bridge",
		VendorVersion: "k8s.io/cloud-provider/fake " + bridge.UpstreamVersion,
		SDK: ccmsdk.Options{
			// The fake's maps and call log are unguarded, so calls take turns.
			Interceptors: []grpc.UnaryServerInterceptor{hooks.serialize},
			Register: func(s grpc.ServiceRegistrar) {
				if os.Getenv(ccmsdk.EnvTestHooks) == "1" {
					tpb.RegisterTestHooksServiceServer(s, hooks)
				}
			},
		},
	})
}

// testHooks makes and removes the fake's "instances" for the conformance kit
// and host tests. The fake answers InstanceID and the instance type per node
// name, but existence by providerID (ExistsByProviderID) for the whole
// cloud: it is on while at least one test instance exists.
// ListTestLoadBalancers lists the fake's Balancers (what EnsureLoadBalancer
// stored; the fake keeps no cluster name or Service uid, and
// EnsureLoadBalancerDeleted leaves them). SetThrottle is unimplemented: the
// fake has no throttle.
type testHooks struct {
	tpb.UnimplementedTestHooksServiceServer
	mu        sync.Mutex
	cloud     *fake.Cloud
	instances map[string]bool
}

func (h *testHooks) serialize(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return next(ctx, req)
}

// CreateTestInstance registers name with instance id name and providerID
// fake://name. Idempotent.
func (h *testHooks) CreateTestInstance(_ context.Context, req *tpb.CreateTestInstanceRequest) (*tpb.CreateTestInstanceResponse, error) {
	if req.GetName() == "" {
		return nil, ccmsdk.InvalidArgument("name is required")
	}
	n := types.NodeName(req.GetName())
	f := h.cloud
	pid := f.ProviderName() + "://" + req.GetName()
	f.ExtID[n] = req.GetName()
	delete(f.ExtIDErr, n)
	f.ProviderID[n] = pid
	f.InstanceTypes[n] = "fake-standard-2"
	f.InstanceTypes[types.NodeName(pid)] = "fake-standard-2"
	h.instances[req.GetName()] = true
	f.ExistsByProviderID = true
	return &tpb.CreateTestInstanceResponse{ProviderId: pid}, nil
}

// ListTestLoadBalancers reports the fake's Balancers by name, with their
// address, ports and host names. Read-only.
func (h *testHooks) ListTestLoadBalancers(context.Context, *tpb.ListTestLoadBalancersRequest) (*tpb.ListTestLoadBalancersResponse, error) {
	out := &tpb.ListTestLoadBalancersResponse{}
	for _, b := range h.cloud.Balancers {
		lb := &tpb.TestLoadBalancer{Name: b.Name, IngressIps: []string{h.cloud.ExternalIP.String()}}
		for _, p := range b.Ports {
			lb.Ports = append(lb.Ports, p.Port)
		}
		for _, n := range b.Hosts {
			lb.NodeNames = append(lb.NodeNames, n.Name)
		}
		slices.Sort(lb.NodeNames)
		out.LoadBalancers = append(out.LoadBalancers, lb)
	}
	return out, nil
}

// DeleteTestInstance makes InstanceID(name) answer InstanceNotFound. Absent is success.
func (h *testHooks) DeleteTestInstance(_ context.Context, req *tpb.DeleteTestInstanceRequest) (*tpb.DeleteTestInstanceResponse, error) {
	n := types.NodeName(req.GetName())
	f := h.cloud
	delete(f.ExtID, n)
	delete(f.InstanceTypes, types.NodeName(f.ProviderID[n]))
	delete(f.InstanceTypes, n)
	delete(f.ProviderID, n)
	f.ExtIDErr[n] = cloudprovider.InstanceNotFound
	delete(h.instances, req.GetName())
	f.ExistsByProviderID = len(h.instances) > 0
	return &tpb.DeleteTestInstanceResponse{}, nil
}
