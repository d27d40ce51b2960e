/**
 * The mass-deletion brake of the node lifecycle controller: at most a bounded
 * number of Node deletions per sliding window (--node-deletion-limit per
 * --node-deletion-limit-window). A provider that wrongly reports every
 * instance gone (unconfigured, pointed at the wrong account, a broken cloud
 * API) then costs a few Nodes, not the cluster. Upstream has no such brake.
 *
 * The deletions inside the window are counted in the cluster, not in memory
 * (a DeletionLedger; deletion-ledger.ts keeps them on a Lease), so a restart
 * or a new leader does not reset the brake. Before deleting, the controller
 * reserves its deletions in the ledger with a conditional write; only what
 * was reserved is deleted, and a ledger that cannot be read or written
 * deletes nothing.
 */

/** A count of Nodes, or a percentage of the Nodes the controller sees. */
export type DeletionLimit = { count: number } | { percent: number };

/** A percentage limit never allows fewer deletions per window than this. */
const MIN_PERCENT_LIMIT_NODES = 5;

/**
 * Parses `--node-deletion-limit`: `N` (a count; 0 turns the brake off) or
 * `P%` (1–100; `0%` is refused rather than read as "off" or as the floor of
 * 5, so that neither reading surprises). Returns null when disabled,
 * undefined when invalid.
 */
export function parseDeletionLimit(text: string): DeletionLimit | null | undefined {
  const pct = /^(\d{1,3})%$/.exec(text);
  if (pct) {
    const percent = Number(pct[1]);
    return percent >= 1 && percent <= 100 ? { percent } : undefined;
  }
  if (!/^\d{1,9}$/.test(text)) return undefined;
  const count = Number(text);
  return count === 0 ? null : { count };
}

/** Deletions reserved at one moment (`at`, ms since the epoch). */
export interface DeletionEntry {
  at: number;
  count: number;
}

/** What a ledger read returned: the entries and an opaque version to write at. */
export interface LedgerSnapshot {
  entries: DeletionEntry[];
  /** Passed back to `write`; undefined when no record exists yet. */
  version: unknown;
}

/**
 * Where the deletions are counted. Implementations throw on any failure.
 * `write` replaces the entries only if the record is still at the version
 * read (or still absent); when someone wrote first it throws an error for
 * which `isConflict` is true.
 */
export interface DeletionLedger {
  read(): Promise<LedgerSnapshot>;
  write(entries: DeletionEntry[], version: unknown): Promise<void>;
  isConflict(err: unknown): boolean;
  /** Where the record lives, for logs. */
  describe(): string;
}

/** A ledger in memory (tests; and the shape of the record a real ledger keeps). */
export class MemoryDeletionLedger implements DeletionLedger {
  entries: DeletionEntry[] = [];
  private version = 0;
  /** When set, read/write throw it (tests). */
  failRead?: Error;
  failWrite?: Error;

  async read(): Promise<LedgerSnapshot> {
    if (this.failRead) throw this.failRead;
    return { entries: this.entries.map((e) => ({ ...e })), version: this.version === 0 ? undefined : this.version };
  }

  async write(entries: DeletionEntry[], version: unknown): Promise<void> {
    if (this.failWrite) throw this.failWrite;
    if ((version ?? 0) !== this.version) throw new LedgerConflictError();
    this.entries = entries.map((e) => ({ ...e }));
    this.version++;
  }

  isConflict(err: unknown): boolean {
    return err instanceof LedgerConflictError;
  }

  describe(): string {
    return 'memory';
  }
}

class LedgerConflictError extends Error {
  constructor() {
    super('the deletion record changed since it was read');
  }
}

/** Conditional writes tried per reservation before giving up (each after a fresh read). */
const RESERVE_ATTEMPTS = 8;
/** Entries are merged into buckets of window/500 (at least 1 s), so a record stays small whatever the window. */
const BUCKETS_PER_WINDOW = 500;

/** What a reservation got. */
export interface Reservation {
  /** Deletions reserved (≤ wanted); only this many may be deleted. */
  granted: number;
  /** The bound of the window at that moment. */
  bound: number;
}

