/**
 * Record-level changes of the local cloud's state: what one update changed,
 * the unit the state log (state-log.ts) stores and replays.
 *
 * Each record of a list is identified by a key (see KEYS). A list keeps
 * insertion order: a changed record keeps its place, a new one goes last,
 * whatever order an update function left the list in. Writer and readers
 * apply the same changes the same way, so they agree on the order.
 */
import { freeze } from 'immer';
import type { KnobSettings, LocalCloudState } from './state.js';

/** The lists of records in the state. */
export type RecordKind = 'instances' | 'loadBalancers' | 'routes' | 'volumes' | 'sshKeys';
/** A record of one kind. */
export type RecordOf<K extends RecordKind> = LocalCloudState[K][number];
/** Every record kind, in document order. */
const RECORD_KINDS: readonly RecordKind[] = ['instances', 'loadBalancers', 'routes', 'volumes', 'sshKeys'];

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The identity of a record, unique within its kind (undefined: it has none). */
const KEYS: { readonly [K in RecordKind]: (r: RecordOf<K>) => string | undefined } = {
  instances: (r) => str(r.id),
  loadBalancers: (r) => str(r.name),
  // Routes are unique per (cluster, destination), not by name; a space occurs in neither.
  routes: (r) => str(r.clusterName) && str(r.destinationCidr) && `${r.clusterName} ${r.destinationCidr}`,
  volumes: (r) => str(r.id),
  sshKeys: (r) => str(r.user) && str(r.fingerprint) && `${r.user} ${r.fingerprint}`,
};

/** Records of each kind by key, in list order. */
export type Records = { readonly [K in RecordKind]: ReadonlyMap<string, RecordOf<K>> };

/** One changed record (no value: deleted), or the new knob settings. */
export type Change = { kind: RecordKind; key: string; value?: object } | { kind: 'knobs'; value: KnobSettings };

/** A state with its records indexed by key (a StateView is one). */
export interface Indexed {
  readonly state: Readonly<LocalCloudState>;
  readonly records: Records;
}

/** The key of a record; throws when it has none. */
function keyOf(kind: RecordKind, record: unknown, where: string): string {
  const key = typeof record === 'object' && record !== null ? (KEYS[kind] as (r: unknown) => string | undefined)(record) : undefined;
  if (key === undefined) throw new Error(`${where}: a ${kind} record has no valid key (${JSON.stringify(record)?.slice(0, 200)}); fix or remove it`);
  return key;
}

/** Indexes the records of a state by key; throws on a missing or duplicate key. */
export function indexRecords(state: Readonly<LocalCloudState>, where: string): Records {
  const out: Partial<Record<RecordKind, Map<string, unknown>>> = {};
  for (const kind of RECORD_KINDS) {
    const map = new Map<string, unknown>();
    for (const r of state[kind]) {
      const key = keyOf(kind, r, where);
      if (map.has(key)) throw new Error(`${where}: two ${kind} records have key ${JSON.stringify(key)}; remove one`);
      map.set(key, r);
    }
    out[kind] = map;
  }
  return out as unknown as Records;
}

/** The result of {@link diffState}. */
export interface Diff {
  changes: Change[];
  /** The changes as one log line (JSON, no newline); empty when there are none. */
  line: string;
}

/**
 * What `next` (an immer result of an update on `base.state`) changed. Records
 * are compared by reference (immer keeps unchanged ones), and a record that
 * is new by reference but equal in content (e.g. rebuilt by an idempotent
 * ensure) is no change. Costs O(records) pointer comparisons and O(changed
 * records) serialization. Throws when a list holds two records with one key.
 */
export function diffState(base: Indexed, next: Readonly<LocalCloudState>): Diff {
  const changes: Change[] = [];
  const parts: string[] = [];
  for (const kind of RECORD_KINDS) {
    const list = next[kind] as readonly unknown[];
    if (list === base.state[kind]) continue;
    const before = base.records[kind] as ReadonlyMap<string, unknown>;
    const seen = new Set<string>();
    for (const r of list) {
      const key = keyOf(kind, r, 'state update');
      if (seen.has(key)) throw new Error(`state update: two ${kind} records have key ${JSON.stringify(key)}`);
      seen.add(key);
      const old = before.get(key);
      if (old === r) continue;
      const json = JSON.stringify(r);
      if (old !== undefined && JSON.stringify(old) === json) continue;
      changes.push({ kind, key, value: r as object });
      parts.push(`{"kind":${JSON.stringify(kind)},"key":${JSON.stringify(key)},"value":${json}}`);
    }
    for (const key of before.keys()) {
      if (seen.has(key)) continue;
      changes.push({ kind, key });
      parts.push(`{"kind":${JSON.stringify(kind)},"key":${JSON.stringify(key)}}`);
    }
  }
  if (next.knobs !== base.state.knobs) {
    const json = JSON.stringify(next.knobs);
    if (json !== JSON.stringify(base.state.knobs)) {
      changes.push({ kind: 'knobs', value: next.knobs });
      parts.push(`{"kind":"knobs","value":${json}}`);
    }
  }
  return { changes, line: parts.length ? `{"changes":[${parts.join(',')}]}` : '' };
}

/**
 * `base` with `changes` applied, as a new deep-frozen state: unchanged records
 * and lists are shared with `base`. Costs O(size of changed lists) pointers.
 */
export function applyChanges(base: Indexed, changes: readonly Change[]): { state: LocalCloudState; records: Records } {
  const maps: Partial<Record<RecordKind, Map<string, unknown>>> = {};
  let knobs = base.state.knobs;
  for (const c of changes) {
    if (c.kind === 'knobs') {
      knobs = freeze(c.value, true);
      continue;
    }
    const map = (maps[c.kind] ??= new Map(base.records[c.kind] as ReadonlyMap<string, unknown>));
    if (c.value === undefined) map.delete(c.key);
    else map.set(c.key, freeze(c.value, true));
  }
  const state = { ...base.state, knobs } as LocalCloudState;
  const records = { ...base.records } as Record<RecordKind, ReadonlyMap<string, unknown>>;
  for (const kind of RECORD_KINDS) {
    const map = maps[kind];
    if (!map) continue;
    (state as unknown as Record<RecordKind, unknown[]>)[kind] = Object.freeze([...map.values()]) as unknown[];
    records[kind] = map;
  }
  return { state: Object.freeze(state), records: records as unknown as Records };
}

/** Parses the changes of one log line; throws one clear line when malformed. */
export function parseChanges(line: string, where: string): Change[] {
  let doc: unknown;
  try {
    doc = JSON.parse(line);
  } catch (err) {
    throw new Error(`${where} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const list = (doc as { changes?: unknown } | null)?.changes;
  if (!Array.isArray(list)) throw new Error(`${where} has no "changes" list`);
  return list.map((c: unknown) => {
    const { kind, key, value } = (c ?? {}) as { kind?: unknown; key?: unknown; value?: unknown };
    if (kind === 'knobs') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where}: knobs change without an object value`);
      return { kind, value: value as KnobSettings };
    }
    if (!RECORD_KINDS.includes(kind as RecordKind)) throw new Error(`${where}: unknown kind ${JSON.stringify(kind)}`);
    if (typeof key !== 'string') throw new Error(`${where}: ${String(kind)} change without a key`);
    if (value === undefined) return { kind: kind as RecordKind, key };
    if (keyOf(kind as RecordKind, value, where) !== key) throw new Error(`${where}: ${String(kind)} change with key ${key} holds another record`);
    return { kind: kind as RecordKind, key, value: value as object };
  });
}
