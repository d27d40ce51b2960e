/**
 * The packages of a release (docs/releasing.md, "The packages"): built from
 * the release commit's files at the release version into
 * `<out>/packages/`, published by the commands publishPackages prints.
 *
 * | artifact                                   | from                | published with          |
 * |--------------------------------------------|---------------------|-------------------------|
 * | grpc-ccm-provider-sdk-X.Y.Z.tgz            | sdk/ (`pack:sdk`)   | npm publish             |
 * | grpc-ccm-provider-conformance-X.Y.Z.tgz    | conformance/        | npm publish             |
 * | ccm_provider_sdk-X.Y.Z.tar.gz, -py3-none-any.whl | sdk/python    | twine upload            |
 * | ccm-provider-proto-X.Y.Z.tar.gz            | proto/ (`pack:proto`) | the GitHub release's asset |
 *
 * Each build writes only into `<out>/packages/`, the packs' own ignored
 * output (sdk/dist, conformance/dist) and its cache; building again for the
 * same version replaces the directory with the same packages.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { packProto } from '../pack-proto.js';
import { buildOnce } from './build-once.js';
import { filesUnder, hashFiles } from './files.js';
import { cacheBase, secs } from './images.js';

/** The Python build frontend; the backend (hatchling) is what sdk/python/pyproject.toml requires. */
const PYTHON_BUILD = 'build==1.2.2.post1';

/** One built package. */
export interface PackageArtifact {
  /** npm | pypi | proto. */
  ecosystem: 'npm' | 'pypi' | 'proto';
  /** The package's name in its registry (the proto archive: its file's stem). */
  name: string;
  /** Absolute path of the file. */
  file: string;
}

/** The TypeScript SDK's sources: its top-level files (tsc's include, which imports nothing else of ours) and the generated code. */
const SDK_SOURCES = ['sdk', 'proto/gen'];

/**
 * The npm packages: the script that packs each (package.json), its name, and
 * the files its pack is built from (what its tsc compiles, its manifest and
 * README): the key of its cached pack.
 */
export const NPM_PACKAGES = [
  { script: 'pack:sdk', name: '@grpc-ccm/provider-sdk', dir: 'sdk', sources: SDK_SOURCES },
  {
    script: 'pack:conformance',
    name: '@grpc-ccm/provider-conformance',
    dir: 'conformance',
    // The kit's tsc follows its imports into the host's plugin client, the local cloud and the SDK.
    sources: [...SDK_SOURCES, 'conformance', 'host', 'plugins/local'],
  },
] as const;

/** Files of a source directory that are a pack's inputs: not build output; under sdk/ only its own files (not the Go, Python and Java SDKs). */
const packInput = (root: string, rel: string) =>
  !/(^|\/)(node_modules|dist|target)\//.test(rel) && !rel.endsWith('.pack.lock') && (root !== 'sdk' || !rel.includes('/'));

/**
 * `npm run <script>` of `repo` packed into `dir`, cached under
 * ~/.cache/ccm-host/npm-pack-<hash of the package's sources, tsconfig.json
 * and TypeScript's version>: npm pack is reproducible (fixed times, sorted
 * entries), so the same sources give the same tarball; the tsc is the slow
 * part. Resolves to the file's name.
 */
