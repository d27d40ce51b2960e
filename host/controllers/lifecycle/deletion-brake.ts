/**
 * The mass-deletion brake of the node lifecycle controller: at most a bounded
 * number of Node deletions per sliding window (--node-deletion-limit per
 * --node-deletion-limit-window). A provider that wrongly reports every
 * instance gone (unconfigured, pointed at the wrong account, a broken cloud
 * API) then costs a few Nodes, not the cluster. Upstream has no such brake.
 */

/** A count of Nodes, or a percentage of the Nodes the controller sees. */
export type DeletionLimit = { count: number } | { percent: number };

/** A percentage limit never allows fewer deletions per window than this. */
const MIN_PERCENT_LIMIT_NODES = 5;

/**
 * Parses `--node-deletion-limit`: `N` (a count; 0 turns the brake off) or
 * `P%` (0–100). Returns null when disabled, undefined when invalid.
 */
export function parseDeletionLimit(text: string): DeletionLimit | null | undefined {
  const pct = /^(\d{1,3})%$/.exec(text);
  if (pct) {
    const percent = Number(pct[1]);
    return percent <= 100 ? { percent } : undefined;
  }
  if (!/^\d{1,9}$/.test(text)) return undefined;
  const count = Number(text);
  return count === 0 ? null : { count };
}

export class DeletionBrake {
  /** Times of the deletions inside the window, oldest first (never more than the bound). */
  private readonly recent: number[] = [];

  constructor(
    /** null = no brake. */
    readonly limit: DeletionLimit | null,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Deletions allowed per window when the controller sees `nodes` Nodes. */
  bound(nodes: number): number {
    if (this.limit === null) return Infinity;
    if ('count' in this.limit) return this.limit.count;
    return Math.max(Math.floor((nodes * this.limit.percent) / 100), MIN_PERCENT_LIMIT_NODES);
  }

  /**
   * The bound for this window when the controller sees `nodes` Nodes now. A
   * percentage counts the Nodes deleted inside the window too: otherwise
   * each deletion would shrink the bound (10 % of 200 would allow only 19).
   */
  windowBound(nodes: number): number {
    const cutoff = this.now() - this.windowMs;
    while (this.recent.length > 0 && this.recent[0]! <= cutoff) this.recent.shift();
    return this.bound(nodes + this.recent.length);
  }

  /** How many more Nodes may be deleted now. */
  allowance(nodes: number): number {
    return Math.max(0, this.windowBound(nodes) - this.recent.length);
  }

  /** Counts one deletion that happened now. */
  record(): void {
    if (this.limit !== null) this.recent.push(this.now());
  }
}
