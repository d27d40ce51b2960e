/**
 * The conformance kit as one self-contained executable (issue 32, item 3): a
 * vendor without Node.js or a clone runs `./ccm-provider-conformance
 * --plugin-path ...` as it would csi-sanity. A Node.js single executable
 * application (https://nodejs.org/api/single-executable-applications.html):
 * the kit (dist/conformance/cli.js and everything it imports) bundled by
 * esbuild into one CommonJS file, made a SEA blob by `node
 * --experimental-sea-config`, and injected by postject into a copy of the
 * Node.js binary running this script (so it runs where that binary runs:
 * the same OS, architecture and C library).
 *
 *   npm run build:conformance-exe [-- --out FILE]
 *
 * Cached by input hash under ~/.cache/ccm-host/conformance-exe-<hash>/, the
 * hash of the bundle (so of every module the kit uses), the Node.js version
 * and this file's recipe; a cached build is reused, a new one prints its
 * build time.
 */
import { createHash } from 'node:crypto';
import { copyFile, chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { buildOnce, exists } from './release/build-once.js';

/** The executable's file name. */
export const CONFORMANCE_EXE_NAME = 'ccm-provider-conformance';
/** Node's documented sentinel for postject (single-executable-applications.md). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** Bumped when the recipe below changes in a way the bundle's hash does not show. */
const RECIPE = 1;

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(REPO, 'dist', 'conformance', 'cli.js');
const bin = (name: string) => join(REPO, 'node_modules', '.bin', name);

function cacheRoot(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host');
}

/** The kit bundled into one CommonJS file (SEA main scripts cannot import). */
async function bundle(out: string): Promise<void> {
  await execa(
    bin('esbuild'),
    [
      CLI,
      '--bundle',
      '--platform=node',
      '--format=cjs',
      `--target=node${process.versions.node.split('.')[0]}`,
      `--outfile=${out}`,
      '--log-level=warning',
    ],
    { cwd: REPO },
  );
}

/**
 * Path of the built executable (built, or found in the cache); `say` gets a
 * line with the build time when it was built now. Needs `npm run build` first.
 */
export async function conformanceExecutable(say: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  if (!(await exists(CLI))) throw new Error(`${CLI} is missing: run npm run build first`);
  const work = await mkdtemp(join(tmpdir(), 'ccm-kit-exe-'));
  try {
    const main = join(work, 'kit.cjs');
    await bundle(main);
    const hash = createHash('sha256')
      .update(await readFile(main))
      .update(`\0${process.version}\0${process.arch}\0${RECIPE}`)
      .digest('hex')
      .slice(0, 16);
    const dir = join(cacheRoot(), `conformance-exe-${hash}`);
    const exe = join(dir, CONFORMANCE_EXE_NAME);
    if (await exists(exe)) return exe;
    const started = Date.now();
    await buildOnce(dir, async (tmp) => {
      await mkdir(tmp, { recursive: true });
      const blob = join(work, 'kit.blob');
      const config = join(work, 'sea-config.json');
      await writeFile(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false }));
      await execa(process.execPath, ['--experimental-sea-config', config], { cwd: work });
      const out = join(tmp, CONFORMANCE_EXE_NAME);
      await copyFile(process.execPath, out);
      await chmod(out, 0o755);
      await execa(bin('postject'), [out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], { cwd: work });
    });
    say(`[conformance-exe] built ${exe} in ${((Date.now() - started) / 1000).toFixed(1)} s (Node ${process.version}, ${process.arch})`);
    return exe;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** `node dist/tools/conformance-exe.js [--out FILE]`: builds (or finds) it and prints its path; --out copies it there. */
async function main(argv: string[]): Promise<void> {
  const at = argv.indexOf('--out');
  const exe = await conformanceExecutable();
  if (at >= 0 && argv[at + 1]) {
    const dest = argv[at + 1]!;
    await mkdir(dirname(dest), { recursive: true });
    await copyFile(exe, dest);
    await chmod(dest, 0o755);
    process.stdout.write(`${dest}\n`);
  } else {
    process.stdout.write(`${exe}\n`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`conformance-exe: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
