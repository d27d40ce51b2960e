/**
 * The release's packages, each installed from the file the release command
 * built (tools/release/packages.ts, on a copy of this checkout at the next
 * version: test/helpers/release-checkout.ts) into an empty project in a temp
 * directory outside the repository, as a vendor would:
 *
 * | artifact                        | installed into                     | shown to work by                                      |
 * |---------------------------------|------------------------------------|-------------------------------------------------------|
 * | the conformance kit (npm tgz)   | an empty npm project               | its `ccm-provider-conformance` bin checks both providers below |
 * | the TypeScript SDK (npm tgz)    | an empty npm project               | a minimal JavaScript provider on it passes the kit     |
 * | the Python SDK (wheel)          | a fresh venv, deps from PyPI       | docs/providers/python.md's provider on it passes the kit |
 * | the Python SDK (sdist)          | (the wheel is built from it)       | it holds the generated stubs                           |
 * | the protocol archive            | unpacked                           | the repository's .proto files, the release version     |
 *
 * The venv is cached under ~/.cache/ccm-host/release-pypi-<hash of the
 * wheel and the interpreter> (pip is the slow part); a changed wheel
 * installs again.
 */
import test from 'ava';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { execa } from 'execa';
import { buildOnce } from '../../../tools/release/build-once.js';
import { REPO } from '../../../tools/release/files.js';
import { cacheBase } from '../../../tools/release/images.js';
import { NPM_PACKAGES, PYTHON_PACKAGE, type PackageArtifact } from '../../../tools/release/packages.js';
import { publishCommands } from '../../../tools/release/release.js';
import { nextVersion, packagesRelease, type PackagesRelease } from '../../helpers/release-checkout.js';
import { tutorialSteps } from '../../helpers/tutorial.js';

const say = (line: string) => process.stderr.write(`[release] ${line}\n`);
/** Each test's bound: a cold release builds the packages first (ava's 3-minute default would cut it; a before hook has only that). */
const TIMEOUT = 15 * 60_000;
let rel: PackagesRelease;
/** Everything the test installs, outside the repository. */
let work: string;

let releasing: Promise<void> | undefined;
/** The release, made once for every test of the file, whichever asks first. */
function released(): Promise<void> {
  return (releasing ??= (async () => {
    const t0 = Date.now();
    rel = await packagesRelease(say);
    say(`packages release in ${Math.round((Date.now() - t0) / 1000)} s`);
    work = await mkdtemp(join(tmpdir(), 'ccm-release-packages-'));
  })());
}

