/**
 * The runner's builds (test/builds.ts): which builds a test file needs (read
 * from its imports), which files an argument list selects, and how the
 * builds are scheduled: compiles one at a time in order, the rest beside
 * them, a cached build not built, a failed one not stopping the others.
 */
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import {
  BUILDS,
  buildsNeeded,
  buildSummary,
  DIST_TEST,
  selectedFiles,
  startBuilds,
  testFilesUnder,
  workerEnv,
  type Build,
  type BuildName,
} from '../../builds.js';
import { testImageTags } from '../../helpers/images.js';
import { REPO } from '../../helpers/providers.js';
import { javaToolVersions } from '../../../tools/release/maven.js';

const file = (rel: string) => join(DIST_TEST, rel);

const NEEDS: { file: string; needs: BuildName[] }[] = [
  { file: 'unit/runner/ava-summary.test.js', needs: ['controlplane'] },
  { file: 'unit/runner/builds.test.js', needs: ['controlplane'] },
  { file: 'integration/deploy/monitoring.test.js', needs: ['controlplane', 'kustomize', 'promtool'] },
  { file: 'integration/deploy/images.test.js', needs: ['controlplane', 'image-bases', 'images', 'kustomize', 'moto-venv'] },
  { file: 'integration/providers/aws-bridge.test.js', needs: ['aws', 'controlplane', 'moto-venv'] },
  { file: 'integration/providers/vsphere-bridge.test.js', needs: ['controlplane', 'vsphere'] },
  { file: 'integration/providers/openstack-bridge.test.js', needs: ['controlplane', 'openstack'] },
  { file: 'integration/release/release.test.js', needs: ['controlplane', 'image-bases', 'java-provider', 'kustomize', 'release', 'release-bases'] },
  { file: 'unit/release/release.test.js', needs: ['controlplane'] },
  { file: 'integration/parity/upstream-parity.test.js', needs: ['controlplane', 'upstream-ccm'] },
  { file: 'integration/providers/host-scenarios.test.js', needs: ['controlplane', 'fake-cloud', 'go-provider', 'python-venv'] },
  { file: 'integration/providers/java-sdk.test.js', needs: ['controlplane', 'java-provider'] },
  { file: 'integration/service/lb-admission.test.js', needs: ['controlplane', 'kubectl'] },
];

for (const c of NEEDS) {
  test(`${c.file} needs ${c.needs.join(', ')}`, async (t) => {
    const got = [...(await buildsNeeded(file(c.file)))].sort();
    // At least these; a helper it imports may add an early build (kustomize, through the manifests).
    for (const n of c.needs) t.true(got.includes(n), `${n} missing from ${got.join(', ')}`);
    for (const n of got) if (!c.needs.includes(n)) t.true(BUILDS.find((b) => b.name === n)!.early, `${n} is a late build the file does not need`);
  });
}

/** A test source that calls one of these builds it on first use, so the runner must see that the file needs it. */
const ENTRY_POINTS: [RegExp, BuildName][] = [
  [/\b(ensureUpstreamCcm)\b/, 'upstream-ccm'],
  [/\b(promtoolBinary)\b/, 'promtool'],
  [/\b(kubectlBinary)\b/, 'kubectl'],
  [/\b(prepareImages|imageRootfs)\b/, 'images'],
  [/\b(vsphereBinaries|startVcsim)\b/, 'vsphere'],
  [/\b(openstackBinaries)\b/, 'openstack'],
  [/\b(awsCloudBinary|AWS_CLOUD_PROVIDER|awsUpstreamCcm)\b/, 'aws'],
  [/\b(startMoto|motoPython)\b/, 'moto-venv'],
  [/\b(GO_PROVIDER)\b/, 'go-provider'],
  [/\b(JAVA_PROVIDER|javaBuild|javaProviderLauncher|javaClasspath)\b/, 'java-provider'],
  [/\b(releaseFixture|prepareRelease)\b/, 'release'],
];

test('every test file that calls a build entry point is seen to need that build', async (t) => {
  const files = await testFilesUnder(DIST_TEST);
  t.true(files.length > 100);
  for (const f of files) {
    if (f.endsWith('/unit/runner/builds.test.js')) continue; // this file: the patterns above
    const src = await readFile(join(REPO, 'test', f.slice(DIST_TEST.length + 1).replace(/\.js$/, '.ts')), 'utf8');
    const needs = await buildsNeeded(f);
    for (const [re, build] of ENTRY_POINTS) if (re.test(src)) t.true(needs.has(build), `${f} calls ${build}'s entry point`);
  }
});

test("the runner's file list is ava's (package.json ava.files)", async (t) => {
  const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { ava: { files: string[] } };
  t.deepEqual(pkg.ava.files, ['dist/test/**/*.test.js']);
});

const SELECTIONS: { description: string; args: string[]; files?: string[]; flags?: string[]; all?: boolean; unreadable?: boolean }[] = [
  { description: 'no arguments: every test file', args: [], all: true, flags: [] },
  { description: 'flags only: every test file', args: ['--match', 'x*', '--serial'], all: true, flags: ['--match', 'x*', '--serial'] },
  {
    description: 'a file',
    args: ['--verbose', file('unit/runner/ava-summary.test.js')],
    files: [file('unit/runner/ava-summary.test.js')],
    flags: ['--verbose'],
  },
  { description: 'a directory: its test files', args: [join(DIST_TEST, 'unit', 'runner')], files: [file('unit/runner/ava-summary.test.js')] },
  { description: 'a glob: unreadable, so everything is built first', args: ['dist/test/unit/**/*.test.js'], unreadable: true },
];

