/**
 * Conversion of a Kubernetes Service into the cloud layer's ServiceRef, and
 * comparison of load balancer ingress lists.
 */
import { isIP } from 'node:net';
import type { V1LoadBalancerIngress, V1Service } from '@kubernetes/client-node';
import type { LbIngress, LbProtocol, LbServicePort, ServiceRef } from '../../cloud-load-balancers.js';
import { Annotations } from '../../names.js';

/**
 * Bounds of the ServiceRef fields the protocol limits
 * (proto/ccm/provider/v1/load_balancers.proto, ServiceRef).
 */
export const SERVICE_REF_BOUNDS = { selector: 64, clusterIps: 2, externalIps: 64, ingress: 64, ingressPorts: 64 } as const;

const FAMILY_POLICIES: ReadonlySet<string> = new Set(['SingleStack', 'PreferDualStack', 'RequireDualStack']);

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

/**
 * The ServiceRef of `svc`, and the problems that make it unfit for
 * EnsureLoadBalancer (empty = fine). Deletion uses the ref even with
 * problems: a bad spec must never keep a load balancer alive.
 */
export function toServiceRef(svc: V1Service): { ref: ServiceRef; problems: string[] } {
  const problems: string[] = [];
  const s = svc.spec ?? {};
  const B = SERVICE_REF_BOUNDS;
  const ports = (s.ports ?? []).flatMap((p) => {
    const protocol = p.protocol ?? 'TCP';
    if (!PROTOCOLS.has(protocol)) {
      problems.push(`port ${p.port} has unsupported protocol ${JSON.stringify(protocol)}`);
      return [];
    }
    if (!(Number.isInteger(p.port) && p.port >= 1 && p.port <= 65535)) {
      problems.push(`port ${p.port} is outside 1..65535`);
      return [];
    }
    const nodePort = p.nodePort ?? 0;
    if (!(Number.isInteger(nodePort) && nodePort >= 0 && nodePort <= 65535)) {
      problems.push(`nodePort ${nodePort} of port ${p.port} is outside 0..65535`);
      return [];
    }
    const port: LbServicePort = { name: p.name ?? '', protocol: protocol as LbProtocol, port: p.port, nodePort, appProtocol: p.appProtocol ?? '' };
    const targetPort = targetPortOf(p.targetPort);
    if (targetPort !== undefined) port.targetPort = targetPort;
    return [port];
  });
  if (ports.length === 0 && problems.length === 0) problems.push('the Service has no ports');
  const ref: ServiceRef = {
    uid: svc.metadata?.uid ?? '',
    namespace: svc.metadata?.namespace ?? '',
    name: svc.metadata?.name ?? '',
    annotations: withoutMakerAnnotations(svc.metadata?.annotations),
    labels: { ...(svc.metadata?.labels ?? {}) },
    ports,
    loadBalancerIp: s.loadBalancerIP ?? '',
    loadBalancerSourceRanges: [...(s.loadBalancerSourceRanges ?? [])],
    ipFamilies: (s.ipFamilies ?? []).filter((f): f is 'IPv4' | 'IPv6' => f === 'IPv4' || f === 'IPv6'),
    externalTrafficPolicy: s.externalTrafficPolicy === 'Local' ? 'Local' : 'Cluster',
    healthCheckNodePort: s.healthCheckNodePort ?? 0,
    sessionAffinity: s.sessionAffinity === 'ClientIP' ? 'ClientIP' : 'None',
    sessionAffinityTimeoutSeconds: s.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? 0,
    loadBalancerClass: s.loadBalancerClass ?? '',
    selector: Object.keys(s.selector ?? {}).length <= B.selector ? { ...(s.selector ?? {}) } : {},
    clusterIps: (s.clusterIPs?.length ? s.clusterIPs : s.clusterIP && s.clusterIP !== 'None' ? [s.clusterIP] : [])
      .filter((ip) => isIP(ip) !== 0)
      .slice(0, B.clusterIps),
    ipFamilyPolicy: s.ipFamilyPolicy && FAMILY_POLICIES.has(s.ipFamilyPolicy) ? (s.ipFamilyPolicy as ServiceRef['ipFamilyPolicy']) : undefined,
    externalIps: (s.externalIPs ?? []).slice(0, B.externalIps),
    allocateLoadBalancerNodePorts: s.allocateLoadBalancerNodePorts,
    internalTrafficPolicy: s.internalTrafficPolicy === 'Local' ? 'Local' : s.internalTrafficPolicy === 'Cluster' ? 'Cluster' : undefined,
    status: { ingress: currentIngress(svc) },
  };
  if (!ref.uid) problems.push('the Service has no uid');
  return { ref, problems };
}

/** The Service's annotations without the host's own record of the maker (lb-owner.ts): the provider sees what the user wrote. */
function withoutMakerAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  const out = { ...(annotations ?? {}) };
  delete out[Annotations.LB_PROVIDER];
  delete out[Annotations.LB_CLASS];
  return out;
}

/** spec.ports[].targetPort as a number (1..65535) or a port name; undefined when unset or neither. */
function targetPortOf(v: unknown): number | string | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 1 && v <= 65535 ? v : undefined;
  if (typeof v !== 'string' || v === '') return undefined;
  // The API returns an IntOrString; a digits-only string is a number (a port name has a letter).
  if (/^[0-9]+$/.test(v)) return targetPortOf(Number(v));
  return v.length <= 15 ? v : undefined;
}

/** The Service's status.loadBalancer.ingress, within SERVICE_REF_BOUNDS, in the cloud layer's shape. */
function currentIngress(svc: V1Service): LbIngress[] {
  const B = SERVICE_REF_BOUNDS;
  return (svc.status?.loadBalancer?.ingress ?? []).slice(0, B.ingress).map((i) => {
    const out: LbIngress = {};
    if (i.ip) out.ip = i.ip;
    if (i.hostname) out.hostname = i.hostname;
    if (i.ipMode === 'VIP' || i.ipMode === 'Proxy') out.ipMode = i.ipMode;
    const ports = (i.ports ?? []).filter((p) => PROTOCOLS.has(p.protocol)).slice(0, B.ingressPorts);
    if (ports.length)
      out.ports = ports.map((p) =>
        p.error ? { port: p.port, protocol: p.protocol as LbProtocol, error: p.error } : { port: p.port, protocol: p.protocol as LbProtocol },
      );
    return out;
  });
}

/** An ingress list in canonical form: empty fields dropped, so equal meanings compare equal. */
function canonical(list: (V1LoadBalancerIngress | LbIngress)[] | undefined): string {
  return JSON.stringify(
    (list ?? []).map((i) => ({
      ip: i.ip || undefined,
      hostname: i.hostname || undefined,
      ipMode: i.ipMode || undefined,
      ports: i.ports?.length ? i.ports.map((p) => ({ port: p.port, protocol: p.protocol, error: p.error || undefined })) : undefined,
    })),
  );
}

/** Whether two ingress lists mean the same (upstream LoadBalancerStatusEqual on ingress). */
export function ingressEqual(a: (V1LoadBalancerIngress | LbIngress)[] | undefined, b: (V1LoadBalancerIngress | LbIngress)[] | undefined): boolean {
  return canonical(a) === canonical(b);
}
