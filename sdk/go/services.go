package ccmsdk

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serviceEntry is one optional cloud service: how the provider offers it,
// its generated description and server interface, and its Service enum value.
type serviceEntry struct {
	name    string // "InstancesService"
	desc    *grpc.ServiceDesc
	iface   reflect.Type // the generated pb.XServiceServer interface
	service pb.Service
	object  func(Provider) any
}

func ifaceOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

// providerServices: every optional service, in Service enum order.
var providerServices = []serviceEntry{
	{"InstancesService", &pb.InstancesService_ServiceDesc, ifaceOf[pb.InstancesServiceServer](), pb.Service_SERVICE_INSTANCES,
		func(p Provider) any {
			if s, ok := p.(InstancesProvider); ok {
				return s.Instances()
			}
			return nil
		}},
	{"ZonesService", &pb.ZonesService_ServiceDesc, ifaceOf[pb.ZonesServiceServer](), pb.Service_SERVICE_ZONES,
		func(p Provider) any {
			if s, ok := p.(ZonesProvider); ok {
				return s.Zones()
			}
			return nil
		}},
	{"ClustersService", &pb.ClustersService_ServiceDesc, ifaceOf[pb.ClustersServiceServer](), pb.Service_SERVICE_CLUSTERS,
		func(p Provider) any {
			if s, ok := p.(ClustersProvider); ok {
				return s.Clusters()
			}
			return nil
		}},
	{"LoadBalancersService", &pb.LoadBalancersService_ServiceDesc, ifaceOf[pb.LoadBalancersServiceServer](), pb.Service_SERVICE_LOAD_BALANCERS,
		func(p Provider) any {
			if s, ok := p.(LoadBalancersProvider); ok {
				return s.LoadBalancers()
			}
			return nil
		}},
	{"RoutesService", &pb.RoutesService_ServiceDesc, ifaceOf[pb.RoutesServiceServer](), pb.Service_SERVICE_ROUTES,
		func(p Provider) any {
			if s, ok := p.(RoutesProvider); ok {
				return s.Routes()
			}
			return nil
		}},
	{"VolumesService", &pb.VolumesService_ServiceDesc, ifaceOf[pb.VolumesServiceServer](), pb.Service_SERVICE_VOLUMES,
		func(p Provider) any {
			if s, ok := p.(VolumesProvider); ok {
				return s.Volumes()
			}
			return nil
		}},
}

// boundService is a provider's service object with its methods looked up.
type boundService struct {
	entry   serviceEntry
	methods map[string]reflect.Value // RPC name → the provider's method
}

func (b *boundService) has(method string) bool {
	if b == nil {
		return false
	}
	_, ok := b.methods[method]
	return ok
}

// isNil: a nil interface or a typed nil pointer/map/func.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Interface, reflect.Slice, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// bindServices looks up the provider's service objects and their methods,
// keyed by short service name. An object that embeds the generated
// Unimplemented…Server, or has an RPC's name with another signature, is an
// error.
func bindServices(p Provider) (map[string]*boundService, error) {
	out := map[string]*boundService{}
	for _, e := range providerServices {
		obj := e.object(p)
		if isNil(obj) {
			continue
		}
		if reflect.TypeOf(obj).Implements(e.iface) {
			return nil, fmt.Errorf("the %s object (%T) embeds pb.Unimplemented%sServer; remove it: the SDK answers UNIMPLEMENTED for missing methods and derives the capabilities from the methods present", e.name, obj, e.name)
		}
		b := &boundService{entry: e, methods: map[string]reflect.Value{}}
		rv := reflect.ValueOf(obj)
		for _, md := range e.desc.Methods {
			m := rv.MethodByName(md.MethodName)
			if !m.IsValid() {
				continue
			}
			want, _ := e.iface.MethodByName(md.MethodName)
			if m.Type() != want.Type {
				return nil, fmt.Errorf("%T.%s has the signature %s; ccm.provider.v1.%s/%s wants %s", obj, md.MethodName, m.Type(), e.name, md.MethodName, want.Type)
			}
			b.methods[md.MethodName] = m
		}
		out[e.name] = b
	}
	return out, nil
}

// legacyInstancesMethods: the InstancesService RPCs of the legacy (Instances v1) surface.
var legacyInstancesMethods = []string{
	"NodeAddresses", "NodeAddressesByProviderId", "InstanceId", "InstanceType",
	"InstanceTypeByProviderId", "AddSshKeyToAllInstances", "CurrentNodeName",
}

// DeriveCapabilities is the GetPluginCapabilities answer for p, derived from
// what p implements (the same rules as the TypeScript SDK):
//
//   - services: one per non-nil service object;
//   - INSTANCES_BATCH: instances has GetInstancesStatus and GetInstancesMetadata;
//   - INSTANCES_LEGACY: instances has any legacy (Instances v1) method;
//   - LOAD_BALANCER_BATCH_HOSTS: load balancers have UpdateLoadBalancerHosts;
//   - LOAD_BALANCER_BATCH_ENSURE: load balancers have EnsureLoadBalancers;
//   - LOAD_BALANCER_LIST: load balancers have ListLoadBalancers;
//   - LOAD_BALANCER_IP_MODE_PROXY: Info().LoadBalancerIPModeProxy and a load balancer service;
//   - LOAD_BALANCER_POD_BACKENDS: Info().LoadBalancerPodBackends and a load balancer service;
//   - ROUTES_RECONCILE: routes have ReconcileRoutes;
//   - VOLUMES_LIST_PUBLISHED_NODES: volumes have ListVolumes;
//   - VOLUMES_EXPAND_ONLINE: Info().VolumesExpandOnline and a volume service;
//   - METRICS: p is a [MetricsExporter];
//   - PROVIDER_SCHEMA: p is a [SchemaPublisher].
//
// The load balancer class declaration (Info().LoadBalancerClasses and
// LoadBalancerClassesOnly) is sent as is with a load balancer service, the
// volume provisioner names (Info().VolumeProvisioners) with a volume service.
//
// Capabilities are sorted. It fails like [Serve] on an invalid service object.
func DeriveCapabilities(p Provider) (*pb.GetPluginCapabilitiesResponse, error) {
	bound, err := bindServices(p)
	if err != nil {
		return nil, err
	}
	return deriveCapabilities(p, bound), nil
}

