package bridge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
)

// testCloud is a small per-instance cloud: machines by name, each with an
// id, a zone and a shut-down flag. Which interfaces it offers is chosen
// per test; calls are recorded.
type testCloud struct {
	mu       sync.Mutex
	v2, v1   bool
	zones    bool
	lb       bool
	routes   bool
	clusters bool
	machines map[string]*machine // by node name
	lbs      map[string]bool     // by Service uid
	table    map[string]*cloudprovider.Route
	calls    []string
	inits    int
	stop     <-chan struct{}
	builder  cloudprovider.ControllerClientBuilder
	seen     *v1.Node // last node passed to an InstancesV2 method
}

type machine struct {
	id, zone string
	off      bool
}

func newTestCloud() *testCloud {
	return &testCloud{machines: map[string]*machine{}, lbs: map[string]bool{}, table: map[string]*cloudprovider.Route{}}
}

func (c *testCloud) call(name string) {
	c.mu.Lock()
	c.calls = append(c.calls, name)
	c.mu.Unlock()
}

func (c *testCloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	c.inits++
	c.builder, c.stop = b, stop
}
func (c *testCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c, c.lb }
func (c *testCloud) Instances() (cloudprovider.Instances, bool)       { return c, c.v1 }
func (c *testCloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	if !c.v2 {
		return nil, false
	}
	return v2Of{c}, true
}
func (c *testCloud) Zones() (cloudprovider.Zones, bool)       { return c, c.zones }
func (c *testCloud) Clusters() (cloudprovider.Clusters, bool) { return c, c.clusters }
func (c *testCloud) Routes() (cloudprovider.Routes, bool)     { return c, c.routes }
func (c *testCloud) ProviderName() string                     { return "test" }
func (c *testCloud) HasClusterID() bool                       { return true }

func (c *testCloud) byID(pid string) (string, *machine) {
	for name, m := range c.machines {
		if "test://"+m.id == pid {
			return name, m
		}
	}
	return "", nil
}

// Instances (v1).
func (c *testCloud) NodeAddresses(_ context.Context, n types.NodeName) ([]v1.NodeAddress, error) {
	c.call("NodeAddresses")
	if c.machines[string(n)] == nil {
		return nil, cloudprovider.InstanceNotFound
	}
	return []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}, nil
}
func (c *testCloud) NodeAddressesByProviderID(_ context.Context, pid string) ([]v1.NodeAddress, error) {
	c.call("NodeAddressesByProviderID")
	if _, m := c.byID(pid); m == nil {
		return nil, errors.New("no such instance")
	}
	return []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}, nil
}
func (c *testCloud) InstanceID(_ context.Context, n types.NodeName) (string, error) {
	c.call("InstanceID")
	if m := c.machines[string(n)]; m != nil {
		return m.id, nil
	}
	return "", cloudprovider.InstanceNotFound
}
func (c *testCloud) InstanceType(context.Context, types.NodeName) (string, error) {
	c.call("InstanceType")
	return "small", nil
}
func (c *testCloud) InstanceTypeByProviderID(context.Context, string) (string, error) {
	c.call("InstanceTypeByProviderID")
	return "", cloudprovider.NotImplemented
}
func (c *testCloud) AddSSHKeyToAllInstances(context.Context, string, []byte) error {
	return cloudprovider.NotImplemented
}
func (c *testCloud) CurrentNodeName(_ context.Context, h string) (types.NodeName, error) {
	return types.NodeName(h), nil
}
func (c *testCloud) InstanceExistsByProviderID(_ context.Context, pid string) (bool, error) {
	c.call("InstanceExistsByProviderID")
	_, m := c.byID(pid)
	return m != nil, nil
}
func (c *testCloud) InstanceShutdownByProviderID(_ context.Context, pid string) (bool, error) {
	c.call("InstanceShutdownByProviderID")
	_, m := c.byID(pid)
	return m != nil && m.off, nil
}

