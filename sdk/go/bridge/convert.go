package bridge

import (
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudprovider "k8s.io/cloud-provider"
)

// Conversions between the Kubernetes objects of k8s.io/api and the
// protocol's messages, in both directions: the bridge rebuilds objects from
// requests (…FromRef) and tools/upstream-ccm, the opposite direction, turns
// objects into requests (…Ref). Each direction drops what the other cannot
// carry; NodeFromRef and ServiceFromRef list what the protocol lacks.

var addressTypes = map[v1.NodeAddressType]pb.NodeAddressType{
	v1.NodeHostName:    pb.NodeAddressType_NODE_ADDRESS_TYPE_HOSTNAME,
	v1.NodeInternalIP:  pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP,
	v1.NodeExternalIP:  pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_IP,
	v1.NodeInternalDNS: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_DNS,
	v1.NodeExternalDNS: pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_DNS,
}

var kubeAddressTypes = invert(addressTypes)

var protocols = map[v1.Protocol]pb.Protocol{
	v1.ProtocolTCP:  pb.Protocol_PROTOCOL_TCP,
	v1.ProtocolUDP:  pb.Protocol_PROTOCOL_UDP,
	v1.ProtocolSCTP: pb.Protocol_PROTOCOL_SCTP,
}

var kubeProtocols = invert(protocols)

var ipFamilies = map[v1.IPFamily]pb.IpFamily{v1.IPv4Protocol: pb.IpFamily_IP_FAMILY_IPV4, v1.IPv6Protocol: pb.IpFamily_IP_FAMILY_IPV6}

var kubeIPFamilies = invert(ipFamilies)

var ipFamilyPolicies = map[v1.IPFamilyPolicy]pb.IpFamilyPolicy{
	v1.IPFamilyPolicySingleStack:      pb.IpFamilyPolicy_IP_FAMILY_POLICY_SINGLE_STACK,
	v1.IPFamilyPolicyPreferDualStack:  pb.IpFamilyPolicy_IP_FAMILY_POLICY_PREFER_DUAL_STACK,
	v1.IPFamilyPolicyRequireDualStack: pb.IpFamilyPolicy_IP_FAMILY_POLICY_REQUIRE_DUAL_STACK,
}

var kubeIPFamilyPolicies = invert(ipFamilyPolicies)

var internalTrafficPolicies = map[v1.ServiceInternalTrafficPolicy]pb.InternalTrafficPolicy{
	v1.ServiceInternalTrafficPolicyCluster: pb.InternalTrafficPolicy_INTERNAL_TRAFFIC_POLICY_CLUSTER,
	v1.ServiceInternalTrafficPolicyLocal:   pb.InternalTrafficPolicy_INTERNAL_TRAFFIC_POLICY_LOCAL,
}

var kubeInternalTrafficPolicies = invert(internalTrafficPolicies)

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// AddressesToProto converts node addresses; addresses of a type the
// protocol does not know are dropped.
func AddressesToProto(in []v1.NodeAddress) []*pb.NodeAddress {
	out := make([]*pb.NodeAddress, 0, len(in))
	for _, a := range in {
		if t, ok := addressTypes[a.Type]; ok {
			out = append(out, &pb.NodeAddress{Type: t, Address: a.Address})
		}
	}
	return out
}

// AddressesFromProto converts node addresses; UNSPECIFIED ones are dropped.
func AddressesFromProto(in []*pb.NodeAddress) []v1.NodeAddress {
	out := make([]v1.NodeAddress, 0, len(in))
	for _, a := range in {
		if t, ok := kubeAddressTypes[a.GetType()]; ok {
			out = append(out, v1.NodeAddress{Type: t, Address: a.GetAddress()})
		}
	}
	return out
}

