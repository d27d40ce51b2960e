/**
 * A small cache of answers with a lifetime and a size bound, for TokenReview
 * and SubjectAccessReview results: the oldest entry goes when it is full, so
 * a flood of distinct tokens costs bounded memory.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The value under `key` unless it expired. */
  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.expires > this.now()) return e.value;
    this.entries.delete(key);
    return undefined;
  }

  /** Keeps `value` for `ttlMs` (not at all when 0). */
  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, expires: this.now() + ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}
