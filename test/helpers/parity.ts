/**
 * The differential suite's comparator (test/integration/parity): what one CCM
 * left behind after the scenarios, flattened to `path → value`, and the
 * differences between two such snapshots judged against the table of allowed
 * differences (parity-allowed.ts, the rows of docs/upstream-parity.md).
 *
 * A snapshot holds no timestamps, UIDs, instance ids or allocated ports, and
 * each side's names (`parity-ours-…`, `parity-upstream-…`) read as
 * `parity-<side>-…`, so equal behaviour gives equal snapshots.
 */

export type SideName = 'ours' | 'upstream';

/** Flattened state of one side: `path → value`, e.g. `node/parity-<side>-init/label/topology.kubernetes.io/zone → zone-1`. */
export type Snapshot = Map<string, string>;

export interface Difference {
  path: string;
  /** Undefined: the path is absent on that side. */
  ours: string | undefined;
  upstream: string | undefined;
}

/** One row of the allowed differences: which path, and what each side must show there (null: absent). */
export interface AllowedDifference {
  /** The row's id in docs/upstream-parity.md. */
  id: string;
  path: RegExp;
  ours: RegExp | null;
  upstream: RegExp | null;
  /** When the two values must also relate exactly (e.g. ours = upstream without one entry): true when they do. */
  relation?: (ours: string | undefined, upstream: string | undefined) => boolean;
}

/** Every path whose value differs or that only one side has, sorted by path. */
export function differences(ours: Snapshot, upstream: Snapshot): Difference[] {
  const paths = [...new Set([...ours.keys(), ...upstream.keys()])].sort();
  return paths.filter((p) => ours.get(p) !== upstream.get(p)).map((path) => ({ path, ours: ours.get(path), upstream: upstream.get(path) }));
}

const valueMatches = (want: RegExp | null, got: string | undefined) => (want === null ? got === undefined : got !== undefined && want.test(got));

/** Whether `row` allows `d`. */
export function allows(row: AllowedDifference, d: Difference): boolean {
  return (
    row.path.test(d.path) && valueMatches(row.ours, d.ours) && valueMatches(row.upstream, d.upstream) && (row.relation?.(d.ours, d.upstream) ?? true)
  );
}

export interface Judgement {
  /** Differences no row allows: each fails the suite. */
  unexpected: Difference[];
  /** Rows that allowed nothing: each fails the suite too (the difference is gone: drop the row, or the scenario lost it). */
  unused: string[];
  /** Differences allowed, by row id. */
  allowed: Map<string, Difference[]>;
}

/** Sorts each difference into the row that allows it (the first that does), or into `unexpected`. */
export function judge(diffs: Difference[], rows: readonly AllowedDifference[]): Judgement {
  const allowed = new Map<string, Difference[]>(rows.map((r) => [r.id, []]));
  const unexpected: Difference[] = [];
  for (const d of diffs) {
    const row = rows.find((r) => allows(r, d));
    if (row) allowed.get(row.id)!.push(d);
    else unexpected.push(d);
  }
  const unused = rows.filter((r) => allowed.get(r.id)!.length === 0).map((r) => r.id);
  return { unexpected, unused, allowed };
}

/** A difference as one line: `path: ours=… upstream=…`. */
export function describe(d: Difference): string {
  const v = (x: string | undefined) => (x === undefined ? '(absent)' : JSON.stringify(x));
  return `${d.path}: ours=${v(d.ours)} upstream=${v(d.upstream)}`;
}

/** An RFC 4122 UID, as the API server makes them. */
const UID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** A UID without dashes, as in load balancer names (upstream's default: `a` + the first 31 of its hex digits). */
const UID_HEX = /(?<![0-9a-f])a?[0-9a-f]{31,32}(?![0-9a-f])/g;

/**
 * The text normalizer of one side: its names to `parity-<side>`, its local
 * cloud's instance ids to `<id:NAME>`, UIDs to `<uid>`.
 */
export function normalizer(side: SideName, instanceIds: ReadonlyMap<string, string>): (text: string) => string {
  return (text) => {
    let out = text;
    for (const [id, name] of instanceIds) out = out.split(id).join(`<id:${name}>`);
    return out.split(`parity-${side}`).join('parity-<side>').replace(UID, '<uid>').replace(UID_HEX, '<lb-name>');
  };
}

/**
 * Event messages whose tail is an error's wording, which legitimately differs
 * (upstream wraps the gRPC status as `rpc error: code = … desc = …` or maps
 * it to a fixed cloudprovider error; ours names the call): the tail becomes
 * `<error>`, the rest is compared. Upstream's own formats
 * (k8s.io/cloud-provider controllers/service).
 */
const ERROR_TAILS: readonly RegExp[] = [/^(Error syncing load balancer: ).+$/s, /^(Error updating load balancer with new hosts .*?, error: ).+$/s];

/** `message` with the error wording of a failure event replaced by `<error>` (see ERROR_TAILS). */
export function withoutErrorWording(message: string): string {
  for (const re of ERROR_TAILS) if (re.test(message)) return message.replace(re, '$1<error>');
  return message;
}
