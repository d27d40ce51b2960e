package ccmsdk

import (
	"context"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

// Info is what a provider declares about itself.
type Info struct {
	// Name is the DNS-style implementation name, e.g. "example.com".
	Name string
	// VendorVersion is free form.
	VendorVersion string
	// ProviderName is used in providerIDs ("<ProviderName>://<id>"): a lowercase DNS label.
	ProviderName string
	// HasClusterID: cloud objects are tagged with the cluster name (upstream HasClusterID).
	HasClusterID bool
	// Manifest holds free-form build facts.
	Manifest map[string]string
	// LoadBalancerIPModeProxy: load balancer ingress may report ipMode Proxy
	// (CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY; only with a load balancer service).
	LoadBalancerIPModeProxy bool
	// LoadBalancerPodBackends: load balancers can send traffic straight to
	// pod addresses (CAPABILITY_LOAD_BALANCER_POD_BACKENDS, protocol 1.1;
	// only with a load balancer service): the host sends ServiceRef.Endpoints
	// and PodBackends for the Services that ask (see PodTargets).
	LoadBalancerPodBackends bool
	// VolumesExpandOnline: volumes can be expanded while attached
	// (CAPABILITY_VOLUMES_EXPAND_ONLINE; only with a volume service).
	VolumesExpandOnline bool
	// ProviderFlags are the long names (without dashes) of the provider's own
	// flags (GetPluginInfoResponse.provider_flags): the host passes them from
	// its command line in ConfigureRequest.provider_args.
	ProviderFlags []string
	// ProviderControllers are the names of the provider's own controllers
	// (GetPluginInfoResponse.provider_controllers), which the host asks it to
	// run in ConfigureRequest.controllers.
	ProviderControllers []string
	// ProviderIDPrefixes are the providerID prefixes of the Nodes this
	// provider owns (GetPluginCapabilitiesResponse.provider_id_prefixes),
	// each ending in "://", e.g. "aws://". Empty: "<ProviderName>://". The
	// host never sends this provider a Node with another prefix, and the
	// providerIDs InstanceMetadata returns must start with one of them.
	ProviderIDPrefixes []string
	// NodeSelector is a label selector (kubectl -l syntax) claiming Nodes
	// that have no providerID yet (GetPluginCapabilitiesResponse.node_selector).
	// Empty: with one provider in the host, every such Node; with several, none.
	NodeSelector string
	// LoadBalancerClasses are the Service spec.loadBalancerClass values the
	// provider's load balancers serve (GetPluginCapabilitiesResponse
	// load_balancer_classes; only with a load balancer service): the host
	// sends it Services of these classes, and Services without a class
	// unless LoadBalancerClassesOnly. Nil: Services without a class only.
	LoadBalancerClasses []string
	// LoadBalancerClassesOnly: serve only LoadBalancerClasses, never Services
	// without a class (GetPluginCapabilitiesResponse load_balancer_classes_only).
	LoadBalancerClassesOnly bool
	// VolumeProvisioners are the StorageClass provisioner (CSI driver) names
	// the provider's volumes serve (GetPluginCapabilitiesResponse
	// volume_provisioners; only with a volume service): the host sends it
	// only the claims, PersistentVolumes and VolumeAttachments of these
	// names. Nil: the host's --volume-provisioner-name, else Info().Name.
	VolumeProvisioners []string
}

// Provider is a cloud provider. Only Info is required; everything else is
// an optional interface, found with a type assertion:
//
//   - [Configurer], [Prober], [MetricsExporter], [SchemaPublisher], [Closer] for the lifecycle;
//   - [InstancesProvider], [ZonesProvider], [ClustersProvider],
//     [LoadBalancersProvider], [RoutesProvider], [VolumesProvider] for the
//     cloud services.
//
// A service object (what Instances() and the others return) has any subset
// of the methods of the generated server interface (e.g.
// pb.InstancesServiceServer), with exactly the generated signatures. It must
// not embed the generated Unimplemented…Server: the SDK answers
// UNIMPLEMENTED for every method that is missing, and derives the services
// and capabilities GetPluginCapabilities reports from the methods present
// (see [DeriveCapabilities]), so the answer can never disagree with the
// implementation. [Serve] refuses a method with the right name and a wrong
// signature.
//
// Method contracts are the RPC comments in proto/ccm/provider/v1/*.proto.
// Return the errors of errors.go (or any gRPC status error) to answer with a
// specific code and reason; any other error becomes INTERNAL. The context
// is cancelled when the host cancels the call, its deadline passes, or
// Shutdown begins.
type Provider interface {
	Info() Info
}

// Configurer receives the cloud config. Called after start and after every
// restart, before any cloud call; until it has succeeded once, cloud calls
// answer FAILED_PRECONDITION/NOT_CONFIGURED and Probe answers ready=false.
// Return [InvalidArgument] for a bad config. A nil response means no warnings.
type Configurer interface {
	Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error)
}

// Prober reports readiness (after Configure); without it a configured provider is ready.
type Prober interface {
	Probe(ctx context.Context) (bool, error)
}

// MetricsExporter returns the provider's metrics in the Prometheus text
// format, served by the host on its /metrics (IdentityService.GetMetrics);
// prefix names with the provider name; at most 4 MiB. Implementing it
// announces CAPABILITY_METRICS. Called on scrapes, also before Configure.
type MetricsExporter interface {
	Metrics(ctx context.Context) (string, error)
}

// SchemaPublisher publishes the Service annotations (and cloud-config keys)
// the provider reads and the annotation prefixes it owns
// (IdentityService.GetProviderSchema, protocol 1.1); implementing it
// announces CAPABILITY_PROVIDER_SCHEMA. The host checks every Service's
// annotations against it before each ensure: an unlisted key under an owned
// prefix, or a value that does not fit, is a Warning event and no cloud
// call. The answer must not change during the life of the process; at most
// 1 MiB encoded.
type SchemaPublisher interface {
	ProviderSchema() *pb.GetProviderSchemaResponse
}

// Closer is called once when the provider stops (Shutdown RPC in exec mode,
// SIGTERM/SIGINT, stdin EOF), after in-flight calls finished or the grace
// period ran out; ctx ends when the stop's time is up (at least 1 s).
type Closer interface {
	Close(ctx context.Context) error
}

// InstancesProvider serves ccm.provider.v1.InstancesService with the methods
// of pb.InstancesServiceServer that the returned object has (nil: not served).
type InstancesProvider interface{ Instances() any }

// ZonesProvider serves ccm.provider.v1.ZonesService (methods of pb.ZonesServiceServer).
type ZonesProvider interface{ Zones() any }

// ClustersProvider serves ccm.provider.v1.ClustersService (methods of pb.ClustersServiceServer).
type ClustersProvider interface{ Clusters() any }

// LoadBalancersProvider serves ccm.provider.v1.LoadBalancersService (methods of pb.LoadBalancersServiceServer).
type LoadBalancersProvider interface{ LoadBalancers() any }

// RoutesProvider serves ccm.provider.v1.RoutesService (methods of pb.RoutesServiceServer).
type RoutesProvider interface{ Routes() any }

// VolumesProvider serves ccm.provider.v1.VolumesService (methods of pb.VolumesServiceServer).
type VolumesProvider interface{ Volumes() any }
