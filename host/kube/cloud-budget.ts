/**
 * This replica's share of the cloud-call budget, recomputed from live shard
 * membership (--shard-index=auto, N > 1, --cloud-api-qps > 0; the rule and
 * its contract: budget-share.ts). One bucket per provider connection, each
 * at budget/k (qps/k, burst max(1, floor(burst/k))), changed in place; while
 * HELD (between terms, at the start of each, and after the fence was
 * closed) every cloud call waits, so "held" never means "unlimited".
 *
 * While serving a shard, {@link CloudBudgetShare.serve} reads the shard
 * Leases every retry period (bounded by the renew deadline) and applies the
 * rule; {@link CloudBudgetShare.annotations} is what the shard's elector
 * writes with each acquire and renewal; {@link CloudBudgetShare.renewed} is
 * told after each of them. Metric ccm_cloud_api_budget_share (0 while held),
 * and one log line `cloud budget share` per change of k.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Gauge, Registry } from 'prom-client';
import { PluginUnavailableError } from '../errors.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { cloudApiBudgetShareGauge } from '../metrics.js';
import { sleep } from './backoff.js';
import { HELD, nextShare, sharesAnnotation, type Membership, type ShareState } from './budget-share.js';
import { BucketRateLimiter } from './ratelimiter.js';

export interface CloudBudgetShareOptions {
  /** N: --shard-count. */
  shards: number;
  /** The whole budget of all shards: --cloud-api-qps, --cloud-api-burst. */
  budget: { qps: number; burst: number };
  registry: Registry;
  log: Logger;
  /** Monotonic milliseconds (tests replace it). */
  now?: () => number;
}

export class CloudBudgetShare {
  private state: ShareState = HELD;
  /** Incremented on every hold: a read begun before one is not applied after it. */
  private epoch = 0;
  /** When the fence closes without another renewal (monotonic ms); past it, nothing is spent. */
  private freshUntil = -Infinity;
  private readonly buckets: BucketRateLimiter[] = [];
  /** The calls waiting while held: let go when a share is given, failed when the term ends. */
  private waiters: { go: () => void; fail: (err: Error) => void }[] = [];
  private readonly gauge: Gauge;
  private readonly now: () => number;

  constructor(private readonly o: CloudBudgetShareOptions) {
    this.now = o.now ?? (() => performance.now());
    this.gauge = cloudApiBudgetShareGauge(o.registry);
    this.gauge.set(0);
  }

  /** The denominator spent by now (undefined: held, or the fence closed since the last renewal). */
  get spendingK(): number | undefined {
    return this.spending() ? this.state.k : undefined;
  }

  /**
   * A budget for one provider connection: its own bucket at budget/k. A call
   * waits while held, and fails (PluginUnavailableError, not sent) when the
   * term ends first: a call of a term's controllers is never sent in a later
   * term, which may serve another shard.
   */
  limiter(): { when(): number | Promise<void> } {
    const bucket = new BucketRateLimiter(...this.rate(this.state.k ?? this.o.shards), { now: this.now });
    this.buckets.push(bucket);
    const when = (): number | Promise<void> => {
      if (this.spending()) return bucket.when();
      return new Promise<void>((go, fail) => this.waiters.push({ go, fail })).then(() => {
        const due = when();
        // Unref'd, as the connection's own wait: a call waiting for its token never keeps the process up.
        return typeof due === 'number' ? delay(due, undefined, { ref: false }) : due;
      });
    };
    return { when };
  }

  /** For the shard elector's writes: the floor to publish, or the key removed. */
  annotations(): Record<string, string | undefined> {
    return sharesAnnotation(this.state);
  }

  /**
   * Told after each successful acquire and renewal of the served shard's
   * Lease, with how long its fence stays open from now
   * (LeaderElector.freshLeaseRemainingMs): a fence that closed in between
   * makes the share held (this replica may have been counted gone meanwhile).
   */
  renewed(freshForMs: number): void {
    if (this.now() >= this.freshUntil) this.hold('the fence was closed');
    this.freshUntil = this.now() + freshForMs;
  }

  /**
   * One term of shard `own`: reads membership every `retryPeriodMs`, each
   * read bounded by `renewDeadlineMs`, and applies the rule; held when it
   * ends (when `leading` aborts). A failed read keeps k. Never rejects.
   */
  async serve(
    leading: AbortSignal,
    read: (signal: AbortSignal) => Promise<Membership>,
    timing: { retryPeriodMs: number; renewDeadlineMs: number },
  ): Promise<void> {
    while (!leading.aborted) {
      await this.round(AbortSignal.any([leading, AbortSignal.timeout(timing.renewDeadlineMs)]), read);
      await sleep(timing.retryPeriodMs, leading);
    }
    this.hold('the term ended');
    this.freshUntil = -Infinity;
    const ended = this.waiters;
    this.waiters = [];
    for (const w of ended) w.fail(new PluginUnavailableError('cloud call not sent: the shard term ended while its cloud budget share was held'));
  }

  /**
   * One membership read and the rule on it. Not applied when the read
   * failed (k kept), when a hold came in between (the read may predate it),
   * or while the fence is closed.
   */
  async round(signal: AbortSignal, read: (signal: AbortSignal) => Promise<Membership>): Promise<void> {
    const epoch = this.epoch;
    let m: Membership | undefined;
    try {
      m = await read(signal);
    } catch (err) {
      if (!signal.aborted) this.o.log.debug({ err: errorMessage(err) }, 'cloud budget share: membership read failed; keeping the share');
      return;
    }
    if (epoch === this.epoch && this.now() < this.freshUntil) this.apply(nextShare(this.o.shards, this.state, m), m);
  }

  /** Spends nothing from now until the rule allows a share again (nothing is published either). */
  private hold(why: string): void {
    this.epoch++;
    this.apply(HELD, undefined, why);
  }

  private spending(): boolean {
    return this.state.k !== undefined && this.now() < this.freshUntil;
  }

  private apply(next: ShareState, m: Membership | undefined, why?: string): void {
    const before = this.state.k;
    this.state = next;
    if (next.k === before) return;
    this.gauge.set(next.k ?? 0);
    const [qps, burst] = this.rate(next.k ?? this.o.shards);
    if (next.k !== undefined) for (const b of this.buckets) b.setRate(qps, burst);
    this.o.log.info(
      next.k === undefined ? { k: 0, reason: why } : { k: next.k, liveShards: m ? m.others.length + 1 : undefined, qps, burst },
      'cloud budget share',
    );
    if (next.k !== undefined) {
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w.go();
    }
  }

  /** budget/k: qps/k and max(1, floor(burst/k)). */
  private rate(k: number): [number, number] {
    return [this.o.budget.qps / k, Math.max(1, Math.floor(this.o.budget.burst / k))];
  }
}
