package bridge

import (
	"testing"

	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudprovider "k8s.io/cloud-provider"
)

func ptr[T any](v T) *T { return &v }

func TestNodeFromRef(t *testing.T) {
	cases := []struct {
		name string
		ref  *pb.NodeRef
		want *v1.Node
	}{
		{"empty", &pb.NodeRef{}, &v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}}},
		{"by name, not initialized", &pb.NodeRef{Name: "n1", Uid: "u1"}, &v1.Node{
			TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"},
		}},
		{"everything the protocol carries", &pb.NodeRef{
			Name: "n2", ProviderId: "aws:///eu-west-1a/i-1", Uid: "u2",
			Labels:      map[string]string{"kubernetes.io/hostname": "n2"},
			Annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": "10.0.0.2"},
			Addresses: []*pb.NodeAddress{
				{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP, Address: "10.0.0.2"},
				{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_HOSTNAME, Address: "n2"},
				{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_UNSPECIFIED, Address: "dropped"},
			},
			PodCidrs:      []string{"10.244.1.0/24", "fd00:10:244:1::/64"},
			Taints:        []*pb.Taint{{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"}, {Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}},
			Unschedulable: true,
			Conditions: []*pb.NodeCondition{
				{Type: "Ready", Status: "False", Reason: "KubeletNotReady"},
				{Type: "MemoryPressure", Status: "Unknown"},
			},
			NodeInfo: &pb.NodeSystemInfo{
				MachineId: "m", SystemUuid: "4211f4b8-0000-4000-8000-000000000001", BootId: "b", KernelVersion: "6.8.0",
				OsImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.1.0", KubeletVersion: "v1.34.4",
				OperatingSystem: "linux", Architecture: "arm64",
			},
		}, &v1.Node{
			TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "n2", UID: "u2",
				Labels:      map[string]string{"kubernetes.io/hostname": "n2"},
				Annotations: map[string]string{"alpha.kubernetes.io/provided-node-ip": "10.0.0.2"},
			},
			Spec: v1.NodeSpec{
				ProviderID: "aws:///eu-west-1a/i-1",
				PodCIDR:    "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"},
				Taints: []v1.Taint{
					{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute},
					{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule},
				},
				Unschedulable: true,
			},
			Status: v1.NodeStatus{
				Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}, {Type: v1.NodeHostName, Address: "n2"}},
				Conditions: []v1.NodeCondition{
					{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady"},
					{Type: v1.NodeMemoryPressure, Status: v1.ConditionUnknown},
				},
				NodeInfo: v1.NodeSystemInfo{
					MachineID: "m", SystemUUID: "4211f4b8-0000-4000-8000-000000000001", BootID: "b", KernelVersion: "6.8.0",
					OSImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.1.0", KubeletVersion: "v1.34.4",
					OperatingSystem: "linux", Architecture: "arm64",
				},
			},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := NodeFromRef(c.ref)
			if !equality.Semantic.DeepEqual(got, c.want) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestAddressesRoundTripEveryKubernetesType(t *testing.T) {
	in := []v1.NodeAddress{
		{Type: v1.NodeHostName, Address: "n1"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.1"},
		{Type: v1.NodeInternalDNS, Address: "n1.internal"},
		{Type: v1.NodeExternalDNS, Address: "n1.example.com"},
	}
	if got := AddressesFromProto(AddressesToProto(in)); !equality.Semantic.DeepEqual(got, in) {
		t.Fatalf("round trip: got %v, want %v", got, in)
	}
}

func TestNodeFromRefCopiesMaps(t *testing.T) {
	ref := &pb.NodeRef{Name: "n", Labels: map[string]string{"a": "1"}, PodCidrs: []string{"10.0.0.0/24"}}
	n := NodeFromRef(ref)
	n.Labels["a"] = "changed"
	n.Spec.PodCIDRs[0] = "changed"
	if ref.Labels["a"] != "1" || ref.PodCidrs[0] != "10.0.0.0/24" {
		t.Error("writing the rebuilt Node changed the request")
	}
}

func TestServiceFromRefCopies(t *testing.T) {
	ref := &pb.ServiceRef{Selector: map[string]string{"app": "web"}, ClusterIps: []string{"10.96.0.10"}, ExternalIps: []string{"192.0.2.7"}}
	s := ServiceFromRef(ref)
	s.Spec.Selector["app"] = "changed"
	s.Spec.ClusterIPs[0] = "changed"
	s.Spec.ExternalIPs[0] = "changed"
	if ref.Selector["app"] != "web" || ref.ClusterIps[0] != "10.96.0.10" || ref.ExternalIps[0] != "192.0.2.7" {
		t.Error("writing the rebuilt Service changed the request")
	}
}

// status.loadBalancer: the ingress the host sends is the rebuilt Service's
// status; none sent leaves it empty.
func TestServiceFromRefStatus(t *testing.T) {
	if got := ServiceFromRef(&pb.ServiceRef{Status: &pb.LoadBalancerStatus{}}); len(got.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("empty status became %+v", got.Status)
	}
	got := ServiceFromRef(&pb.ServiceRef{Status: &pb.LoadBalancerStatus{Ingress: []*pb.LoadBalancerIngress{{Ip: "192.0.2.1", IpMode: pb.IpMode_IP_MODE_VIP}}}})
	want := v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1", IPMode: ptr(v1.LoadBalancerIPModeVIP)}}}
	if !equality.Semantic.DeepEqual(got.Status.LoadBalancer, want) {
		t.Errorf("status %+v, want %+v", got.Status.LoadBalancer, want)
	}
}

func TestServiceFromRef(t *testing.T) {
	tcp := "kubernetes.io/h2c"
	class := "example.com/lb"
	cases := []struct {
		name string
		ref  *pb.ServiceRef
		want v1.ServiceSpec
	}{
		{"defaults the API server would have set", &pb.ServiceRef{Uid: "u", Namespace: "ns", Name: "web"}, v1.ServiceSpec{
			Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster, SessionAffinity: v1.ServiceAffinityNone,
		}},
		{"every carried field", &pb.ServiceRef{
			Uid: "u", Namespace: "ns", Name: "web",
			Ports: []*pb.ServicePort{
				{Name: "h2", Protocol: pb.Protocol_PROTOCOL_TCP, Port: 443, NodePort: 30443, AppProtocol: tcp, TargetPortName: "https"},
				{Name: "dns", Protocol: pb.Protocol_PROTOCOL_UDP, Port: 53, NodePort: 30053, TargetPort: 5353},
			},
			LoadBalancerIp:                "192.0.2.1",
			LoadBalancerSourceRanges:      []string{"10.0.0.0/8"},
			IpFamilies:                    []pb.IpFamily{pb.IpFamily_IP_FAMILY_IPV6, pb.IpFamily_IP_FAMILY_IPV4},
			ExternalTrafficPolicy:         pb.ExternalTrafficPolicy_EXTERNAL_TRAFFIC_POLICY_LOCAL,
			HealthCheckNodePort:           31000,
			SessionAffinity:               pb.SessionAffinity_SESSION_AFFINITY_CLIENT_IP,
			SessionAffinityTimeoutSeconds: 600,
			LoadBalancerClass:             class,
			Selector:                      map[string]string{"app": "web"},
			ClusterIps:                    []string{"fd00::10", "10.96.0.10"},
			IpFamilyPolicy:                pb.IpFamilyPolicy_IP_FAMILY_POLICY_REQUIRE_DUAL_STACK,
			ExternalIps:                   []string{"192.0.2.7"},
			AllocateLoadBalancerNodePorts: ptr(false),
			InternalTrafficPolicy:         pb.InternalTrafficPolicy_INTERNAL_TRAFFIC_POLICY_LOCAL,
		}, v1.ServiceSpec{
			Type: v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{
				{Name: "h2", Protocol: v1.ProtocolTCP, Port: 443, NodePort: 30443, AppProtocol: &tcp, TargetPort: intstr.FromString("https")},
				{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053, TargetPort: intstr.FromInt32(5353)},
			},
			Selector:                      map[string]string{"app": "web"},
			ClusterIP:                     "fd00::10",
			ClusterIPs:                    []string{"fd00::10", "10.96.0.10"},
			IPFamilyPolicy:                ptr(v1.IPFamilyPolicyRequireDualStack),
			ExternalIPs:                   []string{"192.0.2.7"},
			AllocateLoadBalancerNodePorts: ptr(false),
			InternalTrafficPolicy:         ptr(v1.ServiceInternalTrafficPolicyLocal),
			LoadBalancerIP:                "192.0.2.1",
			LoadBalancerSourceRanges:      []string{"10.0.0.0/8"},
			IPFamilies:                    []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol},
			ExternalTrafficPolicy:         v1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort:           31000,
			SessionAffinity:               v1.ServiceAffinityClientIP,
			SessionAffinityConfig:         &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr(int32(600))}},
			LoadBalancerClass:             &class,
		}},
		{"ClientIP without a timeout leaves the config unset", &pb.ServiceRef{SessionAffinity: pb.SessionAffinity_SESSION_AFFINITY_CLIENT_IP}, v1.ServiceSpec{
			Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster, SessionAffinity: v1.ServiceAffinityClientIP,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ServiceFromRef(c.ref)
			if string(got.UID) != c.ref.Uid || got.Namespace != c.ref.Namespace || got.Name != c.ref.Name {
				t.Errorf("metadata %+v", got.ObjectMeta)
			}
			if !equality.Semantic.DeepEqual(got.Spec, c.want) {
				t.Errorf("spec %+v\nwant %+v", got.Spec, c.want)
			}
		})
	}
}

