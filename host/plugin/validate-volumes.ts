/**
 * Validation of VolumesService answers (validate.ts style): each function
 * returns the problems found, empty = valid. What passes can be written into
 * a PersistentVolume (volumeHandle, capacity, volumeAttributes, node
 * affinity, labels) or a VolumeAttachment status without the API server
 * rejecting it.
 */
import type { CloudVolume, TopologySegments } from '../cloud-volumes.js';
import { labelKeyProblem, labelValueProblem, plainTextProblem, printableIdProblem, quote } from './validate.js';
import { isZoneLabel, ZONE_DELIMITER, zoneList } from '../volume-zones.js';

/** Longest volume id accepted (CSI allows 128 bytes; some drivers use more). */
const MAX_VOLUME_ID_CHARS = 1024;
/** Most entries in volume_context / publish_context / labels. */
const MAX_MAP_ENTRIES = 64;
/** Longest key or value in those maps. */
const MAX_MAP_CHARS = 4096;
/** Most UTF-8 bytes of all keys and values of one map (the API server's limit for attachment metadata). */
const MAX_MAP_BYTES = 256 * 1024;
/** Most topologies a volume may report. */
const MAX_TOPOLOGIES = 16;

/** A volume id the provider answers becomes spec.csi.volumeHandle and annotation values: printable ASCII, no spaces. */
export function volumeIdProblem(id: string): string | undefined {
  return printableIdProblem('volume_id', id, MAX_VOLUME_ID_CHARS);
}

/**
 * A volume handle from a PersistentVolume someone else created, before it is
 * sent to the provider: bounded and without hidden characters, but not held
 * to the rule for answers (the host did not choose it).
 */
export function volumeHandleProblem(handle: string): string | undefined {
  if (handle.length === 0 || handle.length > MAX_VOLUME_ID_CHARS) return `volume handle must be 1..${MAX_VOLUME_ID_CHARS} characters`;
  return plainTextProblem('volume handle', handle);
}

/** A string map stored on an object (volumeAttributes, attachmentMetadata). */
export function stringMapProblems(what: string, m: Record<string, string>): string[] {
  const entries = Object.entries(m);
  if (entries.length > MAX_MAP_ENTRIES) return [`${what} has ${entries.length} entries (at most ${MAX_MAP_ENTRIES})`];
  const problems: string[] = [];
  let bytes = 0;
  for (const [k, v] of entries) {
    if (k.length === 0) problems.push(`${what} has an empty key`);
    if (k.length > MAX_MAP_CHARS || v.length > MAX_MAP_CHARS)
      problems.push(`${what} entry ${quote(k.slice(0, 40))} is longer than ${MAX_MAP_CHARS} characters`);
    else {
      const p = plainTextProblem(`${what} key`, k) ?? plainTextProblem(`${what} value of ${quote(k.slice(0, 40))}`, v);
      if (p) problems.push(p);
    }
    bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (bytes > MAX_MAP_BYTES) problems.push(`${what} has ${bytes} bytes of keys and values (at most ${MAX_MAP_BYTES})`);
  return problems;
}

/** Labels (zone/region) that go onto a PV and into its node affinity. */
export function labelMapProblems(what: string, m: Record<string, string>): string[] {
  const entries = Object.entries(m);
  if (entries.length > MAX_MAP_ENTRIES) return [`${what} has ${entries.length} entries (at most ${MAX_MAP_ENTRIES})`];
  const problems: string[] = [];
  for (const [k, v] of entries) {
    const p = labelKeyProblem(k) ?? labelValueProblem(v);
    if (p) problems.push(`${what}: ${p}`);
  }
  return problems;
}

export function topologyProblems(ts: TopologySegments[]): string[] {
  if (ts.length > MAX_TOPOLOGIES) return [`accessible_topology has ${ts.length} entries (at most ${MAX_TOPOLOGIES})`];
  const problems: string[] = [];
  ts.forEach((t, i) => {
    if (Object.keys(t).length === 0) problems.push(`accessible_topology[${i}] has no segments`);
    // Node affinity values must be label values too.
    problems.push(...labelMapProblems(`accessible_topology[${i}]`, t));
    if (Object.values(t).some((v) => v === '')) problems.push(`accessible_topology[${i}] has an empty segment value`);
  });
  return problems;
}

/** A created (or listed) volume; `requiredBytes`/`limitBytes` are the request's bounds when known. */
export function volumeProblems(v: CloudVolume, bounds?: { requiredBytes: number; limitBytes: number }): string[] {
  const problems: string[] = [];
  const idp = volumeIdProblem(v.volumeId);
  if (idp) problems.push(idp);
  if (!Number.isSafeInteger(v.capacityBytes) || v.capacityBytes < 0) problems.push(`capacity_bytes ${v.capacityBytes} is not a whole number >= 0`);
  if (bounds && v.capacityBytes > 0) {
    if (v.capacityBytes < bounds.requiredBytes) problems.push(`capacity_bytes ${v.capacityBytes} is below the requested ${bounds.requiredBytes}`);
    if (bounds.limitBytes > 0 && v.capacityBytes > bounds.limitBytes)
      problems.push(`capacity_bytes ${v.capacityBytes} exceeds the limit ${bounds.limitBytes}`);
  }
  problems.push(...stringMapProblems('volume_context', v.volumeContext));
  problems.push(...topologyProblems(v.accessibleTopology));
  return problems;
}

/** GetVolumeLabels' answer: label keys and values, and zone lists (`a__b`) without an empty zone (upstream refuses such a PV). */
export function volumeLabelsProblems(m: Record<string, string>): string[] {
  const problems = labelMapProblems('labels', m);
  for (const [k, v] of Object.entries(m)) {
    if (isZoneLabel(k) && zoneList(v) === undefined)
      problems.push(`labels: ${k}=${JSON.stringify(v)} has an empty zone in its ${ZONE_DELIMITER}-separated list`);
  }
  return problems;
}
