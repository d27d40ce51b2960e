/** Which labels node initialization and reconciliation write (upstream semantics). */
import type { InstanceMetadata } from '../../cloud.js';
import { Labels } from '../../names.js';

/** Keys in the kubernetes.io and k8s.io namespaces are reserved; providers may not set them. */
const RESERVED_LABEL = /(^|\.)(kubernetes|k8s)\.io\//;

export interface LabelPlan {
  /** Labels to set (only ones that are absent or differ and are ours to set). */
  set: Record<string, string>;
  /** Additional labels the provider asked for but that were not applied, with why. */
  skipped: { key: string; why: string }[];
}

/**
 * Labels for initializing a node: instance type, zone and region (GA and
 * beta keys, overwritten like upstream), plus the provider's additional
 * labels, which never overwrite an existing label and may not use reserved
 * namespaces.
 */
export function initLabels(current: Record<string, string>, m: InstanceMetadata): LabelPlan {
  const set: Record<string, string> = {};
  const put = (k: string, v: string) => {
    if (v && current[k] !== v) set[k] = v;
  };
  put(Labels.INSTANCE_TYPE, m.instanceType);
  put(Labels.INSTANCE_TYPE_BETA, m.instanceType);
  put(Labels.ZONE, m.zone);
  put(Labels.ZONE_BETA, m.zone);
  put(Labels.REGION, m.region);
  put(Labels.REGION_BETA, m.region);
  const skipped: LabelPlan['skipped'] = [];
  for (const [k, v] of Object.entries(m.additionalLabels)) {
    if (RESERVED_LABEL.test(k)) skipped.push({ key: k, why: 'reserved kubernetes.io/k8s.io namespace' });
    // Object.hasOwn, not `in`: label keys such as "constructor" are not inherited members.
    else if (Object.hasOwn(current, k) && current[k] !== v) skipped.push({ key: k, why: 'label already set to a different value' });
    else if (!Object.hasOwn(current, k)) set[k] = v;
  }
  return { set, skipped };
}

/** Beta label → GA label pairs; the beta label is the source of truth (upstream reconcileNodeLabels). */
const BETA_TO_GA: [string, string][] = [
  [Labels.ZONE_BETA, Labels.ZONE],
  [Labels.REGION_BETA, Labels.REGION],
  [Labels.INSTANCE_TYPE_BETA, Labels.INSTANCE_TYPE],
];

/** GA labels to copy from their beta twins on an initialized node; empty when nothing to do. */
export function reconcileLabels(current: Record<string, string>): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [beta, ga] of BETA_TO_GA) {
    const v = current[beta];
    if (v !== undefined && current[ga] !== v) set[ga] = v;
  }
  return set;
}
