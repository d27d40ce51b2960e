/**
 * Tools and providers that tests build on first use into a cache outside the
 * repository (~/.cache/ccm-host/...): built once per machine even when test
 * files ask for them at the same time.
 */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** A lock older than this is left by a build that died. */
const LOCK_STALE_MS = 15 * 60_000;

/** Whether `p` exists (a built cache directory is complete: buildOnce renames it into place when done). */
export async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/**
 * Makes the directory `final` exist by running `build(tmp)` and renaming tmp
 * into place, under a directory lock so only one process builds; a failed
 * build leaves nothing at `final`.
 */
export async function buildOnce(final: string, build: (tmp: string) => Promise<void>): Promise<void> {
  if (await exists(final)) return;
  await mkdir(join(final, '..'), { recursive: true });
  const lock = `${final}.lock`;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch {
      if (await exists(final)) return;
      const st = await stat(lock).catch(() => undefined);
      if (st && Date.now() - st.mtimeMs > LOCK_STALE_MS) await rm(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const tmp = `${final}.tmp-${process.pid}`;
  try {
    if (await exists(final)) return;
    await rm(tmp, { recursive: true, force: true });
    await build(tmp);
    await rename(tmp, final);
  } finally {
    await rm(tmp, { recursive: true, force: true });
    await rm(lock, { recursive: true, force: true });
  }
}
