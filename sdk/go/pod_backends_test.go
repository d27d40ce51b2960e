package ccmsdk

import (
	"testing"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

func TestPodTargets(t *testing.T) {
	ep := func(addr, zone string) *pb.EndpointBackend {
		return &pb.EndpointBackend{Addresses: []string{addr}, Zone: zone, Ready: true, Ports: []*pb.EndpointPort{{Name: "web", ServicePort: 80, Protocol: pb.Protocol_PROTOCOL_TCP, Port: 8080}}}
	}
	for _, c := range []struct {
		name string
		dist string
		eps  []*pb.EndpointBackend
		want []string
	}{
		{"all without PreferClose", "", []*pb.EndpointBackend{ep("10.0.0.1", "a"), ep("10.0.0.2", "b")}, []string{"10.0.0.1", "10.0.0.2"}},
		{"same zone under PreferClose", "PreferClose", []*pb.EndpointBackend{ep("10.0.0.1", "a"), ep("10.0.0.2", "b")}, []string{"10.0.0.1"}},
		{"all when none is close", "PreferClose", []*pb.EndpointBackend{ep("10.0.0.2", "b")}, []string{"10.0.0.2"}},
	} {
		svc := &pb.ServiceRef{Endpoints: c.eps, PodBackends: &pb.PodBackends{TrafficDistribution: c.dist}}
		got := PodTargets(svc, pb.Protocol_PROTOCOL_TCP, 80, "a")
		var addrs []string
		for _, g := range got {
			if g.Port != 8080 {
				t.Errorf("%s: port %d, want 8080", c.name, g.Port)
			}
			addrs = append(addrs, g.Address)
		}
		if len(addrs) != len(c.want) || (len(addrs) > 0 && addrs[0] != c.want[0]) {
			t.Errorf("%s: got %v, want %v", c.name, addrs, c.want)
		}
	}
	if HasPodBackends(&pb.ServiceRef{}) {
		t.Error("HasPodBackends without pod_backends")
	}
}
