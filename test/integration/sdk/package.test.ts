/**
 * The TypeScript SDK as the package a vendor's repository depends on: the
 * repository's `npm run pack:sdk` packs `@grpc-ccm/provider-sdk`, an empty
 * project installs the tarball, docs/writing-a-provider.md's TypeScript example is compiled
 * there exactly as printed (against the package's own type declarations,
 * with a stand-in `./my-cloud.js` for the vendor's cloud client), and the
 * compiled provider passes the conformance kit in exec and sidecar mode.
 */
import test from 'ava';
import { chmod, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { KitOptions, TargetSpec } from '../../../conformance/kit.js';
import type { CheckResult } from '../../../conformance/report.js';
import { runConformance } from '../../../conformance/run.js';
import { REPO } from '../../helpers/providers.js';
import { startSidecar } from '../../helpers/sidecar.js';

const PACKAGE = '@grpc-ccm/provider-sdk';
/** What the docs' example imports besides the SDK: the vendor's cloud client. One VM, vm-1. */
const MY_CLOUD = `export const myCloud = {
  async find(name: string) {
    return name === 'vm-1' ? { id: 'i-1', size: 'm1.small', ip: '10.0.0.1', zone: 'zone-a', region: 'region-1' } : undefined;
  },
};
`;

/** The code block under "Writing a provider in TypeScript" in docs/writing-a-provider.md (the README points there). */
async function docsExample(): Promise<string> {
  const doc = await readFile(join(REPO, 'docs', 'writing-a-provider.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Writing a provider in TypeScript'));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!code) throw new Error('docs/writing-a-provider.md has no ```ts block under "Writing a provider in TypeScript"');
  return code;
}

/** Packs the SDK with the repository's script, installs it into a new project, compiles the docs' example there; returns the launcher. */
async function vendorProject(): Promise<{ dir: string; launcher: string; tarball: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-sdk-package-'));
  const packs = join(dir, 'packs');
  await mkdir(packs);
  await execa('npm', ['run', '-s', 'pack:sdk', '--', '--pack-destination', packs], { cwd: REPO });
  const [tgz] = await readdir(packs);
  const tarball = join(packs, tgz);
  const project = join(dir, 'acme-provider');
  await mkdir(join(project, 'src'), { recursive: true });
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'acme-provider', private: true, type: 'module', dependencies: { [PACKAGE]: `file:${tarball}` } }, null, 2),
  );
  await writeFile(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        outDir: 'dist',
        rootDir: 'src',
        // The project installs no typescript or @types/node of its own: the repository's are used.
        types: ['node'],
        typeRoots: [join(REPO, 'node_modules', '@types')],
        skipLibCheck: true,
      },
      include: ['src'],
    }),
  );
  await writeFile(join(project, 'src', 'my-cloud.ts'), MY_CLOUD);
  await writeFile(join(project, 'src', 'provider.ts'), await docsExample());
  // The SDK's dependencies come from npm's cache, which the repository's own install filled.
  await execa('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project });
  await execa(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project]);
  const launcher = join(project, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${join(project, 'dist', 'provider.js')}' "$@"\n`);
  await chmod(launcher, 0o755);
  return { dir, launcher, tarball };
}

const project = vendorProject();

function options(target: TargetSpec): KitOptions {
  return { target, cloudConfig: Buffer.alloc(0), startTimeoutMs: 60_000, shutdownGraceMs: 2_000 };
}

const failures = (results: CheckResult[]) => results.filter((r) => r.outcome === 'fail').map((r) => `${r.id}: ${r.message}`);
const outcome = (results: CheckResult[], id: string) => results.find((r) => r.id === id)?.outcome;

test('the packed SDK holds the built JavaScript and type declarations, and no TypeScript sources or tests', async (t) => {
  const { tarball } = await project;
  const files = (await execa('tar', ['tzf', tarball])).stdout.split('\n').filter(Boolean);
  for (const f of [
    'package/package.json',
    'package/README.md',
    'package/dist/sdk/index.js',
    'package/dist/sdk/index.d.ts',
    'package/dist/sdk/testing.js',
  ])
    t.true(files.includes(f), f);
  t.deepEqual(
    files.filter((f) => (f.endsWith('.ts') && !f.endsWith('.d.ts')) || f.includes('test/')),
    [],
  );
  const manifest = JSON.parse((await execa('tar', ['xzOf', tarball, 'package/package.json'])).stdout) as { name: string; version: string };
  const root = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
  t.is(manifest.name, PACKAGE);
  t.is(manifest.version, root.version, 'the SDK shares the host version (docs/release-policy.md)');
});

test('the TypeScript example of docs/writing-a-provider.md, built on the installed package, passes the conformance kit in exec mode', async (t) => {
  const { launcher } = await project;
  const results = await runConformance(options({ kind: 'exec', path: launcher, env: [] }));
  t.deepEqual(failures(results), []);
  for (const id of ['launch/handshake', 'launch/stdout-hygiene', 'lifecycle/not-configured', 'lifecycle/shutdown', 'launch/stdin-eof-exit'])
    t.is(outcome(results, id), 'pass', id);
  t.is(outcome(results, 'instances/batch-status'), 'skip', 'the example declares no batch capability');
  t.is(outcome(results, 'identity/undeclared-unimplemented'), 'pass', 'the probes of undeclared services (load balancers among them) are sent whole');
  t.is(outcome(results, 'instances/absent'), 'pass', 'InstanceShutdown is not implemented: UNIMPLEMENTED is accepted');
});

test('the TypeScript example of docs/writing-a-provider.md, built on the installed package, passes the conformance kit in sidecar mode', async (t) => {
  const { dir, launcher } = await project;
  const sidecar = await startSidecar(launcher, dir);
  try {
    const results = await runConformance(options({ kind: 'endpoint', endpoint: sidecar.endpoint }));
    t.deepEqual(failures(results), []);
    t.is(outcome(results, 'identity/plugin-info'), 'pass');
    t.is(outcome(results, 'lifecycle/not-configured'), 'pass');
  } finally {
    await sidecar.stop();
  }
});
