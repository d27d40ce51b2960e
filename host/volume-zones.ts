/**
 * Multi-zone volume labels (upstream cloud-provider volume helpers): a zone
 * label of a volume may list several zones joined by `__` (`a__b`).
 */
import { Labels } from './names.js';

/** Joins the zones of a multi-zone label value (upstream LabelMultiZoneDelimiter). */
export const ZONE_DELIMITER = '__';

/** The zone label keys whose values are zone lists (GA and beta). */
export function isZoneLabel(key: string): boolean {
  return key === Labels.ZONE || key === Labels.ZONE_BETA;
}

/** The zones of a zone label value, trimmed, sorted, without duplicates; undefined when one is empty (upstream LabelZonesToSet). */
export function zoneList(value: string): string[] | undefined {
  const zones = value.split(ZONE_DELIMITER).map((z) => z.trim());
  if (zones.some((z) => z === '')) return undefined;
  return [...new Set(zones)].sort();
}
