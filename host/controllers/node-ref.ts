/** Reading a Kubernetes Node: its addresses, taints and pod CIDRs, and the cloud layer's NodeRef of it. */
import type { V1Node } from '@kubernetes/client-node';
import type { NodeAddress, NodeAddressType, NodeRef } from '../cloud.js';

const ADDRESS_TYPES: ReadonlySet<string> = new Set(['Hostname', 'InternalIP', 'ExternalIP', 'InternalDNS', 'ExternalDNS']);

/** The Node's status.addresses, skipping types the cloud layer does not know. */
export function nodeAddresses(node: V1Node): NodeAddress[] {
  return (node.status?.addresses ?? [])
    .filter((a) => ADDRESS_TYPES.has(a.type))
    .map((a) => ({ type: a.type as NodeAddressType, address: a.address }));
}

/**
 * Bounds of what a NodeRef carries besides name, uid, providerID, addresses
 * and labels: the protocol's contract (proto/ccm/provider/v1/common.proto,
 * NodeRef), so that a Node the kubelet or a user filled without limit never
 * makes the host's requests grow with it: these fields add at most about
 * 80 KiB to a NodeRef (typical Nodes: about 1 KiB). Labels are not bounded
 * here (as before), nor is the number of nodes in a load balancer request.
 */
export const NODE_REF_BOUNDS = {
  annotations: 64,
  annotationBytes: 8 * 1024,
  podCidrs: 8,
  taints: 64,
  taintStringBytes: 316,
  conditions: 32,
  conditionStringBytes: 256,
  nodeInfoStringBytes: 256,
} as const;

/** Never forwarded: kubectl's copy of the whole applied object. */
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
/** `s` when it has at most `max` bytes, else '' (an identifier is never cut). */
const within = (s: string | undefined, max: number) => (s && bytes(s) <= max ? s : '');

/** The annotations a NodeRef carries: in key order, within NODE_REF_BOUNDS (one that does not fit is skipped). */
export function boundedAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  let used = 0;
  for (const key of Object.keys(annotations ?? {}).sort()) {
    if (count >= NODE_REF_BOUNDS.annotations) break;
    if (key === LAST_APPLIED) continue;
    const size = bytes(key) + bytes(annotations![key]!);
    if (used + size > NODE_REF_BOUNDS.annotationBytes) continue;
    out[key] = annotations![key]!;
    count++;
    used += size;
  }
  return out;
}

export function toNodeRef(node: V1Node): NodeRef {
  const B = NODE_REF_BOUNDS;
  const info = node.status?.nodeInfo;
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid,
    providerId: node.spec?.providerID ?? '',
    addresses: nodeAddresses(node),
    labels: { ...(node.metadata?.labels ?? {}) },
    annotations: boundedAnnotations(node.metadata?.annotations),
    podCidrs: podCidrsOf(node).slice(0, B.podCidrs),
    taints: (node.spec?.taints ?? [])
      .filter((t) => [t.key, t.value ?? '', t.effect].every((x) => bytes(x) <= B.taintStringBytes))
      .slice(0, B.taints)
      .map((t) => ({ key: t.key, value: t.value ?? '', effect: t.effect })),
    unschedulable: node.spec?.unschedulable === true,
    conditions: (node.status?.conditions ?? []).slice(0, B.conditions).map((c) => ({
      type: within(c.type, B.conditionStringBytes),
      status: within(c.status, B.conditionStringBytes),
      reason: within(c.reason, B.conditionStringBytes),
    })),
    nodeInfo: info
      ? {
          machineId: within(info.machineID, B.nodeInfoStringBytes),
          systemUuid: within(info.systemUUID, B.nodeInfoStringBytes),
          bootId: within(info.bootID, B.nodeInfoStringBytes),
          kernelVersion: within(info.kernelVersion, B.nodeInfoStringBytes),
          osImage: within(info.osImage, B.nodeInfoStringBytes),
          containerRuntimeVersion: within(info.containerRuntimeVersion, B.nodeInfoStringBytes),
          kubeletVersion: within(info.kubeletVersion, B.nodeInfoStringBytes),
          operatingSystem: within(info.operatingSystem, B.nodeInfoStringBytes),
          architecture: within(info.architecture, B.nodeInfoStringBytes),
        }
      : undefined,
  };
}

/** Whether the node has a taint with `key` (any value or effect). */
export function hasTaint(node: V1Node, key: string): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === key);
}

/** The node's pod CIDRs: spec.podCIDRs, or the older single spec.podCIDR. */
export function podCidrsOf(node: V1Node): string[] {
  const list = node.spec?.podCIDRs?.length ? node.spec.podCIDRs : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
  return [...list];
}
