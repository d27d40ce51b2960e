/**
 * The lock every cached build takes (buildOnce beside this file, the test
 * control plane's build in test/controlplane/binaries.ts), so that two
 * processes never build the same thing: a directory made with mkdir(2),
 * which is atomic, holding an `owner` file (pid, host, a token).
 *
 * A lock is stale only when its owner is gone, not after a fixed age: a
 * cold build on a loaded 2-core machine took 20 minutes, longer than the
 * 15-minute age that used to break a lock, so a second process started the
 * same build beside the first. The owner refreshes the owner file's mtime
 * (its heartbeat) every HEARTBEAT_MS while it holds the lock; the lock is
 * stale when
 *   - the owner is on this host and its pid is not alive, or
 *   - its heartbeat is older than HEARTBEAT_STALE_MS (the owner died on
 *     another host, or its pid was reused, or it is wedged), or
 *   - it has no owner file for OWNERLESS_STALE_MS (the owner died between
 *     mkdir and writing the file, or it is a lock of older code, which wrote
 *     none and broke a lock after this same age: so a build of older code
 *     running beside this one is not broken sooner than it would break it).
 * An owner file without `heartbeatMs` (older code: no heartbeat) is stale
 * only by its pid.
 *
 * A wait is bounded (waitMs): a lock held past it fails the waiter with one
 * line naming the lock, its pid and host.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { pidAlive } from '../../plugins/local/lock.js';

export { pidAlive };

/** How often the owner refreshes its heartbeat. */
export const HEARTBEAT_MS = 30_000;
/** A heartbeat older than this is a dead owner's (ten missed refreshes: a loaded machine delays a timer by seconds, not minutes). */
export const HEARTBEAT_STALE_MS = 5 * 60_000;
/** A lock directory without an owner file for this long is stale (the age older code broke every lock at). */
export const OWNERLESS_STALE_MS = 15 * 60_000;
/** Default bound on a wait for another process's build: longer than any build (the control plane's is limited to 60 minutes). */
export const LOCK_WAIT_MS = 90 * 60_000;

const OWNER_FILE = 'owner';

/** What the owner file holds. */
export interface LockOwner {
  pid: number;
  host: string;
  /** Identifies one holding: a release removes the lock only if it is still its own. */
  token?: string;
  /** The owner's heartbeat interval; absent in older code's owner files (no heartbeat). */
  heartbeatMs?: number;
}

/** What a waiter sees: the owner file (if any) and the mtime that dates it (the owner file's, else the directory's). */
export interface LockSeen {
  owner?: LockOwner;
  mtimeMs: number;
}

/** Whether a lock seen as `seen` at `now` is stale (see the top). Pure but for `alive`. */
export function lockIsStale(seen: LockSeen, now: number, host = hostname(), alive: (pid: number) => boolean = pidAlive): boolean {
  const age = now - seen.mtimeMs;
  const o = seen.owner;
  if (!o) return age > OWNERLESS_STALE_MS;
  if (o.host === host && !alive(o.pid)) return true;
  return o.heartbeatMs !== undefined && age > HEARTBEAT_STALE_MS;
}

/** The lock's owner file and date, or undefined when the lock is gone. */
export async function readLock(lock: string): Promise<LockSeen | undefined> {
  const file = join(lock, OWNER_FILE);
  try {
    const [text, st] = await Promise.all([readFile(file, 'utf8'), stat(file)]);
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (typeof o.pid === 'number') return { owner: { ...o, pid: o.pid, host: String(o.host ?? '') }, mtimeMs: st.mtimeMs };
  } catch {
    // no owner file (yet), or half written: dated by the directory
  }
  const st = await stat(lock).catch(() => undefined);
  return st && { mtimeMs: st.mtimeMs };
}

export interface AcquireOptions {
  /** Checked before every wait: true (what the lock guards is done) returns without the lock. */
  done?: () => Promise<boolean>;
  /** Bound on the wait (default LOCK_WAIT_MS). */
  waitMs?: number;
  /** Poll interval while waiting (default 1 s). */
  pollMs?: number;
  /** The heartbeat's interval while held (default HEARTBEAT_MS). */
  heartbeatMs?: number;
  /** Told now and then (every 30 s) that this process waits, and for whom. */
  onWait?: (line: string) => void;
  /** Told when a stale lock is broken. */
  onBreak?: (line: string) => void;
}

/** A held lock: release() stops the heartbeat and removes the lock (if it is still this holding's). */
export interface HeldLock {
  release(): Promise<void>;
}

const who = (seen: LockSeen | undefined) => (seen?.owner ? `pid ${seen.owner.pid} on ${seen.owner.host}` : 'an unknown process');

/**
 * Takes the lock directory `lock` (its parent must exist), waiting while
 * another live process holds it and breaking it when stale. Resolves to the
 * held lock, or to undefined when `done` says the work is done meanwhile.
 * Throws after `waitMs` of waiting, naming the lock and its holder.
 */
export async function acquireLock(lock: string, opts: AcquireOptions = {}): Promise<HeldLock | undefined> {
  const waitMs = opts.waitMs ?? LOCK_WAIT_MS;
  const started = Date.now();
  let told = 0;
  for (;;) {
    const held = await tryLock(lock, opts.heartbeatMs ?? HEARTBEAT_MS);
    if (held) return held;
    if (await opts.done?.()) return undefined;
    const seen = await readLock(lock);
    if (!seen) continue; // released meanwhile
    if (lockIsStale(seen, Date.now())) {
      if (await breakLock(lock, seen)) opts.onBreak?.(`removed the stale build lock ${lock} of ${who(seen)}`);
      continue;
    }
    if (Date.now() - started >= waitMs) {
      throw new Error(
        `gave up after ${Math.round(waitMs / 1000)} s waiting for the build lock ${lock}, held by ${who(seen)}; if that process is not building, delete the lock directory`,
      );
    }
    if (opts.onWait && Date.now() - told >= 30_000) {
      opts.onWait(`waiting for a build in another process (${who(seen)}, lock ${lock})`);
      told = Date.now();
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 1_000));
  }
}

/** mkdir is atomic: whoever creates the directory holds the lock; then the owner file, then its heartbeat. */
async function tryLock(lock: string, heartbeatMs: number): Promise<HeldLock | undefined> {
  try {
    await mkdir(lock);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
  const token = randomBytes(8).toString('hex');
  const file = join(lock, OWNER_FILE);
  const owner: LockOwner = { pid: process.pid, host: hostname(), token, heartbeatMs };
  try {
    await writeFile(file, JSON.stringify(owner));
  } catch (err) {
    await rm(lock, { recursive: true, force: true });
    throw err;
  }
  const beat = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => undefined);
  }, heartbeatMs);
  beat.unref();
  return {
    release: async () => {
      clearInterval(beat);
      // Only our own holding: had it been broken as stale, the lock is another process's now.
      if ((await readLock(lock))?.owner?.token === token) await rm(lock, { recursive: true, force: true });
    },
  };
}

/**
 * Removes the stale lock last seen as `seen`: renamed aside first (atomic),
 * after checking it is still that holding, so two waiters breaking it at
 * once cannot remove a lock a third process has just taken.
 */
async function breakLock(lock: string, seen: LockSeen): Promise<boolean> {
  const again = await readLock(lock);
  if (!again || again.owner?.token !== seen.owner?.token || again.owner?.pid !== seen.owner?.pid || again.mtimeMs !== seen.mtimeMs) return false;
  const aside = `${lock}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await rename(lock, aside);
  } catch {
    return false;
  }
  await rm(aside, { recursive: true, force: true });
  return true;
}
