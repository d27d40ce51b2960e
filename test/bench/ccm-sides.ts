/**
 * What a side-by-side bench section measures both CCMs with
 * (test/helpers/ccm-side.ts starts them, one after the other, on the same
 * control plane and a fresh local cloud each): the CCM process's CPU and RSS from /proc,
 * the cloud calls from the local cloud's journal, and writes from the
 * kube-apiserver's request counter.
 */
import { readFile } from 'node:fs/promises';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { get } from '../controlplane/probe.js';
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
