/**
 * Tools and providers that tests build on first use into a cache outside the
 * repository (~/.cache/ccm-host/...): built once per machine even when test
 * files ask for them at the same time.
 */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireLock, type AcquireOptions } from './build-lock.js';

/** Whether `p` exists (a built cache directory is complete: buildOnce renames it into place when done). */
export async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/**
 * Makes the directory `final` exist by running `build(tmp)` and renaming tmp
 * into place, under the lock `${final}.lock` (build-lock.ts: a waiter waits
 * as long as the builder is alive, up to `lock.waitMs`) so only one process
 * builds; a failed build leaves nothing at `final`.
 */
export async function buildOnce(final: string, build: (tmp: string) => Promise<void>, lock: AcquireOptions = {}): Promise<void> {
  if (await exists(final)) return;
  await mkdir(join(final, '..'), { recursive: true });
  const held = await acquireLock(`${final}.lock`, { ...lock, done: () => exists(final) });
  if (!held) return;
  const tmp = `${final}.tmp-${process.pid}`;
  try {
    if (await exists(final)) return;
    await rm(tmp, { recursive: true, force: true });
    await build(tmp);
    await rename(tmp, final);
  } finally {
    await rm(tmp, { recursive: true, force: true });
    await held.release();
  }
}
