/** Exponential backoff with ±20 % jitter, for restarts and redials. */
export class Backoff {
  private current: number;
  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly factor = 2,
    private readonly jitter = 0.2,
  ) {
    this.current = initialMs;
  }

  /** The next delay; each call doubles the base up to the cap. */
  next(): number {
    const base = this.current;
    this.current = Math.min(this.maxMs, this.current * this.factor);
    const spread = base * this.jitter;
    return Math.max(0, Math.round(base - spread + Math.random() * 2 * spread));
  }

  /** Back to the initial delay (after a long healthy run). */
  reset(): void {
    this.current = this.initialMs;
  }
}
