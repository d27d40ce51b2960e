package main

import (
	"context"
	"errors"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// instancesV2 forwards cloudprovider.InstancesV2 to InstancesService, one
// single-node RPC per call (the upstream controllers never batch).
type instancesV2 struct{ g *grpcCloud }

// InstanceExists: INSTANCE_NOT_FOUND means false, as the protocol defines.
func (i *instancesV2) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	res, err := call(ctx, i.g, func() (*pb.InstanceExistsResponse, error) {
		return i.g.instances.InstanceExists(ctx, &pb.InstanceExistsRequest{Meta: i.g.meta(), Node: bridge.NodeRef(node)})
	})
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	return res.GetExists(), err
}

func (i *instancesV2) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	res, err := call(ctx, i.g, func() (*pb.InstanceShutdownResponse, error) {
		return i.g.instances.InstanceShutdown(ctx, &pb.InstanceShutdownRequest{Meta: i.g.meta(), Node: bridge.NodeRef(node)})
	})
	return res.GetShutdown(), err
}

func (i *instancesV2) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	res, err := call(ctx, i.g, func() (*pb.InstanceMetadataResponse, error) {
		return i.g.instances.InstanceMetadata(ctx, &pb.InstanceMetadataRequest{Meta: i.g.meta(), Node: bridge.NodeRef(node)})
	})
	if err != nil {
		return nil, err
	}
	return bridge.InstanceMetadataFromProto(res.GetMetadata()), nil
}
