/**
 * For tests that drive the API server with client-node: PATCH requests with
 * an explicit patch type (the host has its own, host/kube/patch.ts, over its
 * lean client). client-node (1.x) generated
 * clients always pick the first media type the endpoint accepts
 * (`application/json-patch+json`) and JSON-serialize the body as-is; the only
 * way to send a merge or strategic-merge patch is to override the
 * Content-Type header with a per-call middleware, which
 * `setHeaderOptions('Content-Type', …)` builds (appended after the client's
 * own middleware, so it wins).
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type CoreV1Api,
  type CoreV1Event,
  type V1Node,
  type V1Service,
} from '@kubernetes/client-node';

/**
 * The patch formats the API server understands for built-in types:
 * - `merge`: RFC 7386 JSON merge patch (objects merge, arrays are replaced, `null` deletes);
 * - `strategic`: strategic merge patch (lists with a merge key, e.g. node
 *   conditions by `type`, merge element-wise);
 * - `json`: RFC 6902 JSON patch (an array of operations).
 */
export type PatchType = 'merge' | 'strategic' | 'json';

const CONTENT_TYPES: Record<PatchType, PatchStrategy> = {
  merge: PatchStrategy.MergePatch,
  strategic: PatchStrategy.StrategicMergePatch,
  json: PatchStrategy.JsonPatch,
};

/**
 * Per-call options that make a client-node (1.x) `patch*` call send `type`'s
 * Content-Type; pass as the second argument, e.g.
 * `core.patchNamespacedPod({ name, namespace, body }, patchOptions('merge'))`.
 */
export function patchOptions(type: PatchType): ConfigurationOptions {
  return setHeaderOptions('Content-Type', CONTENT_TYPES[type]);
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
