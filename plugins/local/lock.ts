/**
 * A cross-process lock built on mkdir(2), which is atomic on every local file
 * system: whoever creates the lock directory holds the lock. The holder
 * writes an `owner` file (pid, host, random token) into it so that waiters
 * can detect a stale lock left by a crashed process and break it.
 *
 * Stale means: the owner pid is on this host and no longer alive, or the
 * directory has had no owner file for LOCK_OWNERLESS_STALE_MS (the holder
 * died between mkdir and writing it), or the lock is older than
 * LOCK_MAX_HOLD_MS (a live but wedged or recycled pid). Breaking renames the
 * directory away (atomic) before removing it, after checking it still holds
 * the stale owner, so two waiters cannot both break it and then remove the
 * lock a third process has just taken.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** Default bound on waiting for the lock, in milliseconds. */
export const LOCK_WAIT_MS = 10_000;
/** A lock directory without an owner file for this long is stale, in milliseconds. */
export const LOCK_OWNERLESS_STALE_MS = 2_000;
/** A lock held for longer than this is stale whatever its pid, in milliseconds. */
const LOCK_MAX_HOLD_MS = 60_000;
/** First poll interval while waiting, in milliseconds (doubles up to the max). */
const POLL_MIN_MS = 1;
/** Largest poll interval while waiting, in milliseconds. */
const POLL_MAX_MS = 25;
/** Name of the owner file inside the lock directory. */
const OWNER_FILE = 'owner';

/** Thrown when the lock could not be taken within the wait bound. */
export class LockTimeoutError extends Error {
  override name = 'LockTimeoutError';
}

/** Contents of the owner file. */
interface LockOwner {
  pid: number;
  host: string;
  token: string;
  /** When the lock was taken, ms since the epoch. */
  since: number;
}

/** Options of {@link DirLock}. */
export interface DirLockOptions {
  /** Bound on waiting for the lock, in milliseconds. */
  waitMs?: number;
}

/** A mkdir-based lock on one path; reentrancy is not supported. */
export class DirLock {
  private readonly waitMs: number;
  /** Serializes holders inside this process so they do not poll each other. */
  private tail: Promise<void> = Promise.resolve();

  /** `path` is the lock directory to create, e.g. `<state>/state.lock`. */
  constructor(
    readonly path: string,
    opts: DirLockOptions = {},
  ) {
    this.waitMs = opts.waitMs ?? LOCK_WAIT_MS;
    if (!(this.waitMs >= 0)) throw new RangeError(`lock wait must be >= 0 ms, got ${this.waitMs}`);
  }

  /** Runs `fn` while holding the lock; the lock is released whatever happens. */
  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((resolve) => (done = resolve));
    try {
      await previous;
      const token = await this.acquire();
      try {
        return await fn();
      } finally {
        await this.release(token);
      }
    } finally {
      done();
    }
  }

  private async acquire(): Promise<string> {
    const deadline = Date.now() + this.waitMs;
    const token = randomBytes(8).toString('hex');
    let pollMs = POLL_MIN_MS;
    for (;;) {
      // Local file system calls of a few microseconds each: synchronous is
      // cheaper than a thread-pool round trip per call.
      let created = false;
      try {
        mkdirSync(this.path);
        created = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      if (created) {
        const owner: LockOwner = { pid: process.pid, host: hostname(), token, since: Date.now() };
        try {
          writeFileSync(join(this.path, OWNER_FILE), JSON.stringify(owner));
        } catch (err) {
          rmSync(this.path, { recursive: true, force: true });
          throw err;
        }
        return token;
      }
      if (this.breakIfStale()) continue;
      if (Date.now() >= deadline) {
        const holder = this.readOwner();
        const who = holder ? `pid ${holder.pid} on ${holder.host}` : 'an unknown process';
        throw new LockTimeoutError(`state lock ${this.path} is held by ${who}; gave up after ${this.waitMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs + Math.random() * pollMs));
      pollMs = Math.min(pollMs * 2, POLL_MAX_MS);
    }
  }

  private async release(token: string): Promise<void> {
    const owner = this.readOwner();
    // Only remove our own lock: if it was broken as stale, it is someone else's now.
    if (owner?.token !== token) return;
    try {
      unlinkSync(join(this.path, OWNER_FILE));
      rmdirSync(this.path);
    } catch {
      rmSync(this.path, { recursive: true, force: true });
    }
  }

  private readOwner(): LockOwner | undefined {
    try {
      const parsed = JSON.parse(readFileSync(join(this.path, OWNER_FILE), 'utf8')) as Partial<LockOwner>;
      if (typeof parsed.pid !== 'number' || typeof parsed.token !== 'string') return undefined;
      return { pid: parsed.pid, host: String(parsed.host ?? ''), token: parsed.token, since: Number(parsed.since ?? 0) };
    } catch {
      return undefined;
    }
  }

  /** Breaks the lock if it is stale; true when it was broken (or vanished). */
  private breakIfStale(): boolean {
    const owner = this.readOwner();
    if (owner) {
      if (!isStale(owner)) return false;
    } else {
      let ageMs: number;
      try {
        ageMs = Date.now() - statSync(this.path).mtimeMs;
      } catch {
        return true; // Released meanwhile: try again at once.
      }
      if (ageMs < LOCK_OWNERLESS_STALE_MS) return false;
    }
    const aside = `${this.path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      // Re-check right before moving it: another waiter may have broken it and
      // a live process taken it since we looked.
      const again = this.readOwner();
      if (again?.token !== owner?.token) return true;
      renameSync(this.path, aside);
    } catch {
      return true;
    }
    rmSync(aside, { recursive: true, force: true });
    return true;
  }
}

function isStale(owner: LockOwner): boolean {
  if (Date.now() - owner.since > LOCK_MAX_HOLD_MS) return true;
  if (owner.host !== hostname()) return false;
  return !pidAlive(owner.pid);
}

/** Whether a process with this pid exists (EPERM: it exists, owned by someone else). Also the build lock's (tools/release/build-lock.ts). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
