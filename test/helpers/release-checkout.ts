/**
 * Copies of this checkout for the release command's tests, and the packages
 * release (test/integration/release/packages.test.ts). Builds no image: a
 * file that uses only this module does not wait for the runner's `release`
 * build (test/helpers/release.ts has the image fixtures).
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { filesUnder, REPO } from '../../tools/release/files.js';
import { HOST_IMAGE } from '../../tools/release/images.js';
import { release, type ReleaseResult } from '../../tools/release/release.js';

const run = promisify(execFile);

/** The fixed CHANGELOG date of the fixtures. */
export const RELEASE_DATE = '2026-01-02';

/** The checkout's own version (package.json's), as a tag. */
export async function currentVersion(): Promise<string> {
  return `v${(JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string }).version}`;
}

/** The version after package.json's (next minor). */
export async function nextVersion(): Promise<string> {
  const [major, minor] = (await currentVersion()).slice(1).split('.').map(Number);
  return `v${major}.${minor! + 1}.0`;
}

/**
 * Copies the checkout as a commit holds it into a new directory, and every
 * file the host image is built from (a git-ignored one too, e.g. an npm pack
 * tarball under sdk/): the image test hashes what is on disk.
 */
export async function copyCheckout(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-release-'));
  const tracked = (await run('git', ['ls-files', '-co', '--exclude-standard'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 })).stdout
    .split('\n')
    .filter(Boolean);
  const files = [...new Set([...tracked, ...(await filesUnder(REPO, HOST_IMAGE.context))])];
  // Tracked files deleted in the work tree are not part of the next commit.
  for (const f of files)
    await cp(join(REPO, f), join(dir, f)).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  return dir;
}

export interface PackagesRelease {
  /** The released copy of the checkout. */
  repo: string;
  result: ReleaseResult;
  remove(): Promise<void>;
}

/**
 * The release command on a copy of the checkout at the next minor version,
 * without images: its packages under `<out>/packages`. The copy links the
 * checkout's node_modules (the npm packs run the packages' tsc from it, as a
 * release from a checkout does); `<out>` is inside the copy.
 */
export async function packagesRelease(say: (line: string) => void = () => undefined): Promise<PackagesRelease> {
  const repo = await copyCheckout();
  try {
    await symlink(join(REPO, 'node_modules'), join(repo, 'node_modules'));
    const result = await release({ version: await nextVersion(), repo, images: [], date: RELEASE_DATE, java: false, say });
    return { repo, result, remove: () => rm(repo, { recursive: true, force: true }) };
  } catch (err) {
    await rm(repo, { recursive: true, force: true });
    throw err;
  }
}
