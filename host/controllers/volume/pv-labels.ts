/**
 * What the PersistentVolume label webhook and the labeller change on a PV:
 * the cloud's topology labels (zone, region) and node affinity requiring
 * them, as upstream's PersistentVolumeLabel admission plugin did. Pure
 * functions; no I/O.
 */
import type { V1NodeSelectorRequirement, V1PersistentVolume, V1VolumeNodeAffinity } from '@kubernetes/client-node';
import { isZoneLabel, zoneList } from '../../volume-zones.js';

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
 * One `In` requirement per label, sorted by key: a zone label's value split
 * into its zones (`a__b` → `In [a, b]`), any other value as it is.
 */
function requirements(labels: Record<string, string>): V1NodeSelectorRequirement[] {
  return Object.entries(labels)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, v]) => ({ key, operator: 'In', values: isZoneLabel(key) ? (zoneList(v) ?? [v]) : [v] }));
}

/**
 * The node affinity requiring the labels (see requirements), as upstream's
 * PersistentVolumeLabel admission plugin: the requirements are added to
 * every existing term (a new single term when there is none), or to none
 * when any term already constrains any of their keys (all or nothing, so a
 * term never ends up with half of the cloud's topology). Undefined when
 * nothing changes.
 */
export function affinityWithLabels(current: V1VolumeNodeAffinity | undefined, labels: Record<string, string>): V1VolumeNodeAffinity | undefined {
  const reqs = requirements(labels);
  if (reqs.length === 0) return undefined;
  const terms = current?.required?.nodeSelectorTerms ?? [];
  if (terms.length === 0) return { required: { nodeSelectorTerms: [{ matchExpressions: reqs }] } };
  const keys = new Set(reqs.map((r) => r.key));
  if (terms.some((term) => (term.matchExpressions ?? []).some((e) => keys.has(e.key)))) return undefined;
  const next = terms.map((term) => ({ ...term, matchExpressions: [...(term.matchExpressions ?? []), ...reqs] }));
  return { ...current, required: { ...current!.required, nodeSelectorTerms: next } };
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