async function npmPack(repo: string, p: (typeof NPM_PACKAGES)[number], version: string, dir: string): Promise<string> {
  const files = ['tsconfig.json'];
  for (const root of p.sources) files.push(...(await filesUnder(join(repo, root), (rel) => packInput(root, rel))).map((f) => `${root}/${f}`));
  const ts = JSON.parse(await readFile(join(repo, 'node_modules/typescript/package.json'), 'utf8')) as { version: string };
  const cache = join(cacheBase(), `npm-pack-${await hashFiles(repo, files, `${p.script} typescript ${ts.version}`)}`);
  await buildOnce(cache, async (tmp) => {
    await mkdir(tmp, { recursive: true });
    await execa('nice', ['-n', '19', 'npm', 'run', '-s', p.script, '--', '--pack-destination', tmp], { cwd: repo });
  });
  const packed = await readdir(cache);
  const want = `${p.name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
  if (packed.join() !== want) throw new Error(`npm run ${p.script} wrote ${packed.join(', ')}, not ${want} (${p.dir}/package.json's version)`);
  await copyFile(join(cache, want), join(dir, want));
  return want;
}

/** The Python distribution (sdk/python). */
export const PYTHON_PACKAGE = 'ccm-provider-sdk';

/** The interpreter the release builds the Python packages with (CCM_TEST_PYTHON, as the tests' venvs, or python3). */
function basePython(): string {
  return process.env.CCM_TEST_PYTHON || 'python3';
}

/**
 * A venv holding the Python build frontend and the backend sdk/python
 * requires (pinned there), cached under ~/.cache/ccm-host/python-build-<hash
 * of the interpreter's version and both pins>: the release builds with
 * `--no-isolation`, so no build downloads anything.
 */
async function pythonBuildVenv(repo: string, say: (line: string) => void): Promise<string> {
  const pyproject = await readFile(join(repo, 'sdk/python/pyproject.toml'), 'utf8');
  const requires = /^\[build-system\][\s\S]*?^requires = \[([^\]]*)\]/m.exec(pyproject)?.[1];
  const backend = [...(requires ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
  if (backend.length === 0) throw new Error('sdk/python/pyproject.toml has no [build-system] requires');
  const version = (await execa(basePython(), ['--version'])).stdout.trim();
  const key = createHash('sha256')
    .update([version, PYTHON_BUILD, ...backend].join('\n'))
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheBase(), `python-build-${key}`);
  const t0 = Date.now();
  let built = false;
  await buildOnce(dir, async (tmp) => {
    built = true;
    await execa('nice', ['-n', '19', basePython(), '-m', 'venv', join(tmp, 'venv')]);
    await execa('nice', [
      '-n',
      '19',
      join(tmp, 'venv', 'bin', 'python'),
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      PYTHON_BUILD,
      ...backend,
    ]);
  });
  if (built) say(`Python build venv (${PYTHON_BUILD}, ${backend.join(', ')}) in ${secs(t0)} s: ${dir}`);
  // Only bin/python is used: it keeps working after buildOnce's rename.
  return join(dir, 'venv', 'bin', 'python');
}

/**
 * Builds every package of `repo` (whose versions the release already set to
 * `version`, `X.Y.Z`) into `<out>/packages/`, and checks each file names
 * that version. The npm packs run the repository's own scripts (tsc of the
 * package, `npm pack`), so `repo` needs its node_modules. Prints each
 * package's time. Resolves to the artifacts, in the order of the table above.
 */
export async function buildPackages(repo: string, version: string, out: string, say: (line: string) => void): Promise<PackageArtifact[]> {
  const dir = join(out, 'packages');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const artifacts: PackageArtifact[] = [];
  const newFiles = async (before: Set<string>) => (await readdir(dir)).filter((f) => !before.has(f)).sort();

  for (const p of NPM_PACKAGES) {
    const t0 = Date.now();
    const file = await npmPack(repo, p, version, dir);
    artifacts.push({ ecosystem: 'npm', name: p.name, file: join(dir, file) });
    say(`npm package ${p.name}@${version} in ${secs(t0)} s: ${file}`);
  }

  // The sdist, then the wheel built from the sdist (build's default): a wheel that installs shows the sdist is complete too.
  const t1 = Date.now();
  const python = await pythonBuildVenv(repo, say);
  const before = new Set(await readdir(dir));
  await execa('nice', ['-n', '19', python, '-m', 'build', '--no-isolation', '--outdir', dir, join(repo, 'sdk/python')], {
    env: { SOURCE_DATE_EPOCH: '315532800' },
  });
  const dists = await newFiles(before);
  const stem = `${PYTHON_PACKAGE.replace(/-/g, '_')}-${version}`;
  const want = [`${stem}-py3-none-any.whl`, `${stem}.tar.gz`];
  if (dists.join() !== want.join()) throw new Error(`python -m build sdk/python wrote ${dists.join(', ')}, not ${want.join(', ')}`);
  // sdist first (what twine uploads first), then the wheel.
  for (const f of [...want].reverse()) artifacts.push({ ecosystem: 'pypi', name: PYTHON_PACKAGE, file: join(dir, f) });
  say(`Python package ${PYTHON_PACKAGE}==${version} (sdist, wheel) in ${secs(t1)} s`);

  const t2 = Date.now();
  const archive = await packProto(dir, repo);
  if (!archive.endsWith(`/ccm-provider-proto-${version}.tar.gz`)) throw new Error(`pack-proto wrote ${archive}, not version ${version}`);
  artifacts.push({ ecosystem: 'proto', name: 'ccm-provider-proto', file: archive });
  say(`protocol archive in ${secs(t2)} s`);
  return artifacts;
}

/** The commands that publish `artifacts` of release `tag` (vX.Y.Z), printed by the release command. */
export function publishPackages(tag: string, artifacts: readonly PackageArtifact[]): string[] {
  const npm = artifacts.filter((a) => a.ecosystem === 'npm').map((a) => `npm publish --access public ${a.file}`);
  const pypi = artifacts.filter((a) => a.ecosystem === 'pypi').map((a) => a.file);
  const proto = artifacts.filter((a) => a.ecosystem === 'proto').map((a) => a.file);
  return [
    ...npm,
    ...(pypi.length > 0 ? [`twine upload ${pypi.join(' ')}`] : []),
    ...(proto.length > 0 ? [`gh release create ${tag} --title ${tag} ${proto.join(' ')}`] : []),
  ];
}
