/**
 * Adds or removes one taint on a Node with a conditional merge patch (the
 * cached resourceVersion as precondition), re-reading the Node from the API
 * server and trying again on conflict, as upstream's AddOrUpdateTaintOnNode
 * and RemoveTaintOffNode retry on conflict. Never writes when the taint is
 * already as wanted.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import { patchNodeConditionally } from '../../kube/patch.js';
import { hasTaint } from '../node-ref.js';

/**
 * Makes `taint` present (`want` = true) or absent (matched by key) on the
 * node. Returns false when nothing was written (already so, or the node is
 * gone). Rejects with the API error after repeated conflicts.
 */
export function setTaint(core: CoreV1Api, cached: V1Node, taint: V1Taint, want: boolean): Promise<boolean> {
  return patchNodeConditionally(core, cached, (node) => {
    if (hasTaint(node, taint.key) === want) return undefined;
    const others = (node.spec?.taints ?? []).filter((t) => t.key !== taint.key);
    return { spec: { taints: want ? [...others, taint] : others } };
  });
}