// What the host sends comes back unchanged through the upstream objects
// (the path a request takes through the bridge and tools/upstream-ccm).
func TestRefRoundTrip(t *testing.T) {
	svc := &pb.ServiceRef{
		Uid: "u", Namespace: "ns", Name: "web",
		Annotations: map[string]string{"a": "b"}, Labels: map[string]string{"l": "v"},
		Ports:                         []*pb.ServicePort{{Name: "p", Protocol: pb.Protocol_PROTOCOL_SCTP, Port: 1, NodePort: 30001, AppProtocol: "x"}},
		LoadBalancerIp:                "192.0.2.9",
		LoadBalancerSourceRanges:      []string{"0.0.0.0/0"},
		IpFamilies:                    []pb.IpFamily{pb.IpFamily_IP_FAMILY_IPV4},
		ExternalTrafficPolicy:         pb.ExternalTrafficPolicy_EXTERNAL_TRAFFIC_POLICY_LOCAL,
		HealthCheckNodePort:           32000,
		SessionAffinity:               pb.SessionAffinity_SESSION_AFFINITY_CLIENT_IP,
		SessionAffinityTimeoutSeconds: 30,
		LoadBalancerClass:             "c",
		Selector:                      map[string]string{"app": "web"},
		ClusterIps:                    []string{"10.96.0.10"},
		IpFamilyPolicy:                pb.IpFamilyPolicy_IP_FAMILY_POLICY_SINGLE_STACK,
		ExternalIps:                   []string{"192.0.2.7", "192.0.2.8"},
		AllocateLoadBalancerNodePorts: ptr(true),
		InternalTrafficPolicy:         pb.InternalTrafficPolicy_INTERNAL_TRAFFIC_POLICY_CLUSTER,
		Status:                        &pb.LoadBalancerStatus{Ingress: []*pb.LoadBalancerIngress{{Hostname: "lb.example.com"}}},
	}
	svc.Ports = append(svc.Ports, &pb.ServicePort{Name: "q", Protocol: pb.Protocol_PROTOCOL_TCP, Port: 2, TargetPort: 8080},
		&pb.ServicePort{Name: "r", Protocol: pb.Protocol_PROTOCOL_UDP, Port: 3, TargetPortName: "dns"})
	if got := ServiceRef(ServiceFromRef(svc)); !proto.Equal(got, svc) {
		t.Errorf("service came back as %v", got)
	}
	node := &pb.NodeRef{Name: "n", ProviderId: "p://1", Uid: "u", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
		Addresses:     []*pb.NodeAddress{{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_DNS, Address: "n.example.com"}},
		PodCidrs:      []string{"10.244.0.0/24"},
		Taints:        []*pb.Taint{{Key: "k", Value: "v", Effect: "PreferNoSchedule"}},
		Unschedulable: true,
		Conditions:    []*pb.NodeCondition{{Type: "Ready", Status: "True", Reason: "KubeletReady"}},
		NodeInfo:      &pb.NodeSystemInfo{SystemUuid: "u-1", KubeletVersion: "v1.34.4"},
	}
	if got := NodeRef(NodeFromRef(node)); !proto.Equal(got, node) {
		t.Errorf("node came back as %v", got)
	}
	// A Node with only the old single spec.podCIDR sends it as pod_cidrs.
	if got := NodeRef(&v1.Node{Spec: v1.NodeSpec{PodCIDR: "10.244.3.0/24"}}).GetPodCidrs(); len(got) != 1 || got[0] != "10.244.3.0/24" {
		t.Errorf("pod CIDRs from spec.podCIDR: %v", got)
	}
	status := &pb.LoadBalancerStatus{Ingress: []*pb.LoadBalancerIngress{
		{Ip: "192.0.2.1", IpMode: pb.IpMode_IP_MODE_PROXY, Ports: []*pb.PortStatus{{Port: 80, Protocol: pb.Protocol_PROTOCOL_TCP, Error: "Pending"}}},
		{Hostname: "lb.example.com", IpMode: pb.IpMode_IP_MODE_VIP},
		{Ip: "2001:db8::1"},
	}}
	if got := LoadBalancerStatusToProto(LoadBalancerStatusFromProto(status)); !proto.Equal(got, status) {
		t.Errorf("status came back as %v", got)
	}
	route := &pb.Route{Name: "r", TargetNode: "n", DestinationCidr: "10.0.1.0/24", Blackhole: true,
		TargetNodeAddresses: []*pb.NodeAddress{{Type: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP, Address: "10.0.0.1"}}}
	if got := RouteToProto(RouteFromProto(route)); !proto.Equal(got, route) {
		t.Errorf("route came back as %v", got)
	}
	md := &cloudprovider.InstanceMetadata{ProviderID: "p://1", InstanceType: "t", Zone: "z", Region: "r",
		NodeAddresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}, AdditionalLabels: map[string]string{"x": "y"}}
	if got := InstanceMetadataFromProto(InstanceMetadataToProto(md)); !equality.Semantic.DeepEqual(got, md) {
		t.Errorf("metadata came back as %+v", got)
	}
}
