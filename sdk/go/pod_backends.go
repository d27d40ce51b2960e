package ccmsdk

import (
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
)

// PodTarget is one backend of a load balancer listener with pod-IP backends
// (protocol 1.1): where to send a connection.
type PodTarget struct {
	Address  string
	Port     int32
	Zone     string
	NodeName string
}

// HasPodBackends reports whether the host sent pod backends for the Service
// (ServiceRef.PodBackends set). False: the load balancer uses node ports, as
// before. True with no endpoints: the Service has no ready or serving
// endpoint now (the load balancer has no backend).
func HasPodBackends(svc *pb.ServiceRef) bool {
	return svc.GetPodBackends() != nil
}

// PodTargets returns the targets of one Service port (protocol, servicePort):
// each endpoint's first address with the port its slice maps that Service
// port to (endpoints that map none are skipped). With trafficDistribution
// PreferClose and a non-empty zone, only the endpoints in zone when there is
// any (else all), as kube-proxy does.
func PodTargets(svc *pb.ServiceRef, protocol pb.Protocol, servicePort int32, zone string) []PodTarget {
	var all []PodTarget
	for _, e := range svc.GetEndpoints() {
		if len(e.GetAddresses()) == 0 {
			continue
		}
		for _, p := range e.GetPorts() {
			if p.GetProtocol() == protocol && p.GetServicePort() == servicePort {
				all = append(all, PodTarget{Address: e.GetAddresses()[0], Port: p.GetPort(), Zone: e.GetZone(), NodeName: e.GetNodeName()})
				break
			}
		}
	}
	if svc.GetPodBackends().GetTrafficDistribution() != "PreferClose" || zone == "" {
		return all
	}
	var close []PodTarget
	for _, t := range all {
		if t.Zone == zone {
			close = append(close, t)
		}
	}
	if len(close) > 0 {
		return close
	}
	return all
}
