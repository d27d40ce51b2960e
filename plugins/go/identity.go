// What memgo tells the SDK about itself, Configure, and the test-only
// TestHooksService.
package main

import (
	"context"
	"slices"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	tpb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/testing/v1"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

const vendorVersion = "0.1.0"

// provider is what ccmsdk serves: the SDK derives the services and
// capabilities from the methods of the objects below.
type provider struct{ cloud *cloud }

func (p *provider) Info() ccmsdk.Info {
	return ccmsdk.Info{
		Name: "memgo.ccm.example", VendorVersion: vendorVersion, ProviderName: providerName,
		HasClusterID: true, VolumesExpandOnline: true, Manifest: map[string]string{"language": "go"},
	}
}

func (p *provider) Configure(_ context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	warnings, err := p.cloud.configure(req.CloudConfig)
	if err != nil {
		return nil, err
	}
	return &pb.ConfigureResponse{Warnings: warnings}, nil
}

// annotationPrefix is the annotation prefix memgo owns: it reads no
// annotation, so any key under it is a misspelling.
const annotationPrefix = "memgo.ccm.example/"

// ProviderSchema is what memgo reads (GetProviderSchema): its cloud config
// (cloud.configure) and no annotation under its prefix.
func (p *provider) ProviderSchema() *pb.GetProviderSchemaResponse {
	str := pb.SchemaValueType_SCHEMA_VALUE_TYPE_STRING
	return &pb.GetProviderSchemaResponse{
		AnnotationPrefixes: []string{annotationPrefix},
		CloudConfigKeys: []*pb.SchemaConfigKey{
			{Key: "zone", Type: str, DefaultValue: "mem-a", Description: "The zone of instances that name none."},
			{Key: "region", Type: str, DefaultValue: "mem", Description: "The region of instances that name none."},
			{Key: "instances", Type: str, Description: "The instances, a JSON array of {name, type, zone, region, addresses, labels, shutdown}; created or updated by name."},
		},
	}
}

func (p *provider) Instances() any     { return &instancesServer{cloud: p.cloud} }
func (p *provider) LoadBalancers() any { return &loadBalancersServer{cloud: p.cloud} }
func (p *provider) Routes() any        { return &routesServer{cloud: p.cloud} }
func (p *provider) Volumes() any       { return &volumesServer{cloud: p.cloud} }

// testHooksServer is served only with CCM_PROVIDER_TEST_HOOKS=1.
type testHooksServer struct {
	tpb.UnimplementedTestHooksServiceServer
	cloud *cloud
}

func (s *testHooksServer) CreateTestInstance(_ context.Context, req *tpb.CreateTestInstanceRequest) (*tpb.CreateTestInstanceResponse, error) {
	if req.Name == "" {
		return nil, ccmsdk.InvalidArgument("name is required")
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
