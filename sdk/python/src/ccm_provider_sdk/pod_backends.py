"""Pod-IP backends (protocol 1.1, CAPABILITY_LOAD_BALANCER_POD_BACKENDS): what the
host sent in ServiceRef.endpoints and ServiceRef.pod_backends, and the backends of
one Service port with trafficDistribution PreferClose applied. Declare the
capability with Info(load_balancer_pod_backends=True)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class PodTarget:
    """One backend of a listener: where to send a connection."""

    address: str
    port: int
    zone: str
    node_name: str


def has_pod_backends(svc) -> bool:
    """Whether the host sent pod backends for the Service (pod_backends set). False: node
    ports, as before. True with no endpoints: no ready or serving endpoint now."""
    return svc.HasField("pod_backends")


def pod_targets(svc, protocol: int, service_port: int, zone: str = "") -> list:
    """The targets of the Service port (protocol, service_port): each endpoint's first
    address with the port its slice maps that Service port to (endpoints mapping none are
    skipped). With PreferClose and a zone, only the endpoints in zone when there is any."""
    out = []
    for e in svc.endpoints:
        if not e.addresses:
            continue
        for p in e.ports:
            if p.protocol == protocol and p.service_port == service_port:
                out.append(PodTarget(e.addresses[0], p.port, e.zone, e.node_name))
                break
    if svc.pod_backends.traffic_distribution != "PreferClose" or not zone:
        return out
    close = [t for t in out if t.zone == zone]
    return close or out
