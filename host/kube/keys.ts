/**
 * Object keys as in client-go's cache.MetaNamespaceKeyFunc: `name` for
 * cluster-scoped objects, `namespace/name` for namespaced ones. Used for
 * informer caches and as work-queue items.
 */

/** The metadata fields a key is made of. */
export interface KeyedObject {
  metadata?: { name?: string; namespace?: string };
}

/** The parts of a key; `namespace` is undefined for cluster-scoped objects. */
export interface KeyParts {
  namespace: string | undefined;
  name: string;
}

/**
 * `namespace/name`, or `name` when the object has no (or an empty) namespace.
 * Throws if the object has no name (e.g. a generateName-only manifest).
 */
export function keyOf(obj: KeyedObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${name}` : name;
}

/** Inverse of {@link keyOf}. Throws on keys with more than one `/` or empty parts. */
export function splitKey(key: string): KeyParts {
  const parts = key.split('/');
  if (parts.length === 1 && parts[0]) return { namespace: undefined, name: parts[0] };
  if (parts.length === 2 && parts[0] && parts[1]) return { namespace: parts[0], name: parts[1] };
  throw new Error(`unexpected object key format: ${JSON.stringify(key)}`);
}
