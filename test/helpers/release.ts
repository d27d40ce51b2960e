/**
 * A release made by the release command (tools/release) on a copy of this
 * checkout, for the release test: the copy holds exactly the files git would
 * commit (tracked, and new unignored ones), the release is the next minor
 * version with a fixed date, and it builds the host image for every
 * architecture (the images it builds are cached by their inputs in the image
 * store, so a second fixture of the same tree builds nothing). The test
 * runner makes one before the test runs (prepareRelease, its late build
 * 'release' in test/builds.ts) so that a cold build does not spend a test's
 * timeout.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from '../../tools/release/files.js';
import { ARCHES } from '../../tools/release/images.js';
import { release, type ReleaseResult } from '../../tools/release/release.js';

const run = promisify(execFile);

/** The fixed CHANGELOG date of the fixture. */
export const RELEASE_DATE = '2026-01-02';
/** The images the fixture builds (each for every architecture). */
export const RELEASE_IMAGES = ['host'];

/** The version after package.json's (next minor). */
export async function nextVersion(): Promise<string> {
  const v = (JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
  const [major, minor] = v.split('.').map(Number);
  return `v${major}.${minor! + 1}.0`;
}

export interface ReleaseFixture {
  /** The released copy of the checkout. */
  repo: string;
  result: ReleaseResult;
  remove(): Promise<void>;
}

/** Copies the checkout as a commit holds it into a new directory. */
async function copyCheckout(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-release-'));
  const files = (await run('git', ['ls-files', '-co', '--exclude-standard'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 })).stdout
    .split('\n')
    .filter(Boolean);
  // Tracked files deleted in the work tree are not part of the next commit.
  for (const f of files)
    await cp(join(REPO, f), join(dir, f)).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
  return dir;
}

/** Makes the fixture release (see the top). */
export async function releaseFixture(say: (line: string) => void = () => undefined): Promise<ReleaseFixture> {
  const repo = await copyCheckout();
  try {
    const result = await release({ version: await nextVersion(), repo, images: RELEASE_IMAGES, arches: ARCHES, date: RELEASE_DATE, say });
    return { repo, result, remove: () => rm(repo, { recursive: true, force: true }) };
  } catch (err) {
    await rm(repo, { recursive: true, force: true });
    throw err;
  }
}

/** Builds what the release test needs before the run and prints the time. */
export async function prepareRelease(say: (line: string) => void): Promise<void> {
  const t0 = Date.now();
  const f = await releaseFixture(say);
  await f.remove();
  say(`release fixture ready in ${Math.round((Date.now() - t0) / 1000)} s`);
}
