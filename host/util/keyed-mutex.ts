/**
 * Mutual exclusion per key: `run(key, fn)` runs `fn` after every earlier
 * `run` with the same key has settled. Keys with nothing pending cost nothing.
 */
export class KeyedMutex<K> {
  private readonly tails = new Map<K, Promise<void>>();

  async run<T>(key: K, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /**
   * Takes `key` only if nobody holds or waits for it: returns the function
   * that releases it, or undefined (never waits, so it cannot deadlock).
   */
  tryAcquire(key: K): (() => void) | undefined {
    if (this.tails.has(key)) return undefined;
    let release!: () => void;
    const tail = new Promise<void>((r) => (release = r));
    this.tails.set(key, tail);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }

  /** Runs `fn` holding every key of `keys` (taken in sorted order, so two callers never deadlock). */
  async runAll<T>(keys: K[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort();
    const step = (i: number): Promise<T> => (i === sorted.length ? fn() : this.run(sorted[i]!, () => step(i + 1)));
    return step(0);
  }
}