// NodeRef is the protocol's view of a Node, as the host sends it. Unlike
// the host it applies no bounds (annotations, taints and conditions are
// passed whole); the caller is a test tool that sends what it is given.
func NodeRef(n *v1.Node) *pb.NodeRef {
	ref := &pb.NodeRef{
		Name:          n.Name,
		ProviderId:    n.Spec.ProviderID,
		Addresses:     AddressesToProto(n.Status.Addresses),
		Labels:        n.Labels,
		Uid:           string(n.UID),
		Annotations:   n.Annotations,
		PodCidrs:      n.Spec.PodCIDRs,
		Unschedulable: n.Spec.Unschedulable,
	}
	if len(ref.PodCidrs) == 0 && n.Spec.PodCIDR != "" {
		ref.PodCidrs = []string{n.Spec.PodCIDR}
	}
	for _, t := range n.Spec.Taints {
		ref.Taints = append(ref.Taints, &pb.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	for _, c := range n.Status.Conditions {
		ref.Conditions = append(ref.Conditions, &pb.NodeCondition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason})
	}
	if i := n.Status.NodeInfo; i != (v1.NodeSystemInfo{}) {
		ref.NodeInfo = &pb.NodeSystemInfo{
			MachineId:               i.MachineID,
			SystemUuid:              i.SystemUUID,
			BootId:                  i.BootID,
			KernelVersion:           i.KernelVersion,
			OsImage:                 i.OSImage,
			ContainerRuntimeVersion: i.ContainerRuntimeVersion,
			KubeletVersion:          i.KubeletVersion,
			OperatingSystem:         i.OperatingSystem,
			Architecture:            i.Architecture,
		}
	}
	return ref
}

// NodeRefs converts a node list.
func NodeRefs(nodes []*v1.Node) []*pb.NodeRef {
	out := make([]*pb.NodeRef, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, NodeRef(n))
	}
	return out
}

// NodeFromRef rebuilds the *v1.Node an upstream controller would have passed,
// from what the protocol carries: metadata.name, uid, labels, annotations
// (those the host forwards, within its bounds), spec.providerID,
// spec.podCIDRs with spec.podCIDR (their first), spec.taints,
// spec.unschedulable, status.addresses, status.conditions (type, status,
// reason) and status.nodeInfo (machineID, systemUUID, bootID, kernel, OS
// image, container runtime and kubelet versions, operating system,
// architecture). The protocol does not carry, so the Node has them empty:
// the conditions' times and messages, taints' timeAdded,
// status.capacity/allocatable, status.daemonEndpoints, images, volumes,
// metadata.creationTimestamp, resourceVersion, ownerReferences, finalizers.
// A provider that reads one of them sees what a just-registered Node would
// show.
func NodeFromRef(ref *pb.NodeRef) *v1.Node {
	n := &v1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ref.GetName(),
			UID:         types.UID(ref.GetUid()),
			Labels:      cloneMap(ref.GetLabels()),
			Annotations: cloneMap(ref.GetAnnotations()),
		},
		Spec: v1.NodeSpec{ProviderID: ref.GetProviderId(), Unschedulable: ref.GetUnschedulable()},
	}
	if len(ref.GetAddresses()) > 0 {
		n.Status.Addresses = AddressesFromProto(ref.GetAddresses())
	}
	if c := ref.GetPodCidrs(); len(c) > 0 {
		n.Spec.PodCIDRs = append([]string(nil), c...)
		n.Spec.PodCIDR = c[0]
	}
	for _, t := range ref.GetTaints() {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: t.GetKey(), Value: t.GetValue(), Effect: v1.TaintEffect(t.GetEffect())})
	}
	for _, c := range ref.GetConditions() {
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{
			Type:   v1.NodeConditionType(c.GetType()),
			Status: v1.ConditionStatus(c.GetStatus()),
			Reason: c.GetReason(),
		})
	}
	if i := ref.GetNodeInfo(); i != nil {
		n.Status.NodeInfo = v1.NodeSystemInfo{
			MachineID:               i.GetMachineId(),
			SystemUUID:              i.GetSystemUuid(),
			BootID:                  i.GetBootId(),
			KernelVersion:           i.GetKernelVersion(),
			OSImage:                 i.GetOsImage(),
			ContainerRuntimeVersion: i.GetContainerRuntimeVersion(),
			KubeletVersion:          i.GetKubeletVersion(),
			OperatingSystem:         i.GetOperatingSystem(),
			Architecture:            i.GetArchitecture(),
		}
	}
	return n
}

