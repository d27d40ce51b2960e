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
 * only a SIGKILLed host leaves them, for the next or a running host to remove
 * together with whatever processes carrying the plugin's instance id are
 * still running (process-tree.ts).
 */
import { chmod, lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { errorMessage, type Logger } from '../log.js';
import { ENV_INSTANCE_ID } from '../../sdk/protocol.js';
import { killPluginProcesses } from './process-tree.js';

const PREFIX = 'ccm-plugin-';
/** Marker file: "<pid> <pid namespace>" of the host process that created the directory. */
export const OWNER_MARKER = 'ccm-host.pid';
const MAX_MARKER_BYTES = 64;
/** The CCM_PLUGIN_INSTANCE_ID of the plugin that used the directory: its leftovers are killed with the stale directory. */
export const INSTANCE_MARKER = 'plugin.instance';
const INSTANCE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
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

/**
 * Creates a fresh private socket directory under `parent` (default: the OS
 * temp directory), marked as this process's and, with `instanceId`, as that
 * plugin's.
 */
export async function createSocketDir(parent = tmpdir(), instanceId?: string): Promise<string> {
  const dir = await mkdtemp(join(parent, PREFIX));
  await chmod(dir, 0o700);
  await writeFile(join(dir, OWNER_MARKER), ownerMarker(process.pid), { mode: 0o600 });
  if (instanceId !== undefined) await writeFile(join(dir, INSTANCE_MARKER), instanceId, { mode: 0o600 });
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

/** Kills what the plugin of a dead host's directory left running (a SIGKILLed host could not). */
async function killLeftovers(dir: string, log: Logger): Promise<void> {
  const file = join(dir, INSTANCE_MARKER);
  const st = await lstat(file).catch(() => undefined);
  if (!st?.isFile() || st.size > MAX_MARKER_BYTES) return;
  const id = (await readFile(file, 'utf8')).trim();
  if (!INSTANCE_ID.test(id)) return;
  const killed = await killPluginProcesses({ marker: `${ENV_INSTANCE_ID}=${id}` });
  if (killed > 0) log.warn({ dir, killed }, 'killed processes left by the plugin of a host that is gone');
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
      await killLeftovers(dir, log);
      await rm(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch (err) {
      log.warn({ dir, err: errorMessage(err) }, 'cannot remove stale plugin socket directory');
    }
  }
  if (removed.length > 0)
    log.info({ count: removed.length, dirs: removed.slice(0, 10) }, 'removed plugin socket directories of host processes that are gone');
  return { removed, othersAlive };
}
