/**
 * Which Services want a cloud load balancer, which need cleanup, which
 * changes need a re-ensure, and which Nodes are backends. Pure functions on
 * Kubernetes objects, following upstream kubernetes/cloud-provider
 * controllers/service (needsUpdate, stableNodeSetPredicates) except where
 * noted; which Services are ours is lb-owner.ts's.
 */
import type { V1Node, V1Service } from '@kubernetes/client-node';
import { parseGoBool } from '../../config/values.js';
import { Annotations, Finalizers, Labels, Taints } from '../../names.js';
import { hasTaint } from '../node-ref.js';

/**
 * type=LoadBalancer, of any loadBalancerClass. Which of the host's providers
 * serves it, if any, is the class resolver's business (host/lb-classes.ts,
 * lb-owner.ts); upstream's wantsLoadBalancer also requires no class.
 */
export function isLoadBalancer(svc: V1Service): boolean {
  return svc.spec?.type === 'LoadBalancer';
}

export function hasLbFinalizer(svc: V1Service): boolean {
  return (svc.metadata?.finalizers ?? []).includes(Finalizers.LB_CLEANUP);
}

/**
 * Everything a load balancer depends on, as one comparable string (upstream
 * needsUpdate's field list; ipFamilies compared in full rather than by count).
 * Labels, selector, status and traffic fields that only kube-proxy reads are
 * left out, so unrelated changes cause no cloud call.
 */
export function lbSpecSignature(svc: V1Service): string {
  const s = svc.spec ?? {};
  // The host's own record of the maker (lb-owner.ts) is no input of the load balancer.
  const annotations = Object.entries(svc.metadata?.annotations ?? {})
    .filter(([k]) => k !== Annotations.LB_PROVIDER && k !== Annotations.LB_CLASS)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([
    svc.metadata?.uid ?? '',
    s.type ?? '',
    s.loadBalancerClass ?? '',
    (s.ports ?? []).map((p) => [p.name ?? '', p.protocol ?? 'TCP', p.port, p.nodePort ?? 0, String(p.targetPort ?? ''), p.appProtocol ?? '']),
    s.loadBalancerSourceRanges ?? [],
    s.sessionAffinity ?? '',
    s.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? 0,
    s.loadBalancerIP ?? '',
    s.externalIPs ?? [],
    annotations,
    s.externalTrafficPolicy ?? '',
    s.healthCheckNodePort ?? 0,
    s.ipFamilies ?? [],
  ]);
}

/** Whether an update from `old` to `cur` needs the load balancer re-ensured. */
export function needsUpdate(old: V1Service, cur: V1Service): boolean {
  return lbSpecSignature(old) !== lbSpecSignature(cur);
}

/**
 * A backend of load balancers: not being deleted, not labelled
 * exclude-from-external-load-balancers (unless the value parses as false),
 * not still uninitialized (its addresses and providerID are not final yet:
 * this predicate is ours, upstream has none for it), not about to be removed
 * by the Cluster Autoscaler. NotReady and unschedulable nodes stay backends,
 * as upstream: health is the load balancer's health check's business.
 */
export function isBackendNode(node: V1Node): boolean {
  if (node.metadata?.deletionTimestamp) return false;
  return isIncluded(node) && !hasTaint(node, Taints.TO_BE_DELETED_BY_CA);
}

/** Not excluded by label, not uninitialized: what a node's own update is compared by (see nodeUpdateNeedsSync). */
function isIncluded(node: V1Node): boolean {
  const exclude = node.metadata?.labels?.[Labels.EXCLUDE_FROM_EXTERNAL_LBS];
  if (exclude !== undefined && parseGoBool(exclude) !== false) return false;
  return !hasTaint(node, Taints.UNINITIALIZED);
}

/** Name, providerID and IP addresses: what a load balancer uses of a backend. */
function backendFields(node: V1Node): string {
  const ips = (node.status?.addresses ?? []).filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP').map((a) => `${a.type}=${a.address}`);
  return `${node.metadata?.name ?? ''}|${node.spec?.providerID ?? ''}|${ips.join(',')}`;
}

/**
 * What of a backend node a load balancer uses: eligibility, name,
 * providerID and IP addresses. Nodes whose key did not change (heartbeats,
 * unrelated labels, conditions) cause no cloud call.
 */
export function backendKey(node: V1Node): string {
  return isBackendNode(node) ? backendFields(node) : '';
}

/** One string for a backend set (order-independent). */
export function backendSetKey(nodes: V1Node[]): string {
  return nodes.map(backendKey).sort().join('\n');
}

/**
 * Whether a node's update (not an add or delete) starts a backend sync: a
 * change of its exclusion label or providerID (upstream
 * shouldSyncUpdatedNode), of its addresses or uninitialized taint (ours).
 * The Cluster Autoscaler's taint and a deletionTimestamp do not, as upstream
 * (KEP-3458): kube-proxy's health check fails for such a node first, so the
 * load balancer drains its connections; isBackendNode drops it at the next
 * sync that anything else starts (or when the Node is gone).
 */
export function nodeUpdateNeedsSync(old: V1Node, cur: V1Node): boolean {
  const key = (n: V1Node) => (isIncluded(n) ? backendFields(n) : '');
  return key(old) !== key(cur);
}
