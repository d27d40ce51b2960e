package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
)

// UpstreamVersion is the k8s.io/cloud-provider version the bridge is built
// and tested against; GetPluginInfo reports it in the manifest.
const UpstreamVersion = "v0.34.4"

// informerResync is upstream's default --min-resync-period for the shared
// informers a cloud receives through cloudprovider.InformerUser.
const informerResync = 12 * time.Hour

// Options of [New], [Serve] and [Main]. All optional.
type Options struct {
	// Name is GetPluginInfo's DNS-style name; default
	// "<ProviderName()>.cloudprovider.bridge".
	Name string
	// VendorVersion is GetPluginInfo's vendor version; default "unknown".
	VendorVersion string
	// Manifest adds build facts to GetPluginInfo's manifest.
	Manifest map[string]string
	// Configure receives the bytes of the host's --cloud-config on every
	// Configure (the cloud itself was built before, since its (impl, ok)
	// answers are the capabilities the host reads first). Return
	// ccmsdk.InvalidArgument for bytes that cannot be used. Nil: the bytes
	// are ignored, with a warning when they are not empty.
	Configure func(ctx context.Context, cloudConfig []byte) (warnings []string, err error)
	// ClientBuilder is what Initialize receives; default [ClientBuilderFromEnv].
	ClientBuilder cloudprovider.ControllerClientBuilder
	// SDK is passed to ccmsdk.Serve (endpoint, logger, test hooks, interceptors).
	SDK ccmsdk.Options
	// Flags are the provider's own flags (those upstream's CCM built with
	// this provider registers beside k8s.io/cloud-provider's), declared to
	// the host in GetPluginInfo; the first Configure parses its
	// provider_args into them, before any Controllers start. Nil: none.
	Flags *pflag.FlagSet
	// Controllers are the provider's own controllers by their --controllers
	// name, declared to the host in GetPluginInfo and run while the host asks
	// (ConfigureRequest.controllers: only while it leads). Nil: none.
	Controllers map[string]Controller
	// ProviderIDPrefixes are the providerID prefixes of the Nodes the bridged
	// cloud owns, declared to the host (GetPluginCapabilitiesResponse.
	// provider_id_prefixes), each ending in "://". Nil: the cloud's
	// "<ProviderName()>://". Instance calls for a Node whose providerID has
	// none of them answer INVALID_ARGUMENT.
	ProviderIDPrefixes []string
	// NodeSelector is a label selector claiming Nodes without a providerID
	// (GetPluginCapabilitiesResponse.node_selector). Empty: with one provider
	// in the host, every such Node; with several, none.
	NodeSelector string
	// LoadBalancerClasses are the Service loadBalancerClass values the
	// cloud's LoadBalancer serves, declared to the host (an upstream CCM
	// serves no class: upstream's service controller skips every classed
	// Service). Nil: Services without a class only, as upstream.
	LoadBalancerClasses []string
	// LoadBalancerClassesOnly: the cloud serves only LoadBalancerClasses,
	// never Services without a class (another provider of the host does).
	LoadBalancerClassesOnly bool
	// Schema is the bridged cloud's schema: the annotations (and cloud-config
	// keys) it reads and the annotation prefixes it owns, from a table the
	// bridged provider's module ships (upstream's interface has none). Set,
	// the bridge declares CAPABILITY_PROVIDER_SCHEMA and answers
	// GetProviderSchema with it, and the host checks every Service's
	// annotations against it before each ensure. Nil: no capability, no
	// check. Must not change after [New].
	Schema *pb.GetProviderSchemaResponse
}

// Provider serves a cloudprovider.Interface as a ccmsdk.Provider. The
// services it offers follow the cloud's (impl, ok) answers, asked once in
// [New]:
//
//   - InstancesService when InstancesV2 or Instances is supported:
//     InstanceExists, InstanceShutdown and InstanceMetadata always (through
//     InstancesV2, or else through Instances and Zones the way upstream's
//     node and node lifecycle controllers fall back), plus the legacy RPCs
//     (CAPABILITY_INSTANCES_LEGACY) when Instances is supported;
//   - ZonesService when Zones is; ClustersService (ListClusters, Master)
//     when Clusters is;
//   - LoadBalancersService when LoadBalancer is; RoutesService when Routes is.
//
// No batch capability is announced: upstream's interface has none, and the
// host falls back to single calls.
type Provider struct {
	cloud    cloudprovider.Interface
	opts     Options
	v2       cloudprovider.InstancesV2
	v1       cloudprovider.Instances
	zones    cloudprovider.Zones
	clusters cloudprovider.Clusters
	lb       cloudprovider.LoadBalancer
	routes   cloudprovider.Routes
	log      *slog.Logger

	mu          sync.Mutex
	clusterName string
	initialized bool
	stop        chan struct{}
	closeOnce   sync.Once
	builder     cloudprovider.ControllerClientBuilder
	parsedArgs  []string
	running     map[string]context.CancelFunc
	scope       Scope       // of the running controllers
	lease       *time.Timer // stops the running controllers unless a Configure renews it
	leaseGen    uint64      // the Configure that set lease
}

