package main

import (
	"context"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// routes forwards cloudprovider.Routes to RoutesService, one route per call
// (ReconcileRoutes is our host's batch form; upstream never uses it).
type routes struct{ g *grpcCloud }

// routePageSize is the page size asked of ListRoutes.
const routePageSize = 500

func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	var out []*cloudprovider.Route
	token := ""
	for {
		res, err := call(ctx, r.g, func() (*pb.ListRoutesResponse, error) {
			return r.g.routes.ListRoutes(ctx, &pb.ListRoutesRequest{Meta: r.g.meta(), PageSize: routePageSize, PageToken: token})
		})
		if err != nil {
			return nil, err
		}
		for _, rt := range res.GetRoutes() {
			out = append(out, &cloudprovider.Route{
				Name:                rt.GetName(),
				TargetNode:          types.NodeName(rt.GetTargetNode()),
				TargetNodeAddresses: bridge.AddressesFromProto(rt.GetTargetNodeAddresses()),
				DestinationCIDR:     rt.GetDestinationCidr(),
				Blackhole:           rt.GetBlackhole(),
			})
		}
		if token = res.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}

func (r *routes) CreateRoute(ctx context.Context, _ string, nameHint string, rt *cloudprovider.Route) error {
	_, err := call(ctx, r.g, func() (*pb.CreateRouteResponse, error) {
		return r.g.routes.CreateRoute(ctx, &pb.CreateRouteRequest{Meta: r.g.meta(), NameHint: nameHint, Route: bridge.RouteToProto(rt)})
	})
	return err
}

func (r *routes) DeleteRoute(ctx context.Context, _ string, rt *cloudprovider.Route) error {
	_, err := call(ctx, r.g, func() (*pb.DeleteRouteResponse, error) {
		return r.g.routes.DeleteRoute(ctx, &pb.DeleteRouteRequest{Meta: r.g.meta(), Route: bridge.RouteToProto(rt)})
	})
	return err
}
