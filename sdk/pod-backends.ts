/**
 * Pod-IP backends (protocol 1.1, CAPABILITY_LOAD_BALANCER_POD_BACKENDS) for
 * providers: what the host sent in ServiceRef.endpoints and
 * ServiceRef.pod_backends, and the backends of one Service port, with
 * trafficDistribution PreferClose applied. Declare the capability with
 * `info.loadBalancerPodBackends: true`.
 */
import type { EndpointBackend, Protocol, ServiceRef } from '../proto/gen/ccm/provider/v1/load_balancers.js';

/** The pod backends of a Service, when the host sends them. */
export interface PodBackendsView {
  /** The endpoints, as the host sent them (ready ones, or serving terminating ones when none is ready). */
  endpoints: EndpointBackend[];
  /** spec.trafficDistribution ('' when unset). */
  trafficDistribution: string;
  /** Endpoints the host left out beyond its bound (1,000). */
  omittedEndpoints: number;
}

/** One backend of a listener: where to send a connection. */
export interface PodTarget {
  address: string;
  port: number;
  zone: string;
  nodeName: string;
}

/**
 * The Service's pod backends, or undefined when the host sends none for it
 * (pod_backends unset): the load balancer then uses node ports, as before.
 * Defined with no endpoints: the Service asks for pod backends and has no
 * ready or serving endpoint now (the load balancer has no backend).
 */
export function podBackendsOf(svc: ServiceRef): PodBackendsView | undefined {
  if (!svc.podBackends) return undefined;
  return { endpoints: svc.endpoints, trafficDistribution: svc.podBackends.trafficDistribution, omittedEndpoints: svc.podBackends.omittedEndpoints };
}

/**
 * The targets of the Service port (`protocol`, `servicePort`): each
 * endpoint's first address with the port its slice maps that Service port
 * to (endpoints that map none are skipped). With trafficDistribution
 * PreferClose and `zone` given, only the endpoints in `zone` when there is
 * any (else all), as kube-proxy does.
 */
export function podTargets(view: PodBackendsView, protocol: Protocol, servicePort: number, zone?: string): PodTarget[] {
  const all = view.endpoints.flatMap((e) => {
    const p = e.ports.find((x) => x.protocol === protocol && x.servicePort === servicePort);
    const address = e.addresses[0];
    return p && address ? [{ address, port: p.port, zone: e.zone, nodeName: e.nodeName }] : [];
  });
  if (view.trafficDistribution !== 'PreferClose' || !zone) return all;
  const close = all.filter((t) => t.zone === zone);
  return close.length > 0 ? close : all;
}
