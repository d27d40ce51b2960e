/**
 * The one periodic loop of the controllers (upstream's wait.Until and
 * wait.NonSlidingUntil): runs never overlap, and the loop ends when the
 * signal aborts (an abort also cuts the wait short).
 */
import { sleep } from '../kube/backoff.js';

export interface EveryOptions {
  /**
   * Fixed rate (NonSlidingUntil): the period counts from each run's start,
   * so a run that took longer than the period is followed at once. Default:
   * sliding (Until), the period counts from each run's end.
   */
  fixedRate?: boolean;
  /** Wait one period before the first run (default: the first run is at once). */
  delayFirst?: boolean;
  /** The clock and the abortable wait (tests replace them). */
  now?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<boolean>;
}

/**
 * Calls `fn` every `periodMs` until `signal` aborts; resolves then. `fn`
 * handles its own errors: a rejection ends the loop with that rejection.
 */
export async function every(periodMs: number, signal: AbortSignal, fn: () => Promise<void> | void, opts: EveryOptions = {}): Promise<void> {
  const { now = Date.now, sleep: wait = sleep } = opts;
  if (opts.delayFirst && !(await wait(periodMs, signal))) return;
  while (!signal.aborted) {
    const started = now();
    await fn();
    if (!(await wait(opts.fixedRate ? Math.max(0, periodMs - (now() - started)) : periodMs, signal))) return;
  }
}
