/** File lists and content hashes: the cache keys of everything built from the repository (tests and releases). */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is dist/tools/release/files.js). */
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/** Paths under `dir` (relative, sorted) that `keep` accepts. */
export async function filesUnder(dir: string, keep: (rel: string) => boolean): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const parent = (e as { parentPath?: string; path?: string }).parentPath ?? (e as { path?: string }).path ?? dir; // parentPath: Node >= 20.12
    const rel = relative(dir, join(parent, e.name));
    if (keep(rel)) out.push(rel);
  }
  return out.sort();
}

/** A short hash of `files` (relative to `dir`) and `extra`: a cache key. */
export async function hashFiles(dir: string, files: string[], extra: string): Promise<string> {
  const h = createHash('sha256').update(extra);
  for (const f of files)
    h.update(f)
      .update('\0')
      .update(await readFile(join(dir, f)))
      .update('\0');
  return h.digest('hex').slice(0, 16);
}
