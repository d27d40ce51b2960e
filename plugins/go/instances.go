// InstancesService (InstancesV2 plus the batch RPCs). Legacy RPCs are not
// implemented (UNIMPLEMENTED), so CAPABILITY_INSTANCES_LEGACY is not declared.
package main

import (
	"context"
	"fmt"
	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"maps"
	"strings"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

const maxBatch = 500

type instancesServer struct {
	cloud *cloud
}

func describe(node *pb.NodeRef) string {
	if node.GetProviderId() != "" {
		return "with providerID " + node.ProviderId
	}
	return "named " + node.GetName()
}

// foreign answers INVALID_ARGUMENT for another provider's providerID: "not
// found" would tell the host the instance is gone (docs/protocol.md).
func foreign(providerID string) error {
	if providerID != "" && !strings.HasPrefix(providerID, providerName+"://") {
		return ccmsdk.InvalidArgument(fmt.Sprintf("providerID %q is not a %s:// providerID", providerID, providerName))
	}
	return nil
}

func (c *cloud) metadata(node *pb.NodeRef) (*pb.InstanceMetadata, error) {
	if node == nil {
		return nil, ccmsdk.InvalidArgument("node is required")
	}
	if err := foreign(node.ProviderId); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	inst := c.findInstance(node)
	if inst == nil {
		return nil, instanceNotFound(describe(node))
	}
	return &pb.InstanceMetadata{
		ProviderId: inst.providerID(), InstanceType: inst.Type, NodeAddresses: inst.Addresses,
		Zone: inst.Zone, Region: inst.Region, AdditionalLabels: maps.Clone(inst.Labels),
	}, nil
}

func (c *cloud) status(node *pb.NodeRef) (exists, shutdown bool, err error) {
	if node == nil {
		return false, false, ccmsdk.InvalidArgument("node is required")
	}
	if err := foreign(node.ProviderId); err != nil {
		return false, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	inst := c.findInstance(node)
	if inst == nil {
		return false, false, nil
	}
	return true, inst.Shutdown, nil
}

func (s *instancesServer) InstanceExists(_ context.Context, req *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error) {
	exists, _, err := s.cloud.status(req.Node)
	if err != nil {
		return nil, err
	}
	return &pb.InstanceExistsResponse{Exists: exists}, nil
}

func (s *instancesServer) InstanceShutdown(_ context.Context, req *pb.InstanceShutdownRequest) (*pb.InstanceShutdownResponse, error) {
	exists, shutdown, err := s.cloud.status(req.Node)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, instanceNotFound(describe(req.Node))
	}
	return &pb.InstanceShutdownResponse{Shutdown: shutdown}, nil
}

func (s *instancesServer) InstanceMetadata(_ context.Context, req *pb.InstanceMetadataRequest) (*pb.InstanceMetadataResponse, error) {
	md, err := s.cloud.metadata(req.Node)
	if err != nil {
		return nil, err
	}
	return &pb.InstanceMetadataResponse{Metadata: md}, nil
}

func checkBatch(n int) error {
	if n < 1 || n > maxBatch {
		return ccmsdk.InvalidArgument(fmt.Sprintf("a batch has 1..%d nodes, got %d", maxBatch, n))
	}
	return nil
}

// GetInstancesStatus: one result per input node, in input order.
func (s *instancesServer) GetInstancesStatus(_ context.Context, req *pb.GetInstancesStatusRequest) (*pb.GetInstancesStatusResponse, error) {
	if err := checkBatch(len(req.Nodes)); err != nil {
		return nil, err
	}
	out := &pb.GetInstancesStatusResponse{}
	for _, node := range req.Nodes {
		r := &pb.InstanceStatusResult{NodeName: node.GetName()}
		exists, shutdown, err := s.cloud.status(node)
		if err != nil {
			r.Error = ccmsdk.StatusProto(err)
		} else {
			r.Exists, r.Shutdown = exists, shutdown
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}

// GetInstancesMetadata: one result per input node, in input order.
func (s *instancesServer) GetInstancesMetadata(_ context.Context, req *pb.GetInstancesMetadataRequest) (*pb.GetInstancesMetadataResponse, error) {
	if err := checkBatch(len(req.Nodes)); err != nil {
		return nil, err
	}
	out := &pb.GetInstancesMetadataResponse{}
	for _, node := range req.Nodes {
		r := &pb.InstanceMetadataResult{NodeName: node.GetName()}
		if md, err := s.cloud.metadata(node); err != nil {
			r.Error = ccmsdk.StatusProto(err)
		} else {
			r.Metadata = md
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}
