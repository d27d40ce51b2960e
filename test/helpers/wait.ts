/** Polling with a bound, for tests: no timing assertions, generous timeouts. */

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What is being waited for, used in the timeout error. */
  what?: string;
  /** Log file of the process doing the awaited work, named in the timeout error. */
  log?: string;
}

/**
 * Calls `fn` until it returns a value other than undefined/false (which is
 * returned) or the timeout passes (rejects, naming `what`, the last error and
 * the log to read).
 */
export async function waitFor<T>(fn: () => Promise<T | undefined | false> | T | undefined | false, opts: WaitOptions = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      const why = lastErr ? `: last error: ${lastErr instanceof Error ? lastErr.message : String(lastErr)}` : '';
      const see = opts.log ? `; see ${opts.log}` : '';
      throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${why}${see}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 200));
  }
}
