package ccmsdk

import (
	"context"
	"slices"
	"strings"
	"testing"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

// Service objects with a few methods each.
type coreInstances struct{}

func (coreInstances) InstanceExists(context.Context, *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error) {
	return &pb.InstanceExistsResponse{Exists: true}, nil
}

type batchInstances struct{ coreInstances }

func (batchInstances) GetInstancesStatus(context.Context, *pb.GetInstancesStatusRequest) (*pb.GetInstancesStatusResponse, error) {
	return nil, nil
}
func (batchInstances) GetInstancesMetadata(context.Context, *pb.GetInstancesMetadataRequest) (*pb.GetInstancesMetadataResponse, error) {
	return nil, nil
}

type halfBatchInstances struct{ coreInstances }

func (halfBatchInstances) GetInstancesStatus(context.Context, *pb.GetInstancesStatusRequest) (*pb.GetInstancesStatusResponse, error) {
	return nil, nil
}

type legacyInstances struct{}

func (legacyInstances) CurrentNodeName(context.Context, *pb.CurrentNodeNameRequest) (*pb.CurrentNodeNameResponse, error) {
	return nil, nil
}

type listingLBs struct{}

func (listingLBs) ListLoadBalancers(context.Context, *pb.ListLoadBalancersRequest) (*pb.ListLoadBalancersResponse, error) {
	return nil, nil
}
func (listingLBs) UpdateLoadBalancerHosts(context.Context, *pb.UpdateLoadBalancerHostsRequest) (*pb.UpdateLoadBalancerHostsResponse, error) {
	return nil, nil
}
func (listingLBs) EnsureLoadBalancers(context.Context, *pb.EnsureLoadBalancersRequest) (*pb.EnsureLoadBalancersResponse, error) {
	return nil, nil
}

type reconcilingRoutes struct{}

func (reconcilingRoutes) ReconcileRoutes(context.Context, *pb.ReconcileRoutesRequest) (*pb.ReconcileRoutesResponse, error) {
	return nil, nil
}

type listingVolumes struct{}

func (listingVolumes) ListVolumes(context.Context, *pb.ListVolumesRequest) (*pb.ListVolumesResponse, error) {
	return nil, nil
}

type embedsUnimplemented struct {
	pb.UnimplementedRoutesServiceServer
}

type wrongSignature struct{}

func (wrongSignature) ListRoutes(context.Context, *pb.ListRoutesRequest) (pb.ListRoutesResponse, error) {
	return pb.ListRoutesResponse{}, nil
}

// capsProvider offers whatever its fields hold (nil: the service is absent).
type capsProvider struct {
	info                            Info
	instances, lbs, routes, volumes any
}

func (p *capsProvider) Info() Info         { return p.info }
func (p *capsProvider) Instances() any     { return p.instances }
func (p *capsProvider) LoadBalancers() any { return p.lbs }
func (p *capsProvider) Routes() any        { return p.routes }
func (p *capsProvider) Volumes() any       { return p.volumes }

type metricsProvider struct{ capsProvider }

func (*metricsProvider) Metrics(context.Context) (string, error) { return "", nil }

type schemaProvider struct{ infoOnly }

func (schemaProvider) ProviderSchema() *pb.GetProviderSchemaResponse {
	return &pb.GetProviderSchemaResponse{AnnotationPrefixes: []string{"example.com/"}}
}

type infoOnly struct{}

func (infoOnly) Info() Info { return Info{ProviderName: "bare"} }

func derive(t *testing.T, p Provider) *pb.GetPluginCapabilitiesResponse {
	t.Helper()
	res, err := DeriveCapabilities(p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCapabilitiesOfAProviderWithOnlyInfo(t *testing.T) {
	res := derive(t, infoOnly{})
	if len(res.Services) != 0 || len(res.Capabilities) != 0 || res.ProviderName != "bare" || res.HasClusterId {
		t.Fatalf("capabilities = %v", res)
	}
}

func TestCapabilitiesFollowTheMethodsPresent(t *testing.T) {
	var nilInstances *batchInstances // A typed nil counts as absent.
	res := derive(t, &capsProvider{info: Info{ProviderName: "x", HasClusterID: true}, instances: nilInstances, routes: &coreInstances{}})
	if !slices.Equal(res.Services, []pb.Service{pb.Service_SERVICE_ROUTES}) || len(res.Capabilities) != 0 || !res.HasClusterId {
		t.Fatalf("capabilities = %v", res)
	}

	res = derive(t, &capsProvider{instances: halfBatchInstances{}})
	if len(res.Capabilities) != 0 {
		t.Fatalf("half of the batch pair announced %v", res.Capabilities)
	}

	res = derive(t, &metricsProvider{capsProvider{
		info:      Info{LoadBalancerIPModeProxy: true, VolumesExpandOnline: true},
		instances: batchInstances{}, lbs: listingLBs{}, routes: reconcilingRoutes{}, volumes: listingVolumes{},
	}})
	want := []pb.Capability{
		pb.Capability_CAPABILITY_INSTANCES_BATCH, pb.Capability_CAPABILITY_LOAD_BALANCER_BATCH_HOSTS,
		pb.Capability_CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY, pb.Capability_CAPABILITY_ROUTES_RECONCILE,
		pb.Capability_CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES, pb.Capability_CAPABILITY_VOLUMES_EXPAND_ONLINE,
		pb.Capability_CAPABILITY_LOAD_BALANCER_LIST, pb.Capability_CAPABILITY_LOAD_BALANCER_BATCH_ENSURE,
		pb.Capability_CAPABILITY_METRICS,
	}
	slices.Sort(want)
	if !slices.Equal(res.Capabilities, want) {
		t.Fatalf("capabilities = %v, want %v", res.Capabilities, want)
	}
	wantServices := []pb.Service{pb.Service_SERVICE_INSTANCES, pb.Service_SERVICE_LOAD_BALANCERS, pb.Service_SERVICE_ROUTES, pb.Service_SERVICE_VOLUMES}
	if !slices.Equal(res.Services, wantServices) {
		t.Fatalf("services = %v", res.Services)
	}

	res = derive(t, &capsProvider{instances: legacyInstances{}})
	if !slices.Equal(res.Capabilities, []pb.Capability{pb.Capability_CAPABILITY_INSTANCES_LEGACY}) {
		t.Fatalf("legacy: %v", res.Capabilities)
	}
}

func TestInfoFlagsWithoutTheirServiceMeanNothing(t *testing.T) {
	res := derive(t, &capsProvider{info: Info{LoadBalancerIPModeProxy: true, VolumesExpandOnline: true}, instances: coreInstances{}})
	if len(res.Capabilities) != 0 {
		t.Fatalf("capabilities = %v", res.Capabilities)
	}
}

func TestServiceObjectsThatWouldLieAreRefused(t *testing.T) {
	_, err := DeriveCapabilities(&capsProvider{routes: embedsUnimplemented{}})
	if err == nil || !strings.Contains(err.Error(), "embeds pb.UnimplementedRoutesServiceServer") {
		t.Fatalf("err = %v", err)
	}
	_, err = DeriveCapabilities(&capsProvider{routes: wrongSignature{}})
	if err == nil || !strings.Contains(err.Error(), "ListRoutes has the signature") {
		t.Fatalf("err = %v", err)
	}
}

func TestIsCloudMethod(t *testing.T) {
	for m, want := range map[string]bool{
		"/ccm.provider.v1.InstancesService/InstanceExists":      true,
		"/ccm.provider.v1.VolumesService/ListVolumes":           true,
		"/ccm.provider.v1.IdentityService/Probe":                false,
		"/ccm.provider.v1.LifecycleService/Configure":           false,
		"/grpc.health.v1.Health/Check":                          false,
		"/ccm.provider.testing.v1.TestHooksService/SetThrottle": false,
	} {
		if IsCloudMethod(m) != want {
			t.Errorf("IsCloudMethod(%q) = %v", m, !want)
		}
	}
}

func TestNodeOwnershipDeclarationsArePassedOn(t *testing.T) {
	for _, c := range []struct {
		name     string
		info     Info
		prefixes []string
		selector string
	}{
		{"none declared: the host defaults to <ProviderName>://", Info{ProviderName: "x"}, nil, ""},
		{"two prefixes and a selector", Info{ProviderName: "x", ProviderIDPrefixes: []string{"x://", "xmetal://"}, NodeSelector: "cloud=x"}, []string{"x://", "xmetal://"}, "cloud=x"},
	} {
		res := derive(t, &capsProvider{info: c.info})
		if !slices.Equal(res.ProviderIdPrefixes, c.prefixes) || res.NodeSelector != c.selector {
			t.Errorf("%s: prefixes %q, selector %q", c.name, res.ProviderIdPrefixes, res.NodeSelector)
		}
	}
}

// The load balancer class declaration is sent with a load balancer service
// only; without one it means nothing and is left empty.
func TestCapabilitiesCarryTheLoadBalancerClasses(t *testing.T) {
	info := Info{LoadBalancerClasses: []string{"example.com/a", "example.com/b"}, LoadBalancerClassesOnly: true}
	cases := []struct {
		name      string
		p         *capsProvider
		classes   []string
		onlyClass bool
	}{
		{"with load balancers", &capsProvider{info: info, lbs: listingLBs{}}, []string{"example.com/a", "example.com/b"}, true},
		{"without load balancers", &capsProvider{info: info, routes: reconcilingRoutes{}}, nil, false},
		{"declaring nothing", &capsProvider{lbs: listingLBs{}}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := derive(t, tc.p)
			if !slices.Equal(res.LoadBalancerClasses, tc.classes) || res.LoadBalancerClassesOnly != tc.onlyClass {
				t.Fatalf("classes %v, only %v; want %v, %v", res.LoadBalancerClasses, res.LoadBalancerClassesOnly, tc.classes, tc.onlyClass)
			}
		})
	}
}

// The volume provisioner declaration is sent with a volume service only.
func TestCapabilitiesCarryTheVolumeProvisioners(t *testing.T) {
	info := Info{VolumeProvisioners: []string{"disk.example.com", "fast.example.com"}}
	cases := []struct {
		name         string
		p            *capsProvider
		provisioners []string
	}{
		{"with volumes", &capsProvider{info: info, volumes: listingVolumes{}}, []string{"disk.example.com", "fast.example.com"}},
		{"without volumes", &capsProvider{info: info, lbs: listingLBs{}}, nil},
		{"declaring nothing", &capsProvider{volumes: listingVolumes{}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := derive(t, tc.p)
			if !slices.Equal(res.VolumeProvisioners, tc.provisioners) {
				t.Fatalf("provisioners %v; want %v", res.VolumeProvisioners, tc.provisioners)
			}
		})
	}
}

func TestASchemaAnnouncesItsCapabilityAndIsServed(t *testing.T) {
	if caps := derive(t, schemaProvider{}).Capabilities; !slices.Equal(caps, []pb.Capability{pb.Capability_CAPABILITY_PROVIDER_SCHEMA}) {
		t.Fatalf("capabilities = %v", caps)
	}
	res, err := (&identityServer{s: &providerServer{provider: schemaProvider{}}}).GetProviderSchema(context.Background(), &pb.GetProviderSchemaRequest{})
	if err != nil || !slices.Equal(res.AnnotationPrefixes, []string{"example.com/"}) {
		t.Fatalf("GetProviderSchema = %v, %v", res, err)
	}
	if _, err := (&identityServer{s: &providerServer{provider: infoOnly{}}}).GetProviderSchema(context.Background(), &pb.GetProviderSchemaRequest{}); err == nil {
		t.Fatal("a provider without a schema answered one")
	}
}
