// IdentityService, LifecycleService and the test-only TestHooksService.
package main

import (
	"context"
	"slices"
	"time"

	tpb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/testing/v1"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

const vendorVersion = "0.1.0"

type identityServer struct {
	pb.UnimplementedIdentityServiceServer
	mode launchMode
}

func (s *identityServer) GetPluginInfo(context.Context, *pb.GetPluginInfoRequest) (*pb.GetPluginInfoResponse, error) {
	return &pb.GetPluginInfoResponse{
		Name: "memgo.ccm.example", VendorVersion: vendorVersion,
		ProtocolVersion: uint32(s.mode.protocol), ProtocolMinor: protocolMinor,
		InstanceId: s.mode.instanceID, Manifest: map[string]string{"language": "go"},
	}, nil
}

// GetPluginCapabilities: fixed for the life of the process.
func (s *identityServer) GetPluginCapabilities(context.Context, *pb.GetPluginCapabilitiesRequest) (*pb.GetPluginCapabilitiesResponse, error) {
	return &pb.GetPluginCapabilitiesResponse{
		Services: []pb.Service{pb.Service_SERVICE_INSTANCES, pb.Service_SERVICE_LOAD_BALANCERS, pb.Service_SERVICE_ROUTES, pb.Service_SERVICE_VOLUMES},
		Capabilities: []pb.Capability{
			pb.Capability_CAPABILITY_INSTANCES_BATCH, pb.Capability_CAPABILITY_LOAD_BALANCER_BATCH_HOSTS,
			pb.Capability_CAPABILITY_ROUTES_RECONCILE, pb.Capability_CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES,
			pb.Capability_CAPABILITY_VOLUMES_EXPAND_ONLINE, pb.Capability_CAPABILITY_LOAD_BALANCER_LIST,
		},
		ProviderName: providerName, HasClusterId: true,
	}, nil
}

func (s *identityServer) Probe(context.Context, *pb.ProbeRequest) (*pb.ProbeResponse, error) {
	return &pb.ProbeResponse{Ready: configured.Load()}, nil
}

type lifecycleServer struct {
	pb.UnimplementedLifecycleServiceServer
	cloud      *cloud
	onShutdown func(time.Duration)
}

func (s *lifecycleServer) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	warnings, err := s.cloud.configure(req.CloudConfig)
	if err != nil {
		return nil, err
	}
	configured.Store(true)
	return &pb.ConfigureResponse{Warnings: warnings}, nil
}

// Shutdown answers first; the stop (exec mode) starts after the answer is sent.
func (s *lifecycleServer) Shutdown(_ context.Context, req *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	grace := graceOf(req.GetGracePeriod().AsDuration(), req.GracePeriod != nil)
	time.AfterFunc(50*time.Millisecond, func() { s.onShutdown(grace) })
	return &pb.ShutdownResponse{}, nil
}

// testHooksServer is served only with CCM_PROVIDER_TEST_HOOKS=1.
type testHooksServer struct {
	tpb.UnimplementedTestHooksServiceServer
	cloud *cloud
}

func (s *testHooksServer) CreateTestInstance(_ context.Context, req *tpb.CreateTestInstanceRequest) (*tpb.CreateTestInstanceResponse, error) {
	if req.Name == "" {
		return nil, invalid("name is required")
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	inst := s.cloud.upsertInstance(req.Name, req.InternalIp, req.Zone)
	return &tpb.CreateTestInstanceResponse{ProviderId: inst.providerID()}, nil
}

func (s *testHooksServer) DeleteTestInstance(_ context.Context, req *tpb.DeleteTestInstanceRequest) (*tpb.DeleteTestInstanceResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	delete(s.cloud.instances, req.Name)
	return &tpb.DeleteTestInstanceResponse{}, nil
}

func (s *testHooksServer) SetThrottle(_ context.Context, req *tpb.SetThrottleRequest) (*tpb.SetThrottleResponse, error) {
	throttle.Lock()
	throttle.enabled, throttle.delay = req.Enabled, time.Duration(req.RetryDelayMs)*time.Millisecond
	throttle.Unlock()
	return &tpb.SetThrottleResponse{}, nil
}

// ListTestLoadBalancers reports what the load balancer store holds (this
// cloud has no data plane, so tests check the store instead of traffic).
func (s *testHooksServer) ListTestLoadBalancers(_ context.Context, _ *tpb.ListTestLoadBalancersRequest) (*tpb.ListTestLoadBalancersResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	out := &tpb.ListTestLoadBalancersResponse{}
	for _, lb := range s.cloud.lbs {
		ports := make([]int32, 0, len(lb.Ports))
		for _, p := range lb.Ports {
			ports = append(ports, p.Port)
		}
		nodes := slices.Clone(lb.Nodes)
		slices.Sort(nodes)
		out.LoadBalancers = append(out.LoadBalancers, &tpb.TestLoadBalancer{
			ClusterName: lb.Cluster, ServiceUid: lb.UID, Name: lb.Name,
			IngressIps: []string{lb.IP.String()}, Ports: ports, NodeNames: nodes,
		})
	}
	return out, nil
}