// New wraps cloud. It asks the cloud once for each of its interfaces; the
// answers must not change afterwards (the protocol's capabilities may not).
// The ownership declarations (ProviderIDPrefixes, NodeSelector,
// LoadBalancerClasses, LoadBalancerClassesOnly) are replaced by those the
// process environment sets (EnvProviderIDPrefixes, ...), and checked: an
// error names every bad one.
func New(cloud cloudprovider.Interface, opts Options) (*Provider, error) {
	return newWithEnv(cloud, opts, os.LookupEnv)
}

func newWithEnv(cloud cloudprovider.Interface, opts Options, lookupEnv func(string) (string, bool)) (*Provider, error) {
	if cloud == nil {
		return nil, fmt.Errorf("bridge: the cloud is nil")
	}
	opts, err := declarationsFromEnv(opts, lookupEnv)
	if err != nil {
		return nil, err
	}
	p := &Provider{cloud: cloud, opts: opts, stop: make(chan struct{})}
	if v, ok := cloud.InstancesV2(); ok && v != nil {
		p.v2 = v
	}
	if v, ok := cloud.Instances(); ok && v != nil {
		p.v1 = v
	}
	if v, ok := cloud.Zones(); ok && v != nil {
		p.zones = v
	}
	if v, ok := cloud.Clusters(); ok && v != nil {
		p.clusters = v
	}
	if v, ok := cloud.LoadBalancer(); ok && v != nil {
		p.lb = v
	}
	if v, ok := cloud.Routes(); ok && v != nil {
		p.routes = v
	}
	p.log = opts.SDK.Logger
	if p.log == nil {
		p.log = ccmsdk.NewLogger(cloud.ProviderName(), nil, nil)
	}
	routeKlog(p.log)
	return p, nil
}

// Serve wraps cloud with [New] and serves it with ccmsdk.Serve (exec or
// sidecar mode, the whole launch contract); it returns like ccmsdk.Serve.
func Serve(cloud cloudprovider.Interface, opts Options) error {
	p, err := New(cloud, opts)
	if err != nil {
		return err
	}
	sdkOpts := opts.SDK
	sdkOpts.Logger = p.log
	return ccmsdk.Serve(p.Served(), sdkOpts)
}

// Main serves cloud with [Serve] and ends the process like ccmsdk.Main:
// exit 0 after a graceful stop, the error on stderr and exit 1 otherwise.
func Main(cloud cloudprovider.Interface, opts Options) {
	p, err := New(cloud, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err.Error())
		os.Exit(1)
	}
	sdkOpts := opts.SDK
	sdkOpts.Logger = p.log
	ccmsdk.Main(p.Served(), sdkOpts)
}

// schemaProvider is a Provider that also publishes Options.Schema
// (ccmsdk.SchemaPublisher): a type of its own, since the SDK declares
// CAPABILITY_PROVIDER_SCHEMA for every provider with the method.
type schemaProvider struct{ *Provider }

// ProviderSchema implements ccmsdk.SchemaPublisher: Options.Schema, fixed.
func (s schemaProvider) ProviderSchema() *pb.GetProviderSchemaResponse { return s.opts.Schema }

// Served is what [Serve] and [Main] hand to the SDK: p itself, or with
// Options.Schema set, p publishing that schema.
func (p *Provider) Served() ccmsdk.Provider {
	if p.opts.Schema != nil {
		return schemaProvider{p}
	}
	return p
}

// Info implements ccmsdk.Provider.
func (p *Provider) Info() ccmsdk.Info {
	name := p.opts.Name
	if name == "" {
		name = p.cloud.ProviderName() + ".cloudprovider.bridge"
	}
	version := p.opts.VendorVersion
	if version == "" {
		version = "unknown"
	}
	manifest := map[string]string{"bridge": "k8s.io/cloud-provider " + UpstreamVersion}
	for k, v := range p.opts.Manifest {
		manifest[k] = v
	}
	return ccmsdk.Info{
		Name:          name,
		VendorVersion: version,
		ProviderName:  p.cloud.ProviderName(),
		HasClusterID:  p.cloud.HasClusterID(),
		Manifest:      manifest,
		// The provider's own flags and controllers, for the host to pass on.
		ProviderFlags:       providerFlagNames(p.opts.Flags),
		ProviderControllers: controllerNames(p.opts.Controllers),
		ProviderIDPrefixes:  p.providerIDPrefixes(),
		NodeSelector:        p.opts.NodeSelector,
		// Which Services' load balancers this cloud makes, by class.
		LoadBalancerClasses:     p.opts.LoadBalancerClasses,
		LoadBalancerClassesOnly: p.opts.LoadBalancerClassesOnly,
	}
}

