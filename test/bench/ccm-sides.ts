/**
 * What a side-by-side bench section measures both CCMs with
 * (test/helpers/ccm-side.ts starts them, one after the other, on the same
 * control plane and a fresh local cloud each): the CCM process's CPU and RSS from /proc,
 * the cloud calls from the local cloud's journal, and writes from the
 * kube-apiserver's request counter.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { get } from '../controlplane/probe.js';
import { httpsRequest } from '../helpers/https.js';
import type { RunningCcm } from '../helpers/ccm-side.js';
import { readJournal } from '../../plugins/local/journal.js';

/** `VmHWM` (peak) or `VmRSS` (now) of `pid`, in MiB (the bench tables say so). */
export async function rssMb(pid: number, field: 'VmHWM' | 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** User+system CPU seconds `pid` has used so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Seconds one thread spent on a CPU and runnable but waiting for one, by thread id. */
export type SchedSnapshot = Map<number, { run: number; wait: number }>;

/**
 * Every thread's scheduler times of `pid` (/proc/<pid>/task/<tid>/schedstat:
 * ns on a CPU, ns runnable on a run queue); threads that end meanwhile are left out.
 */
export async function schedSnapshot(pid: number): Promise<SchedSnapshot> {
  const out: SchedSnapshot = new Map();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const line = await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '');
    const [run, wait] = line.split(' ').map(Number);
    if (run !== undefined && wait !== undefined && !Number.isNaN(wait)) out.set(Number(tid), { run: run / 1e9, wait: wait / 1e9 });
  }
  return out;
}

export interface SchedFigures {
  /** Seconds the process's threads were runnable but waiting for a CPU, together. */
  waitSeconds: number;
  /**
   * The busiest thread (most time running or waiting to run): that time as a share of the wall time
   * (1: it always had work). Node.js runs its JavaScript on one thread, Go spreads goroutines over several.
   */
  busiestShare: number;
}

/** What the scheduler shows between two snapshots `wallSeconds` apart. */
export function schedFigures(before: SchedSnapshot, after: SchedSnapshot, wallSeconds: number): SchedFigures {
  let waitSeconds = 0;
  let busiest = 0;
  for (const [tid, a] of after) {
    const b = before.get(tid) ?? { run: 0, wait: 0 };
    waitSeconds += a.wait - b.wait;
    busiest = Math.max(busiest, a.run - b.run + (a.wait - b.wait));
  }
  return { waitSeconds, busiestShare: wallSeconds > 0 ? busiest / wallSeconds : NaN };
}

/** Sum of kube-apiserver's apiserver_request_total for `resource` and the given verbs. */
export async function apiRequests(cp: ControlPlane, resource: string, verbs: string[]): Promise<number> {
  const r = await get(`${cp.server}/metrics`, { insecure: true, token: cp.token, timeoutMs: 10_000 });
  if (r.status !== 200) throw new Error(`kube-apiserver /metrics answered ${r.status}`);
  let n = 0;
  for (const m of r.body.matchAll(/^apiserver_request_total\{([^}]*)\} (\d+)/gm)) {
    const labels = m[1]!;
    if (labels.includes(`resource="${resource}"`) && verbs.some((v) => labels.includes(`verb="${v}"`))) n += Number(m[2]);
  }
  return n;
}

/**
 * kube-apiserver's apiserver_request_total for `resources`, summed by
 * `VERB resource` (subresource appended as `resource/sub`), WATCH left out:
 * what a steady state is made of.
 */
export async function apiRequestsByVerb(cp: ControlPlane, resources: string[]): Promise<Map<string, number>> {
  const r = await get(`${cp.server}/metrics`, { insecure: true, token: cp.token, timeoutMs: 10_000 });
  if (r.status !== 200) throw new Error(`kube-apiserver /metrics answered ${r.status}`);
  const out = new Map<string, number>();
  for (const m of r.body.matchAll(/^apiserver_request_total\{([^}]*)\} (\d+)/gm)) {
    const label = (k: string) => new RegExp(`(?:^|,)${k}="([^"]*)"`).exec(m[1]!)?.[1] ?? '';
    const [verb, resource, sub] = [label('verb'), label('resource'), label('subresource')];
    if (!resources.includes(resource) || verb === 'WATCH') continue;
    const key = `${verb} ${resource}${sub ? `/${sub}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[2]));
  }
  return out;
}

/** `after − before` per key, non-zero ones only, as `VERB resource n, …` (per minute when `minutes` is given). */
export function requestDelta(before: Map<string, number>, after: Map<string, number>, minutes = 1): string {
  const rows = [...after].map(([k, n]) => [k, (n - (before.get(k) ?? 0)) / minutes] as const).filter(([, n]) => n > 0);
  return rows.length ? rows.map(([k, n]) => `${k} ${n.toFixed(1)}`).join(', ') : 'none';
}

