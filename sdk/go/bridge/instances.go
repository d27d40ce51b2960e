package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// instances serves InstanceExists, InstanceShutdown and InstanceMetadata:
// through InstancesV2 when the cloud has it, else through Instances (and
// Zones) in the order upstream's controllers use them. All three are reads.
type instances struct{ p *Provider }

// InstanceExists answers InstancesV2.InstanceExists for the rebuilt Node.
// Without InstancesV2 it does what upstream's node lifecycle controller
// does: the providerID is the Node's, else "<ProviderName()>://" +
// InstanceID(name) (InstanceNotFound there: false); then
// InstanceExistsByProviderID.
func (i *instances) InstanceExists(ctx context.Context, req *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error) {
	node, err := i.ownNode(req.GetNode())
	if err != nil {
		return nil, err
	}
	if i.p.v2 != nil {
		ok, err := i.p.v2.InstanceExists(ctx, node)
		if err != nil {
			return nil, ToStatus(err)
		}
		return &pb.InstanceExistsResponse{Exists: ok}, nil
	}
	exists, err := i.existsV1(ctx, node)
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.InstanceExistsResponse{Exists: exists}, nil
}

// ownNode rebuilds the request's Node, refusing one whose providerID has
// another provider's prefix with INVALID_ARGUMENT: it is not this cloud's to
// judge, and an answer of "gone" (exists=false, NOT_FOUND), which many
// providers give for an id they cannot parse, would get the Node deleted.
func (i *instances) ownNode(ref *pb.NodeRef) (*v1.Node, error) {
	node := NodeFromRef(ref)
	if pid := node.Spec.ProviderID; pid != "" {
		want := i.p.providerIDPrefixes()
		if !slices.ContainsFunc(want, func(prefix string) bool { return strings.HasPrefix(pid, prefix) }) {
			return nil, ccmsdk.InvalidArgument(fmt.Sprintf("providerID %q of node %q is not this provider's (want a prefix among %q)", pid, node.Name, want))
		}
	}
	return node, nil
}

// existsV1 is upstream's ensureNodeExistsByProviderID over Instances.
func (i *instances) existsV1(ctx context.Context, node *v1.Node) (bool, error) {
	pid, err := i.providerIDV1(ctx, node)
	if err == cloudprovider.InstanceNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return i.p.v1.InstanceExistsByProviderID(ctx, pid)
}

// providerIDV1 is the Node's providerID, else upstream's
// cloudprovider.GetInstanceProviderID (InstanceID by name).
func (i *instances) providerIDV1(ctx context.Context, node *v1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return node.Spec.ProviderID, nil
	}
	return cloudprovider.GetInstanceProviderID(ctx, i.p.cloud, types.NodeName(node.Name))
}

// mustExistV1 answers InstanceNotFound for an instance that
// InstanceExistsByProviderID says is gone. The protocol promises
// INSTANCE_NOT_FOUND from InstanceShutdown and InstanceMetadata for an
// absent instance, and what Instances' other methods answer for one is up
// to each provider, so the fallback asks once more than upstream's
// controllers would. NotImplemented there skips the check.
func (i *instances) mustExistV1(ctx context.Context, pid string) error {
	ok, err := i.p.v1.InstanceExistsByProviderID(ctx, pid)
	switch {
	case errors.Is(err, cloudprovider.NotImplemented):
		return nil
	case err != nil:
		return err
	case !ok:
		return cloudprovider.InstanceNotFound
	}
	return nil
}