// providerIDPrefixes are Options.ProviderIDPrefixes, else the cloud's "<ProviderName()>://".
func (p *Provider) providerIDPrefixes() []string {
	if len(p.opts.ProviderIDPrefixes) > 0 {
		return p.opts.ProviderIDPrefixes
	}
	return []string{p.cloud.ProviderName() + "://"}
}

// Configure records the host's cluster name (used when a request's
// RequestMeta.cluster_name is empty), passes the cloud config to
// Options.Configure, and the first time it succeeds calls the cloud's
// Initialize with the client builder and a stop channel closed by Close;
// a cloud that is a cloudprovider.InformerUser then gets a shared informer
// factory, started on the same stop channel. The first Configure parses
// provider_args into Options.Flags (INVALID_ARGUMENT for words they do not
// take); every Configure, after Initialize, runs exactly the listed
// Options.Controllers (starting those not running, stopping the others;
// INVALID_ARGUMENT for a name not among them), in the host's scope
// (node_selector, watch_namespace: see ControllerContext.Informers), and
// under the host's controllers_lease: unless the next Configure comes
// within it, the controllers stop. Repeating it with the same
// input changes nothing; Initialize runs once per process.
func (p *Provider) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	res := &pb.ConfigureResponse{}
	if p.opts.Configure != nil {
		w, err := p.opts.Configure(ctx, req.GetCloudConfig())
		if err != nil {
			return nil, err
		}
		res.Warnings = append(res.Warnings, w...)
	} else if len(req.GetCloudConfig()) > 0 {
		res.Warnings = append(res.Warnings, "the cloud config from --cloud-config is ignored: this provider was built before Configure (give its own config through --plugin-env, or set bridge.Options.Configure)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w, err := p.applyProviderArgs(req.GetProviderArgs())
	if err != nil {
		return nil, err
	}
	res.Warnings = append(res.Warnings, w...)
	scope, err := scopeOf(req.GetNodeSelector(), req.GetWatchNamespace())
	if err != nil {
		return nil, err
	}
	p.clusterName = req.GetClusterName()
	if p.initialized {
		w, err := p.runControllers(req.GetControllers(), scope, p.builder)
		if err != nil {
			return nil, err
		}
		res.Warnings = append(res.Warnings, w...)
		p.leaseControllers(req)
		return res, nil
	}
	builder := p.opts.ClientBuilder
	if builder == nil {
		builder = ClientBuilderFromEnv()
	}
	p.builder = builder
	p.cloud.Initialize(builder, p.stop)
	if iu, ok := p.cloud.(cloudprovider.InformerUser); ok {
		client, err := builder.Client("cloud-provider-informers")
		if err != nil {
			res.Warnings = append(res.Warnings, "the cloud wants shared informers, but no Kubernetes client could be made: "+err.Error())
		} else {
			f := informers.NewSharedInformerFactory(client, informerResync)
			iu.SetInformers(f)
			f.Start(p.stop)
		}
	}
	p.initialized = true
	w, err = p.runControllers(req.GetControllers(), scope, builder)
	if err != nil {
		return nil, err
	}
	res.Warnings = append(res.Warnings, w...)
	p.leaseControllers(req)
	return res, nil
}

// Close closes the stop channel the cloud's Initialize received. Idempotent.
func (p *Provider) Close(context.Context) error {
	p.mu.Lock()
	p.stopControllers()
	p.endLease()
	p.mu.Unlock()
	p.closeOnce.Do(func() { close(p.stop) })
	return nil
}

// cluster is the cluster name of a request: RequestMeta's, else Configure's.
func (p *Provider) cluster(meta *pb.RequestMeta) string {
	if n := meta.GetClusterName(); n != "" {
		return n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clusterName
}

// Instances implements ccmsdk.InstancesProvider (nil: neither InstancesV2
// nor Instances is supported).
func (p *Provider) Instances() any {
	switch {
	case p.v1 != nil:
		return &legacyInstances{instances: instances{p}}
	case p.v2 != nil:
		return &instances{p}
	}
	return nil
}

// Zones implements ccmsdk.ZonesProvider.
func (p *Provider) Zones() any {
	if p.zones == nil {
		return nil
	}
	return &zones{p}
}

// Clusters implements ccmsdk.ClustersProvider.
func (p *Provider) Clusters() any {
	if p.clusters == nil {
		return nil
	}
	return &clusters{p}
}

// LoadBalancers implements ccmsdk.LoadBalancersProvider.
func (p *Provider) LoadBalancers() any {
	if p.lb == nil {
		return nil
	}
	return &loadBalancers{p}
}

// Routes implements ccmsdk.RoutesProvider.
func (p *Provider) Routes() any {
	if p.routes == nil {
		return nil
	}
	return &routes{p}
}
