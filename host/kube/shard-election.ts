/**
 * Shard membership from Leases (--shard-count=N with --shard-index=auto,
 * docs/design/sharding.md): one candidate for N shard Leases
 * (`<--leader-elect-resource-name>-shard-<i>`, names.ts shardLeaseName).
 *
 * - A candidate tries the Leases in shard order, one {@link LeaderElector}
 *   attempt each, and serves the FIRST it wins: shard 0 (which also runs the
 *   cluster-wide controllers) fills first, and a replica never holds two.
 *   Winning none, it stands by: it touches nothing (its fence is closed) and
 *   tries every Lease again every retry period × [1, 1 + JITTER_FACTOR). A
 *   Lease held by another replica is taken only once it expired as measured
 *   by that shard's elector, which re-reads it on every round (client-go's
 *   rule, per Lease); the resourceVersion on every update means two
 *   candidates racing for one Lease cannot both win. So N + k replicas give
 *   every shard a standby, with the leader election's timing.
 * - While serving shard i, the term is shard i's elector's: the fence
 *   ({@link holdsFreshLease}) is that Lease's fresh-lease check, the renewals
 *   are that Lease's, and a lost renewal ends the run 'lost' (the host exits,
 *   as on a lost leader Lease). A resign (`releaseReason`, e.g. an unready
 *   plugin) releases shard i and campaigns again for every shard.
 * - Between terms no Lease is held and the fence is closed.
 */
import type { Logger } from '../log.js';
import { sleep } from './backoff.js';
import { JITTER_FACTOR, type ElectionOutcome, type LeaderElector } from './leader-election.js';

export interface ShardCampaignOptions {
  /** One elector per shard, index = shard, all with this replica's identity and the leader election's timing. */
  electors: readonly LeaderElector[];
  retryPeriodMs: number;
  log: Logger;
  /** Asked before each round: a reason skips the round (the replica stays out of every shard's election). */
  campaignBlocker?: () => string | undefined;
  /** Randomness for the jitter between rounds, in [0, 1). */
  random?: () => number;
}

/** A candidate for the first free shard of N; single use. */
export class ShardCampaign {
  private current?: number;
  private readonly random: () => number;

  constructor(private readonly o: ShardCampaignOptions) {
    if (o.electors.length < 2) throw new Error('a shard campaign needs at least 2 shard Leases');
    this.random = o.random ?? Math.random;
  }

  /** The shard served now (its Lease held), or undefined while standing by. */
  get shard(): number | undefined {
    return this.current;
  }

  /** Whether this replica holds the Lease of the shard it serves. */
  isLeader(): boolean {
    return this.current !== undefined && this.o.electors[this.current]!.isLeader();
  }

  /** The fence: the served shard's Lease is held and fresh (LeaderElector.holdsFreshLease); false while standing by. */
  holdsFreshLease(): boolean {
    return this.current !== undefined && this.o.electors[this.current]!.holdsFreshLease();
  }

  /** How long the fence stays open without another renewal (0 while standing by). */
  freshLeaseRemainingMs(): number {
    return this.current === undefined ? 0 : this.o.electors[this.current]!.freshLeaseRemainingMs();
  }

  /** The /healthz check of the served shard's elector (nothing to check while standing by). */
  check(): void {
    if (this.current !== undefined) this.o.electors[this.current]!.check();
  }

  /**
   * Campaigns until `signal` aborts or a served Lease is lost (see the module
   * comment). `onStartedLeading(leading, shard)` runs for each term; `leading`
   * aborts when the term ends, and the Lease is released only after the
   * work settled. Resolves as LeaderElector.run does.
   */
  async run(signal: AbortSignal, onStartedLeading: (leading: AbortSignal, shard: number) => Promise<void>): Promise<ElectionOutcome> {
    for (let terms = 0; ; terms++) {
      const shard = await this.acquireAny(signal);
      if (shard === undefined) return terms === 0 ? 'stopped' : 'released';
      const elector = this.o.electors[shard]!;
      this.current = shard;
      this.o.log.info(
        { shard, shards: this.o.electors.length, lease: elector.lease },
        'took a shard: serving the shard whose Lease this replica won',
      );
      const ended = await elector.lead(signal, (leading) => onStartedLeading(leading, shard)).finally(() => (this.current = undefined));
      if (ended === 'lost') return 'lost';
      if (ended === 'stopped') return 'released';
    }
  }

  /** Rounds over every shard's Lease, in shard order, until one is won (its index) or `signal` aborts (undefined). */
  private async acquireAny(signal: AbortSignal): Promise<number | undefined> {
    const shards = this.o.electors.length;
    this.o.log.info({ shards }, 'campaigning for the shard Leases: this replica serves the first it wins and stands by while none is free');
    let blocked = false;
    let standingBy = false;
    while (!signal.aborted) {
      const blocker = this.o.campaignBlocker?.();
      if (!!blocker !== blocked) {
        if (blocker) this.o.log.warn({ reason: blocker }, 'not campaigning for the shard Leases');
        else this.o.log.info({}, 'campaigning for the shard Leases again');
        blocked = !!blocker;
      }
      if (!blocker) {
        for (let shard = 0; shard < shards && !signal.aborted; shard++) {
          if (await this.o.electors[shard]!.tryAcquire(signal)) return shard;
        }
        if (!standingBy && !signal.aborted) {
          this.o.log.info({ shards }, 'every shard Lease is held: standing by');
          standingBy = true;
        }
      }
      await sleep(this.o.retryPeriodMs * (blocker ? 1 : 1 + this.random() * JITTER_FACTOR), signal);
    }
    return undefined;
  }
}
