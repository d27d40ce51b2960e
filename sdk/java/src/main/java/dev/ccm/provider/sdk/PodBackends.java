package dev.ccm.provider.sdk;

import dev.ccm.provider.v1.EndpointBackend;
import dev.ccm.provider.v1.EndpointPort;
import dev.ccm.provider.v1.Protocol;
import dev.ccm.provider.v1.ServiceRef;
import java.util.ArrayList;
import java.util.List;

/**
 * Pod-IP backends (protocol 1.1, CAPABILITY_LOAD_BALANCER_POD_BACKENDS,
 * declared with {@link Info#withLoadBalancerPodBackends}): what the host sent
 * in ServiceRef.endpoints and ServiceRef.pod_backends, and the backends of one
 * Service port with trafficDistribution PreferClose applied (the Go SDK's
 * PodTargets, the Python SDK's pod_targets).
 */
public final class PodBackends {
  private PodBackends() {}

  /** One backend of a listener: where to send a connection. */
  public record Target(String address, int port, String zone, String nodeName) {}

  /**
   * Whether the host sent pod backends for the Service (pod_backends set).
   * False: the load balancer uses node ports, as before. True with no
   * endpoints: the Service has no ready or serving endpoint now (the load
   * balancer has no backend).
   */
  public static boolean has(ServiceRef svc) {
    return svc.hasPodBackends();
  }

  /**
   * The targets of one Service port (protocol, servicePort): each endpoint's
   * first address with the port its slice maps that Service port to
   * (endpoints that map none are skipped). With trafficDistribution
   * PreferClose and a non-empty zone, only the endpoints in zone when there
   * is any (else all), as kube-proxy does. Pure.
   */
  public static List<Target> targets(ServiceRef svc, Protocol protocol, int servicePort, String zone) {
    List<Target> all = new ArrayList<>();
    for (EndpointBackend e : svc.getEndpointsList()) {
      if (e.getAddressesCount() == 0) continue;
      for (EndpointPort p : e.getPortsList()) {
        if (p.getProtocol() == protocol && p.getServicePort() == servicePort) {
          all.add(new Target(e.getAddresses(0), p.getPort(), e.getZone(), e.getNodeName()));
          break;
        }
      }
    }
    if (!"PreferClose".equals(svc.getPodBackends().getTrafficDistribution()) || zone == null || zone.isEmpty()) return all;
    List<Target> close = all.stream().filter(t -> t.zone().equals(zone)).toList();
    return close.isEmpty() ? all : close;
  }
}