// NodesFromRefs rebuilds a node list (see NodeFromRef).
func NodesFromRefs(refs []*pb.NodeRef) []*v1.Node {
	out := make([]*v1.Node, 0, len(refs))
	for _, r := range refs {
		out = append(out, NodeFromRef(r))
	}
	return out
}

// cloneMap copies m so that a provider writing to a rebuilt object never
// touches the request; nil stays nil.
func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ServiceRef is the protocol's view of a Service, as the host sends it.
func ServiceRef(s *v1.Service) *pb.ServiceRef {
	ref := &pb.ServiceRef{
		Uid:                      string(s.UID),
		Namespace:                s.Namespace,
		Name:                     s.Name,
		Annotations:              s.Annotations,
		Labels:                   s.Labels,
		LoadBalancerIp:           s.Spec.LoadBalancerIP,
		LoadBalancerSourceRanges: s.Spec.LoadBalancerSourceRanges,
		HealthCheckNodePort:      s.Spec.HealthCheckNodePort,
		ExternalTrafficPolicy:    pb.ExternalTrafficPolicy_EXTERNAL_TRAFFIC_POLICY_CLUSTER,
		SessionAffinity:          pb.SessionAffinity_SESSION_AFFINITY_NONE,
	}
	for _, p := range s.Spec.Ports {
		port := &pb.ServicePort{Name: p.Name, Protocol: protocols[p.Protocol], Port: p.Port, NodePort: p.NodePort}
		if p.AppProtocol != nil {
			port.AppProtocol = *p.AppProtocol
		}
		if p.TargetPort.Type == intstr.String {
			port.TargetPortName = p.TargetPort.StrVal
		} else {
			port.TargetPort = p.TargetPort.IntVal
		}
		ref.Ports = append(ref.Ports, port)
	}
	ref.Selector = s.Spec.Selector
	ref.ClusterIps = s.Spec.ClusterIPs
	if len(ref.ClusterIps) == 0 && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone {
		ref.ClusterIps = []string{s.Spec.ClusterIP}
	}
	if s.Spec.IPFamilyPolicy != nil {
		ref.IpFamilyPolicy = ipFamilyPolicies[*s.Spec.IPFamilyPolicy]
	}
	ref.ExternalIps = s.Spec.ExternalIPs
	ref.AllocateLoadBalancerNodePorts = s.Spec.AllocateLoadBalancerNodePorts
	if p := s.Spec.InternalTrafficPolicy; p != nil {
		ref.InternalTrafficPolicy = internalTrafficPolicies[*p]
	}
	if len(s.Status.LoadBalancer.Ingress) > 0 {
		ref.Status = LoadBalancerStatusToProto(&s.Status.LoadBalancer)
	}
	for _, f := range s.Spec.IPFamilies {
		ref.IpFamilies = append(ref.IpFamilies, ipFamilies[f])
	}
	if s.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		ref.ExternalTrafficPolicy = pb.ExternalTrafficPolicy_EXTERNAL_TRAFFIC_POLICY_LOCAL
	}
	if s.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		ref.SessionAffinity = pb.SessionAffinity_SESSION_AFFINITY_CLIENT_IP
		if c := s.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			ref.SessionAffinityTimeoutSeconds = *c.ClientIP.TimeoutSeconds
		}
	}
	if s.Spec.LoadBalancerClass != nil {
		ref.LoadBalancerClass = *s.Spec.LoadBalancerClass
	}
	return ref
}

