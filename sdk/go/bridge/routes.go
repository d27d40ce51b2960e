package bridge

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cloudprovider "k8s.io/cloud-provider"
)

// defaultRoutePage is the page size when the request leaves it to us.
const defaultRoutePage = 500

// routeTokenPrefix marks the bridge's page tokens (a position: the last
// route's key), so that anything else is recognisably invalid.
const routeTokenPrefix = "rt1."

// routes serves RoutesService through cloudprovider.Routes. Upstream's
// interface has only list, create and delete without idempotency
// guarantees; the bridge adds the protocol's by listing first, as upstream's
// route controller does before it creates or deletes anything.
type routes struct{ p *Provider }

// routeKey orders routes for paging: destination, then name.
func routeKey(r *cloudprovider.Route) string { return r.DestinationCIDR + "\x00" + r.Name }

func (r *routes) list(ctx context.Context, cluster string) ([]*cloudprovider.Route, error) {
	all, err := r.p.routes.ListRoutes(ctx, cluster)
	if err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(x *cloudprovider.Route) bool { return x == nil })
	slices.SortFunc(all, func(a, b *cloudprovider.Route) int { return cmp.Compare(routeKey(a), routeKey(b)) })
	return all, nil
}

// ListRoutes is Routes.ListRoutes for the request's cluster name, paged by
// position (routes sorted by destination and name; the token is the last
// route's key), so routes created or deleted between pages are neither
// skipped nor repeated. A token the bridge did not make answers ABORTED.
// Read-only.
func (r *routes) ListRoutes(ctx context.Context, req *pb.ListRoutesRequest) (*pb.ListRoutesResponse, error) {
	after := ""
	if t := req.GetPageToken(); t != "" {
		raw, ok := strings.CutPrefix(t, routeTokenPrefix)
		key, err := base64.RawURLEncoding.DecodeString(raw)
		if !ok || err != nil || len(key) == 0 {
			return nil, status.Error(codes.Aborted, "invalid page_token; list again from the first page")
		}
		after = string(key)
	}
	size := int(req.GetPageSize())
	if size <= 0 {
		size = defaultRoutePage
	}
	all, err := r.list(ctx, r.p.cluster(req.GetMeta()))
	if err != nil {
		return nil, ToStatus(err)
	}
	res := &pb.ListRoutesResponse{}
	var last string
	for _, rt := range all {
		if after != "" && routeKey(rt) <= after {
			continue
		}
		if len(res.Routes) == size {
			res.NextPageToken = routeTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(last))
			break
		}
		res.Routes = append(res.Routes, RouteToProto(rt))
		last = routeKey(rt)
	}
	return res, nil
}

// find is the listed route for destination, or nil.
func find(all []*cloudprovider.Route, destination string) *cloudprovider.Route {
	for _, rt := range all {
		if rt.DestinationCIDR == destination {
			return rt
		}
	}
	return nil
}

// CreateRoute lists the cluster's routes first: a route to the same
// destination and target node is the answer as it is (idempotent); one to
// the same destination with another target answers ALREADY_EXISTS.
// Otherwise it calls Routes.CreateRoute and answers the route as
// ListRoutes then shows it (with the cloud's name), or the requested route
// when the cloud does not list it yet.
func (r *routes) CreateRoute(ctx context.Context, req *pb.CreateRouteRequest) (*pb.CreateRouteResponse, error) {
	cluster := r.p.cluster(req.GetMeta())
	want := RouteFromProto(req.GetRoute())
	all, err := r.list(ctx, cluster)
	if err != nil {
		return nil, ToStatus(err)
	}
	if have := find(all, want.DestinationCIDR); have != nil {
		if have.TargetNode == want.TargetNode {
			return &pb.CreateRouteResponse{Route: RouteToProto(have)}, nil
		}
		return nil, ccmsdk.AlreadyExists(fmt.Sprintf("a route to %s already targets node %q", want.DestinationCIDR, have.TargetNode))
	}
	want.Name = ""
	if err := r.p.routes.CreateRoute(ctx, cluster, req.GetNameHint(), want); err != nil {
		return nil, ToStatus(err)
	}
	if all, err = r.list(ctx, cluster); err == nil {
		if have := find(all, want.DestinationCIDR); have != nil {
			return &pb.CreateRouteResponse{Route: RouteToProto(have)}, nil
		}
	}
	return &pb.CreateRouteResponse{Route: RouteToProto(want)}, nil
}

// DeleteRoute lists the cluster's routes first and calls Routes.DeleteRoute
// with the listed route to the request's destination (upstream wants the
// route as ListRoutes returned it); no such route is success (idempotent).
// A listed route with another name or target than the request's is not
// deleted either: the request names a route that is gone.
func (r *routes) DeleteRoute(ctx context.Context, req *pb.DeleteRouteRequest) (*pb.DeleteRouteResponse, error) {
	cluster := r.p.cluster(req.GetMeta())
	want := RouteFromProto(req.GetRoute())
	all, err := r.list(ctx, cluster)
	if err != nil {
		return nil, ToStatus(err)
	}
	have := find(all, want.DestinationCIDR)
	if have == nil || (want.Name != "" && have.Name != want.Name) || (want.TargetNode != "" && have.TargetNode != want.TargetNode) {
		return &pb.DeleteRouteResponse{}, nil
	}
	if err := r.p.routes.DeleteRoute(ctx, cluster, have); err != nil {
		return nil, ToStatus(err)
	}
	return &pb.DeleteRouteResponse{}, nil
}