for (const c of SELECTIONS) {
  test(`selectedFiles: ${c.description}`, async (t) => {
    const s = await selectedFiles(c.args);
    if (c.unreadable) return t.is(s, undefined);
    t.truthy(s);
    if (c.all) t.deepEqual(s!.files, await testFilesUnder(DIST_TEST));
    for (const f of c.files ?? []) t.true(s!.files.includes(f));
    if (c.flags) t.deepEqual(s!.flags, c.flags);
  });
}

/** A build that records when it starts and ends, and ends when `release` is called. */
function fakeBuild(name: BuildName, o: { compile: boolean; ready?: boolean; fails?: boolean }, events: string[]) {
  let release!: () => void;
  let markStarted!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const started = new Promise<void>((r) => (markStarted = r));
  const build: Build = {
    name,
    what: name,
    early: true,
    compile: o.compile,
    ready: async () => o.ready ?? false,
    build: async () => {
      events.push(`start ${name}`);
      markStarted();
      await released;
      events.push(`end ${name}`);
      if (o.fails) throw new Error(`${name} broke`);
    },
  };
  return { build, release: () => release(), started };
}

test('startBuilds: compiles one at a time in order, the rest beside, a cached one not built, a failure only its own', async (t) => {
  const events: string[] = [];
  const a = fakeBuild('controlplane', { compile: true, fails: true }, events);
  const b = fakeBuild('aws', { compile: true }, events);
  const c = fakeBuild('python-venv', { compile: false }, events);
  const d = fakeBuild('promtool', { compile: true, ready: true }, events);
  const started = startBuilds([a.build, b.build, c.build, d.build], () => undefined);
  await Promise.all([a.started, c.started]);
  t.deepEqual([...events].sort(), ['start controlplane', 'start python-venv']);
  a.release();
  await b.started;
  t.deepEqual(events.slice(-2), ['end controlplane', 'start aws']);
  b.release();
  c.release();
  const results = await Promise.all([...started.values()]);
  t.deepEqual(
    results.map((r) => [r.name, r.cached, r.error]),
    [
      ['controlplane', false, 'controlplane broke'],
      ['aws', false, undefined],
      ['python-venv', false, undefined],
      ['promtool', true, undefined],
    ],
  );
  t.false(events.includes('start promtool'));
  const summary = buildSummary(results, 12);
  t.regex(summary, /controlplane +FAILED after \d+ s/);
  t.regex(summary, /promtool +cached/);
  t.regex(summary, /builds took 12 s of wall time/);
});

test('workerEnv: each build hands its cache directory to the test workers; one without env or whose env fails adds nothing', async (t) => {
  const stub = (name: BuildName, env?: Build['env']): Build => ({
    name,
    what: name,
    early: true,
    compile: false,
    ready: async () => true,
    build: async () => undefined,
    env,
  });
  const builds = [
    stub('controlplane'),
    stub('java-provider', async () => ({ CCM_TEST_JAVA_DIR: '/cache/java-1' })),
    stub('aws', () => Promise.reject(new Error('no java'))),
    stub('release', async () => ({ CCM_TEST_RELEASE_DIR: '/cache/release-1' })),
  ];
  t.deepEqual(await workerEnv(builds), { CCM_TEST_JAVA_DIR: '/cache/java-1', CCM_TEST_RELEASE_DIR: '/cache/release-1' });
});

test("the Java build: a test worker given the runner's directory and tool versions uses them, hashing nothing and starting no JVM (sdk/java edited since cannot move it)", async (t) => {
  // As the runner hands them (workerEnv); java and mvn are not run: hashing would run them.
  const dir = await mkdtemp(join(tmpdir(), 'ccm-java-'));
  const tools = 'openjdk version "0.0-given"\0Apache Maven 0.0-given';
  process.env.CCM_TEST_JAVA_DIR = dir;
  process.env.CCM_TEST_JAVA_TOOLS = JSON.stringify(tools);
  const java = BUILDS.find((b) => b.name === 'java-provider')!;
  t.true(await java.ready());
  const env = { CCM_TEST_JAVA_DIR: dir, CCM_TEST_JAVA_TOOLS: JSON.stringify(tools) };
  t.deepEqual(await java.env!(), env);
  t.deepEqual(await workerEnv([java]), env);
  // The release tooling's Java build key (tools/release/maven.ts) reads the same once-per-process value: the runner's.
  t.is(await javaToolVersions(), tools);
  t.deepEqual(await BUILDS.find((b) => b.name === 'release')!.env!(), { CCM_TEST_JAVA_TOOLS: JSON.stringify(tools) });
});

test("the image build: a test worker given the runner's image tags uses them, hashing nothing (host/ edited since cannot rebuild the image in a test's before hook)", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-images-'));
  const image = (name: string) => ({
    root: REPO,
    arch: 'amd64',
    name,
    args: {},
    tag: `localhost/${name}:given`,
    marker: join(dir, 'built', `${name}-given`),
  });
  const given = { dir, host: image('ccm-host'), provider: image('ccm-provider-aws') };
  for (const m of [join(dir, 'bases'), given.host.marker, given.provider.marker]) await mkdir(m, { recursive: true });
  process.env.CCM_TEST_IMAGES = JSON.stringify(given);
  const images = BUILDS.find((b) => b.name === 'images')!;
  t.true(await images.ready());
  t.deepEqual(await images.env!(), { CCM_TEST_IMAGES: JSON.stringify(given) });
  t.deepEqual(await testImageTags(), given);
});
