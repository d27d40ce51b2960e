/**
 * The journal of cloud calls: one JSON line per call in `<state>/journal.jsonl`
 * with the caller's identity (gRPC metadata `x-ccm-caller`, sent by the host:
 * its leader-election identity), the method, a key naming the object, and
 * start and end times. Tests read it to check that two host replicas never
 * changed the cloud at overlapping times and that nothing was created twice.
 *
 * `LOCALCLOUD_JOURNAL`: `mutations` (default: calls that change the cloud,
 * sdk/mutations.ts), `all` (every cloud call, reads too), `off`.
 * Lines are appended with O_APPEND, so processes sharing the state directory
 * may write at once.
 */
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isMutatingMethod } from '../../sdk/mutations.js';

const JOURNAL_FILE = 'journal.jsonl';
const JOURNAL_ENV = 'LOCALCLOUD_JOURNAL';

export type JournalMode = 'mutations' | 'all' | 'off';

/** One journal line. Times are ms since the epoch. */
export interface JournalEntry {
  caller: string;
  /** `service.Method`, e.g. `loadBalancers.ensureLoadBalancer`. */
  method: string;
  mutating: boolean;
  /** What the call was about (service uid, route, volume or node name), if the request says. */
  key?: string;
  start: number;
  end: number;
  ok: boolean;
  /** The provider process, to tell replicas apart when no caller was sent. */
  pid: number;
  /** Set when the call created a new object (e.g. EnsureLoadBalancer made a new load balancer rather than updating one). */
  created?: true;
  /** A batch call: the uids of its services (EnsureLoadBalancers, UpdateLoadBalancerHosts) or the names of its nodes (GetInstancesStatus, GetInstancesMetadata), in request order. */
  keys?: string[];
  /** A batch call: the keys whose object it created. */
  createdKeys?: string[];
  /** A batch call: the keys (service uids, node names) whose entry it answered with an error. */
  failedKeys?: string[];
  /** A ReconcileRoutes call: the target nodes of the routes it created, and of those it deleted. */
  routesCreated?: string[];
  routesDeleted?: string[];
  /**
   * Route changes answered with an error, by target node: a ReconcileRoutes
   * call's failed entries (a desired route it could not create, or a route
   * it could not delete), or a CreateRoute or DeleteRoute call that failed.
   */
  routesCreateFailed?: string[];
  routesDeleteFailed?: string[];
}

/**
 * Results of calls that created a new object. A service method adds its
 * result here (markCreated); the journal reads it, so the result sent to the
 * host is unchanged.
 */
const createdResults = new WeakSet<object>();

/** Marks `result` as the answer of a call that created a new object; returns it. */
export function markCreated<T extends object>(result: T, created: boolean): T {
  if (created) createdResults.add(result);
  return result;
}

const createdKeysOf = new WeakMap<object, string[]>();

/** Marks `result` as the answer of a batch call that created the objects named by `keys`; returns it. */
export function markCreatedKeys<T extends object>(result: T, keys: string[]): T {
  if (keys.length > 0) createdKeysOf.set(result, keys);
  return result;
}

/** The journal mode from the environment; throws on an unknown value. */
export function journalModeFromEnv(env: NodeJS.ProcessEnv): JournalMode {
  const v = env[JOURNAL_ENV] ?? 'mutations';
  if (v === 'mutations' || v === 'all' || v === 'off') return v;
  throw new TypeError(`${JOURNAL_ENV}=${JSON.stringify(v)} is invalid: use mutations, all or off`);
}

/** The service uids of a batch request, or the node names of an instances batch (`nodes` without a `service`). */
function keysOf(req: unknown): string[] | undefined {
  const r = (req ?? {}) as { services?: { uid?: string }[]; service?: unknown; nodes?: { name?: string }[] };
  if (Array.isArray(r.services)) return r.services.map((s) => s.uid ?? '');
  return r.service === undefined && Array.isArray(r.nodes) ? r.nodes.map((n) => n.name ?? '') : undefined;
}

/** A key naming the request's object, from the usual request fields. */
function keyOf(req: unknown): string | undefined {
  const r = (req ?? {}) as Record<string, unknown>;
  const svc = r.service as { uid?: string } | undefined;
  const route = r.route as { name?: string; destinationCidr?: string } | undefined;
  const node = r.node as { name?: string } | undefined;
  return (
    svc?.uid ||
    route?.name ||
    route?.destinationCidr ||
    (r.name as string | undefined) ||
    (r.volumeId as string | undefined) ||
    node?.name ||
    undefined
  );
}

