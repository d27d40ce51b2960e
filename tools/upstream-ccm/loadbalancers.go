package main

import (
	"context"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// loadBalancers forwards cloudprovider.LoadBalancer to LoadBalancersService.
// The operation id is the Service UID, as our host sends it.
type loadBalancers struct{ g *grpcCloud }

func (l *loadBalancers) meta(s *v1.Service) *pb.RequestMeta {
	m := l.g.meta()
	m.OperationId = "svc-" + string(s.UID)
	return m
}

func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, s *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	res, err := call(ctx, l.g, func() (*pb.GetLoadBalancerResponse, error) {
		return l.g.lbs.GetLoadBalancer(ctx, &pb.GetLoadBalancerRequest{Meta: l.meta(s), Service: bridge.ServiceRef(s)})
	})
	if err != nil {
		return nil, false, err
	}
	return bridge.LoadBalancerStatusFromProto(res.GetStatus()), res.GetExists(), nil
}

// GetLoadBalancerName has no error in the upstream interface: on a failed
// call it falls back to upstream's default name and logs why.
func (l *loadBalancers) GetLoadBalancerName(ctx context.Context, _ string, s *v1.Service) string {
	res, err := call(ctx, l.g, func() (*pb.GetLoadBalancerNameResponse, error) {
		return l.g.lbs.GetLoadBalancerName(ctx, &pb.GetLoadBalancerNameRequest{Meta: l.meta(s), Service: bridge.ServiceRef(s)})
	})
	if err != nil || res.GetName() == "" {
		klog.ErrorS(err, "GetLoadBalancerName failed; using the default name", "service", klog.KObj(s))
		return cloudprovider.DefaultLoadBalancerName(s)
	}
	return res.GetName()
}

func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, s *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	res, err := call(ctx, l.g, func() (*pb.EnsureLoadBalancerResponse, error) {
		return l.g.lbs.EnsureLoadBalancer(ctx, &pb.EnsureLoadBalancerRequest{Meta: l.meta(s), Service: bridge.ServiceRef(s), Nodes: bridge.NodeRefs(nodes)})
	})
	if err != nil {
		return nil, err
	}
	return bridge.LoadBalancerStatusFromProto(res.GetStatus()), nil
}

func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, s *v1.Service, nodes []*v1.Node) error {
	_, err := call(ctx, l.g, func() (*pb.UpdateLoadBalancerResponse, error) {
		return l.g.lbs.UpdateLoadBalancer(ctx, &pb.UpdateLoadBalancerRequest{Meta: l.meta(s), Service: bridge.ServiceRef(s), Nodes: bridge.NodeRefs(nodes)})
	})
	return err
}

func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, s *v1.Service) error {
	_, err := call(ctx, l.g, func() (*pb.EnsureLoadBalancerDeletedResponse, error) {
		return l.g.lbs.EnsureLoadBalancerDeleted(ctx, &pb.EnsureLoadBalancerDeletedRequest{Meta: l.meta(s), Service: bridge.ServiceRef(s)})
	})
	return err
}
