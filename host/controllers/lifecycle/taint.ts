/**
 * Adds or removes one taint on a Node with a conditional merge patch (the
 * cached resourceVersion as precondition), re-reading the Node from the API
 * server and trying again on conflict, as upstream's AddOrUpdateTaintOnNode
 * and RemoveTaintOffNode retry on conflict. Never writes when the taint is
 * already as wanted.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import { isConflict, isNotFound } from '../../kube/client.js';
import { patchNode } from '../../kube/patch.js';

/** Attempts before a conflict is given up on (the next tick tries again). */
const CONFLICT_ATTEMPTS = 5;

export function hasTaint(node: V1Node, key: string): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === key);
}

/**
 * Makes `taint` present (`want` = true) or absent (matched by key) on the
 * node. Returns false when nothing was written (already so, or the node is
 * gone). Rejects with the API error after repeated conflicts.
 */
export async function setTaint(core: CoreV1Api, cached: V1Node, taint: V1Taint, want: boolean): Promise<boolean> {
  const name = cached.metadata!.name!;
  let node = cached;
  for (let attempt = 1; ; attempt++) {
    if (hasTaint(node, taint.key) === want) return false;
    const others = (node.spec?.taints ?? []).filter((t) => t.key !== taint.key);
    const taints = want ? [...others, taint] : others;
    try {
      await patchNode(core, name, { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints } }, 'merge');
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= CONFLICT_ATTEMPTS) throw err;
      try {
        node = await core.readNode({ name });
      } catch (readErr) {
        if (isNotFound(readErr)) return false;
        throw readErr;
      }
    }
  }
}