test.after.always(async () => {
  await rel?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

const artifact = (pred: (a: PackageArtifact) => boolean, what: string): string => {
  const a = rel.result.packages.find(pred);
  if (!a) throw new Error(`the release built no ${what}: ${rel.result.packages.map((p) => basename(p.file)).join(', ')}`);
  return a.file;
};
const npmTarball = (name: string) => artifact((a) => a.ecosystem === 'npm' && a.name === name, name);
const wheel = () => artifact((a) => a.file.endsWith('.whl'), 'wheel');
const sdist = () => artifact((a) => a.ecosystem === 'pypi' && a.file.endsWith('.tar.gz'), 'sdist');

/** An empty npm project in `dir` with `tarballs` installed (their dependencies from npm's cache, which the repository's install filled). */
async function npmProject(dir: string, tarballs: string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: basename(dir), private: true, type: 'module' }));
  await execa('nice', ['-n', '19', 'npm', 'install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], { cwd: dir });
}

let kitInstall: Promise<string> | undefined;
/** The released kit installed into an empty project: its bin. */
function kit(): Promise<string> {
  return (kitInstall ??= (async () => {
    const dir = join(work, 'vendor-ci');
    await npmProject(dir, [npmTarball('@grpc-ccm/provider-conformance')]);
    return join(dir, 'node_modules', '.bin', 'ccm-provider-conformance');
  })());
}

/** Runs the released kit against the provider `launcher`; resolves to its report (throws with it unless it exits 0). */
async function runKit(launcher: string, args: string[] = []): Promise<string> {
  const r = await execa(await kit(), ['--plugin-path', launcher, ...args], { cwd: work, reject: false, all: true, timeout: 5 * 60_000 });
  if (r.exitCode !== 0) throw new Error(`the kit exited ${r.exitCode}:\n${r.all}`);
  return r.stdout;
}

/** An executable that runs `argv` (the host and the kit start one executable). */
async function launcher(path: string, argv: string[]): Promise<string> {
  await writeFile(path, `#!/bin/sh\nexec ${argv.map((a) => `'${a}'`).join(' ')} "$@"\n`);
  await chmod(path, 0o755);
  return path;
}

const passed = (report: string, id: string) => new RegExp(`^PASS {2}${id.replace('/', '\\/')} `, 'm').test(report);

test('the release builds every package at the release version into packages/, lists them in release.json and prints how to publish each', async (t) => {
  t.timeout(TIMEOUT);
  await released();
  const v = (await nextVersion()).slice(1);
  t.deepEqual(
    rel.result.packages.map((p) => [p.ecosystem, p.name, basename(p.file)]),
    [
      ['npm', '@grpc-ccm/provider-sdk', `grpc-ccm-provider-sdk-${v}.tgz`],
      ['npm', '@grpc-ccm/provider-conformance', `grpc-ccm-provider-conformance-${v}.tgz`],
      ['pypi', PYTHON_PACKAGE, `ccm_provider_sdk-${v}.tar.gz`],
      ['pypi', PYTHON_PACKAGE, `ccm_provider_sdk-${v}-py3-none-any.whl`],
      ['proto', 'ccm-provider-proto', `ccm-provider-proto-${v}.tar.gz`],
    ],
  );
  t.deepEqual((await readdir(join(rel.result.out, 'packages'))).sort(), rel.result.packages.map((p) => basename(p.file)).sort());
  for (const p of NPM_PACKAGES) {
    const manifest = JSON.parse((await execa('tar', ['xzOf', npmTarball(p.name), 'package/package.json'])).stdout) as {
      name: string;
      version: string;
    };
    t.deepEqual([manifest.name, manifest.version], [p.name, v], p.name);
  }
  const meta = JSON.parse(await readFile(join(rel.result.out, 'release.json'), 'utf8')) as {
    packages: { name: string; version: string; file: string }[];
  };
  t.deepEqual(
    meta.packages.map((p) => [p.name, p.version, p.file]),
    rel.result.packages.map((p) => [p.name, v, `packages/${basename(p.file)}`]),
  );
  const commands = publishCommands(rel.result);
  for (const p of NPM_PACKAGES) t.true(commands.includes(`npm publish --access public ${npmTarball(p.name)}`), p.name);
  t.true(commands.includes(`twine upload ${sdist()} ${wheel()}`));
});

test('the released TypeScript SDK installs into an empty npm project, and a JavaScript provider on it passes the released kit', async (t) => {
  t.timeout(TIMEOUT);
  await released();
  const dir = join(work, 'acme-js');
  await npmProject(dir, [npmTarball('@grpc-ccm/provider-sdk')]);
  // Plain JavaScript: what runs is exactly the package's compiled code (no compiler of the test's in between).
  await writeFile(
    join(dir, 'provider.js'),
    `import { serve, InstanceNotFoundError, InvalidArgumentError } from '@grpc-ccm/provider-sdk';

/** Another provider's node is not ours to judge: "not found" would get it deleted. */
function mustBeOurs(providerId) {
  if (providerId && !providerId.startsWith('acme://')) throw new InvalidArgumentError(providerId + ' is not an acme:// providerID');
}

// A cloud without machines.
await serve({
  info: { name: 'acme.example.com', vendorVersion: '0.1.0', providerName: 'acme' },
  instances: {
    async instanceExists({ node }) {
      mustBeOurs(node.providerId);
      return { exists: false };
    },
    async instanceMetadata({ node }) {
      mustBeOurs(node.providerId);
      throw new InstanceNotFoundError('no acme machine for node ' + node.name);
    },
  },
});
`,
  );
  const report = await runKit(await launcher(join(dir, 'ccm-provider-acme'), [process.execPath, join(dir, 'provider.js')]));
  t.regex(report, /^conformance: [1-9]\d* passed, 0 failed, \d+ skipped$/m);
  for (const id of ['launch/handshake', 'launch/stdout-hygiene', 'lifecycle/not-configured', 'identity/plugin-info', 'instances/foreign-provider-id'])
    t.true(passed(report, id), id);
});

/** A venv with the released wheel pip-installed (dependencies from PyPI or pip's cache), cached per wheel; its python. */
async function pythonVenv(): Promise<string> {
  const base = process.env.CCM_TEST_PYTHON || 'python3';
  const key = createHash('sha256')
    .update((await execa(base, ['--version'])).stdout)
    .update(await readFile(wheel()))
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheBase(), `release-pypi-${key}`);
  const t0 = Date.now();
  await buildOnce(dir, async (tmp) => {
    await execa('nice', ['-n', '19', base, '-m', 'venv', join(tmp, 'venv')]);
    await execa('nice', ['-n', '19', join(tmp, 'venv', 'bin', 'python'), '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', wheel()]);
    say(`venv with ${basename(wheel())} in ${Math.round((Date.now() - t0) / 1000)} s`);
  });
  // Only bin/python is used: it keeps working after buildOnce's rename.
  return join(dir, 'venv', 'bin', 'python');
}

