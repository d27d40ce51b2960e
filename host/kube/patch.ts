/**
 * PATCH requests with an explicit patch type (the facades default to a JSON
 * patch, as client-node's generated clients do).
 */
import type { CoreV1Event, V1Node, V1Service } from '@kubernetes/client-node';
import type { CallOptions, CoreV1Api, PatchType } from './api.js';

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
 * answers 409 Conflict if the node changed).
 */
export function patchNode(core: CoreV1Api, name: string, patch: unknown, type: PatchType): Promise<V1Node> {
  return core.patchNode({ name, body: patch }, patchOptions(type));
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

/** Patches a core/v1 Event (used to bump `count`/`lastTimestamp` of an aggregated event). */
export function patchEvent(core: CoreV1Api, namespace: string, name: string, patch: unknown, type: PatchType): Promise<CoreV1Event> {
  return core.patchNamespacedEvent({ namespace, name, body: patch }, patchOptions(type));
}
