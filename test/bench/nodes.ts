/**
 * The Nodes the bench creates, as a kubelet with --cloud-provider=external
 * registers them: the uninitialized taint and a hostname address, nothing a
 * cloud would fill in.
 */
import type { V1Node } from '@kubernetes/client-node';

export const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
/** The label that keeps a Node out of load balancers' backends. */
export const EXCLUDE_LB = 'node.kubernetes.io/exclude-from-external-load-balancers';

/** A new Node's body: `labels`, the uninitialized taint, its name as its Hostname address. */
export function uninitializedNode(name: string, labels: Record<string, string>): V1Node {
  return {
    metadata: { name, labels },
    spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
    status: { addresses: [{ type: 'Hostname', address: name }] },
  };
}

/** Whether the cloud node controller has removed the uninitialized taint. */
export const initialized = (n: { spec?: { taints?: { key: string }[] } }): boolean => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);
