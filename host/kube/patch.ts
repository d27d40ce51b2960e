/**
 * PATCH requests with an explicit patch type (the facades default to a JSON
 * patch, as client-node's generated clients do).
 */
import type { V1Node, V1Service } from '@kubernetes/client-node';
import type { CallOptions, CoreV1Api, PatchType } from './api.js';
import { isConflict, isNotFound } from './client.js';

export type { PatchType } from './api.js';

/**
 * Per-call options that make a facade `patch*` call send `type`'s
 * Content-Type; pass as the second argument, e.g.
 * `core.patchPersistentVolume({ name, body }, patchOptions('merge'))`.
 */
export function patchOptions(type: PatchType): CallOptions {
  return { patchType: type };
}

/**
 * Patches a Node's spec/metadata. To make the patch conditional, include
 * `metadata.resourceVersion` in a merge/strategic patch (the server then
 * answers 409 Conflict if the node changed). The answer is not decoded (no
 * caller reads it; the informer brings the new node).
 */
export async function patchNode(core: CoreV1Api, name: string, patch: unknown, type: PatchType): Promise<void> {
  await core.patchNode({ name, body: patch }, { patchType: type, discardAnswer: true });
}

/** Patches a Node's status subresource (addresses, conditions, …). */
export function patchNodeStatus(core: CoreV1Api, name: string, patch: unknown, type: PatchType): Promise<V1Node> {
  return core.patchNodeStatus({ name, body: patch }, patchOptions(type));
}

/** Patches a Service's metadata/spec (e.g. finalizers with a strategic merge patch). */
export function patchService(core: CoreV1Api, namespace: string, name: string, patch: unknown, type: PatchType): Promise<V1Service> {
  return core.patchNamespacedService({ namespace, name, body: patch }, patchOptions(type));
}

/** Patches a Service's status subresource (e.g. `status.loadBalancer`). */
export function patchServiceStatus(core: CoreV1Api, namespace: string, name: string, patch: unknown, type: PatchType): Promise<V1Service> {
  return core.patchNamespacedServiceStatus({ namespace, name, body: patch }, patchOptions(type));
}

/** Patches a core/v1 Event (used to bump `count`/`lastTimestamp` of an aggregated event); the answer is not decoded. */
export async function patchEvent(core: CoreV1Api, namespace: string, name: string, patch: unknown, type: PatchType): Promise<void> {
  await core.patchNamespacedEvent({ namespace, name, body: patch }, { patchType: type, discardAnswer: true });
}

/** Conflicts a conditional Node write retries before giving up (the caller's own retry takes over). */
const CONFLICT_ATTEMPTS = 5;

/**
 * A conditional merge patch of a Node that is recomputed on conflict: `plan`
 * gets the node (first the cached one, after a 409 Conflict the one re-read
 * from the API server) and returns the patch body, or undefined when the node
 * needs nothing. The patch carries the node's resourceVersion, so it applies
 * only to the node `plan` saw. Resolves true when it was written, false when
 * nothing was needed or the node is gone; rejects with the API error, also
 * after CONFLICT_ATTEMPTS conflicts. `onConflict` is told of each retry.
 */
export async function patchNodeConditionally(
  core: CoreV1Api,
  cached: V1Node,
  plan: (node: V1Node) => { metadata?: Record<string, unknown>; spec?: Record<string, unknown> } | undefined,
  onConflict: (attempt: number) => void = () => undefined,
): Promise<boolean> {
  const name = cached.metadata!.name!;
  let node = cached;
  for (let attempt = 1; ; attempt++) {
    const body = plan(node);
    if (!body) return false;
    const patch = { ...body, metadata: { ...body.metadata, resourceVersion: node.metadata?.resourceVersion } };
    try {
      await patchNode(core, name, patch, 'merge');
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= CONFLICT_ATTEMPTS) throw err;
      onConflict(attempt);
      try {
        node = await core.readNode({ name });
      } catch (readErr) {
        if (isNotFound(readErr)) return false;
        throw readErr;
      }
    }
  }
}
