/** Conversion of a Kubernetes Node into the cloud layer's NodeRef. */
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
