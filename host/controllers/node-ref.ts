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

export function toNodeRef(node: V1Node): NodeRef {
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid,
    providerId: node.spec?.providerID ?? '',
    addresses: nodeAddresses(node),
    labels: { ...(node.metadata?.labels ?? {}) },
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