// ServiceFromRef rebuilds the *v1.Service of type LoadBalancer an upstream
// service controller would have passed, from what the protocol carries:
// metadata.uid, namespace, name, annotations, labels; spec.ports (name,
// protocol, port, nodePort, appProtocol, targetPort), selector, clusterIP
// and clusterIPs, ipFamilies, ipFamilyPolicy, externalIPs, loadBalancerIP,
// loadBalancerSourceRanges, externalTrafficPolicy (Cluster when unset, as the
// API server defaults it), internalTrafficPolicy, healthCheckNodePort,
// sessionAffinity (None when unset) with its ClientIP timeout,
// allocateLoadBalancerNodePorts, loadBalancerClass; and
// status.loadBalancer (the ingress the Service shows). The protocol does not
// carry, so the Service has them empty: spec.publishNotReadyAddresses,
// spec.trafficDistribution, status.conditions, metadata.finalizers,
// creationTimestamp, resourceVersion and ownerReferences.
func ServiceFromRef(ref *pb.ServiceRef) *v1.Service {
	s := &v1.Service{
		TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			UID:         types.UID(ref.GetUid()),
			Namespace:   ref.GetNamespace(),
			Name:        ref.GetName(),
			Annotations: cloneMap(ref.GetAnnotations()),
			Labels:      cloneMap(ref.GetLabels()),
		},
		Spec: v1.ServiceSpec{
			Type:                v1.ServiceTypeLoadBalancer,
			LoadBalancerIP:      ref.GetLoadBalancerIp(),
			HealthCheckNodePort: ref.GetHealthCheckNodePort(),
			ExternalTrafficPolicy: map[bool]v1.ServiceExternalTrafficPolicy{
				true:  v1.ServiceExternalTrafficPolicyLocal,
				false: v1.ServiceExternalTrafficPolicyCluster,
			}[ref.GetExternalTrafficPolicy() == pb.ExternalTrafficPolicy_EXTERNAL_TRAFFIC_POLICY_LOCAL],
			SessionAffinity: v1.ServiceAffinityNone,
		},
	}
	if r := ref.GetLoadBalancerSourceRanges(); len(r) > 0 {
		s.Spec.LoadBalancerSourceRanges = append([]string(nil), r...)
	}
	for _, p := range ref.GetPorts() {
		port := v1.ServicePort{Name: p.GetName(), Protocol: kubeProtocols[p.GetProtocol()], Port: p.GetPort(), NodePort: p.GetNodePort()}
		if a := p.GetAppProtocol(); a != "" {
			port.AppProtocol = &a
		}
		if n := p.GetTargetPortName(); n != "" {
			port.TargetPort = intstr.FromString(n)
		} else if t := p.GetTargetPort(); t != 0 {
			port.TargetPort = intstr.FromInt32(t)
		}
		s.Spec.Ports = append(s.Spec.Ports, port)
	}
	for _, f := range ref.GetIpFamilies() {
		if k, ok := kubeIPFamilies[f]; ok {
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, k)
		}
	}
	if ref.GetSessionAffinity() == pb.SessionAffinity_SESSION_AFFINITY_CLIENT_IP {
		s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		if t := ref.GetSessionAffinityTimeoutSeconds(); t > 0 {
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &t}}
		}
	}
	if c := ref.GetLoadBalancerClass(); c != "" {
		s.Spec.LoadBalancerClass = &c
	}
	if sel := ref.GetSelector(); len(sel) > 0 {
		s.Spec.Selector = cloneMap(sel)
	}
	if ips := ref.GetClusterIps(); len(ips) > 0 {
		s.Spec.ClusterIPs = append([]string(nil), ips...)
		s.Spec.ClusterIP = ips[0]
	}
	if p, ok := kubeIPFamilyPolicies[ref.GetIpFamilyPolicy()]; ok {
		s.Spec.IPFamilyPolicy = &p
	}
	if ips := ref.GetExternalIps(); len(ips) > 0 {
		s.Spec.ExternalIPs = append([]string(nil), ips...)
	}
	if ref.AllocateLoadBalancerNodePorts != nil {
		a := ref.GetAllocateLoadBalancerNodePorts()
		s.Spec.AllocateLoadBalancerNodePorts = &a
	}
	if p, ok := kubeInternalTrafficPolicies[ref.GetInternalTrafficPolicy()]; ok {
		s.Spec.InternalTrafficPolicy = &p
	}
	if st := ref.GetStatus(); len(st.GetIngress()) > 0 {
		s.Status.LoadBalancer = *LoadBalancerStatusFromProto(st)
	}
	return s
}

