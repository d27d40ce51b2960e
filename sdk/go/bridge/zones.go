package bridge

import (
	"context"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"k8s.io/apimachinery/pkg/types"
)

// zones serves ZonesService through cloudprovider.Zones, one call each. Reads.
type zones struct{ p *Provider }

// GetZone is Zones.GetZone.
func (z *zones) GetZone(ctx context.Context, _ *pb.GetZoneRequest) (*pb.GetZoneResponse, error) {
	zone, err := z.p.zones.GetZone(ctx)
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.GetZoneResponse{Zone: ZoneToProto(zone)}, nil
}

// GetZoneByProviderId is Zones.GetZoneByProviderID.
func (z *zones) GetZoneByProviderId(ctx context.Context, req *pb.GetZoneByProviderIdRequest) (*pb.GetZoneByProviderIdResponse, error) {
	zone, err := z.p.zones.GetZoneByProviderID(ctx, req.GetProviderId())
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.GetZoneByProviderIdResponse{Zone: ZoneToProto(zone)}, nil
}

// GetZoneByNodeName is Zones.GetZoneByNodeName.
func (z *zones) GetZoneByNodeName(ctx context.Context, req *pb.GetZoneByNodeNameRequest) (*pb.GetZoneByNodeNameResponse, error) {
	zone, err := z.p.zones.GetZoneByNodeName(ctx, types.NodeName(req.GetNodeName()))
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.GetZoneByNodeNameResponse{Zone: ZoneToProto(zone)}, nil
}

// clusters serves ClustersService through cloudprovider.Clusters. ScrubDns
// has no upstream counterpart any more and answers UNIMPLEMENTED. Reads.
type clusters struct{ p *Provider }

// ListClusters is Clusters.ListClusters.
func (c *clusters) ListClusters(ctx context.Context, _ *pb.ListClustersRequest) (*pb.ListClustersResponse, error) {
	names, err := c.p.clusters.ListClusters(ctx)
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.ListClustersResponse{Clusters: names}, nil
}

// Master is Clusters.Master.
func (c *clusters) Master(ctx context.Context, req *pb.MasterRequest) (*pb.MasterResponse, error) {
	addr, err := c.p.clusters.Master(ctx, req.GetClusterName())
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.MasterResponse{Address: addr}, nil
}
