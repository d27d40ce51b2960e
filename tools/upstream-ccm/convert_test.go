package main

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestAddressesRoundTripEveryKubernetesType(t *testing.T) {
	in := []v1.NodeAddress{
		{Type: v1.NodeHostName, Address: "n1"},
		{Type: v1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: v1.NodeExternalIP, Address: "203.0.113.1"},
		{Type: v1.NodeInternalDNS, Address: "n1.internal"},
		{Type: v1.NodeExternalDNS, Address: "n1.example.com"},
	}
	if got := fromAddresses(toAddresses(in)); !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip: got %v, want %v", got, in)
	}
}

func TestServiceRefCarriesWhatTheProviderNeeds(t *testing.T) {
	timeout := int32(60)
	class := "example.com/lb"
	s := &v1.Service{Spec: v1.ServiceSpec{
		Ports:                 []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}},
		IPFamilies:            []v1.IPFamily{v1.IPv6Protocol},
		ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal,
		HealthCheckNodePort:   32000,
		SessionAffinity:       v1.ServiceAffinityClientIP,
		SessionAffinityConfig: &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &timeout}},
		LoadBalancerClass:     &class,
	}}
	s.UID, s.Namespace, s.Name = "uid-1", "ns", "web"
	ref := toServiceRef(s)
	for name, ok := range map[string]bool{
		"identity":         ref.GetUid() == "uid-1" && ref.GetNamespace() == "ns" && ref.GetName() == "web",
		"port":             len(ref.GetPorts()) == 1 && ref.GetPorts()[0].GetNodePort() == 30080 && ref.GetPorts()[0].GetProtocol().String() == "PROTOCOL_TCP",
		"ip family":        len(ref.GetIpFamilies()) == 1 && ref.GetIpFamilies()[0].String() == "IP_FAMILY_IPV6",
		"traffic policy":   ref.GetExternalTrafficPolicy().String() == "EXTERNAL_TRAFFIC_POLICY_LOCAL" && ref.GetHealthCheckNodePort() == 32000,
		"session affinity": ref.GetSessionAffinity().String() == "SESSION_AFFINITY_CLIENT_IP" && ref.GetSessionAffinityTimeoutSeconds() == 60,
		"class":            ref.GetLoadBalancerClass() == class,
	} {
		if !ok {
			t.Errorf("%s not carried: %v", name, ref)
		}
	}
}
