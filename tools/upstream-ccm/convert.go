// Conversions between Kubernetes objects and the protocol's messages.
package main

import (
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	v1 "k8s.io/api/core/v1"
)

var addressTypes = map[v1.NodeAddressType]pb.NodeAddressType{
	v1.NodeHostName:    pb.NodeAddressType_NODE_ADDRESS_TYPE_HOSTNAME,
	v1.NodeInternalIP:  pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_IP,
	v1.NodeExternalIP:  pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_IP,
	v1.NodeInternalDNS: pb.NodeAddressType_NODE_ADDRESS_TYPE_INTERNAL_DNS,
	v1.NodeExternalDNS: pb.NodeAddressType_NODE_ADDRESS_TYPE_EXTERNAL_DNS,
}

var kubeAddressTypes = func() map[pb.NodeAddressType]v1.NodeAddressType {
	m := map[pb.NodeAddressType]v1.NodeAddressType{}
	for k, v := range addressTypes {
		m[v] = k
	}
	return m
}()

func toAddresses(in []v1.NodeAddress) []*pb.NodeAddress {
	out := make([]*pb.NodeAddress, 0, len(in))
	for _, a := range in {
		if t, ok := addressTypes[a.Type]; ok {
			out = append(out, &pb.NodeAddress{Type: t, Address: a.Address})
		}
	}
	return out
}

func fromAddresses(in []*pb.NodeAddress) []v1.NodeAddress {
	out := make([]v1.NodeAddress, 0, len(in))
	for _, a := range in {
		if t, ok := kubeAddressTypes[a.GetType()]; ok {
			out = append(out, v1.NodeAddress{Type: t, Address: a.GetAddress()})
		}
	}
	return out
}

func toNodeRef(n *v1.Node) *pb.NodeRef {
	return &pb.NodeRef{
		Name:        n.Name,
		ProviderId:  n.Spec.ProviderID,
		Addresses:   toAddresses(n.Status.Addresses),
		Labels:      n.Labels,
		Uid:         string(n.UID),
		Annotations: n.Annotations,
	}
}

func toNodeRefs(nodes []*v1.Node) []*pb.NodeRef {
	out := make([]*pb.NodeRef, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, toNodeRef(n))
	}
	return out
}

var protocols = map[v1.Protocol]pb.Protocol{v1.ProtocolTCP: pb.Protocol_PROTOCOL_TCP, v1.ProtocolUDP: pb.Protocol_PROTOCOL_UDP, v1.ProtocolSCTP: pb.Protocol_PROTOCOL_SCTP}

var ipFamilies = map[v1.IPFamily]pb.IpFamily{v1.IPv4Protocol: pb.IpFamily_IP_FAMILY_IPV4, v1.IPv6Protocol: pb.IpFamily_IP_FAMILY_IPV6}

func toServiceRef(s *v1.Service) *pb.ServiceRef {
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
		ref.Ports = append(ref.Ports, port)
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

func fromLBStatus(in *pb.LoadBalancerStatus) *v1.LoadBalancerStatus {
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
			ps := v1.PortStatus{Port: p.GetPort()}
			for k, v := range protocols {
				if v == p.GetProtocol() {
					ps.Protocol = k
				}
			}
			if e := p.GetError(); e != "" {
				ps.Error = &e
			}
			i.Ports = append(i.Ports, ps)
		}
		out.Ingress = append(out.Ingress, i)
	}
	return out
}
