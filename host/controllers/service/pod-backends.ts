/**
 * Pod-IP backends (protocol 1.1, issue 33 item 4): a Service's endpoints,
 * from its EndpointSlices, as the ServiceRef.endpoints a provider with
 * CAPABILITY_LOAD_BALANCER_POD_BACKENDS receives for a Service that asks for
 * them (annotation service.ccm.dev/load-balancer-backends: pods).
 *
 * Why an annotation the host reads, rather than always when declared or a
 * key under each provider's prefix: the host must know which Services need
 * endpoints before it calls anyone, because every endpoint change of such a
 * Service costs an EnsureLoadBalancer. Sending endpoints for every Service of
 * a declaring provider would turn each pod rollout in the cluster into cloud
 * calls; a provider-specific key (AWS's `target-type: ip`) would need the
 * host to learn each provider's key. One key, the same for every provider,
 * keeps the choice the user's and the cost where it is asked for.
 *
 * Pure functions on Kubernetes objects plus the EndpointSlice informer spec;
 * the service controller (service-controller.ts) watches and enqueues.
 */
import { isIP } from 'node:net';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { EndpointBackendRef, EndpointPortRef, LbProtocol, PodBackendSet } from '../../cloud-load-balancers.js';
import type { ResourceSpec } from '../../kube/informer-factory.js';
import type { ListResult } from '../../kube/informer.js';
import { Annotations, Labels } from '../../names.js';

/** Most endpoints sent per Service (ServiceRef.endpoints); the rest are counted in omittedEndpoints. */
export const MAX_POD_BACKENDS = 1000;
/** Most addresses per endpoint (EndpointBackend.addresses). */
const MAX_ENDPOINT_ADDRESSES = 16;

/** EndpointSlices of Services (label kubernetes.io/service-name), for the shared informer factory (honours --watch-namespace). */
export const ENDPOINT_SLICES: ResourceSpec<V1EndpointSlice> = {
  name: 'endpointslices',
  path: '/apis/discovery.k8s.io/v1/endpointslices',
  namespacedPath: (ns) => `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/endpointslices`,
  labelSelector: Labels.SERVICE_NAME,
  list: (c, a) =>
    c.rest.request<ListResult<V1EndpointSlice>>(
      'GET',
      a.namespace
        ? `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(a.namespace)}/endpointslices`
        : '/apis/discovery.k8s.io/v1/endpointslices',
      { query: { labelSelector: a.labelSelector } },
    ),
};

/** Whether the Service asks for pod backends (annotation value `pods`, any case). */
export function wantsPodBackends(svc: V1Service): boolean {
  return /^pods$/i.test(svc.metadata?.annotations?.[Annotations.LB_BACKENDS]?.trim() ?? '');
}

/** The key of the Service an EndpointSlice belongs to; undefined without the label. */
export function serviceKeyOfSlice(slice: V1EndpointSlice): string | undefined {
  const name = slice.metadata?.labels?.[Labels.SERVICE_NAME];
  const ns = slice.metadata?.namespace;
  return name && ns ? `${ns}/${name}` : undefined;
}

/** What of a slice the pod backends depend on: an update that leaves this alone causes no ensure. */
export function sliceSignature(slice: V1EndpointSlice | undefined): string {
  if (!slice) return '';
  return JSON.stringify([
    slice.addressType,
    serviceKeyOfSlice(slice) ?? '',
    (slice.ports ?? []).map((p) => [p.name ?? '', p.protocol ?? 'TCP', p.port ?? 0]),
    (slice.endpoints ?? []).map((e) => [
      e.addresses,
      e.conditions?.ready ?? null,
      e.conditions?.serving ?? null,
      e.conditions?.terminating ?? null,
      e.nodeName ?? '',
      e.zone ?? '',
      e.targetRef?.kind === 'Pod' ? `${e.targetRef.namespace ?? ''}/${e.targetRef.name ?? ''}` : '',
    ]),
  ]);
}

/** What of a Service its pod backends depend on beyond the slices (compared on Service updates). */
export function podBackendsInput(svc: V1Service): string {
  return wantsPodBackends(svc) ? `pods|${svc.spec?.trafficDistribution ?? ''}` : '';
}

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

/**
 * The pod backends of `svc` from its `slices` (every address family; FQDN
 * slices are ignored): the ready endpoints, else the serving terminating
 * ones (kube-proxy's fallback), one per distinct first address, sorted by
 * it, at most MAX_POD_BACKENDS (the rest counted). Each endpoint maps each
 * Service port to its slice's port of the same name and protocol; an
 * endpoint that maps no port of the Service is left out. Deterministic:
 * the same slices give the same set (providers may compare it).
 */
export function podBackendsOf(svc: V1Service, slices: readonly V1EndpointSlice[]): PodBackendSet {
  const servicePorts = (svc.spec?.ports ?? []).filter((p) => PROTOCOLS.has(p.protocol ?? 'TCP'));
  const all = new Map<string, EndpointBackendRef>();
  for (const slice of slices) {
    const family = slice.addressType === 'IPv4' ? 'IPv4' : slice.addressType === 'IPv6' ? 'IPv6' : undefined;
    if (!family) continue;
    const ports: EndpointPortRef[] = servicePorts.flatMap((sp) => {
      const protocol = (sp.protocol ?? 'TCP') as LbProtocol;
      const match = (slice.ports ?? []).find((p) => (p.name ?? '') === (sp.name ?? '') && (p.protocol ?? 'TCP') === protocol);
      const port = match?.port;
      return port !== undefined && Number.isInteger(port) && port >= 1 && port <= 65535
        ? [{ name: sp.name ?? '', servicePort: sp.port, protocol, port }]
        : [];
    });
    if (ports.length === 0) continue;
    for (const e of slice.endpoints ?? []) {
      const want = family === 'IPv4' ? 4 : 6;
      const addresses = (e.addresses ?? []).filter((a) => isIP(a) === want).slice(0, MAX_ENDPOINT_ADDRESSES);
      if (addresses.length === 0 || all.has(addresses[0]!)) continue;
      // As the EndpointSlice API documents: unset ready means ready, unset serving means ready's value.
      const ready = e.conditions?.ready ?? true;
      const serving = e.conditions?.serving ?? ready;
      const terminating = e.conditions?.terminating ?? false;
      all.set(addresses[0]!, {
        addresses,
        ipFamily: family,
        ports,
        ready,
        serving,
        terminating,
        nodeName: e.nodeName ?? '',
        zone: e.zone ?? '',
        pod: e.targetRef?.kind === 'Pod' && e.targetRef.name ? `${e.targetRef.namespace ?? slice.metadata?.namespace ?? ''}/${e.targetRef.name}` : '',
      });
    }
  }
  const candidates = [...all.values()];
  let chosen = candidates.filter((e) => e.ready);
  if (chosen.length === 0) chosen = candidates.filter((e) => e.serving && e.terminating);
  chosen.sort((a, b) => (a.addresses[0]! < b.addresses[0]! ? -1 : a.addresses[0]! > b.addresses[0]! ? 1 : 0));
  return {
    endpoints: chosen.slice(0, MAX_POD_BACKENDS),
    trafficDistribution: svc.spec?.trafficDistribution ?? '',
    omittedEndpoints: Math.max(0, chosen.length - MAX_POD_BACKENDS),
  };
}