func deriveCapabilities(p Provider, bound map[string]*boundService) *pb.GetPluginCapabilitiesResponse {
	info := p.Info()
	res := &pb.GetPluginCapabilitiesResponse{
		ProviderName:       info.ProviderName,
		HasClusterId:       info.HasClusterID,
		ProviderIdPrefixes: info.ProviderIDPrefixes,
		NodeSelector:       info.NodeSelector,
	}
	for _, e := range providerServices {
		if bound[e.name] != nil {
			res.Services = append(res.Services, e.service)
		}
	}
	inst, lb, routes, vols := bound["InstancesService"], bound["LoadBalancersService"], bound["RoutesService"], bound["VolumesService"]
	caps := []pb.Capability{}
	add := func(on bool, c pb.Capability) {
		if on {
			caps = append(caps, c)
		}
	}
	add(inst.has("GetInstancesStatus") && inst.has("GetInstancesMetadata"), pb.Capability_CAPABILITY_INSTANCES_BATCH)
	add(slices.ContainsFunc(legacyInstancesMethods, inst.has), pb.Capability_CAPABILITY_INSTANCES_LEGACY)
	add(lb.has("UpdateLoadBalancerHosts"), pb.Capability_CAPABILITY_LOAD_BALANCER_BATCH_HOSTS)
	add(lb.has("EnsureLoadBalancers"), pb.Capability_CAPABILITY_LOAD_BALANCER_BATCH_ENSURE)
	add(lb.has("ListLoadBalancers"), pb.Capability_CAPABILITY_LOAD_BALANCER_LIST)
	add(lb != nil && info.LoadBalancerIPModeProxy, pb.Capability_CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY)
	add(lb != nil && info.LoadBalancerPodBackends, pb.Capability_CAPABILITY_LOAD_BALANCER_POD_BACKENDS)
	add(routes.has("ReconcileRoutes"), pb.Capability_CAPABILITY_ROUTES_RECONCILE)
	add(vols.has("ListVolumes"), pb.Capability_CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES)
	add(vols != nil && info.VolumesExpandOnline, pb.Capability_CAPABILITY_VOLUMES_EXPAND_ONLINE)
	_, metrics := p.(MetricsExporter)
	add(metrics, pb.Capability_CAPABILITY_METRICS)
	_, schema := p.(SchemaPublisher)
	add(schema, pb.Capability_CAPABILITY_PROVIDER_SCHEMA)
	slices.Sort(caps)
	res.Capabilities = caps
	if lb != nil {
		res.LoadBalancerClasses = slices.Clone(info.LoadBalancerClasses)
		res.LoadBalancerClassesOnly = info.LoadBalancerClassesOnly
	}
	if vols != nil {
		res.VolumeProvisioners = slices.Clone(info.VolumeProvisioners)
	}
	return res
}

// serviceDesc is a copy of b's generated description whose handlers call the
// provider's methods, answering UNIMPLEMENTED for the missing ones.
func (b *boundService) serviceDesc() *grpc.ServiceDesc {
	d := &grpc.ServiceDesc{
		ServiceName: b.entry.desc.ServiceName,
		HandlerType: (*any)(nil),
		Metadata:    b.entry.desc.Metadata,
	}
	for _, md := range b.entry.desc.Methods {
		full := "/" + d.ServiceName + "/" + md.MethodName
		m, ok := b.methods[md.MethodName]
		var h grpc.MethodHandler
		if ok {
			h = reflectHandler(m, full)
		} else {
			h = unimplementedHandler(full)
		}
		d.Methods = append(d.Methods, grpc.MethodDesc{MethodName: md.MethodName, Handler: h})
	}
	return d
}

func unimplementedHandler(full string) grpc.MethodHandler {
	msg := strings.TrimPrefix(full, "/") + " is not implemented by this provider"
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		return nil, status.Error(codes.Unimplemented, msg)
	}
}

// reflectHandler calls m (func(context.Context, *Req) (*Res, error)) for
// the method named full, through the server's interceptors. A nil response
// is answered as an empty message.
func reflectHandler(m reflect.Value, full string) grpc.MethodHandler {
	reqType := m.Type().In(1).Elem()
	resType := m.Type().Out(0).Elem()
	call := func(ctx context.Context, req any) (any, error) {
		out := m.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(req)})
		if errV := out[1]; !errV.IsNil() {
			return nil, errV.Interface().(error)
		}
		if out[0].IsNil() {
			return reflect.New(resType).Interface(), nil
		}
		return out[0].Interface(), nil
	}
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := reflect.New(reqType).Interface()
		if err := dec(in); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return call(ctx, in)
		}
		return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, call)
	}
}

// IsCloudMethod reports whether fullMethod ("/pkg.Service/Method") belongs
// to a cloud service (not Identity, Lifecycle, health or the test hooks):
// the calls that answer NOT_CONFIGURED before the first Configure.
func IsCloudMethod(fullMethod string) bool {
	for _, e := range providerServices {
		if strings.HasPrefix(fullMethod, "/"+e.desc.ServiceName+"/") {
			return true
		}
	}
	return false
}
