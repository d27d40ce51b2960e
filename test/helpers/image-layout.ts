/**
 * The files deploy/Dockerfile puts in its images, assembled without Docker
 * (CI has no Docker daemon): `<dir>/app/dist` compiled with
 * tsconfig.image.json, as the build stage does; `<dir>/app/package.json`; and
 * `<dir>/app/node_modules` holding only the production dependencies (what
 * `npm ci --omit=dev` installs: here links to the repository's copies of
 * exactly those packages). A program that needs a file or a package the image
 * lacks (a test helper, a dev dependency) fails here as it would in the image.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, symlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The repository root (this file is dist/test/helpers/image-layout.js). */
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

export interface ImageLayout {
  /** `/app` of the image. */
  app: string;
  /** `/app/dist/host/main.js`: the host images' entrypoint. */
  hostMain: string;
  /** `/app/dist/plugins/local/main.js`: the provider image's entrypoint and the exec image's plugin. */
  localPlugin: string;
}

/** Top-level package directories (`node_modules/x`, `node_modules/@s/x`) npm counts as production dependencies. */
export async function productionPackages(): Promise<string[]> {
  // npm ls exits non-zero for mere warnings (e.g. an extraneous package); its list is still complete.
  const out = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: REPO, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }).catch(
    (err: { stdout?: string }) => {
      if (typeof err.stdout === 'string' && err.stdout.length > 0) return { stdout: err.stdout };
      throw err;
    },
  );
  const top = join(REPO, 'node_modules');
  return [
    ...new Set(
      out.stdout
        .split('\n')
        .filter((p) => p.startsWith(top + sep))
        .map((p) => relative(top, p).split(sep))
        // Nested copies live inside a top-level package and come with it.
        .filter((parts) => (parts[0]!.startsWith('@') ? parts.length === 2 : parts.length === 1))
        .map((parts) => parts.join('/')),
    ),
  ].sort();
}

/** Builds the layout under `dir` (about 15 s: one tsc run). */
export async function buildImageLayout(dir: string): Promise<ImageLayout> {
  const app = join(dir, 'app');
  await mkdir(join(app, 'node_modules'), { recursive: true });
  await run(
    process.execPath,
    [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(REPO, 'tsconfig.image.json'), '--outDir', join(app, 'dist')],
    {
      cwd: REPO,
      timeout: 300_000,
    },
  );
  await copyFile(join(REPO, 'package.json'), join(app, 'package.json'));
  for (const pkg of await productionPackages()) {
    const link = join(app, 'node_modules', pkg);
    await mkdir(dirname(link), { recursive: true });
    await symlink(join(REPO, 'node_modules', pkg), link, 'dir');
  }
  return { app, hostMain: join(app, 'dist/host/main.js'), localPlugin: join(app, 'dist/plugins/local/main.js') };
}
