// VolumesService with CSI controller semantics. Sizes are rounded up to
// whole GiB; a volume lives in one zone.
package main

import (
	"context"
	"fmt"
	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"maps"
	"sort"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	gib            = int64(1) << 30
	zoneKey        = "topology.kubernetes.io/zone"
	regionKey      = "topology.kubernetes.io/region"
	maxVolumeBytes = 64 << 40
)

type volumesServer struct {
	cloud *cloud
}

func roundGiB(n int64) int64 { return (n + gib - 1) / gib * gib }

// sizeFor picks the size for a capacity range (0 = 1 GiB).
func sizeFor(r *pb.CapacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || limit < 0 {
		return 0, ccmsdk.InvalidArgument("capacity_range bytes must be >= 0")
	}
	if limit > 0 && req > limit {
		return 0, ccmsdk.InvalidArgument(fmt.Sprintf("capacity_range.required_bytes %d exceeds limit_bytes %d", req, limit))
	}
	size := roundGiB(max(req, 1))
	if limit > 0 && size > limit {
		size = limit // a limit below the next GiB is honoured exactly
	}
	if size > maxVolumeBytes {
		return 0, status.Error(codes.OutOfRange, fmt.Sprintf("%d bytes exceeds the largest volume (%d)", size, maxVolumeBytes))
	}
	return size, nil
}

// byID finds a volume by id. Caller holds mu.
func (c *cloud) byVolumeID(id string) *volume {
	for _, v := range c.volumes {
		if v.ID == id {
			return v
		}
	}
	return nil
}

func (c *cloud) volumeProto(v *volume) *pb.Volume {
	return &pb.Volume{VolumeId: v.ID, CapacityBytes: v.Bytes, VolumeContext: map[string]string{"zone": v.Zone},
		AccessibleTopology: []*pb.Topology{{Segments: map[string]string{zoneKey: v.Zone}}}}
}

func zoneFrom(t *pb.TopologyRequirement) string {
	for _, list := range [][]*pb.Topology{t.GetPreferred(), t.GetRequisite()} {
		for _, seg := range list {
			if z := seg.GetSegments()[zoneKey]; z != "" {
				return z
			}
		}
	}
	return ""
}

