/**
 * What the PersistentVolume label webhook and the labeller change on a PV:
 * the cloud's topology labels (zone, region) and node affinity requiring
 * them, as upstream's PersistentVolumeLabel admission plugin did. Pure
 * functions; no I/O.
 */
import type { V1PersistentVolume, V1VolumeNodeAffinity } from '@kubernetes/client-node';

/** One RFC 6902 operation. */
export interface JsonPatchOp {
  op: 'add' | 'replace';
  path: string;
  value: unknown;
}

/** RFC 6901 escaping of one path segment. */
export function pointerSegment(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Labels of `want` that the PV lacks or has with another value. */
export function missingLabels(pv: V1PersistentVolume, want: Record<string, string>): Record<string, string> {
  const have = pv.metadata?.labels ?? {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(want)) if (have[k] !== v) out[k] = v;
  return out;
}

/**
 * The node affinity with a `key In [value]` requirement for every label,
 * added to each existing term that does not constrain that key yet (a new
 * single term when there is none). Undefined when nothing changes.
 */
export function affinityWithLabels(current: V1VolumeNodeAffinity | undefined, labels: Record<string, string>): V1VolumeNodeAffinity | undefined {
  const entries = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return undefined;
  const terms = current?.required?.nodeSelectorTerms ?? [];
  if (terms.length === 0) {
    return { required: { nodeSelectorTerms: [{ matchExpressions: entries.map(([key, v]) => ({ key, operator: 'In', values: [v] })) }] } };
  }
  let changed = false;
  const next = terms.map((term) => {
    const exprs = [...(term.matchExpressions ?? [])];
    for (const [key, v] of entries) {
      if (exprs.some((e) => e.key === key)) continue;
      exprs.push({ key, operator: 'In', values: [v] });
      changed = true;
    }
    return { ...term, matchExpressions: exprs };
  });
  return changed ? { ...current, required: { ...current!.required, nodeSelectorTerms: next } } : undefined;
}

/** The JSON patch an admission webhook answers for `pv`: labels, then node affinity. Empty when nothing changes. */
export function labelPatch(pv: V1PersistentVolume, labels: Record<string, string>): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  const missing = missingLabels(pv, labels);
  if (Object.keys(missing).length > 0) {
    if (!pv.metadata?.labels) {
      ops.push({ op: 'add', path: '/metadata/labels', value: missing });
    } else {
      for (const [k, v] of Object.entries(missing)) ops.push({ op: 'add', path: `/metadata/labels/${pointerSegment(k)}`, value: v });
    }
  }
  const affinity = affinityWithLabels(pv.spec?.nodeAffinity, labels);
  if (affinity) ops.push({ op: 'add', path: '/spec/nodeAffinity', value: affinity });
  return ops;
}
