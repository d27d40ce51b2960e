/**
 * Rate limiters with the semantics of k8s.io/client-go/util/workqueue's
 * TypedRateLimiter family. A limiter answers "how long should this item wait
 * before it is processed again" and tracks per-item failure counts.
 */

/** client-go's TypedRateLimiter. */
export interface RateLimiter<T> {
  /** Records one more requeue of `item` and returns how long it should wait, in milliseconds. */
  when(item: T): number;
  /** Forgets `item`'s history: it is done being retried (succeeded or given up on). */
  forget(item: T): void;
  /** How many times `item` has been requeued since it was last forgotten. */
  numRequeues(item: T): number;
}

/** Base per-item delay of {@link defaultControllerRateLimiter}, in milliseconds. */
const DEFAULT_ITEM_BASE_DELAY_MS = 5;
/** Maximum per-item delay of {@link defaultControllerRateLimiter}, in milliseconds (1000 s). */
const DEFAULT_ITEM_MAX_DELAY_MS = 1000 * 1000;
/** Overall requeues per second allowed by {@link defaultControllerRateLimiter}. */
const DEFAULT_BUCKET_QPS = 10;
/** Burst of the overall bucket of {@link defaultControllerRateLimiter}. */
const DEFAULT_BUCKET_BURST = 100;

/**
 * client-go's ItemExponentialFailureRateLimiter: the n-th consecutive requeue
 * of an item (from 0) waits `min(baseMs * 2^n, maxMs)`.
 */
export class ItemExponentialRateLimiter<T> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();

  /** `baseMs` > 0 is the first delay, `maxMs` >= baseMs the cap; both in milliseconds. */
  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {
    if (!(baseMs > 0)) throw new RangeError(`baseMs must be > 0, got ${baseMs}`);
    if (!(maxMs >= baseMs)) throw new RangeError(`maxMs must be >= baseMs, got ${maxMs}`);
  }

  /** Returns `min(baseMs * 2^failures, maxMs)` and counts one more failure of `item`. */
  when(item: T): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    return Math.min(this.maxMs, this.baseMs * 2 ** exp);
  }

  /** Resets `item`'s failure count, so its next delay is `baseMs` again. */
  forget(item: T): void {
    this.failures.delete(item);
  }

  /** Failures of `item` since it was last forgotten. */
  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/** Options of {@link BucketRateLimiter}. */
export interface BucketRateLimiterOptions {
  /** Clock in milliseconds (monotonic); injectable for tests. Default performance.now. */
  now?: () => number;
}

/**
 * client-go's BucketRateLimiter (golang.org/x/time/rate.Limiter.Reserve): a
 * token bucket holding at most `burst` tokens, refilled at `qps` tokens per
 * second and initially full. Every {@link BucketRateLimiter.when} takes one
 * token, going into debt if none is left, and returns how long the caller must
 * wait for its token; concurrent callers therefore get increasing delays.
 * Items are not tracked individually.
 */
export class BucketRateLimiter implements RateLimiter<unknown> {
  private readonly now: () => number;
  private tokens: number;
  private lastMs: number;
  private qps: number;
  private burst: number;

  /** `qps` > 0 tokens per second, `burst` >= 1 bucket size. */
  constructor(qps: number, burst: number, opts: BucketRateLimiterOptions = {}) {
    checkRate(qps, burst);
    this.qps = qps;
    this.burst = burst;
    this.now = opts.now ?? (() => performance.now());
    this.tokens = burst;
    this.lastMs = this.now();
  }

  /** Reserves one token; returns the wait in milliseconds until it is available (0 if now). */
  when(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  /**
   * Changes the rate in place (rate.Limiter.SetLimit and SetBurst): the
   * tokens earned so far are counted at the old rate, then capped at the new
   * burst; a larger burst adds no tokens (they are earned at the new rate
   * from now on), and a debt (reservations already handed out) is kept, so
   * the calls already waiting are never sent sooner than the old rate
   * promised, and the next reservation waits for the debt at the new rate.
   * Same checks as the constructor: "no limit" or "none at all" is not a rate.
   */
  setRate(qps: number, burst: number): void {
    checkRate(qps, burst);
    this.refill();
    this.qps = qps;
    this.burst = burst;
    this.tokens = Math.min(this.tokens, burst);
  }

  /** The tokens earned since the last reservation, at the current rate, up to the burst. */
  private refill(): void {
    const now = this.now();
    if (now > this.lastMs) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.lastMs) * this.qps) / 1000);
      this.lastMs = now;
    }
  }

  /** No-op: the bucket has no per-item state. */
  forget(): void {}

  /** Always 0: the bucket has no per-item state. */
  numRequeues(): number {
    return 0;
  }
}

function checkRate(qps: number, burst: number): void {
  if (!(qps > 0)) throw new RangeError(`qps must be > 0, got ${qps}`);
  if (!(burst >= 1)) throw new RangeError(`burst must be >= 1, got ${burst}`);
}

/**
 * client-go's MaxOfRateLimiter: delays by the longest delay of its limiters
 * (each of which records the requeue), reports the largest requeue count, and
 * forgets in all of them.
 */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  private readonly limiters: readonly RateLimiter<T>[];

  /** Combines one or more limiters. */
  constructor(...limiters: RateLimiter<T>[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  /** Asks every limiter (so each records the requeue) and returns the longest delay, in milliseconds. */
  when(item: T): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(item));
    return max;
  }

  /** Forgets `item` in every limiter. */
  forget(item: T): void {
    for (const l of this.limiters) l.forget(item);
  }

  /** The largest requeue count any limiter reports for `item`. */
  numRequeues(item: T): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.numRequeues(item));
    return max;
  }
}

/**
 * client-go's DefaultTypedControllerRateLimiter: per-item exponential backoff
 * from 5 ms to 1000 s, combined with an overall 10 qps / 100 burst bucket.
 */
export function defaultControllerRateLimiter<T>(): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(
    new ItemExponentialRateLimiter<T>(DEFAULT_ITEM_BASE_DELAY_MS, DEFAULT_ITEM_MAX_DELAY_MS),
    new BucketRateLimiter(DEFAULT_BUCKET_QPS, DEFAULT_BUCKET_BURST),
  );
}