/**
 * The route changes of a call that failed, by target node. A failed entry of
 * ReconcileRoutes is a failed create when the request desires that route
 * (same node and CIDR), else a failed delete.
 */
function failedRouteChanges(
  method: string,
  req: unknown,
  ok: boolean,
  result: unknown,
): Pick<JournalEntry, 'routesCreateFailed' | 'routesDeleteFailed'> {
  type R = { targetNode?: string; destinationCidr?: string };
  const r = (req ?? {}) as { route?: R; desired?: R[] };
  if (!ok && (method === 'createRoute' || method === 'deleteRoute')) {
    const nodes = [r.route?.targetNode ?? ''];
    return method === 'createRoute' ? { routesCreateFailed: nodes } : { routesDeleteFailed: nodes };
  }
  const failed = (result as { failed?: { route?: R }[] } | undefined)?.failed;
  if (method !== 'reconcileRoutes' || !ok || !Array.isArray(failed) || failed.length === 0) return {};
  const desired = new Set((r.desired ?? []).map((d) => `${d.targetNode} ${d.destinationCidr}`));
  const out: { routesCreateFailed?: string[]; routesDeleteFailed?: string[] } = {};
  for (const f of failed) {
    const key = desired.has(`${f.route?.targetNode} ${f.route?.destinationCidr}`) ? 'routesCreateFailed' : 'routesDeleteFailed';
    (out[key] ??= []).push(f.route?.targetNode ?? '');
  }
  return out;
}

export class Journal {
  constructor(
    private readonly dir: string,
    private readonly mode: JournalMode,
  ) {}

  /** Whether `method` (provider object key, lowerCamel) is journaled. */
  covers(method: string): boolean {
    return this.mode === 'all' || (this.mode === 'mutations' && isMutatingMethod(method));
  }

  /** Appends one entry; a failed write is ignored (the journal must never fail a call). */
  async record(
    e: Omit<
      JournalEntry,
      | 'pid'
      | 'key'
      | 'mutating'
      | 'created'
      | 'keys'
      | 'createdKeys'
      | 'failedKeys'
      | 'routesCreated'
      | 'routesDeleted'
      | 'routesCreateFailed'
      | 'routesDeleteFailed'
    > & {
      request: unknown;
      methodName: string;
      result?: unknown;
    },
  ): Promise<void> {
    const entry: JournalEntry = {
      caller: e.caller,
      method: e.method,
      mutating: isMutatingMethod(e.methodName),
      key: keyOf(e.request),
      start: e.start,
      end: e.end,
      ok: e.ok,
      pid: process.pid,
    };
    const keys = keysOf(e.request);
    if (keys) entry.keys = keys;
    if (typeof e.result === 'object' && e.result !== null) {
      if (createdResults.has(e.result)) entry.created = true;
      const created = createdKeysOf.get(e.result);
      if (created) entry.createdKeys = created;
      const results = (e.result as { results?: { serviceUid?: string; nodeName?: string; error?: unknown }[] }).results;
      const failed = Array.isArray(results) ? results.filter((x) => x.error).map((x) => x.serviceUid ?? x.nodeName ?? '') : [];
      if (failed.length > 0) entry.failedKeys = failed;
      const routes = e.result as { created?: { targetNode?: string }[]; deleted?: { targetNode?: string }[] };
      if (Array.isArray(routes.created) && routes.created.length > 0) entry.routesCreated = routes.created.map((r) => r.targetNode ?? '');
      if (Array.isArray(routes.deleted) && routes.deleted.length > 0) entry.routesDeleted = routes.deleted.map((r) => r.targetNode ?? '');
    }
    Object.assign(entry, failedRouteChanges(e.methodName, e.request, e.ok, e.result));
    await appendFile(join(this.dir, JOURNAL_FILE), JSON.stringify(entry) + '\n').catch(() => undefined);
  }
}

/** Reads a journal file (tests, tools); a missing file is an empty journal. */
export async function readJournal(stateDir: string): Promise<JournalEntry[]> {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(join(stateDir, JOURNAL_FILE), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as JournalEntry);
}
