package bridge

import (
	"context"
	"fmt"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// loadBalancers serves LoadBalancersService through cloudprovider.LoadBalancer,
// with the rebuilt Service and Nodes and the request's cluster name.
type loadBalancers struct{ p *Provider }

// GetLoadBalancer is LoadBalancer.GetLoadBalancer; the status is sent only
// when the load balancer exists. Read-only.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, req *pb.GetLoadBalancerRequest) (*pb.GetLoadBalancerResponse, error) {
	st, exists, err := l.p.lb.GetLoadBalancer(ctx, l.p.cluster(req.GetMeta()), ServiceFromRef(req.GetService()))
	if err != nil {
		return nil, ToStatus(err)
	}
	if !exists {
		return &pb.GetLoadBalancerResponse{}, nil
	}
	return &pb.GetLoadBalancerResponse{Exists: true, Status: LoadBalancerStatusToProto(st)}, nil
}

// GetLoadBalancerName is LoadBalancer.GetLoadBalancerName, or upstream's
// cloudprovider.DefaultLoadBalancerName when the cloud answers "". Read-only.
func (l *loadBalancers) GetLoadBalancerName(ctx context.Context, req *pb.GetLoadBalancerNameRequest) (*pb.GetLoadBalancerNameResponse, error) {
	svc := ServiceFromRef(req.GetService())
	name := l.p.lb.GetLoadBalancerName(ctx, l.p.cluster(req.GetMeta()), svc)
	if name == "" {
		name = cloudprovider.DefaultLoadBalancerName(svc)
	}
	return &pb.GetLoadBalancerNameResponse{Name: name}, nil
}

// EnsureLoadBalancer is LoadBalancer.EnsureLoadBalancer: as idempotent as
// the cloud's implementation (upstream requires it to be). A nil status
// with no error answers an empty status.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, req *pb.EnsureLoadBalancerRequest) (*pb.EnsureLoadBalancerResponse, error) {
	st, err := l.p.lb.EnsureLoadBalancer(ctx, l.p.cluster(req.GetMeta()), ServiceFromRef(req.GetService()), NodesFromRefs(req.GetNodes()))
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.EnsureLoadBalancerResponse{Status: LoadBalancerStatusToProto(st)}, nil
}

// UpdateLoadBalancer is LoadBalancer.UpdateLoadBalancer. When it fails
// (other than ImplementedElsewhere), it asks GetLoadBalancer, as upstream's
// service controller does, and a load balancer that does not exist answers
// NOT_FOUND (the protocol's "ensure it instead"); otherwise the update's
// error is the answer.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, req *pb.UpdateLoadBalancerRequest) (*pb.UpdateLoadBalancerResponse, error) {
	cluster, svc := l.p.cluster(req.GetMeta()), ServiceFromRef(req.GetService())
	err := l.p.lb.UpdateLoadBalancer(ctx, cluster, svc, NodesFromRefs(req.GetNodes()))
	if err == nil {
		return &pb.UpdateLoadBalancerResponse{}, nil
	}
	if err != cloudprovider.ImplementedElsewhere {
		if _, exists, gerr := l.p.lb.GetLoadBalancer(ctx, cluster, svc); gerr == nil && !exists {
			return nil, ccmsdk.NotFound(fmt.Sprintf("load balancer of service %s/%s does not exist: %v", svc.Namespace, svc.Name, err))
		}
	}
	return nil, ToStatus(err)
}

// EnsureLoadBalancerDeleted is LoadBalancer.EnsureLoadBalancerDeleted
// (upstream requires success for an absent load balancer); ImplementedElsewhere
// answers IMPLEMENTED_ELSEWHERE, which the host counts as deleted.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, req *pb.EnsureLoadBalancerDeletedRequest) (*pb.EnsureLoadBalancerDeletedResponse, error) {
	if err := l.p.lb.EnsureLoadBalancerDeleted(ctx, l.p.cluster(req.GetMeta()), ServiceFromRef(req.GetService())); err != nil {
		return nil, ToStatus(err)
	}
	return &pb.EnsureLoadBalancerDeletedResponse{}, nil
}
