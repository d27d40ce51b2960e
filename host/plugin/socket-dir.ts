/**
 * The private directory (0700) that holds an exec-mode plugin's socket. Each
 * one carries a marker file with the pid of the host that made it, so a host
 * starting later can remove the directories of hosts that died without
 * cleaning up (SIGKILL, OOM) and never touches anyone else's: only
 * directories named `ccm-plugin-*`, owned by this user, whose marker names a
 * process of this pid namespace that no longer exists (a host in another
 * container sharing the directory may be alive although its pid is not
 * visible here).
 *
 * A directory whose host was still alive (e.g. still exiting) when this host
 * started is checked again every STALE_RECHECK_MS while this host runs, so it
 * goes once that host is gone. A host that exits through process.exit (its
 * shutdown backstop included) removes its own directories on the way out;
 * only a SIGKILLed host leaves them, for the next or a running host to remove.
 */
import { chmod, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorMessage, type Logger } from '../log.js';

const PREFIX = 'ccm-plugin-';
/** Marker file: "<pid> <pid namespace>" of the host process that created the directory. */
export const OWNER_MARKER = 'ccm-host.pid';
const MAX_MARKER_BYTES = 64;
/** How often directories of other live hosts are checked again (see the module comment). */
export const STALE_RECHECK_MS = 60_000;

/** This process's directories not removed yet; removed synchronously if the process exits first. */
const ownDirs = new Set<string>();
let exitHookInstalled = false;
function removeOwnDirsAtExit(): void {
  for (const dir of ownDirs) rmSync(dir, { recursive: true, force: true });
}

/** This process's pid namespace, e.g. "pid:[4026531836]" ('' where /proc does not say). */
function pidNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

/** The marker text for process `pid` of this pid namespace. */
export function ownerMarker(pid: number): string {
  return `${pid} ${pidNamespace()}`;
}

/** Creates a fresh private socket directory under `parent` (default: the OS temp directory), marked as this process's. */
export async function createSocketDir(parent = tmpdir()): Promise<string> {
  const dir = await mkdtemp(join(parent, PREFIX));
  await chmod(dir, 0o700);
  await writeFile(join(dir, OWNER_MARKER), ownerMarker(process.pid), { mode: 0o600 });
  ownDirs.add(dir);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', removeOwnDirsAtExit);
  }
  return dir;
}

/** Removes a socket directory and everything in it; never throws. */
export async function removeSocketDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  ownDirs.delete(dir);
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH'; // EPERM: someone else's live process
  }
}

/**
 * Removes the socket directories under `parent` left by host processes that
 * no longer exist (see the module comment); returns the removed paths.
 * Problems are logged, never thrown: this is housekeeping.
 */
export async function removeStaleSocketDirs(log: Logger, parent = tmpdir()): Promise<string[]> {
  return (await sweepSocketDirs(log, parent)).removed;
}

/**
 * removeStaleSocketDirs now, then again every `intervalMs` for as long as a
 * directory of another live host of this pid namespace remains (it may be
 * exiting). Resolves after the first pass; returns a stop function.
 */
export async function watchStaleSocketDirs(log: Logger, opts: { parent?: string; intervalMs?: number } = {}): Promise<() => void> {
  const parent = opts.parent ?? tmpdir();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const pass = async () => {
    const { othersAlive } = await sweepSocketDirs(log, parent);
    if (othersAlive > 0 && !stopped) timer = setTimeout(() => void pass(), opts.intervalMs ?? STALE_RECHECK_MS).unref();
  };
  await pass();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

async function sweepSocketDirs(log: Logger, parent: string): Promise<{ removed: string[]; othersAlive: number }> {
  const uid = process.getuid?.();
  const removed: string[] = [];
  let othersAlive = 0;
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(PREFIX))) {
    const dir = join(parent, name);
    try {
      const st = await lstat(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      const marker = join(dir, OWNER_MARKER);
      const mst = await lstat(marker).catch(() => undefined);
      if (!mst?.isFile() || mst.size > MAX_MARKER_BYTES) continue;
      const [pidText = '', namespace = ''] = (await readFile(marker, 'utf8')).trim().split(' ');
      const pid = Number(pidText);
      if (namespace !== pidNamespace() || !Number.isSafeInteger(pid) || pid <= 0) continue;
      if (processExists(pid)) {
        if (pid !== process.pid) othersAlive++;
        continue;
      }
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch (err) {
      log.warn({ dir, err: errorMessage(err) }, 'cannot remove stale plugin socket directory');
    }
  }
  if (removed.length > 0) log.info({ count: removed.length, dirs: removed.slice(0, 10) }, 'removed plugin socket directories of host processes that are gone');
  return { removed, othersAlive };
}