test("the released Python SDK wheel installs into a fresh venv, and docs/providers/python.md's provider on it passes the released kit", async (t) => {
  t.timeout(TIMEOUT);
  await released();
  const v = (await nextVersion()).slice(1);
  const python = await pythonVenv();
  // The installed distribution is the release's (not a checkout's on the path): its version, and where it was imported from.
  const where = await execa(
    python,
    ['-c', 'import ccm_provider_sdk, ccm.provider.v1.lifecycle_pb2 as l; print(ccm_provider_sdk.__version__); print(l.__file__)'],
    {
      cwd: work,
    },
  );
  const [version, stubs] = where.stdout.split('\n');
  t.is(version, v);
  t.regex(stubs ?? '', /\/site-packages\/ccm\/provider\/v1\/lifecycle_pb2\.py$/);
  // The tutorial's provider as printed (its files; its venv is this one), in an empty directory.
  const dir = join(work, 'acme-py');
  await mkdir(join(dir, 'acme-cloud'), { recursive: true });
  for (const step of tutorialSteps(await readFile(join(REPO, 'docs', 'providers', 'python.md'), 'utf8')))
    if (step.kind === 'file') await writeFile(join(dir, step.path), step.code);
  await writeFile(join(dir, 'cloud.json'), JSON.stringify({ dir: join(dir, 'acme-cloud') }));
  await writeFile(join(dir, 'bad-cloud.json'), JSON.stringify({ region: 'acme-1' }));
  const exe = await launcher(join(dir, 'ccm-provider-acme'), [python, join(dir, 'provider.py')]);
  const report = await runKit(exe, [
    '--cloud-config',
    join(dir, 'cloud.json'),
    '--bad-cloud-config',
    join(dir, 'bad-cloud.json'),
    '--test-hook-command',
    `${exe} hook ${join(dir, 'cloud.json')}`,
  ]);
  t.regex(report, /^conformance: [1-9]\d* passed, 0 failed, \d+ skipped$/m);
  for (const id of ['launch/handshake', 'lifecycle/bad-config', 'instances/test-instance', 'instances/foreign-provider-id'])
    t.true(passed(report, id), id);
});

test('the Python sdist holds the SDK, the generated stubs and the pinned requirements', async (t) => {
  t.timeout(TIMEOUT);
  await released();
  const v = (await nextVersion()).slice(1);
  const files = (await execa('tar', ['tzf', sdist()])).stdout.split('\n');
  const root = `ccm_provider_sdk-${v}`;
  for (const f of [
    'pyproject.toml',
    'requirements.txt',
    'src/ccm_provider_sdk/__init__.py',
    'src/ccm_provider_sdk/serve.py',
    'src/ccm/provider/v1/lifecycle_pb2.py',
    'src/ccm/provider/v1/lifecycle_pb2_grpc.py',
    'src/ccm/provider/testing/v1/test_hooks_pb2_grpc.py',
  ])
    t.true(files.includes(`${root}/${f}`), f);
});

test('the protocol archive holds the repository .proto files and names the release version', async (t) => {
  t.timeout(TIMEOUT);
  await released();
  const v = (await nextVersion()).slice(1);
  const archive = artifact((a) => a.ecosystem === 'proto', 'protocol archive');
  const root = `ccm-provider-proto-${v}/`;
  const inArchive = (await execa('tar', ['tzf', archive])).stdout
    .split('\n')
    .filter((f) => f.endsWith('.proto'))
    .map((f) => f.slice(root.length))
    .sort();
  const inRepo = (await readdir(join(REPO, 'proto'), { recursive: true }))
    .filter((f) => f.endsWith('.proto') && !f.startsWith('gen/') && !f.startsWith('baseline/'))
    .sort();
  t.true(inRepo.length > 5);
  t.deepEqual(inArchive, inRepo);
  t.regex((await execa('tar', ['xzOf', archive, `${root}VERSION`])).stdout, new RegExp(`^package ${v.replace(/\./g, '\\.')}$`, 'm'));
});
