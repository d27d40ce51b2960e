/**
 * Exponential backoff with jitter, and an abortable sleep. Modelled on
 * k8s.io/apimachinery/pkg/util/wait.Backoff, except that `maxMs` bounds the
 * jittered delay too, so callers can rely on `next() <= maxMs`.
 */

/** Parameters of a {@link Backoff}. */
export interface BackoffOptions {
  /** First delay, in milliseconds (> 0). */
  initialMs: number;
  /** Upper bound of every delay, in milliseconds (>= initialMs). */
  maxMs: number;
  /** Growth per step (>= 1); default 2. */
  factor?: number;
  /**
   * Fraction of random extra delay (>= 0): a step whose base delay is `d`
   * returns a value in `[d, d * (1 + jitter)]`, clamped to `maxMs`. Default 0.
   */
  jitter?: number;
  /** Source of uniform randomness in [0, 1); injectable for tests. Default Math.random. */
  random?: () => number;
}

/**
 * Stateful exponential backoff. The n-th call to {@link Backoff.next} (from 0,
 * counting since construction or the last {@link Backoff.reset}) returns
 * `min(maxMs, initialMs * factor^n * (1 + jitter * random()))`.
 */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private baseMs: number;

  /** Throws RangeError when the options are out of range (see {@link BackoffOptions}). */
  constructor(opts: BackoffOptions) {
    const factor = opts.factor ?? 2;
    const jitter = opts.jitter ?? 0;
    if (!(opts.initialMs > 0)) throw new RangeError(`backoff initialMs must be > 0, got ${opts.initialMs}`);
    if (!(opts.maxMs >= opts.initialMs)) throw new RangeError(`backoff maxMs must be >= initialMs, got ${opts.maxMs}`);
    if (!(factor >= 1)) throw new RangeError(`backoff factor must be >= 1, got ${factor}`);
    if (!(jitter >= 0)) throw new RangeError(`backoff jitter must be >= 0, got ${jitter}`);
    this.initialMs = opts.initialMs;
    this.maxMs = opts.maxMs;
    this.factor = factor;
    this.jitter = jitter;
    this.random = opts.random ?? Math.random;
    this.baseMs = opts.initialMs;
  }

  /** Returns the next delay in milliseconds, within [initialMs, maxMs], and advances the state. */
  next(): number {
    const base = this.baseMs;
    this.baseMs = Math.min(this.maxMs, base * this.factor);
    return Math.min(this.maxMs, base * (1 + this.jitter * this.random()));
  }

  /** Starts over: the next call to {@link Backoff.next} returns about `initialMs` again. */
  reset(): void {
    this.baseMs = this.initialMs;
  }
}

/**
 * Waits `ms` milliseconds (negative counts as 0). Resolves `true` when the full
 * time elapsed, or `false` as soon as `signal` aborts (immediately if it
 * already has). Never rejects.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
