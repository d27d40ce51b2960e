/**
 * Finds and kills every process that belongs to one exec-mode plugin, from
 * /proc (Linux). A plugin's processes are:
 * - the members of its process group (the plugin is the group leader);
 * - every process whose environment carries the plugin's marker
 *   (`CCM_PLUGIN_INSTANCE_ID=<nonce>`, inherited by whatever the plugin
 *   starts), which finds descendants that left the group (setsid) even after
 *   their parent died and they were re-parented;
 * - every descendant (by parent pid) of those, which finds a process that
 *   also cleared its environment as long as its parent is still one of them;
 * - the processes found so when a stop began (pid and start time), which
 *   finds such a process even when its parent died during the stop.
 *
 * Limits: a process that left the group, cleared or replaced its environment
 * and whose parent chain to the plugin is already broken is not found.
 * /proc/<pid>/environ is the environment at exec time, readable for
 * processes of the host's own user (or by root). Orphans are re-parented to
 * PID 1 (or the nearest subreaper), which reaps them once killed; a host
 * running as PID 1 needs an init that reaps (e.g. tini). Without /proc
 * (not Linux) only the process group is killed.
 */
import { open, readdir } from 'node:fs/promises';

/** Bytes of /proc/<pid>/environ read when looking for the marker (environments are rarely over a few KiB). */
const MAX_ENVIRON_BYTES = 256 * 1024;
/** Kill rounds: each finds what the previous round's processes started meanwhile. */
const MAX_KILL_ROUNDS = 10;
const ROUND_PAUSE_MS = 20;

interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  /** Single-letter state; `Z` is a zombie (dead, waiting to be reaped). */
  state: string;
  /** Start time in clock ticks since boot: with the pid, names one process (pids are reused). */
  startTime: string;
}

/** Parses /proc/<pid>/stat; the command name in parentheses may hold spaces and parentheses. */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  const open = text.indexOf(' (');
  if (close < 0 || open < 0) return undefined;
  const pid = Number(text.slice(0, open));
  // Fields from the 3rd on: state, ppid, pgrp, ...; the 22nd is the start time.
  const fields = text.slice(close + 2).split(' ');
  if (!Number.isSafeInteger(pid) || fields.length < 20) return undefined;
  return { pid, state: fields[0]!, ppid: Number(fields[1]), pgrp: Number(fields[2]), startTime: fields[19]! };
}

async function readBounded(path: string, max: number): Promise<Buffer | undefined> {
  try {
    const f = await open(path, 'r');
    try {
      const buf = Buffer.alloc(max);
      const { bytesRead } = await f.read(buf, 0, max, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await f.close();
    }
  } catch {
    return undefined; // gone, or another user's
  }
}

async function livingProcesses(): Promise<ProcStat[]> {
  const names = await readdir('/proc').catch(() => [] as string[]);
  const stats = await Promise.all(
    names
      .filter((n) => /^\d+$/.test(n))
      .map(async (n) => {
        const text = await readBounded(`/proc/${n}/stat`, 4096);
        return text ? parseProcStat(text.toString('utf8')) : undefined;
      }),
  );
  return stats.filter((s): s is ProcStat => s !== undefined && s.state !== 'Z');
}

/** Whether /proc/<pid>/environ holds the entry `marker` (`NAME=VALUE`). */
async function carriesMarker(pid: number, marker: Buffer): Promise<boolean> {
  const environ = await readBounded(`/proc/${pid}/environ`, MAX_ENVIRON_BYTES);
  if (!environ) return false;
  for (let at = environ.indexOf(marker); at >= 0; at = environ.indexOf(marker, at + 1)) {
    const starts = at === 0 || environ[at - 1] === 0;
    const ends = at + marker.length === environ.length || environ[at + marker.length] === 0;
    if (starts && ends) return true;
  }
  return false;
}

/** Who belongs to a plugin: its process group leader's pid and its environment marker. */
export interface PluginTree {
  /** The leader's pid, which is its group id; none for a plugin long gone (its pid may be reused). */
  groupId?: number;
  /** `NAME=VALUE` set in the plugin's environment at launch. */
  marker: string;
  /** The leader's start time (see processStartTime): older processes cannot carry the marker, so their environment is not read. */
  startTime?: string;
}

/** Start time of `pid` in clock ticks since boot, if /proc says. */
export async function processStartTime(pid: number): Promise<string | undefined> {
  const text = await readBounded(`/proc/${pid}/stat`, 4096);
  return text ? parseProcStat(text.toString('utf8'))?.startTime : undefined;
}

/** The living processes of `tree` (see the module comment), never this process or its ancestors. */
export async function findPluginProcesses(tree: PluginTree): Promise<number[]> {
  return (await snapshotPluginProcesses(tree)).map((p) => p.pid);
}

/** Like findPluginProcesses, with each process's start time. */
export async function snapshotPluginProcesses(tree: PluginTree): Promise<{ pid: number; startTime: string }[]> {
  const all = await livingProcesses();
  const marker = Buffer.from(tree.marker);
  const byPid = new Map(all.map((s) => [s.pid, s]));
  const protectedPids = new Set<number>();
  for (let p: number | undefined = process.pid; p !== undefined && p > 0 && !protectedPids.has(p); p = byPid.get(p)?.ppid) protectedPids.add(p);
  const found = new Set<number>();
  const notBefore = tree.startTime === undefined ? 0 : Number(tree.startTime);
  const marked = await Promise.all(
    all.map(
      async (s) =>
        (tree.groupId !== undefined && s.pgrp === tree.groupId) || (Number(s.startTime) >= notBefore && (await carriesMarker(s.pid, marker))),
    ),
  );
  all.forEach((s, i) => marked[i] && found.add(s.pid));
  // Descendants of what was found, to a fixed point.
  for (let grew = true; grew;) {
    grew = false;
    for (const s of all) {
      if (!found.has(s.pid) && found.has(s.ppid)) {
        found.add(s.pid);
        grew = true;
      }
    }
  }
  return all.filter((s) => found.has(s.pid) && !protectedPids.has(s.pid)).map((s) => ({ pid: s.pid, startTime: s.startTime }));
}

/**
 * SIGKILLs every process of `tree` (the group first, then each process
 * found, and each of `recorded` (pid → start time, from an earlier snapshot)
 * that is still the same process), rescanning until none is left or the
 * rounds run out; returns how many distinct processes were signalled.
 */
export async function killPluginProcesses(tree: PluginTree, recorded: ReadonlyMap<number, string> = new Map()): Promise<number> {
  const killed = new Set<number>();
  for (let round = 0; round < MAX_KILL_ROUNDS; round++) {
    try {
      if (tree.groupId !== undefined && tree.groupId > 0) process.kill(-tree.groupId, 'SIGKILL');
    } catch {
      // No member left.
    }
    const pids = await findPluginProcesses(tree);
    if (recorded.size > 0) {
      for (const s of await livingProcesses()) if (recorded.get(s.pid) === s.startTime && s.pid !== process.pid) pids.push(s.pid);
    }
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.add(pid);
      } catch {
        // Already gone.
      }
    }
    await new Promise((r) => setTimeout(r, ROUND_PAUSE_MS));
  }
  return killed.size;
}