// InstanceShutdown answers InstancesV2.InstanceShutdown for the rebuilt
// Node. Without InstancesV2 it does what upstream's node lifecycle
// controller does (the providerID as for InstanceExists, then
// InstanceShutdownByProviderID, NotImplemented meaning false), except that
// an absent instance answers INSTANCE_NOT_FOUND as the protocol requires.
func (i *instances) InstanceShutdown(ctx context.Context, req *pb.InstanceShutdownRequest) (*pb.InstanceShutdownResponse, error) {
	node, err := i.ownNode(req.GetNode())
	if err != nil {
		return nil, err
	}
	if i.p.v2 != nil {
		off, err := i.p.v2.InstanceShutdown(ctx, node)
		if err != nil {
			return nil, ToStatus(err)
		}
		return &pb.InstanceShutdownResponse{Shutdown: off}, nil
	}
	pid, err := i.providerIDV1(ctx, node)
	if err != nil {
		return nil, ToStatus(err)
	}
	if err := i.mustExistV1(ctx, pid); err != nil {
		return nil, ToStatus(err)
	}
	off, err := i.p.v1.InstanceShutdownByProviderID(ctx, pid)
	if errors.Is(err, cloudprovider.NotImplemented) {
		return &pb.InstanceShutdownResponse{}, nil
	}
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.InstanceShutdownResponse{Shutdown: off}, nil
}

// InstanceMetadata answers InstancesV2.InstanceMetadata for the rebuilt
// Node, with the Node's providerID when the answer has none (as upstream's
// node controller fills it in). Nil metadata, which upstream's controller
// skips, answers NOT_FOUND/INSTANCE_NOT_FOUND so that the host keeps the
// Node tainted and asks again. Without InstancesV2 it is upstream's node
// controller's getInstanceMetadata: the providerID as for InstanceExists
// (NotImplemented there: look up by name only), addresses by providerID
// then by name, the instance type likewise, and the zone and region from
// Zones by providerID then by name when Zones is supported; plus the
// existence check of mustExistV1.
func (i *instances) InstanceMetadata(ctx context.Context, req *pb.InstanceMetadataRequest) (*pb.InstanceMetadataResponse, error) {
	node, err := i.ownNode(req.GetNode())
	if err != nil {
		return nil, err
	}
	var md *cloudprovider.InstanceMetadata
	if i.p.v2 != nil {
		md, err = i.p.v2.InstanceMetadata(ctx, node)
		if err == nil && md != nil && md.ProviderID == "" {
			md.ProviderID = node.Spec.ProviderID
		}
	} else {
		md, err = i.metadataV1(ctx, node)
	}
	if err != nil {
		return nil, ToStatus(err)
	}
	if md == nil {
		return nil, ccmsdk.InstanceNotFound(fmt.Sprintf("the cloud provider has no metadata for node %q", node.Name))
	}
	return &pb.InstanceMetadataResponse{Metadata: InstanceMetadataToProto(md)}, nil
}

func (i *instances) metadataV1(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	v1i := i.p.v1
	pid, err := i.providerIDV1(ctx, node)
	if errors.Is(err, cloudprovider.NotImplemented) {
		pid, err = "", nil
	}
	if err != nil {
		return nil, err
	}
	if pid != "" {
		if err := i.mustExistV1(ctx, pid); err != nil {
			return nil, err
		}
	}
	addrs, err := byIDOrName(ctx, pid, node.Name, v1i.NodeAddressesByProviderID, v1i.NodeAddresses)
	if err != nil {
		return nil, err
	}
	itype, err := byIDOrName(ctx, pid, node.Name, v1i.InstanceTypeByProviderID, v1i.InstanceType)
	if err != nil {
		return nil, err
	}
	md := &cloudprovider.InstanceMetadata{ProviderID: pid, InstanceType: itype, NodeAddresses: addrs}
	if i.p.zones != nil {
		z, err := byIDOrName(ctx, pid, node.Name, i.p.zones.GetZoneByProviderID, i.p.zones.GetZoneByNodeName)
		if err != nil {
			return nil, err
		}
		md.Zone, md.Region = z.FailureDomain, z.Region
	}
	return md, nil
}

