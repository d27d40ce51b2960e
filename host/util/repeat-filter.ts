/**
 * "Don't repeat the same Warning": per key (a node's name), the last message
 * reported and when. The event recorder aggregates exact repeats too, but
 * each repeat is still an API write and a log line; this keeps a problem that
 * every pass sees again from costing either.
 */
export class RepeatFilter {
  private readonly last = new Map<string, { message: string; at: number }>();

  constructor(
    /** The same message for the same key is let through again after this long (default: never). */
    private readonly repeatMs = Infinity,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether to report `message` for `key` now; true also records it as reported. */
  admit(key: string, message: string): boolean {
    const prev = this.last.get(key);
    const now = this.now();
    if (prev && prev.message === message && now - prev.at < this.repeatMs) return false;
    this.last.set(key, { message, at: now });
    return true;
  }

  /** The key's problem is over (or the object gone): its next problem is reported at once. */
  clear(key: string): void {
    this.last.delete(key);
  }
}
