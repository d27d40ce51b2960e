/**
 * Checks shared by the HA tests: what the local cloud's journal (one state
 * dir shared by every replica) and the cloud's load balancers must show
 * after leadership changed hands while LoadBalancer Services were being
 * created and deleted, and which replica touched which object (sharding).
 */
import type { CoordinationV1Api, CoreV1Api, V1Service } from '@kubernetes/client-node';
import type { JournalEntry } from '../../../plugins/local/journal.js';
import { cloudLbs, type CloudLb } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';

export const ENSURE_LB = 'loadBalancers.ensureLoadBalancer';
/** The batch ensure (journaled once per call, naming the uids it created). */
export const ENSURE_LBS = 'loadBalancers.ensureLoadBalancers';

/** Pairs of journal entries from different callers whose [start, end] intervals overlap. */
export function overlaps(entries: JournalEntry[]): [JournalEntry, JournalEntry][] {
  const out: [JournalEntry, JournalEntry][] = [];
  const sorted = [...entries].sort((a, b) => a.start - b.start);
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && sorted[j]!.start <= sorted[i]!.end; j++) {
      if (sorted[j]!.caller !== sorted[i]!.caller) out.push([sorted[i]!, sorted[j]!]);
    }
  }
  return out;
}

/** Which callers (host identities) named each key (node name or service uid) in calls of `service`'s methods. */
export function callersByKey(entries: JournalEntry[], service: 'instances' | 'loadBalancers'): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const e of entries) {
    if (!e.method.startsWith(`${service}.`)) continue;
    for (const key of [...(e.key ? [e.key] : []), ...(e.keys ?? [])]) {
      if (!out.has(key)) out.set(key, new Set());
      out.get(key)!.add(e.caller);
    }
  }
  return out;
}

/** Mutating calls per caller identity. */
export function mutationsByCaller(entries: JournalEntry[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of entries) if (e.mutating) out.set(e.caller, (out.get(e.caller) ?? 0) + 1);
  return out;
}

/**
 * Load balancer creates per service uid: EnsureLoadBalancer calls the local
 * cloud marked `created` (a new record, not an update of an existing one),
 * and the uids EnsureLoadBalancers calls created, whether or not the call
 * then reported success.
 */
export function lbCreatesByUid(entries: JournalEntry[]): Map<string, number> {
  const out = new Map<string, number>();
  const add = (uid: string) => out.set(uid, (out.get(uid) ?? 0) + 1);
  for (const e of entries) {
    if (e.method === ENSURE_LB && e.created && e.key) add(e.key);
    if (e.method === ENSURE_LBS) for (const uid of e.createdKeys ?? []) add(uid);
  }
  return out;
}

/**
 * Waits until the Services of `namespace` named in `live` all have an
 * ingress IP, those in `gone` no longer exist, and the cloud's load
 * balancers of `clusterName` are exactly one per live Service (same uid),
 * each with `backends` (node names) when given. Returns the live Services
 * and the cloud's load balancers; on timeout, the error names what differed.
 */
export async function settledLbs(
  core: CoreV1Api,
  state: string,
  opts: { namespace: string; clusterName: string; live: string[]; gone: string[]; backends?: string[]; timeoutMs?: number },
): Promise<{ services: V1Service[]; lbs: CloudLb[] }> {
  let last = '';
  try {
    return await waitFor(
      async () => {
        const list = (await core.listNamespacedService({ namespace: opts.namespace })).items;
        const byName = new Map(list.map((s) => [s.metadata!.name!, s]));
        const lbs = (await cloudLbs(state)).filter((l) => l.clusterName === opts.clusterName);
        const services = opts.live.map((n) => byName.get(n)).filter((s): s is V1Service => s !== undefined);
        const wantUids = services.map((s) => s.metadata!.uid!).sort();
        const haveUids = lbs.map((l) => l.serviceUid).sort();
        const pending = opts.live.filter((n) => !byName.get(n)?.status?.loadBalancer?.ingress?.[0]?.ip);
        const lingering = opts.gone.filter((n) => byName.has(n));
        const wrongBackends = opts.backends
          ? lbs
              .filter(
                (l) =>
                  l.backends
                    .map((b) => b.nodeName)
                    .sort()
                    .join(',') !== [...opts.backends!].sort().join(','),
              )
              .map((l) => l.serviceName)
          : [];
        last = `without ingress: [${pending.join(', ')}]; deleted but present: [${lingering.join(', ')}]; cloud LB uids [${haveUids.join(', ')}] vs Service uids [${wantUids.join(', ')}]; LBs with other backends: [${wrongBackends.join(', ')}]`;
        const done = pending.length === 0 && lingering.length === 0 && wantUids.join() === haveUids.join() && wrongBackends.length === 0;
        return done ? { services, lbs } : undefined;
      },
      { what: 'Services and cloud load balancers to settle', timeoutMs: opts.timeoutMs ?? 90_000, intervalMs: 500 },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message} (${last})`, { cause: err });
  }
}

/** Reads who holds the Lease `namespace`/`name` ('' while nobody does or it does not exist yet). */
export function leaseHolder(coordination: CoordinationV1Api, namespace: string, name = 'ccm'): () => Promise<string> {
  return async () => (await coordination.readNamespacedLease({ name, namespace }).catch(() => undefined))?.spec?.holderIdentity ?? '';
}

/** Waits until one of the replicas (by identity) holds the Lease; returns its identity. */
export function firstLeader(replicas: ReadonlyMap<string, unknown>, holder: () => Promise<string>): Promise<string> {
  return waitFor(
    async () => {
      const h = await holder();
      return replicas.has(h) ? h : undefined;
    },
    { what: 'a leader' },
  );
}

/**
 * Waits until every one of the shard Leases (`holders`, index = shard) is
 * held by a different one of `replicas` (whose identities it first waits
 * for); returns the replicas by identity and each shard's holder.
 */
export async function shardOwners<R extends { identity: Promise<string> }>(
  replicas: readonly R[],
  holders: readonly (() => Promise<string>)[],
  timeoutMs: number,
): Promise<{ byIdentity: Map<string, R>; owners: string[] }> {
  const byIdentity = new Map<string, R>();
  for (const r of replicas) byIdentity.set(await r.identity, r);
  const owners = await waitFor(
    async () => {
      const hs = await Promise.all(holders.map((h) => h()));
      return hs.every((h) => byIdentity.has(h)) && new Set(hs).size === holders.length ? hs : undefined;
    },
    { what: `the ${holders.length} shard Leases held by ${holders.length} different replicas`, timeoutMs },
  );
  return { byIdentity, owners };
}

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

/**
 * Adds instance `name` at `address` to the local cloud in `state`, then a
 * Node of that name with the uninitialized taint and the label
 * ccm-test=`label`, and waits until a leader's cloud-node controller has
 * removed the taint.
 */
export async function addInitializedNode(core: CoreV1Api, state: string, name: string, address: string, label: string): Promise<void> {
  await localcloud(state, 'instance', 'add', name, '--address', address);
  await core.createNode({
    body: { metadata: { name, labels: { 'ccm-test': label } }, spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] } },
  });
  await waitFor(async () => !(await core.readNode({ name })).spec?.taints?.some((x) => x.key === UNINITIALIZED), {
    what: `node ${name} initialized`,
    timeoutMs: 90_000,
  });
}
