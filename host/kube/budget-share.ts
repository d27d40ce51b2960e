/**
 * The cloud-call budget split by live shard membership (--shard-index=auto,
 * --shard-count=N > 1, --cloud-api-qps > 0; docs/design/sharding.md "One
 * cloud API budget"): the rule that picks this replica's share denominator k
 * (it spends budget/k), and the read of the shard Leases it decides on.
 *
 * The contract, for the replicas together never to spend more than the
 * budget, whatever the interleaving of joins, leaves and reads:
 *
 * - Every serving replica publishes a value p on its own shard Lease
 *   (names.ts CLOUD_BUDGET_SHARES_ANNOTATION) with each acquire and renewal,
 *   and p is never above the k it uses (a floor: it spends at most budget/p).
 *   A Lease without one counts as p = N (an older host's static split, or a
 *   holder that has not renewed since it took the Lease and spends nothing).
 * - Spending less is always safe: when L (the live shard Leases, own
 *   included) exceeds k, k rises to L at once, and p follows with the next
 *   write.
 * - Spending more (a lower k, or any k after HELD) needs, in ONE read that
 *   reads this replica's own Lease first: the own Lease already publishing
 *   p <= the new k (so every replica that reads after this one counts it at
 *   its new share), every other live Lease publishing p >= the new k, and L
 *   <= the new k. Among replicas deciding at once, the one whose publish came
 *   last reads after every other's publish: it sees all of them live, each at
 *   a floor of at least its own k, at most k of them, so together they spend
 *   at most budget. (Without the own-Lease step, a replica lowering on a read
 *   taken before a joiner's Lease and a joiner unholding on a read taken
 *   before the lowered value was written would both spend more.)
 * - A replica starts each term HELD (spends nothing) and publishes nothing
 *   until its first read; it unholds by the rule above, so it never adds its
 *   share before the others made room. 1 <= k <= N always.
 * - A read that fails keeps k (never lower); the caller goes HELD while its
 *   fence is closed (a paused replica may come back after the others counted
 *   it gone, so it must rejoin by the rule).
 */
import type { LeaseLock } from './leader-election.js';
import { CLOUD_BUDGET_SHARES_ANNOTATION } from '../names.js';

/** What one membership read found. */
export interface Membership {
  /** The value this replica's own Lease carried, read first (undefined: none yet). */
  own?: number;
  /** The value each OTHER live shard Lease carries (undefined: none, counted as N). */
  others: readonly (number | undefined)[];
}

/** A replica's share: the denominator it spends by, and the floor it publishes next. */
export interface ShareState {
  /** budget/k is spent now; undefined: HELD, nothing is spent. */
  k?: number;
  /** Written with the next acquire/renewal; undefined: the key is removed. */
  publish?: number;
}

/** The starting state of every term: held, nothing published. */
export const HELD: ShareState = Object.freeze({});

/**
 * The rule (module comment): the share after a membership read `m` of N =
 * `shards` Leases, from `state`; `m` undefined (the read failed) keeps it.
 * Pure.
 */
export function nextShare(shards: number, state: ShareState, m: Membership | undefined): ShareState {
  if (!m) return state;
  const clamp = (v: number) => Math.min(shards, Math.max(1, v));
  const live = clamp(m.others.length + 1);
  const othersFloor = Math.min(shards, ...m.others.map((p) => clamp(p ?? shards)));
  // The lowest k this read allows: at least L, not below the own floor already written, no
  // lower than any other live Lease's floor; none when nothing is written yet.
  const lowest = m.own === undefined ? undefined : Math.max(live, clamp(m.own));
  const allowed = lowest !== undefined && lowest <= othersFloor ? lowest : undefined;
  let k = state.k === undefined ? undefined : clamp(Math.max(state.k, live));
  if (allowed !== undefined && (k === undefined || allowed < k)) k = allowed;
  return k === undefined ? { publish: live } : { k, publish: live };
}

/** A published value as written: a decimal integer of 1 or more; anything else counts as absent. */
export function parseShares(annotations: Readonly<Record<string, string>> | undefined): number | undefined {
  const raw = annotations?.[CLOUD_BUDGET_SHARES_ANNOTATION];
  return raw !== undefined && /^[1-9][0-9]{0,8}$/.test(raw) ? Number(raw) : undefined;
}

/** The own Lease's annotation for a share state: its floor, or removed. */
export function sharesAnnotation(state: ShareState): Record<string, string | undefined> {
  return { [CLOUD_BUDGET_SHARES_ANNOTATION]: state.publish === undefined ? undefined : String(state.publish) };
}

export interface ShardLeaseReaderOptions {
  /** One lock per shard Lease, index = shard. */
  locks: readonly LeaseLock[];
  /** This replica's leader-election identity. */
  identity: string;
  /** Monotonic milliseconds. */
  now: () => number;
}

/**
 * Reads the N shard Leases (N GETs, the own Lease first) into a
 * {@link Membership}. A Lease is live when it has a holder and has not
 * expired as measured on this replica's own clock, the way the elector
 * measures it: a lease duration from when this reader first saw its current
 * version (not from its renewTime). Rejects when any read fails or the own
 * Lease does not name this replica (the caller keeps its k).
 */
export class ShardLeaseReader {
  private readonly seen = new Map<number, { resourceVersion: string; at: number }>();

  constructor(private readonly o: ShardLeaseReaderOptions) {}

  async read(own: number, signal: AbortSignal): Promise<Membership> {
    const mine = await this.o.locks[own]!.get(signal);
    if (mine?.record.holderIdentity !== this.o.identity) throw new Error('the own shard Lease does not name this replica');
    const others: (number | undefined)[] = [];
    for (let shard = 0; shard < this.o.locks.length; shard++) {
      if (shard === own) continue;
      const lease = await this.o.locks[shard]!.get(signal);
      if (!lease) {
        this.seen.delete(shard);
        continue;
      }
      const now = this.o.now();
      let seen = this.seen.get(shard);
      if (seen?.resourceVersion !== lease.resourceVersion) this.seen.set(shard, (seen = { resourceVersion: lease.resourceVersion, at: now }));
      const live = lease.record.holderIdentity !== '' && now < seen.at + lease.record.leaseDurationSeconds * 1000;
      if (live) others.push(parseShares(lease.annotations));
    }
    return { own: parseShares(mine.annotations), others };
  }
}
