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
 *
 * With --shard-count, every shard's controller writes the same record and
 * counts the limit against every shard's Nodes, so the shards together
 * delete no more per window than one replica would (the floor of 5 once for
 * the cluster). Each shard's Node cache may still hold Nodes another shard
 * has just deleted (its watch lags), and counting those and the record's
 * deletions both would raise the limit; so a percentage is never taken of
 * more Nodes than the largest count any reservation of the window saw (kept
 * with the entries), nor of more than the Nodes seen now plus those deleted
 * in the window (the single replica's rule, which it reduces to).
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
  /**
   * The Node count the limit was taken of when they were reserved (the
   * largest, when several reservations share the entry); absent in records
   * written before it was kept (such entries raise no limit).
   */
  nodes?: number;
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
  /** The entry (its `at`) the deletions were added to; pass it to `release`. Absent when nothing was reserved. */
  at?: number;
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

  /**
   * The window's bound and how many more deletions it allows, when the
   * controller sees `nodes` Nodes (with --shard-count: every shard's). A
   * percentage counts the Nodes deleted inside the window too: otherwise each
   * deletion would shrink the bound (10 % of 200 would allow only 19). But a
   * Node deleted by another shard (or by this one, if the watch lags) may
   * still be among the `nodes` seen: counted twice, it would raise the bound.
   * So the count is capped by the largest count a reservation inside the
   * window saw (`nodes` of the entries): Nodes no cache ever held at once are
   * never counted. `counted` is what the next entry keeps.
   */
  private arithmetic(entries: DeletionEntry[], nodes: number, now: number): { bound: number; allowance: number; counted: number } {
    const live = entries.filter((e) => e.at > now - this.windowMs);
    const used = live.reduce((n, e) => n + e.count, 0);
    const seen = live.reduce((m, e) => Math.max(m, e.nodes ?? 0), 0);
    const counted = Math.min(nodes + used, Math.max(nodes, seen));
    const bound = this.bound(counted);
    return { bound, allowance: Math.max(0, bound - used), counted };
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
   * a conflict (the conflict's winner may have used the window: the count
   * is checked again on the new read, never on the old one). Idempotent? No:
   * each call that returns reserves anew. Throws when the ledger cannot be
   * read or written (nothing is reserved then, as far as this process knows:
   * delete nothing).
   */
  async reserve(wanted: number, nodes: number): Promise<Reservation> {
    if (this.limit === null) return { granted: wanted, bound: Infinity };
    for (let attempt = 1; ; attempt++) {
      const snap = await this.ledger.read();
      const now = this.now();
      const a = this.arithmetic(snap.entries, nodes, now);
      const granted = Math.min(wanted, a.allowance);
      if (granted <= 0) return { granted: 0, bound: a.bound };
      const entry = this.entry(now, granted, a.counted);
      try {
        await this.ledger.write(this.add(snap.entries, now, entry), snap.version);
        return { granted, bound: a.bound, at: entry.at };
      } catch (err) {
        if (!this.ledger.isConflict(err) || attempt >= RESERVE_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Gives back `count` reserved deletions that did not happen (the delete
   * failed), from the entry of their reservation (`at`, Reservation.at) and
   * older ones, newest first. Never from a newer entry: that may be another
   * shard's (or replica's), and taking from it would leave a later deletion
   * counted at an earlier time, leaving the window too early. Best effort: a
   * failure leaves them counted, which only holds back more. Throws on failure.
   */
  async release(count: number, at = Infinity): Promise<void> {
    if (this.limit === null || count <= 0) return;
    for (let attempt = 1; ; attempt++) {
      const snap = await this.ledger.read();
      const entries = [...snap.entries].sort((a, b) => a.at - b.at);
      let left = count;
      for (let i = entries.length - 1; i >= 0 && left > 0; i--) {
        if (entries[i]!.at > at) continue;
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
   * The entry for `count` deletions reserved at `now` against `nodes` Nodes.
   * The time is rounded UP to the bucket, so an entry leaves the window no
   * earlier than the deletion it stands for.
   */
  private entry(now: number, count: number, nodes: number): DeletionEntry {
    const bucket = Math.max(1000, Math.ceil(this.windowMs / BUCKETS_PER_WINDOW));
    return { at: Math.ceil(now / bucket) * bucket, count, nodes };
  }

  /** `entries` without those past the window, plus `entry` (merged into an entry of the same bucket). */
  private add(entries: DeletionEntry[], now: number, entry: DeletionEntry): DeletionEntry[] {
    const kept = entries.filter((e) => e.at > now - this.windowMs).map((e) => ({ ...e }));
    const same = kept.find((e) => e.at === entry.at);
    if (same) {
      same.count += entry.count;
      same.nodes = Math.max(same.nodes ?? 0, entry.nodes ?? 0);
    } else kept.push(entry);
    return kept.sort((a, b) => a.at - b.at);
  }
}