// CreateVolume: the name is the idempotency key.
func (s *volumesServer) CreateVolume(_ context.Context, req *pb.CreateVolumeRequest) (*pb.CreateVolumeResponse, error) {
	if req.Name == "" {
		return nil, ccmsdk.InvalidArgument("name is required")
	}
	size, err := sizeFor(req.CapacityRange)
	if err != nil {
		return nil, err
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	if v, ok := s.cloud.volumes[req.Name]; ok {
		limit := req.CapacityRange.GetLimitBytes()
		if v.Bytes < req.CapacityRange.GetRequiredBytes() || (limit > 0 && v.Bytes > limit) || !maps.Equal(v.Params, req.Parameters) {
			return nil, status.Error(codes.AlreadyExists, fmt.Sprintf("volume %s exists with %d bytes and other parameters", req.Name, v.Bytes))
		}
		return &pb.CreateVolumeResponse{Volume: s.cloud.volumeProto(v)}, nil
	}
	zone := zoneFrom(req.AccessibilityRequirements)
	if zone == "" {
		zone = s.cloud.zone
	}
	s.cloud.nextID++
	v := &volume{ID: fmt.Sprintf("vol-%08x", s.cloud.nextID), Name: req.Name, Bytes: size, Zone: zone, Params: maps.Clone(req.Parameters), Attached: map[string]bool{}}
	if v.Params == nil {
		v.Params = map[string]string{}
	}
	s.cloud.volumes[req.Name] = v
	return &pb.CreateVolumeResponse{Volume: s.cloud.volumeProto(v)}, nil
}

// DeleteVolume: absent is success; attached is IN_USE.
func (s *volumesServer) DeleteVolume(_ context.Context, req *pb.DeleteVolumeRequest) (*pb.DeleteVolumeResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	v := s.cloud.byVolumeID(req.VolumeId)
	if v == nil {
		return &pb.DeleteVolumeResponse{}, nil
	}
	if len(v.Attached) > 0 {
		return nil, ccmsdk.InUse(fmt.Sprintf("volume %s is attached", v.ID))
	}
	delete(s.cloud.volumes, v.Name)
	return &pb.DeleteVolumeResponse{}, nil
}

func (s *volumesServer) ControllerPublishVolume(_ context.Context, req *pb.ControllerPublishVolumeRequest) (*pb.ControllerPublishVolumeResponse, error) {
	if req.VolumeId == "" || req.NodeId == "" {
		return nil, ccmsdk.InvalidArgument("volume_id and node_id are required")
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	v := s.cloud.byVolumeID(req.VolumeId)
	if v == nil {
		return nil, ccmsdk.NotFound("volume " + req.VolumeId + " not found")
	}
	if err := foreign(req.NodeId); err != nil {
		return nil, err
	}
	if s.cloud.byProviderID(req.NodeId) == nil {
		return nil, instanceNotFound("with providerID " + req.NodeId)
	}
	if !v.Attached[req.NodeId] && len(v.Attached) > 0 {
		return nil, status.Error(codes.FailedPrecondition, fmt.Sprintf("volume %s is attached to another instance; detach it first", v.ID))
	}
	v.Attached[req.NodeId] = true
	return &pb.ControllerPublishVolumeResponse{PublishContext: map[string]string{"devicePath": "/dev/disk/by-id/memgo-" + v.ID}}, nil
}

// ControllerUnpublishVolume: not attached, volume absent or instance absent are success.
func (s *volumesServer) ControllerUnpublishVolume(_ context.Context, req *pb.ControllerUnpublishVolumeRequest) (*pb.ControllerUnpublishVolumeResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	if v := s.cloud.byVolumeID(req.VolumeId); v != nil {
		if req.NodeId == "" {
			clear(v.Attached)
		} else {
			delete(v.Attached, req.NodeId)
		}
	}
	return &pb.ControllerUnpublishVolumeResponse{}, nil
}

func (s *volumesServer) ControllerExpandVolume(_ context.Context, req *pb.ControllerExpandVolumeRequest) (*pb.ControllerExpandVolumeResponse, error) {
	want, limit := req.CapacityRange.GetRequiredBytes(), req.CapacityRange.GetLimitBytes()
	if want <= 0 {
		return nil, ccmsdk.InvalidArgument("capacity_range.required_bytes is required")
	}
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	v := s.cloud.byVolumeID(req.VolumeId)
	if v == nil {
		return nil, ccmsdk.NotFound("volume " + req.VolumeId + " not found")
	}
	if limit > 0 && limit < v.Bytes {
		return nil, ccmsdk.InvalidArgument(fmt.Sprintf("volume %s has %d bytes; shrinking to %d is not supported", v.ID, v.Bytes, limit))
	}
	if want > v.Bytes {
		size, err := sizeFor(req.CapacityRange)
		if err != nil {
			return nil, err
		}
		v.Bytes = size
	}
	return &pb.ControllerExpandVolumeResponse{CapacityBytes: v.Bytes, NodeExpansionRequired: true}, nil
}

func (s *volumesServer) ListVolumes(_ context.Context, req *pb.ListVolumesRequest) (*pb.ListVolumesResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	byID := map[string]*volume{}
	keys := []string{}
	for _, v := range s.cloud.volumes {
		byID[v.ID] = v
		keys = append(keys, v.ID)
	}
	page, next, err := paginate(keys, req.PageSize, req.PageToken, "volumes", "")
	if err != nil {
		return nil, err
	}
	out := &pb.ListVolumesResponse{NextPageToken: next}
	for _, id := range page {
		v := byID[id]
		nodes := []string{}
		for n := range v.Attached {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		out.Entries = append(out.Entries, &pb.ListVolumesEntry{Volume: s.cloud.volumeProto(v), PublishedNodeIds: nodes})
	}
	return out, nil
}

func (s *volumesServer) GetVolumeLabels(_ context.Context, req *pb.GetVolumeLabelsRequest) (*pb.GetVolumeLabelsResponse, error) {
	s.cloud.mu.Lock()
	defer s.cloud.mu.Unlock()
	v := s.cloud.byVolumeID(req.VolumeId)
	if v == nil {
		return nil, ccmsdk.NotFound("volume " + req.VolumeId + " not found")
	}
	return &pb.GetVolumeLabelsResponse{Labels: map[string]string{zoneKey: v.Zone, regionKey: s.cloud.region}}, nil
}
