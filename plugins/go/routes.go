// RoutesService, scoped by RequestMeta.cluster_name. A route whose target
// node has no instance is reported as a blackhole.
package main

import (
	"context"
	"fmt"
	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"net/netip"
	"strings"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type routesServer struct {
	cloud *cloud
}

func parseRoute(r *pb.Route) (netip.Prefix, error) {
	if r == nil || r.TargetNode == "" {
		return netip.Prefix{}, ccmsdk.InvalidArgument("route.target_node is required")
	}
	p, err := netip.ParsePrefix(r.DestinationCidr)
	if err != nil {
		return netip.Prefix{}, ccmsdk.InvalidArgument(fmt.Sprintf("destination_cidr %q is not a CIDR", r.DestinationCidr))
	}
	return p.Masked(), nil
}

// toProto renders a stored route. Caller holds mu.
func (c *cloud) toProto(r *route) *pb.Route {
	_, alive := c.instances[r.Target]
	return &pb.Route{Name: r.Name, TargetNode: r.Target, TargetNodeAddresses: r.Addrs, DestinationCidr: r.Dest.String(), Blackhole: !alive}
}

// createRoute is idempotent; another target for the same destination is ALREADY_EXISTS. Caller holds mu.
func (c *cloud) createRoute(cluster, hint string, in *pb.Route) (*route, bool, error) {
	dest, err := parseRoute(in)
	if err != nil {
		return nil, false, err
	}
	key := cluster + "/" + dest.String()
	if r, ok := c.routes[key]; ok {
		if r.Target == in.TargetNode {
			return r, false, nil
		}
		return nil, false, status.Error(codes.AlreadyExists, fmt.Sprintf("route %s already sends %s to node %s", r.Name, dest, r.Target))
	}
	name := hint
	if name == "" {
		name = in.TargetNode + "-" + strings.NewReplacer(".", "-", ":", "-", "/", "-").Replace(dest.String())
	}
	r := &route{Cluster: cluster, Name: name, Target: in.TargetNode, Addrs: in.TargetNodeAddresses, Dest: dest}
	c.routes[key] = r
	return r, true, nil
}

func (s *routesServer) ListRoutes(_ context.Context, req *pb.ListRoutesRequest) (*pb.ListRoutesResponse, error) {
	cluster := clusterOf(req.Meta)
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	keys := []string{}
	for k, r := range s.cloud.routes {
		if r.Cluster == cluster {
			keys = append(keys, k)
		}
	}
	page, next, err := paginate(keys, req.PageSize, req.PageToken, "routes", cluster)
	if err != nil {
		return nil, err
	}
	out := &pb.ListRoutesResponse{NextPageToken: next}
	for _, k := range page {
		out.Routes = append(out.Routes, s.cloud.toProto(s.cloud.routes[k]))
	}
	return out, nil
}

func (s *routesServer) CreateRoute(_ context.Context, req *pb.CreateRouteRequest) (*pb.CreateRouteResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	r, _, err := s.cloud.createRoute(clusterOf(req.Meta), req.NameHint, req.Route)
	if err != nil {
		return nil, err
	}
	return &pb.CreateRouteResponse{Route: s.cloud.toProto(r)}, nil
}

// DeleteRoute: absent is success.
func (s *routesServer) DeleteRoute(_ context.Context, req *pb.DeleteRouteRequest) (*pb.DeleteRouteResponse, error) {
	if req.Route == nil {
		return nil, ccmsdk.InvalidArgument("route is required")
	}
	dest, err := netip.ParsePrefix(req.Route.DestinationCidr)
	if err != nil {
		return nil, ccmsdk.InvalidArgument(fmt.Sprintf("destination_cidr %q is not a CIDR", req.Route.DestinationCidr))
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	key := clusterOf(req.Meta) + "/" + dest.Masked().String()
	if r, ok := s.cloud.routes[key]; ok && (req.Route.TargetNode == "" || r.Target == req.Route.TargetNode) {
		delete(s.cloud.routes, key)
	}
	return &pb.DeleteRouteResponse{}, nil
}

// ReconcileRoutes converges the routes inside cluster_cidrs on `desired`.
func (s *routesServer) ReconcileRoutes(_ context.Context, req *pb.ReconcileRoutesRequest) (*pb.ReconcileRoutesResponse, error) {
	if len(req.ClusterCidrs) == 0 {
		return nil, ccmsdk.InvalidArgument("cluster_cidrs must not be empty")
	}
	cidrs := []netip.Prefix{}
	for _, t := range req.ClusterCidrs {
		p, err := netip.ParsePrefix(t)
		if err != nil {
			return nil, ccmsdk.InvalidArgument(fmt.Sprintf("cluster CIDR %q is not a CIDR", t))
		}
		cidrs = append(cidrs, p.Masked())
	}
	managed := func(p netip.Prefix) bool {
		for _, c := range cidrs {
			if c.Bits() <= p.Bits() && c.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}
	cluster := clusterOf(req.Meta)
	out := &pb.ReconcileRoutesResponse{}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	want := map[string]string{} // destination → target
	valid := []*pb.Route{}
	for _, d := range req.Desired {
		dest, err := parseRoute(d)
		if err == nil && !managed(dest) {
			err = ccmsdk.InvalidArgument(fmt.Sprintf("route %s is outside the cluster CIDRs", dest))
		}
		if err != nil {
			out.Failed = append(out.Failed, &pb.RouteFailure{Route: d, Error: ccmsdk.StatusProto(err)})
			continue
		}
		want[dest.String()] = d.TargetNode
		valid = append(valid, d)
	}
	for key, r := range s.cloud.routes {
		if r.Cluster != cluster || !managed(r.Dest) {
			continue
		}
		if target, ok := want[r.Dest.String()]; !ok || target != r.Target {
			out.Deleted = append(out.Deleted, s.cloud.toProto(r))
			delete(s.cloud.routes, key)
		}
	}
	for _, d := range valid {
		r, created, err := s.cloud.createRoute(cluster, "", d)
		if err != nil {
			out.Failed = append(out.Failed, &pb.RouteFailure{Route: d, Error: ccmsdk.StatusProto(err)})
		} else if created {
			out.Created = append(out.Created, s.cloud.toProto(r))
		}
	}
	return out, nil
}