/** Write verbs as apiserver_request_total names them. */
export const WRITE_VERBS = ['POST', 'CREATE', 'PATCH', 'PUT', 'UPDATE'];

/** Calls in the local cloud's journal (LOCALCLOUD_JOURNAL=all: one line per call), optionally only `method`s. */
export async function journaledCalls(state: string, method?: RegExp): Promise<number> {
  const entries = await readJournal(state);
  return method ? entries.filter((e) => method.test(e.method)).length : entries.length;
}

/** `ours ÷ upstream` as `0.84×`, or a dash when upstream is 0. */
export const ratio = (ours: number, upstream: number) => (upstream > 0 ? `${(ours / upstream).toFixed(2)}×` : '—');

/** A markdown table row per setting for one figure: `| what | setting | ours | upstream | ratio |`. */
export function sideBySideRows<F>(
  results: { label: string; ours: F; upstream: F }[],
  what: string,
  pick: (f: F) => number,
  fmt: (n: number) => string,
  bold = false,
): string {
  return results
    .map(({ label, ours, upstream }) => {
      const o = fmt(pick(ours));
      return `| ${what} | ${label} | ${bold ? `**${o}**` : o} | ${fmt(pick(upstream))} | ${ratio(pick(ours), pick(upstream))} |`;
    })
    .join('\n');
}

/**
 * The cost of the live reads (issue 29, item 5: the cache never decides a
 * destructive action alone) beside what they guard, for one side over one
 * scenario.
 */
export interface LiveReadFigures {
  /** ccm_live_reads_total over every label, from the host's /metrics; upstream has no such reads (0). */
  liveReads: number;
  /** GETs of the scenario's resource the kube-apiserver served meanwhile (any client): what each side read one object at a time. */
  gets: number;
  /** The scenario's resource writes by the CCM (create, update, patch, delete) meanwhile. */
  kubeWrites: number;
  /** Cloud objects the CCM changed meanwhile (the journal's mutating calls; a batch call counts each object it changed). */
  cloudChanges: number;
}

/** The sum of the host's ccm_live_reads_total; 0 for a CCM without it (upstream). */
export async function hostLiveReads(cp: ControlPlane, ccm: RunningCcm): Promise<number> {
  // The admin (system:masters) may read /metrics without a SubjectAccessReview.
  const r = await httpsRequest(`https://127.0.0.1:${ccm.port}/metrics`, { insecure: true, token: cp.token });
  if (r.status !== 200) throw new Error(`CCM /metrics answered ${r.status}`);
  let n = 0;
  for (const m of r.body.matchAll(/^ccm_live_reads_total\{[^}]*\} ([0-9.e+-]+)/gm)) n += Number(m[1]);
  return n;
}

/** Cloud objects changed by the journal's mutating calls from entry `from` on (a batch call counts each object). */
export async function cloudChanges(state: string, from = 0): Promise<number> {
  let n = 0;
  for (const e of (await readJournal(state)).slice(from)) {
    if (!e.mutating || !e.ok) continue;
    const routes = (e.routesCreated?.length ?? 0) + (e.routesDeleted?.length ?? 0);
    n += e.routesCreated || e.routesDeleted ? routes : Math.max(1, (e.keys?.length ?? 1) - (e.failedKeys?.length ?? 0));
  }
  return n;
}

/** Journal entries so far (a `from` for cloudChanges). */
export async function journalLength(state: string): Promise<number> {
  return (await readJournal(state)).length;
}

/** Live reads as a share of what they guard: `3.1 %`, or a dash when nothing was written. */
export const liveReadShare = (f: LiveReadFigures) =>
  f.kubeWrites + f.cloudChanges > 0 ? `${((100 * f.liveReads) / (f.kubeWrites + f.cloudChanges)).toFixed(1)} %` : '—';

/**
 * The rows of a side-by-side table for LiveReadFigures (`| what | setting |
 * ours | upstream | ratio |`): `resource` names the scenario's objects
 * (`Node`, `Service`), `int` formats counts.
 */
export function liveReadRows<F>(
  results: { label: string; ours: F; upstream: F }[],
  pick: (f: F) => LiveReadFigures,
  resource: string,
  int: (n: number) => string,
): string {
  const rows = [
    sideBySideRows(results, 'live reads (ccm_live_reads_total)', (f) => pick(f).liveReads, int, true),
    sideBySideRows(results, `${resource} GETs (API server, all clients)`, (f) => pick(f).gets, int),
    sideBySideRows(results, `${resource} writes by the CCM`, (f) => pick(f).kubeWrites, int),
    sideBySideRows(results, 'cloud objects changed', (f) => pick(f).cloudChanges, int),
    results
      .map(
        ({ label, ours, upstream }) =>
          `| live reads ÷ (writes + cloud changes) | ${label} | **${liveReadShare(pick(ours))}** | ${liveReadShare(pick(upstream))} | |`,
      )
      .join('\n'),
  ];
  return rows.join('\n');
}