// Zones.
func (c *testCloud) GetZone(context.Context) (cloudprovider.Zone, error) {
	return cloudprovider.Zone{FailureDomain: "here"}, nil
}
func (c *testCloud) GetZoneByProviderID(_ context.Context, pid string) (cloudprovider.Zone, error) {
	c.call("GetZoneByProviderID")
	if _, m := c.byID(pid); m != nil {
		return cloudprovider.Zone{FailureDomain: m.zone, Region: "r1"}, nil
	}
	return cloudprovider.Zone{}, cloudprovider.InstanceNotFound
}
func (c *testCloud) GetZoneByNodeName(_ context.Context, n types.NodeName) (cloudprovider.Zone, error) {
	c.call("GetZoneByNodeName")
	return cloudprovider.Zone{}, cloudprovider.InstanceNotFound
}

// Clusters.
func (c *testCloud) ListClusters(context.Context) ([]string, error) { return []string{"a"}, nil }
func (c *testCloud) Master(_ context.Context, name string) (string, error) {
	return name + ".example", nil
}

// LoadBalancer.
func (c *testCloud) GetLoadBalancer(_ context.Context, cluster string, s *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	c.call("GetLoadBalancer " + cluster)
	if !c.lbs[string(s.UID)] {
		return nil, false, nil
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, true, nil
}
func (c *testCloud) GetLoadBalancerName(context.Context, string, *v1.Service) string { return "" }
func (c *testCloud) EnsureLoadBalancer(_ context.Context, cluster string, s *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	c.call("EnsureLoadBalancer " + cluster)
	if s.Annotations["test/owner"] == "other" {
		return nil, cloudprovider.ImplementedElsewhere
	}
	c.lbs[string(s.UID)] = true
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, nil
}
func (c *testCloud) UpdateLoadBalancer(_ context.Context, _ string, s *v1.Service, _ []*v1.Node) error {
	c.call("UpdateLoadBalancer")
	if !c.lbs[string(s.UID)] {
		return errors.New("no load balancer to update")
	}
	return nil
}
func (c *testCloud) EnsureLoadBalancerDeleted(_ context.Context, _ string, s *v1.Service) error {
	delete(c.lbs, string(s.UID))
	return nil
}

// Routes: like upstream's fake, a second create or an absent delete is an error.
func (c *testCloud) ListRoutes(_ context.Context, cluster string) ([]*cloudprovider.Route, error) {
	c.call("ListRoutes")
	var out []*cloudprovider.Route
	for _, r := range c.table {
		cp := *r
		out = append(out, &cp)
	}
	return out, nil
}
func (c *testCloud) CreateRoute(_ context.Context, cluster, hint string, r *cloudprovider.Route) error {
	c.call("CreateRoute")
	if c.table[r.DestinationCIDR] != nil {
		return errors.New("exists")
	}
	cp := *r
	cp.Name = cluster + "-" + hint
	c.table[r.DestinationCIDR] = &cp
	return nil
}
func (c *testCloud) DeleteRoute(_ context.Context, _ string, r *cloudprovider.Route) error {
	c.call("DeleteRoute")
	if c.table[r.DestinationCIDR] == nil {
		return errors.New("absent")
	}
	delete(c.table, r.DestinationCIDR)
	return nil
}

// v2Of is the cloud's InstancesV2, looking machines up by providerID or name.
type v2Of struct{ c *testCloud }

func (v v2Of) find(n *v1.Node) *machine {
	v.c.seen = n
	if n.Spec.ProviderID != "" {
		_, m := v.c.byID(n.Spec.ProviderID)
		return m
	}
	return v.c.machines[n.Name]
}
func (v v2Of) InstanceExists(_ context.Context, n *v1.Node) (bool, error) {
	v.c.call("V2.InstanceExists")
	return v.find(n) != nil, nil
}
func (v v2Of) InstanceShutdown(_ context.Context, n *v1.Node) (bool, error) {
	m := v.find(n)
	if m == nil {
		return false, cloudprovider.InstanceNotFound
	}
	return m.off, nil
}
func (v v2Of) InstanceMetadata(_ context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	m := v.find(n)
	if m == nil {
		return nil, cloudprovider.InstanceNotFound
	}
	return &cloudprovider.InstanceMetadata{InstanceType: "v2", Zone: m.zone}, nil
}

func newProvider(t *testing.T, c *testCloud) *Provider {
	t.Helper()
	p, err := New(c, Options{SDK: ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCapabilitiesFollowTheCloudsAnswers(t *testing.T) {
	svc := func(ss ...pb.Service) []pb.Service { return ss }
	cases := []struct {
		name     string
		set      func(*testCloud)
		services []pb.Service
		legacy   bool
	}{
		{"nothing", func(*testCloud) {}, nil, false},
		{"InstancesV2 only", func(c *testCloud) { c.v2 = true }, svc(pb.Service_SERVICE_INSTANCES), false},
		{"Instances v1 and Zones", func(c *testCloud) { c.v1, c.zones = true, true }, svc(pb.Service_SERVICE_INSTANCES, pb.Service_SERVICE_ZONES), true},
		{"everything", func(c *testCloud) {
			c.v1, c.v2, c.zones, c.clusters, c.lb, c.routes = true, true, true, true, true, true
		},
			svc(pb.Service_SERVICE_INSTANCES, pb.Service_SERVICE_ZONES, pb.Service_SERVICE_CLUSTERS, pb.Service_SERVICE_LOAD_BALANCERS, pb.Service_SERVICE_ROUTES), true},
		{"load balancers and routes", func(c *testCloud) { c.lb, c.routes = true, true }, svc(pb.Service_SERVICE_LOAD_BALANCERS, pb.Service_SERVICE_ROUTES), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCloud()
			tc.set(c)
			caps, err := ccmsdk.DeriveCapabilities(newProvider(t, c))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(caps.Services, tc.services) {
				t.Errorf("services %v; want %v", caps.Services, tc.services)
			}
			wantCaps := []pb.Capability{}
			if tc.legacy {
				wantCaps = append(wantCaps, pb.Capability_CAPABILITY_INSTANCES_LEGACY)
			}
			// Every bridged cloud exports its process's metrics (metrics.go).
			wantCaps = append(wantCaps, pb.Capability_CAPABILITY_METRICS)
			slices.Sort(wantCaps)
			if !slices.Equal(caps.Capabilities, wantCaps) {
				t.Errorf("capabilities %v; want %v", caps.Capabilities, wantCaps)
			}
			if caps.ProviderName != "test" || !caps.HasClusterId {
				t.Errorf("provider name %q, has cluster id %v", caps.ProviderName, caps.HasClusterId)
			}
		})
	}
}

// Options.LoadBalancerClasses reaches GetPluginCapabilities: a bridged cloud
// can serve a class beside (or instead of) Services without one.
func TestLoadBalancerClassesOption(t *testing.T) {
	c := &testCloud{lb: true}
	p, err := New(c, Options{
		SDK:                     ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)},
		LoadBalancerClasses:     []string{"example.com/bridged"},
		LoadBalancerClassesOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := ccmsdk.DeriveCapabilities(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caps.LoadBalancerClasses, []string{"example.com/bridged"}) || !caps.LoadBalancerClassesOnly {
		t.Fatalf("classes %v, only %v", caps.LoadBalancerClasses, caps.LoadBalancerClassesOnly)
	}
	// Without the option: upstream's behaviour, Services without a class only.
	caps, err = ccmsdk.DeriveCapabilities(newProvider(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(caps.LoadBalancerClasses) != 0 || caps.LoadBalancerClassesOnly {
		t.Fatalf("default classes %v, only %v", caps.LoadBalancerClasses, caps.LoadBalancerClassesOnly)
	}
}

// Options.Schema: a bridged provider that ships a table publishes it
// (CAPABILITY_PROVIDER_SCHEMA, GetProviderSchema answers it); one that ships
// none declares no capability, so the host checks nothing.
func TestSchemaOption(t *testing.T) {
	schema := &pb.GetProviderSchemaResponse{
		AnnotationPrefixes: []string{"example.com/lb-"},
		Annotations: []*pb.SchemaAnnotation{{
			Key: "example.com/lb-internal", ObjectKind: pb.SchemaObjectKind_SCHEMA_OBJECT_KIND_SERVICE, Type: pb.SchemaValueType_SCHEMA_VALUE_TYPE_BOOL,
		}},
	}
	cases := []struct {
		name   string
		schema *pb.GetProviderSchemaResponse
		want   bool
	}{
		{"a table", schema, true},
		{"no table", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(&testCloud{lb: true}, Options{SDK: ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)}, Schema: tc.schema})
			if err != nil {
				t.Fatal(err)
			}
			caps, err := ccmsdk.DeriveCapabilities(p.Served())
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(caps.Capabilities, pb.Capability_CAPABILITY_PROVIDER_SCHEMA); got != tc.want {
				t.Fatalf("CAPABILITY_PROVIDER_SCHEMA declared %v; want %v (%v)", got, tc.want, caps.Capabilities)
			}
			if !slices.Contains(caps.Capabilities, pb.Capability_CAPABILITY_METRICS) {
				t.Fatalf("the schema wrapper lost the metrics capability: %v", caps.Capabilities)
			}
			if sp, ok := p.Served().(ccmsdk.SchemaPublisher); ok && sp.ProviderSchema() != tc.schema {
				t.Fatalf("GetProviderSchema answers %v; want %v", sp.ProviderSchema(), tc.schema)
			}
		})
	}
}

func code(err error) codes.Code { return status.Code(err) }

// The instance RPCs answer the same through InstancesV2 and through the
// Instances + Zones fallback, by name and by providerID.
func TestInstancesBothPaths(t *testing.T) {
	for _, path := range []string{"v2", "v1"} {
		t.Run(path, func(t *testing.T) {
			c := newTestCloud()
			c.v2, c.v1, c.zones = path == "v2", path == "v1", path == "v1"
			c.machines["up"] = &machine{id: "1", zone: "z1"}
			c.machines["down"] = &machine{id: "2", zone: "z2", off: true}
			inst := newProvider(t, c).Instances().(interface {
				InstanceExists(context.Context, *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error)
				InstanceShutdown(context.Context, *pb.InstanceShutdownRequest) (*pb.InstanceShutdownResponse, error)
				InstanceMetadata(context.Context, *pb.InstanceMetadataRequest) (*pb.InstanceMetadataResponse, error)
			})
			ctx := context.Background()
			nodes := map[string]*pb.NodeRef{
				"up by name": {Name: "up"}, "up by id": {Name: "x", ProviderId: "test://1"},
				"down by name": {Name: "down"}, "absent by name": {Name: "nope"}, "absent by id": {Name: "nope", ProviderId: "test://9"},
			}
			for label, n := range nodes {
				absent := strings.HasPrefix(label, "absent")
				ex, err := inst.InstanceExists(ctx, &pb.InstanceExistsRequest{Node: n})
				if err != nil || ex.Exists == absent {
					t.Errorf("%s: InstanceExists %v, %v", label, ex, err)
				}
				sd, err := inst.InstanceShutdown(ctx, &pb.InstanceShutdownRequest{Node: n})
				if absent {
					if code(err) != codes.NotFound || ccmsdk.ErrorReason(err) != ccmsdk.ReasonInstanceNotFound {
						t.Errorf("%s: InstanceShutdown %v, %v; want INSTANCE_NOT_FOUND", label, sd, err)
					}
				} else if err != nil || sd.Shutdown != strings.HasPrefix(label, "down") {
					t.Errorf("%s: InstanceShutdown %v, %v", label, sd, err)
				}
				md, err := inst.InstanceMetadata(ctx, &pb.InstanceMetadataRequest{Node: n})
				if absent {
					if code(err) != codes.NotFound || ccmsdk.ErrorReason(err) != ccmsdk.ReasonInstanceNotFound {
						t.Errorf("%s: InstanceMetadata %v, %v; want INSTANCE_NOT_FOUND", label, md, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: InstanceMetadata: %v", label, err)
				}
				m := md.Metadata
				if path == "v1" {
					want := map[string]string{"up by name": "test://1", "up by id": "test://1", "down by name": "test://2"}[label]
					if m.ProviderId != want || m.InstanceType != "small" || m.Region != "r1" || len(m.NodeAddresses) != 1 {
						t.Errorf("%s: metadata %v", label, m)
					}
				} else if m.InstanceType != "v2" || m.ProviderId != n.ProviderId {
					t.Errorf("%s: metadata %v (the node's providerID fills an empty answer)", label, m)
				}
			}
		})
	}
}

// A Node with another provider's providerID is refused with INVALID_ARGUMENT
// before the cloud is asked: an answer of "gone" would get it deleted.
func TestInstancesRefuseAnotherProvidersID(t *testing.T) {
	for _, path := range []string{"v2", "v1"} {
		t.Run(path, func(t *testing.T) {
			c := newTestCloud()
			c.v2, c.v1 = path == "v2", path == "v1"
			inst := newProvider(t, c).Instances().(interface {
				InstanceExists(context.Context, *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error)
				InstanceShutdown(context.Context, *pb.InstanceShutdownRequest) (*pb.InstanceShutdownResponse, error)
				InstanceMetadata(context.Context, *pb.InstanceMetadataRequest) (*pb.InstanceMetadataResponse, error)
			})
			ctx, n := context.Background(), &pb.NodeRef{Name: "x", ProviderId: "othercloud://1"}
			before := len(c.calls)
			_, e1 := inst.InstanceExists(ctx, &pb.InstanceExistsRequest{Node: n})
			_, e2 := inst.InstanceShutdown(ctx, &pb.InstanceShutdownRequest{Node: n})
			_, e3 := inst.InstanceMetadata(ctx, &pb.InstanceMetadataRequest{Node: n})
			for i, err := range []error{e1, e2, e3} {
				if code(err) != codes.InvalidArgument {
					t.Errorf("call %d: %v; want INVALID_ARGUMENT", i, err)
				}
			}
			if len(c.calls) != before {
				t.Errorf("the cloud was asked: %v", c.calls[before:])
			}
		})
	}
}

// The fallback's calls are upstream's, in upstream's order (plus the one
// existence check), and InstancesV2 gets the rebuilt Node.
func TestInstancesFallbackCallsAndRebuiltNode(t *testing.T) {
	c := newTestCloud()
	c.v1, c.zones = true, true
	c.machines["n"] = &machine{id: "7", zone: "z"}
	p := newProvider(t, c)
	inst := p.Instances().(*legacyInstances)
	if _, err := inst.InstanceMetadata(context.Background(), &pb.InstanceMetadataRequest{Node: &pb.NodeRef{Name: "n"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"InstanceID", "InstanceExistsByProviderID", "NodeAddressesByProviderID", "InstanceTypeByProviderID", "InstanceType", "GetZoneByProviderID"}
	if !slices.Equal(c.calls, want) {
		t.Errorf("calls %v\nwant  %v", c.calls, want)
	}

	c2 := newTestCloud()
	c2.v2 = true
	c2.machines["n"] = &machine{id: "7"}
	ref := &pb.NodeRef{Name: "n", Uid: "u", Labels: map[string]string{"l": "v"},
		Addresses: []*pb.NodeAddress{{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP, Address: "10.1.1.1"}}}
	if _, err := newProvider(t, c2).Instances().(*instances).InstanceExists(context.Background(), &pb.InstanceExistsRequest{Node: ref}); err != nil {
		t.Fatal(err)
	}
	if n := c2.seen; n == nil || n.Name != "n" || n.UID != "u" || n.Labels["l"] != "v" || len(n.Status.Addresses) != 1 || n.Status.Addresses[0].Address != "10.1.1.1" {
		t.Errorf("InstancesV2 got %+v", c2.seen)
	}
}

func TestLegacyRPCs(t *testing.T) {
	c := newTestCloud()
	c.v1 = true
	c.machines["n"] = &machine{id: "7"}
	l := newProvider(t, c).Instances().(*legacyInstances)
	ctx := context.Background()
	if r, err := l.InstanceId(ctx, &pb.InstanceIdRequest{NodeName: "n"}); err != nil || r.InstanceId != "7" {
		t.Errorf("InstanceId %v %v", r, err)
	}
	if _, err := l.InstanceId(ctx, &pb.InstanceIdRequest{NodeName: "gone"}); ccmsdk.ErrorReason(err) != ccmsdk.ReasonInstanceNotFound {
		t.Errorf("InstanceId of an absent node: %v", err)
	}
	if _, err := l.InstanceTypeByProviderId(ctx, &pb.InstanceTypeByProviderIdRequest{ProviderId: "test://7"}); code(err) != codes.Unimplemented {
		t.Errorf("NotImplemented came back as %v", err)
	}
	if r, err := l.CurrentNodeName(ctx, &pb.CurrentNodeNameRequest{Hostname: "h"}); err != nil || r.NodeName != "h" {
		t.Errorf("CurrentNodeName %v %v", r, err)
	}
}

func TestLoadBalancers(t *testing.T) {
	c := newTestCloud()
	c.lb = true
	p := newProvider(t, c)
	if _, err := p.Configure(context.Background(), &pb.ConfigureRequest{ClusterName: "configured"}); err != nil {
		t.Fatal(err)
	}
	lb := p.LoadBalancers().(*loadBalancers)
	ctx := context.Background()
	svc := &pb.ServiceRef{Uid: "0a1b2c3d-0000-1111-2222-333344445555", Namespace: "ns", Name: "web"}

	name, _ := lb.GetLoadBalancerName(ctx, &pb.GetLoadBalancerNameRequest{Service: svc})
	if name.Name != "a0a1b2c3d00001111222233334444555" {
		t.Errorf("an empty name falls back to upstream's default; got %q", name.Name)
	}
	if _, err := lb.UpdateLoadBalancer(ctx, &pb.UpdateLoadBalancerRequest{Service: svc}); code(err) != codes.NotFound {
		t.Errorf("UpdateLoadBalancer of an absent one: %v; want NOT_FOUND", err)
	}
	if got, _ := lb.GetLoadBalancer(ctx, &pb.GetLoadBalancerRequest{Service: svc}); got.Exists || got.Status != nil {
		t.Errorf("GetLoadBalancer before ensure: %v", got)
	}
	if r, err := lb.EnsureLoadBalancer(ctx, &pb.EnsureLoadBalancerRequest{Meta: &pb.RequestMeta{ClusterName: "meta"}, Service: svc}); err != nil || r.Status.Ingress[0].Ip != "192.0.2.1" {
		t.Fatalf("EnsureLoadBalancer %v %v", r, err)
	}
	if _, err := lb.UpdateLoadBalancer(ctx, &pb.UpdateLoadBalancerRequest{Service: svc}); err != nil {
		t.Errorf("UpdateLoadBalancer: %v", err)
	}
	if got, _ := lb.GetLoadBalancer(ctx, &pb.GetLoadBalancerRequest{Service: svc}); !got.Exists || got.Status.Ingress[0].Ip != "192.0.2.1" {
		t.Errorf("GetLoadBalancer after ensure: %v", got)
	}
	other := &pb.ServiceRef{Uid: "u2", Annotations: map[string]string{"test/owner": "other"}}
	if _, err := lb.EnsureLoadBalancer(ctx, &pb.EnsureLoadBalancerRequest{Service: other}); ccmsdk.ErrorReason(err) != ccmsdk.ReasonImplementedElsewhere {
		t.Errorf("ImplementedElsewhere came back as %v", err)
	}
	if !slices.Contains(c.calls, "EnsureLoadBalancer meta") || !slices.Contains(c.calls, "GetLoadBalancer configured") {
		t.Errorf("the cluster name is RequestMeta's, else Configure's: %v", c.calls)
	}
}

func TestRoutesAreIdempotentAndPaged(t *testing.T) {
	c := newTestCloud()
	c.routes = true
	r := newProvider(t, c).Routes().(*routes)
	ctx := context.Background()
	mk := func(dest, target string) *pb.CreateRouteRequest {
		return &pb.CreateRouteRequest{Meta: &pb.RequestMeta{ClusterName: "k"}, NameHint: target, Route: &pb.Route{TargetNode: target, DestinationCidr: dest}}
	}
	a, err := r.CreateRoute(ctx, mk("10.0.1.0/24", "n1"))
	if err != nil || a.Route.Name != "k-n1" {
		t.Fatalf("CreateRoute %v %v", a, err)
	}
	b, err := r.CreateRoute(ctx, mk("10.0.1.0/24", "n1"))
	if err != nil || b.Route.Name != a.Route.Name {
		t.Errorf("second CreateRoute %v %v", b, err)
	}
	if _, err := r.CreateRoute(ctx, mk("10.0.1.0/24", "n2")); code(err) != codes.AlreadyExists {
		t.Errorf("conflicting CreateRoute: %v", err)
	}
	for _, d := range []string{"10.0.3.0/24", "10.0.2.0/24"} {
		if _, err := r.CreateRoute(ctx, mk(d, "n1")); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	token := ""
	for range 10 {
		page, err := r.ListRoutes(ctx, &pb.ListRoutesRequest{PageSize: 1, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range page.Routes {
			seen = append(seen, x.DestinationCidr)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
		// A route deleted between pages neither stops nor shifts the listing.
		if len(seen) == 1 {
			delete(c.table, "10.0.1.0/24")
		}
	}
	if !slices.Equal(seen, []string{"10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"}) {
		t.Errorf("pages gave %v", seen)
	}
	if _, err := r.ListRoutes(ctx, &pb.ListRoutesRequest{PageToken: "not-a-token!"}); code(err) != codes.Aborted {
		t.Errorf("bad token: %v", err)
	}
	del := &pb.DeleteRouteRequest{Route: &pb.Route{TargetNode: "n1", DestinationCidr: "10.0.2.0/24"}}
	for i := range 2 {
		if _, err := r.DeleteRoute(ctx, del); err != nil {
			t.Errorf("DeleteRoute #%d: %v", i+1, err)
		}
	}
	if slices.Contains(c.calls[len(c.calls)-1:], "DeleteRoute") {
		t.Error("the second DeleteRoute reached the cloud")
	}
}

type recordingBuilder struct {
	cloudprovider.ControllerClientBuilder
}

func (recordingBuilder) Client(string) (clientset.Interface, error) { return nil, errors.New("none") }
func (recordingBuilder) Config(string) (*restclient.Config, error)  { return nil, errors.New("none") }

func TestConfigureInitializesOnceAndCloseStops(t *testing.T) {
	c := newTestCloud()
	b := recordingBuilder{}
	p, err := New(c, Options{ClientBuilder: b, SDK: ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := p.Configure(ctx, &pb.ConfigureRequest{CloudConfig: []byte("x"), ClusterName: "k"})
	if err != nil || len(res.Warnings) != 1 {
		t.Fatalf("Configure %v %v; want one warning about the ignored config", res, err)
	}
	if _, err := p.Configure(ctx, &pb.ConfigureRequest{ClusterName: "k"}); err != nil {
		t.Fatal(err)
	}
	if c.inits != 1 || c.builder != b {
		t.Errorf("Initialize ran %d times with %v", c.inits, c.builder)
	}
	select {
	case <-c.stop:
		t.Fatal("stop closed before Close")
	default:
	}
	_ = p.Close(ctx)
	_ = p.Close(ctx)
	<-c.stop

	bad := errors.New("bad config")
	p2, _ := New(newTestCloud(), Options{Configure: func(context.Context, []byte) ([]string, error) { return nil, ccmsdk.InvalidArgument(bad.Error()) }})
	if _, err := p2.Configure(ctx, &pb.ConfigureRequest{}); code(err) != codes.InvalidArgument {
		t.Errorf("Options.Configure's error: %v", err)
	}
}

func TestClientBuilderFromEnvReportsMissingConfig(t *testing.T) {
	t.Setenv(EnvKubeconfig, "/nonexistent/kubeconfig")
	if _, err := ClientBuilderFromEnv().Client("x"); err == nil || !strings.Contains(err.Error(), "KUBECONFIG") {
		t.Errorf("err %v", err)
	}
	t.Setenv(EnvKubeconfig, "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := ClientBuilderFromEnv().Config("x"); err == nil || !strings.Contains(err.Error(), "set KUBECONFIG") {
		t.Errorf("err %v", err)
	}
}

// BenchmarkBridgeOverhead measures what the bridge adds to one call (the
// Node rebuilt from the request, the metadata converted back), against the
// same InstancesV2 call made directly; gRPC itself is the SDK's either way.
func BenchmarkBridgeOverhead(b *testing.B) {
	c := newTestCloud()
	c.v2 = true
	c.machines["n"] = &machine{id: "1", zone: "z"}
	p, _ := New(c, Options{SDK: ccmsdk.Options{Logger: ccmsdk.NewLogger("bench", nil, nil)}})
	inst := p.Instances().(*instances)
	ctx := context.Background()
	ref := &pb.NodeRef{Name: "n", Uid: "u", Labels: map[string]string{"kubernetes.io/hostname": "n", "a": "b"},
		Addresses: []*pb.NodeAddress{{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP, Address: "10.0.0.1"}}}
	req := &pb.InstanceMetadataRequest{Node: ref}
	node := NodeFromRef(ref)
	v2, _ := c.InstancesV2()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := v2.InstanceMetadata(ctx, node); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bridged", func(b *testing.B) {
		for b.Loop() {
			if _, err := inst.InstanceMetadata(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The node ownership the bridge declares: "<ProviderName()>://" unless
// Options.ProviderIDPrefixes says otherwise; every declared prefix is the
// cloud's in instance calls; a prefix without "://" is refused by New.
func TestNodeOwnershipDeclarations(t *testing.T) {
	for _, c := range []struct {
		name         string
		opts         Options
		wantPrefixes []string
		wantSelector string
	}{
		{"default: the cloud's provider name", Options{}, []string{"test://"}, ""},
		{"option: two prefixes and a selector", Options{ProviderIDPrefixes: []string{"test://", "testmetal://"}, NodeSelector: "cloud=test"}, []string{"test://", "testmetal://"}, "cloud=test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(newTestCloud(), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			caps, err := ccmsdk.DeriveCapabilities(p)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(caps.ProviderIdPrefixes, c.wantPrefixes) || caps.NodeSelector != c.wantSelector {
				t.Errorf("prefixes %q, selector %q; want %q, %q", caps.ProviderIdPrefixes, caps.NodeSelector, c.wantPrefixes, c.wantSelector)
			}
		})
	}
	p, err := New(newTestCloud(), Options{ProviderIDPrefixes: []string{"test://", "testmetal://"}})
	if err != nil {
		t.Fatal(err)
	}
	n := &pb.NodeRef{Name: "x", ProviderId: "testmetal://9"}
	if _, err := (&instances{p: p}).ownNode(n); err != nil {
		t.Errorf("a node with the second declared prefix was refused: %v", err)
	}
	if _, err := (&instances{p: p}).ownNode(&pb.NodeRef{Name: "x", ProviderId: "other://9"}); code(err) != codes.InvalidArgument {
		t.Errorf("a foreign node: %v; want INVALID_ARGUMENT", err)
	}
	if _, err := New(newTestCloud(), Options{ProviderIDPrefixes: []string{"test"}}); err == nil {
		t.Error("a prefix without :// was accepted")
	}
}