// LoadBalancerStatusToProto converts a load balancer status (nil: no ingress).
func LoadBalancerStatusToProto(in *v1.LoadBalancerStatus) *pb.LoadBalancerStatus {
	out := &pb.LoadBalancerStatus{}
	if in == nil {
		return out
	}
	for _, ing := range in.Ingress {
		i := &pb.LoadBalancerIngress{Ip: ing.IP, Hostname: ing.Hostname}
		if ing.IPMode != nil {
			switch *ing.IPMode {
			case v1.LoadBalancerIPModeVIP:
				i.IpMode = pb.IpMode_IP_MODE_VIP
			case v1.LoadBalancerIPModeProxy:
				i.IpMode = pb.IpMode_IP_MODE_PROXY
			}
		}
		for _, p := range ing.Ports {
			ps := &pb.PortStatus{Port: p.Port, Protocol: protocols[p.Protocol]}
			if p.Error != nil {
				ps.Error = *p.Error
			}
			i.Ports = append(i.Ports, ps)
		}
		out.Ingress = append(out.Ingress, i)
	}
	return out
}

// LoadBalancerStatusFromProto converts a load balancer status.
func LoadBalancerStatusFromProto(in *pb.LoadBalancerStatus) *v1.LoadBalancerStatus {
	out := &v1.LoadBalancerStatus{}
	for _, ing := range in.GetIngress() {
		i := v1.LoadBalancerIngress{IP: ing.GetIp(), Hostname: ing.GetHostname()}
		switch ing.GetIpMode() {
		case pb.IpMode_IP_MODE_VIP:
			m := v1.LoadBalancerIPModeVIP
			i.IPMode = &m
		case pb.IpMode_IP_MODE_PROXY:
			m := v1.LoadBalancerIPModeProxy
			i.IPMode = &m
		}
		for _, p := range ing.GetPorts() {
			ps := v1.PortStatus{Port: p.GetPort(), Protocol: kubeProtocols[p.GetProtocol()]}
			if e := p.GetError(); e != "" {
				ps.Error = &e
			}
			i.Ports = append(i.Ports, ps)
		}
		out.Ingress = append(out.Ingress, i)
	}
	return out
}

// RouteToProto converts a route. EnableNodeAddresses has no protocol field:
// the protocol always carries the target's addresses.
func RouteToProto(r *cloudprovider.Route) *pb.Route {
	return &pb.Route{
		Name:                r.Name,
		TargetNode:          string(r.TargetNode),
		TargetNodeAddresses: AddressesToProto(r.TargetNodeAddresses),
		DestinationCidr:     r.DestinationCIDR,
		Blackhole:           r.Blackhole,
	}
}

// RouteFromProto converts a route (EnableNodeAddresses stays false, which is
// what upstream's route controller sets when it creates one).
func RouteFromProto(r *pb.Route) *cloudprovider.Route {
	out := &cloudprovider.Route{
		Name:            r.GetName(),
		TargetNode:      types.NodeName(r.GetTargetNode()),
		DestinationCIDR: r.GetDestinationCidr(),
		Blackhole:       r.GetBlackhole(),
	}
	if len(r.GetTargetNodeAddresses()) > 0 {
		out.TargetNodeAddresses = AddressesFromProto(r.GetTargetNodeAddresses())
	}
	return out
}

// ZoneToProto converts a zone.
func ZoneToProto(z cloudprovider.Zone) *pb.Zone {
	return &pb.Zone{FailureDomain: z.FailureDomain, Region: z.Region}
}

// InstanceMetadataToProto converts instance metadata (nil stays nil).
func InstanceMetadataToProto(m *cloudprovider.InstanceMetadata) *pb.InstanceMetadata {
	if m == nil {
		return nil
	}
	return &pb.InstanceMetadata{
		ProviderId:       m.ProviderID,
		InstanceType:     m.InstanceType,
		NodeAddresses:    AddressesToProto(m.NodeAddresses),
		Zone:             m.Zone,
		Region:           m.Region,
		AdditionalLabels: m.AdditionalLabels,
	}
}

// InstanceMetadataFromProto converts instance metadata.
func InstanceMetadataFromProto(m *pb.InstanceMetadata) *cloudprovider.InstanceMetadata {
	return &cloudprovider.InstanceMetadata{
		ProviderID:       m.GetProviderId(),
		InstanceType:     m.GetInstanceType(),
		NodeAddresses:    AddressesFromProto(m.GetNodeAddresses()),
		Zone:             m.GetZone(),
		Region:           m.GetRegion(),
		AdditionalLabels: m.GetAdditionalLabels(),
	}
}
