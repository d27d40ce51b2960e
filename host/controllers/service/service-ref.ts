/**
 * Conversion of a Kubernetes Service into the cloud layer's ServiceRef, and
 * comparison of load balancer ingress lists.
 */
import type { V1LoadBalancerIngress, V1Service } from '@kubernetes/client-node';
import type { LbIngress, LbProtocol, ServiceRef } from '../../cloud-load-balancers.js';

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

/**
 * The ServiceRef of `svc`, and the problems that make it unfit for
 * EnsureLoadBalancer (empty = fine). Deletion uses the ref even with
 * problems: a bad spec must never keep a load balancer alive.
 */
export function toServiceRef(svc: V1Service): { ref: ServiceRef; problems: string[] } {
  const problems: string[] = [];
  const s = svc.spec ?? {};
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
    return [{ name: p.name ?? '', protocol: protocol as LbProtocol, port: p.port, nodePort, appProtocol: p.appProtocol ?? '' }];
  });
  if (ports.length === 0 && problems.length === 0) problems.push('the Service has no ports');
  const ref: ServiceRef = {
    uid: svc.metadata?.uid ?? '',
    namespace: svc.metadata?.namespace ?? '',
    name: svc.metadata?.name ?? '',
    annotations: { ...(svc.metadata?.annotations ?? {}) },
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
  };
  if (!ref.uid) problems.push('the Service has no uid');
  return { ref, problems };
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
