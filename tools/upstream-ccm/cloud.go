package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

const (
	// providerName is the --cloud-provider value this binary registers.
	providerName = "grpc"
	// endpointEnv names the provider's socket, as for the provider itself in sidecar mode.
	endpointEnv = "CCM_PROVIDER_ENDPOINT"
	// maxCloudConfigBytes bounds the --cloud-config file read into memory.
	maxCloudConfigBytes = 1 << 20
	// hostVersion is what Configure reports as the caller.
	hostVersion = "upstream-ccm (k8s.io/cloud-provider v0.34.4)"
)

// grpcCloud is a cloudprovider.Interface whose every call is one RPC to the
// provider. It adds nothing of its own (no batching, no caching), so the
// upstream controllers' call pattern reaches the provider as it is.
type grpcCloud struct {
	endpoint    string
	cloudConfig []byte
	conn        *grpc.ClientConn
	identity    pb.IdentityServiceClient
	lifecycle   pb.LifecycleServiceClient
	instances   pb.InstancesServiceClient
	lbs         pb.LoadBalancersServiceClient
	routes      pb.RoutesServiceClient

	caps        *pb.GetPluginCapabilitiesResponse
	clusterName string
}

var _ cloudprovider.Interface = (*grpcCloud)(nil)

// newGRPCCloud is the cloudprovider.Factory: it dials the endpoint (lazily;
// gRPC connects on first use) and keeps the --cloud-config bytes for Configure.
func newGRPCCloud(cfg io.Reader) (cloudprovider.Interface, error) {
	endpoint := os.Getenv(endpointEnv)
	if !strings.HasPrefix(endpoint, "unix:///") {
		return nil, fmt.Errorf("%s=%q is not a unix:///absolute/path endpoint; set it to the provider's socket", endpointEnv, endpoint)
	}
	var raw []byte
	if cfg != nil {
		b, err := io.ReadAll(io.LimitReader(cfg, maxCloudConfigBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading --cloud-config: %w", err)
		}
		if len(b) > maxCloudConfigBytes {
			return nil, fmt.Errorf("--cloud-config is larger than %d bytes", maxCloudConfigBytes)
		}
		raw = b
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", endpoint, err)
	}
	return &grpcCloud{
		endpoint:    endpoint,
		cloudConfig: raw,
		conn:        conn,
		identity:    pb.NewIdentityServiceClient(conn),
		lifecycle:   pb.NewLifecycleServiceClient(conn),
		instances:   pb.NewInstancesServiceClient(conn),
		lbs:         pb.NewLoadBalancersServiceClient(conn),
		routes:      pb.NewRoutesServiceClient(conn),
	}, nil
}

// configure runs the protocol's start-up sequence: GetPluginInfo,
// GetPluginCapabilities, Configure. It waits for the socket (WaitForReady)
// until ctx ends.
func (g *grpcCloud) configure(ctx context.Context, clusterName string) error {
	g.clusterName = clusterName
	caps, err := g.identity.GetPluginCapabilities(ctx, &pb.GetPluginCapabilitiesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	g.caps = caps
	return g.reconfigure(ctx)
}

// reconfigure configures the provider process now behind the socket. Unlike
// our host it does not watch the provider's instance id: a restarted provider
// answers NOT_CONFIGURED, and call() configures it then.
func (g *grpcCloud) reconfigure(ctx context.Context) error {
	info, err := g.identity.GetPluginInfo(ctx, &pb.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("GetPluginInfo: %w", err)
	}
	res, err := g.lifecycle.Configure(ctx, &pb.ConfigureRequest{CloudConfig: g.cloudConfig, ClusterName: g.clusterName, HostVersion: hostVersion})
	if err != nil {
		return fmt.Errorf("Configure: %w", err)
	}
	for _, w := range res.GetWarnings() {
		klog.InfoS("Provider configuration warning", "warning", w)
	}
	klog.InfoS("Provider configured", "name", info.GetName(), "version", info.GetVendorVersion(), "instanceID", info.GetInstanceId())
	return nil
}

func (g *grpcCloud) has(s pb.Service) bool {
	for _, x := range g.caps.GetServices() {
		if x == s {
			return true
		}
	}
	return false
}

func (g *grpcCloud) meta() *pb.RequestMeta {
	return &pb.RequestMeta{ClusterName: g.clusterName, Attempt: 1}
}

// Initialize is a no-op: the forwarder needs no Kubernetes client of its own.
func (g *grpcCloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

func (g *grpcCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	return &loadBalancers{g}, g.has(pb.Service_SERVICE_LOAD_BALANCERS)
}

// Instances is the legacy interface; InstancesV2 replaces it.
func (g *grpcCloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

func (g *grpcCloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	return &instancesV2{g}, g.has(pb.Service_SERVICE_INSTANCES)
}

// Zones is not offered: with InstancesV2 the upstream controllers read zones from InstanceMetadata.
func (g *grpcCloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

func (g *grpcCloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

func (g *grpcCloud) Routes() (cloudprovider.Routes, bool) {
	return &routes{g}, g.has(pb.Service_SERVICE_ROUTES)
}

// ProviderName is the provider's own name, so providerIDs look the same as under our host.
func (g *grpcCloud) ProviderName() string {
	if n := g.caps.GetProviderName(); n != "" {
		return n
	}
	return providerName
}

func (g *grpcCloud) HasClusterID() bool { return g.caps.GetHasClusterId() }
