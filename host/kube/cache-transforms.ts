/**
 * What the shared informer caches drop from each object before keeping it
 * (client-go's informer transforms). Only fields that no controller reads
 * are dropped, and no controller writes a cached object back (every write is
 * a targeted patch), so a dropped field is never lost on the server. A new
 * controller that needs one of them must stop dropping it here.
 *
 * Fields are set to `undefined` rather than deleted, which keeps V8's fast
 * object layout.
 */
import type { KubernetesObject, V1Node } from '@kubernetes/client-node';

/**
 * Drops `metadata.managedFields` (server-side apply bookkeeping: one entry
 * per writer, often the largest part of an object). Returns `obj`.
 */
export function dropManagedFields<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields) obj.metadata.managedFields = undefined;
  return obj;
}

/**
 * Also drops what the kubelet reports about a node's workloads:
 * `status.images` (every image on the node, typically the bulk of a Node),
 * `status.volumesInUse` and `status.volumesAttached`. The controllers read a
 * Node's metadata, spec (providerID, taints, pod CIDRs, unschedulable),
 * addresses, conditions and nodeInfo only (the last ones also reach the
 * provider in every NodeRef: host/controllers/node-ref.ts). Returns `node`.
 */
export function slimNode(node: V1Node): V1Node {
  dropManagedFields(node);
  const status = node.status;
  if (status) {
    if (status.images) status.images = undefined;
    if (status.volumesInUse) status.volumesInUse = undefined;
    if (status.volumesAttached) status.volumesAttached = undefined;
  }
  return node;
}