export class DeletionBrake {
  constructor(
    /** null = no brake (the ledger is never used). */
    readonly limit: DeletionLimit | null,
    readonly windowMs: number,
    private readonly ledger: DeletionLedger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Deletions allowed per window when the controller sees `nodes` Nodes. */
  bound(nodes: number): number {
    if (this.limit === null) return Infinity;
    if ('count' in this.limit) return this.limit.count;
    return Math.max(Math.floor((nodes * this.limit.percent) / 100), MIN_PERCENT_LIMIT_NODES);
  }

  /** Deletions recorded inside the window that ends now. */
  private inWindow(entries: DeletionEntry[], now: number): number {
    return entries.filter((e) => e.at > now - this.windowMs).reduce((n, e) => n + e.count, 0);
  }

  /**
   * The window's bound and how many more deletions it allows, when the
   * controller sees `nodes` Nodes. A percentage counts the Nodes deleted
   * inside the window too: otherwise each deletion would shrink the bound
   * (10 % of 200 would allow only 19).
   */
  private arithmetic(entries: DeletionEntry[], nodes: number, now: number): { bound: number; allowance: number } {
    const used = this.inWindow(entries, now);
    const bound = this.bound(nodes + used);
    return { bound, allowance: Math.max(0, bound - used) };
  }

  /** How many more Nodes may be deleted now (a fresh read of the ledger; throws when it cannot be read). */
  async allowance(nodes: number): Promise<Reservation> {
    if (this.limit === null) return { granted: Infinity, bound: Infinity };
    const { entries } = await this.ledger.read();
    const a = this.arithmetic(entries, nodes, this.now());
    return { granted: a.allowance, bound: a.bound };
  }

  /**
   * Reserves up to `wanted` deletions in the ledger: a fresh read, then a
   * conditional write of the entries with the new ones added, retried after
   * a conflict. Idempotent? No: each call that returns reserves anew. Throws
   * when the ledger cannot be read or written (nothing is reserved then, as
   * far as this process knows: delete nothing).
   */
  async reserve(wanted: number, nodes: number): Promise<Reservation> {
    if (this.limit === null) return { granted: wanted, bound: Infinity };
    for (let attempt = 1; ; attempt++) {
      const snap = await this.ledger.read();
      const now = this.now();
      const a = this.arithmetic(snap.entries, nodes, now);
      const granted = Math.min(wanted, a.allowance);
      if (granted <= 0) return { granted: 0, bound: a.bound };
      try {
        await this.ledger.write(this.add(snap.entries, now, granted), snap.version);
        return { granted, bound: a.bound };
      } catch (err) {
        if (!this.ledger.isConflict(err) || attempt >= RESERVE_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Gives back `count` reserved deletions that did not happen (the delete
   * failed), from the newest entries. Best effort: a failure leaves them
   * counted, which only holds back more. Throws on failure.
   */
  async release(count: number): Promise<void> {
    if (this.limit === null || count <= 0) return;
    for (let attempt = 1; ; attempt++) {
      const snap = await this.ledger.read();
      const entries = [...snap.entries].sort((a, b) => a.at - b.at);
      let left = count;
      for (let i = entries.length - 1; i >= 0 && left > 0; i--) {
        const take = Math.min(left, entries[i]!.count);
        entries[i] = { ...entries[i]!, count: entries[i]!.count - take };
        left -= take;
      }
      try {
        await this.ledger.write(
          entries.filter((e) => e.count > 0),
          snap.version,
        );
        return;
      } catch (err) {
        if (!this.ledger.isConflict(err) || attempt >= RESERVE_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * `entries` without those past the window, plus `count` at `now`. The time
   * is rounded UP to the bucket, so an entry leaves the window no earlier
   * than the deletion it stands for.
   */
  private add(entries: DeletionEntry[], now: number, count: number): DeletionEntry[] {
    const bucket = Math.max(1000, Math.ceil(this.windowMs / BUCKETS_PER_WINDOW));
    const at = Math.ceil(now / bucket) * bucket;
    const kept = entries.filter((e) => e.at > now - this.windowMs).map((e) => ({ ...e }));
    const same = kept.find((e) => e.at === at);
    if (same) same.count += count;
    else kept.push({ at, count });
    return kept.sort((a, b) => a.at - b.at);
  }
}
