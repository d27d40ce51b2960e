// LoadBalancersService. A load balancer is keyed by (cluster, service uid);
// its ingress IP comes from 203.0.113.0/24 (TEST-NET-3: this cloud carries
// no traffic).
package main

import (
	"context"
	"fmt"
	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"net/netip"
	"strings"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

var lbPool = netip.MustParsePrefix("203.0.113.0/24")

type loadBalancersServer struct {
	cloud *cloud
}

// lbName is upstream's DefaultLoadBalancerName: "a" + uid without dashes, at most 32 chars.
func lbName(uid string) string {
	n := "a" + strings.ReplaceAll(uid, "-", "")
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

func checkService(svc *pb.ServiceRef, needPorts bool) error {
	if svc == nil || svc.Uid == "" {
		return ccmsdk.InvalidArgument("service.uid is required")
	}
	if needPorts && len(svc.Ports) == 0 {
		return ccmsdk.InvalidArgument(fmt.Sprintf("service %s/%s has no ports", svc.Namespace, svc.Name))
	}
	for _, p := range svc.Ports {
		if p.Protocol == pb.Protocol_PROTOCOL_UNSPECIFIED {
			return ccmsdk.InvalidArgument(fmt.Sprintf("port %d has no protocol", p.Port))
		}
		if p.Port < 1 || p.Port > 65535 {
			return ccmsdk.InvalidArgument(fmt.Sprintf("port %d is outside 1..65535", p.Port))
		}
	}
	return nil
}

func nodeNames(nodes []*pb.NodeRef) ([]string, error) {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.GetName() == "" {
			return nil, ccmsdk.InvalidArgument("a backend node has no name")
		}
		names = append(names, n.Name)
	}
	return names, nil
}

func lbStatus(lb *loadBalancer) *pb.LoadBalancerStatus {
	return &pb.LoadBalancerStatus{Ingress: []*pb.LoadBalancerIngress{{Ip: lb.IP.String(), IpMode: pb.IpMode_IP_MODE_VIP}}}
}

// allocIP returns a free pool address. Caller holds mu.
func (c *cloud) allocIP() (netip.Addr, error) {
	used := map[netip.Addr]bool{}
	for _, lb := range c.lbs {
		used[lb.IP] = true
	}
	for a := lbPool.Addr().Next(); lbPool.Contains(a); a = a.Next() {
		if !used[a] && a != netip.MustParseAddr("203.0.113.255") {
			return a, nil
		}
	}
	return netip.Addr{}, ccmsdk.QuotaExceeded("load balancer address pool " + lbPool.String() + " is exhausted")
}

func (s *loadBalancersServer) GetLoadBalancer(_ context.Context, req *pb.GetLoadBalancerRequest) (*pb.GetLoadBalancerResponse, error) {
	if err := checkService(req.Service, false); err != nil {
		return nil, err
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	lb, ok := s.cloud.lbs[clusterOf(req.Meta)+"/"+req.Service.Uid]
	if !ok {
		return &pb.GetLoadBalancerResponse{Exists: false}, nil
	}
	return &pb.GetLoadBalancerResponse{Exists: true, Status: lbStatus(lb)}, nil
}

func (s *loadBalancersServer) GetLoadBalancerName(_ context.Context, req *pb.GetLoadBalancerNameRequest) (*pb.GetLoadBalancerNameResponse, error) {
	if err := checkService(req.Service, false); err != nil {
		return nil, err
	}
	return &pb.GetLoadBalancerNameResponse{Name: lbName(req.Service.Uid)}, nil
}

// EnsureLoadBalancer creates or converges; a second identical call changes nothing.
func (s *loadBalancersServer) EnsureLoadBalancer(_ context.Context, req *pb.EnsureLoadBalancerRequest) (*pb.EnsureLoadBalancerResponse, error) {
	if err := checkService(req.Service, true); err != nil {
		return nil, err
	}
	nodes, err := nodeNames(req.Nodes)
	if err != nil {
		return nil, err
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	key := clusterOf(req.Meta) + "/" + req.Service.Uid
	lb, ok := s.cloud.lbs[key]
	if !ok {
		ip, err := s.cloud.allocIP()
		if err != nil {
			return nil, err
		}
		lb = &loadBalancer{Name: lbName(req.Service.Uid), UID: req.Service.Uid, Namespace: req.Service.Namespace, Service: req.Service.Name, Cluster: clusterOf(req.Meta), IP: ip}
		s.cloud.lbs[key] = lb
	}
	lb.Ports, lb.Nodes = req.Service.Ports, nodes
	// Tag with the cluster UID (re-tagging one made before, or by a cluster restored from backup: adoption).
	if uid := req.GetMeta().GetClusterUid(); uid != "" {
		lb.ClusterUID = uid
	}
	return &pb.EnsureLoadBalancerResponse{Status: lbStatus(lb)}, nil
}

func (c *cloud) updateHosts(cluster string, svc *pb.ServiceRef, nodes []string) error {
	if err := checkService(svc, false); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	lb, ok := c.lbs[cluster+"/"+svc.Uid]
	if !ok {
		return ccmsdk.NotFound(fmt.Sprintf("load balancer %s for service %s/%s does not exist", lbName(svc.Uid), svc.Namespace, svc.Name))
	}
	lb.Nodes = nodes
	return nil
}

func (s *loadBalancersServer) UpdateLoadBalancer(_ context.Context, req *pb.UpdateLoadBalancerRequest) (*pb.UpdateLoadBalancerResponse, error) {
	nodes, err := nodeNames(req.Nodes)
	if err != nil {
		return nil, err
	}
	if err := s.cloud.updateHosts(clusterOf(req.Meta), req.Service, nodes); err != nil {
		return nil, err
	}
	return &pb.UpdateLoadBalancerResponse{}, nil
}

// UpdateLoadBalancerHosts: one result per service, in input order.
func (s *loadBalancersServer) UpdateLoadBalancerHosts(_ context.Context, req *pb.UpdateLoadBalancerHostsRequest) (*pb.UpdateLoadBalancerHostsResponse, error) {
	nodes, err := nodeNames(req.Nodes)
	if err != nil {
		return nil, err
	}
	out := &pb.UpdateLoadBalancerHostsResponse{}
	for _, svc := range req.Services {
		r := &pb.UpdateLoadBalancerHostsResult{ServiceUid: svc.GetUid()}
		if err := s.cloud.updateHosts(clusterOf(req.Meta), svc, nodes); err != nil {
			r.Error = ccmsdk.StatusProto(err)
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}

func (s *loadBalancersServer) EnsureLoadBalancerDeleted(_ context.Context, req *pb.EnsureLoadBalancerDeletedRequest) (*pb.EnsureLoadBalancerDeletedResponse, error) {
	if err := checkService(req.Service, false); err != nil {
		return nil, err
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	delete(s.cloud.lbs, clusterOf(req.Meta)+"/"+req.Service.Uid)
	return &pb.EnsureLoadBalancerDeletedResponse{}, nil
}

// ListLoadBalancers: this cluster's load balancers with the Service each was made for, paged by name.
func (s *loadBalancersServer) ListLoadBalancers(_ context.Context, req *pb.ListLoadBalancersRequest) (*pb.ListLoadBalancersResponse, error) {
	cluster := clusterOf(req.Meta)
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	byName := map[string]*loadBalancer{}
	keys := []string{}
	for _, lb := range s.cloud.lbs {
		if lb.Cluster == cluster {
			byName[lb.Name] = lb
			keys = append(keys, lb.Name)
		}
	}
	page, next, err := paginate(keys, req.PageSize, req.PageToken, "loadBalancers", cluster)
	if err != nil {
		return nil, err
	}
	out := &pb.ListLoadBalancersResponse{NextPageToken: next}
	for _, k := range page {
		lb := byName[k]
		out.LoadBalancers = append(out.LoadBalancers, &pb.LoadBalancerSummary{Name: lb.Name, ClusterName: lb.Cluster, ClusterUid: lb.ClusterUID, ServiceUid: lb.UID, ServiceNamespace: lb.Namespace, ServiceName: lb.Service})
	}
	return out, nil
}
