/**
 * Adding and removing one finalizer without clobbering the others: a merge
 * patch of the whole list conditioned on the resourceVersion it was computed
 * from; on 409 the object is re-read and the change recomputed.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../kube/client.js';

const ATTEMPTS = 5;

export interface FinalizerAccess<T extends KubernetesObject> {
  read(): Promise<T>;
  /** Merge-patches `metadata` ({ resourceVersion, finalizers, ... }). */
  patch(metadata: Record<string, unknown>): Promise<T>;
}

/**
 * Makes `finalizer` present (`want` true) or absent on the object, together
 * with `extra` metadata (e.g. annotations) when adding. Starts from `current`
 * (a cache copy). Returns the updated object, or undefined when the object is
 * gone (404) — for a removal that is success.
 */
export async function setFinalizer<T extends KubernetesObject>(
  access: FinalizerAccess<T>,
  current: T,
  finalizer: string,
  want: boolean,
  extra: Record<string, unknown> = {},
): Promise<T | undefined> {
  let obj = current;
  for (let attempt = 1; ; attempt++) {
    const list = obj.metadata?.finalizers ?? [];
    const has = list.includes(finalizer);
    if (has === want && Object.keys(extra).length === 0) return obj;
    const finalizers = want ? (has ? list : [...list, finalizer]) : list.filter((f) => f !== finalizer);
    try {
      return await access.patch({ ...extra, resourceVersion: obj.metadata?.resourceVersion, finalizers });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err) || attempt >= ATTEMPTS) throw err;
      try {
        obj = await access.read();
      } catch (readErr) {
        if (isNotFound(readErr)) return undefined;
        throw readErr;
      }
    }
  }
}
