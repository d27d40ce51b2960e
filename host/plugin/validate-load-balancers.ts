/**
 * Validation of load balancer answers before they can become a Service's
 * status.loadBalancer (the API server would reject some of these, and others
 * it would store and mislead users and kube-proxy).
 */
import type { LbIngress, LbStatus } from '../cloud-load-balancers.js';
import { dnsNameProblem, ipProblem } from './validate.js';

/** At most this many ingress points (the protocol's limit). */
const MAX_INGRESS = 64;
/** A port status error reason: CamelCase, at most 316 characters (the API server's limit). */
const PORT_ERROR = /^[A-Z][A-Za-z0-9]{0,315}$/;

/** Problems of a load balancer status (empty = valid). */
export function lbStatusProblems(s: LbStatus): string[] {
  const problems: string[] = [];
  if (s.ingress.length > MAX_INGRESS) return [`${s.ingress.length} ingress points, at most ${MAX_INGRESS} allowed`];
  s.ingress.forEach((ing, i) => problems.push(...ingressProblems(ing).map((p) => `ingress[${i}]: ${p}`)));
  return problems;
}

function ingressProblems(ing: LbIngress): string[] {
  const problems: string[] = [];
  if (!ing.ip && !ing.hostname) problems.push('neither ip nor hostname is set');
  if (ing.ip) {
    const p = ipProblem(ing.ip);
    if (p) problems.push(`ip: ${p}`);
  }
  if (ing.hostname) {
    const p = dnsNameProblem(ing.hostname);
    if (p) problems.push(`hostname: ${p}`);
    else if (ipProblem(ing.hostname) === undefined) problems.push('hostname must not be an IP address');
  }
  // Kubernetes requires ipMode only with an ip.
  if (ing.ipMode && !ing.ip) problems.push('ipMode is set without an ip');
  const seen = new Set<string>();
  for (const p of ing.ports ?? []) {
    if (!(Number.isInteger(p.port) && p.port >= 1 && p.port <= 65535)) problems.push(`port ${p.port} is outside 1..65535`);
    if (p.error !== undefined && !PORT_ERROR.test(p.error))
      problems.push(`port ${p.port} error ${JSON.stringify(p.error.slice(0, 40))} is not a CamelCase reason`);
    const key = `${p.protocol}/${p.port}`;
    if (seen.has(key)) problems.push(`port ${key} is listed twice`);
    seen.add(key);
  }
  return problems;
}

/** A Kubernetes namespace or Service name (DNS-1123 label). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A uid: printable ASCII without spaces, as Kubernetes generates them (UUIDs). */
const UID = /^[\x21-\x7e]{1,128}$/;

/** Problems of one ListLoadBalancers entry for the cluster `clusterName` (empty = valid). */
export function lbSummaryProblems(
  lb: { name: string; clusterName: string; serviceUid: string; serviceNamespace: string; serviceName: string; clusterUid?: string },
  clusterName: string,
): string[] {
  const problems: string[] = [];
  if (!/^[\x20-\x7e]{1,255}$/.test(lb.name)) problems.push('name must be 1..255 printable ASCII characters');
  if (lb.clusterName !== clusterName)
    problems.push(`cluster_name ${JSON.stringify(lb.clusterName.slice(0, 64))} is not ${JSON.stringify(clusterName)}`);
  if (!UID.test(lb.serviceUid)) problems.push('service_uid must be 1..128 printable ASCII characters without spaces');
  if (lb.clusterUid && !UID.test(lb.clusterUid)) problems.push('cluster_uid must be empty or 1..128 printable ASCII characters without spaces');
  if (!DNS_LABEL.test(lb.serviceNamespace))
    problems.push(`service_namespace ${JSON.stringify(lb.serviceNamespace.slice(0, 64))} is not a namespace name`);
  if (!DNS_LABEL.test(lb.serviceName)) problems.push(`service_name ${JSON.stringify(lb.serviceName.slice(0, 64))} is not a Service name`);
  return problems;
}