// byIDOrName asks by providerID and, when that fails, by node name, as
// upstream's get…ByProviderIDOrName helpers do. The by-name error is
// returned as it is when it is a sentinel (so InstanceNotFound stays
// INSTANCE_NOT_FOUND), else with both errors in the message.
func byIDOrName[T any](ctx context.Context, pid, name string, byID func(context.Context, string) (T, error), byName func(context.Context, types.NodeName) (T, error)) (T, error) {
	v, idErr := byID(ctx, pid)
	if idErr == nil {
		return v, nil
	}
	v, err := byName(ctx, types.NodeName(name))
	switch {
	case err == nil:
		return v, nil
	case err == cloudprovider.InstanceNotFound, err == cloudprovider.NotImplemented:
		return v, err
	}
	var zero T
	return zero, fmt.Errorf("by providerID: %v; by node name: %w", idErr, err)
}

// legacyInstances adds the Instances (v1) RPCs, served when the cloud
// supports Instances (CAPABILITY_INSTANCES_LEGACY). Each is one call of the
// same-named method; AddSshKeyToAllInstances is the only write.
type legacyInstances struct{ instances }

// NodeAddresses is Instances.NodeAddresses.
func (l *legacyInstances) NodeAddresses(ctx context.Context, req *pb.NodeAddressesRequest) (*pb.NodeAddressesResponse, error) {
	a, err := l.p.v1.NodeAddresses(ctx, types.NodeName(req.GetNodeName()))
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.NodeAddressesResponse{Addresses: AddressesToProto(a)}, nil
}

// NodeAddressesByProviderId is Instances.NodeAddressesByProviderID.
func (l *legacyInstances) NodeAddressesByProviderId(ctx context.Context, req *pb.NodeAddressesByProviderIdRequest) (*pb.NodeAddressesByProviderIdResponse, error) {
	a, err := l.p.v1.NodeAddressesByProviderID(ctx, req.GetProviderId())
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.NodeAddressesByProviderIdResponse{Addresses: AddressesToProto(a)}, nil
}

// InstanceId is Instances.InstanceID (the id without "<provider>://").
func (l *legacyInstances) InstanceId(ctx context.Context, req *pb.InstanceIdRequest) (*pb.InstanceIdResponse, error) {
	id, err := l.p.v1.InstanceID(ctx, types.NodeName(req.GetNodeName()))
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.InstanceIdResponse{InstanceId: id}, nil
}

// InstanceType is Instances.InstanceType.
func (l *legacyInstances) InstanceType(ctx context.Context, req *pb.InstanceTypeRequest) (*pb.InstanceTypeResponse, error) {
	t, err := l.p.v1.InstanceType(ctx, types.NodeName(req.GetNodeName()))
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.InstanceTypeResponse{InstanceType: t}, nil
}

// InstanceTypeByProviderId is Instances.InstanceTypeByProviderID.
func (l *legacyInstances) InstanceTypeByProviderId(ctx context.Context, req *pb.InstanceTypeByProviderIdRequest) (*pb.InstanceTypeByProviderIdResponse, error) {
	t, err := l.p.v1.InstanceTypeByProviderID(ctx, req.GetProviderId())
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.InstanceTypeByProviderIdResponse{InstanceType: t}, nil
}

// AddSshKeyToAllInstances is Instances.AddSSHKeyToAllInstances.
func (l *legacyInstances) AddSshKeyToAllInstances(ctx context.Context, req *pb.AddSshKeyToAllInstancesRequest) (*pb.AddSshKeyToAllInstancesResponse, error) {
	if err := l.p.v1.AddSSHKeyToAllInstances(ctx, req.GetUser(), req.GetKeyData()); err != nil {
		return nil, ToStatus(err)
	}
	return &pb.AddSshKeyToAllInstancesResponse{}, nil
}

// CurrentNodeName is Instances.CurrentNodeName.
func (l *legacyInstances) CurrentNodeName(ctx context.Context, req *pb.CurrentNodeNameRequest) (*pb.CurrentNodeNameResponse, error) {
	n, err := l.p.v1.CurrentNodeName(ctx, req.GetHostname())
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.CurrentNodeNameResponse{NodeName: string(n)}, nil
}
