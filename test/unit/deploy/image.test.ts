/**
 * deploy/Dockerfile and its build context, checked without Docker: the base
 * image is a current Node LTS by its exact version, every RUN step runs on the
 * build platform (multi-arch images without emulation), dependencies come from the
 * lock file without dev packages, nothing but the product is compiled, the
 * runtime user is not root, and .dockerignore (read with Docker's matching
 * rules) lets through what the Dockerfile copies and nothing local or secret:
 * no .localcluster/ keys and tokens, node_modules/, dist/, tests or .git.
 * That the image's files run is test/integration/deploy/run-manifests.test.ts
 * (it runs the shipped pods from the same layout).
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from '../../helpers/image-layout.js';
import { BRIDGED_PROVIDERS, HOST_IMAGE, providerImage } from '../../../tools/release/images.js';

const run = promisify(execFile);
// A CommonJS module whose types declare an ES default export: loaded as what it is.
const ignore = createRequire(import.meta.url)('@balena/dockerignore') as (typeof import('@balena/dockerignore'))['default'];

const dockerfile = async () => readFile(join(REPO, 'deploy/Dockerfile'), 'utf8');
/** Instructions without comments and blank lines. */
const instructions = async () =>
  (await dockerfile())
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

/** Whether `path` (relative to the repository) is in the build context. */
async function contextFilter(): Promise<(path: string) => boolean> {
  const rules = (await readFile(join(REPO, '.dockerignore'), 'utf8')).split('\n');
  return ignore().add(rules).createFilter();
}

test('the base image is a Node LTS of 22 or later by its exact version (or digest), and every stage uses it', async (t) => {
  const lines = await instructions();
  const arg = lines.find((l) => l.startsWith('ARG NODE_IMAGE='));
  t.truthy(arg, 'ARG NODE_IMAGE=...');
  t.true(lines.includes('ARG BUILD_NODE_IMAGE=${NODE_IMAGE}'), 'the build stages use NODE_IMAGE unless told otherwise');
  const m = /^ARG NODE_IMAGE=node:(\d+)(?:\.\d+\.\d+-[a-z-]+(?:@sha256:[0-9a-f]{64})?|-[a-z-]+@sha256:[0-9a-f]{64})$/.exec(arg!);
  t.truthy(m, `${arg} is node:<major>.<minor>.<patch>-<variant> or node:<major>-<variant>@sha256:<digest>`);
  const major = Number(m![1]);
  t.true(major >= 22 && major % 2 === 0, `Node ${major} is an LTS line that is still supported`);
  const stages = new Set<string>();
  for (const from of lines.filter((l) => l.startsWith('FROM '))) {
    const [, base, name] = /^FROM (?:--platform=\$BUILDPLATFORM )?(\S+) AS (\S+)$/.exec(from) ?? [];
    t.truthy(base, `${from} names its stage`);
    t.true(
      base === '${NODE_IMAGE}' || (base === '${BUILD_NODE_IMAGE}' && from.startsWith('FROM --platform=$BUILDPLATFORM ')) || stages.has(base!),
      `${from} starts from the pinned image (on the build platform: BUILD_NODE_IMAGE, which defaults to it) or an earlier stage`,
    );
    stages.add(name!);
  }
  t.deepEqual(
    [...stages].filter((s) => ['host', 'provider', 'exec'].includes(s)),
    ['host', 'provider', 'exec'],
  );
});

test("multi-arch without emulation: RUN steps only in stages on the build platform, none in the images' own stages", async (t) => {
  const lines = await instructions();
  let buildPlatform = false;
  let stage = '';
  for (const l of lines) {
    const from = /^FROM (--platform=\$BUILDPLATFORM )?\S+ AS (\S+)$/.exec(l);
    if (from) {
      buildPlatform = from[1] !== undefined;
      stage = from[2]!;
    }
    if (l.startsWith('RUN ')) t.true(buildPlatform, `${stage}: ${l} runs on the build platform`);
  }
});

test('dependencies come from the lock file, production only in the image; no COPY of the whole context', async (t) => {
  const lines = await instructions();
  t.true(lines.includes('RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund'), 'the runtime node_modules come from npm ci --omit=dev');
  t.false(
    lines.some((l) => /^RUN npm install\b/.test(l)),
    'never npm install (it may change the lock file)',
  );
  t.false(
    lines.some((l) => /^COPY (--\S+ )*\.\s/.test(l)),
    'no COPY . (everything in the context)',
  );
  const runtime = lines.slice(lines.findIndex((l) => l.endsWith(' AS runtime')));
  const nodeModules = runtime.filter((l) => l.startsWith('COPY') && l.includes('node_modules'));
  t.deepEqual(nodeModules, ['COPY --from=deps --chown=root:root /app/node_modules ./node_modules'], 'node_modules from the production-only stage');
});

test('only the product is compiled: tsconfig.image.json leaves out the tests, demo and tools', async (t) => {
  const lines = await instructions();
  t.true(lines.includes('RUN npx tsc -p tsconfig.image.json'));
  const cfg = JSON.parse(await readFile(join(REPO, 'tsconfig.image.json'), 'utf8')) as { include: string[] };
  for (const dir of cfg.include) t.regex(dir, /^(host|sdk|plugins\/local|conformance|proto\/gen)\/\*\*\/\*\.ts$/, `${dir} is product code`);
});

test('every image runs as a non-root user', async (t) => {
  const lines = await instructions();
  let user = 'root';
  const finalUser = new Map<string, string>();
  let stage = '';
  for (const l of lines) {
    const from = /^FROM (?:--platform=\$BUILDPLATFORM )?(\S+) AS (\S+)$/.exec(l);
    if (from) {
      stage = from[2]!;
      user = finalUser.get(from[1]!) ?? 'root';
    }
    const u = /^USER (\S+)$/.exec(l);
    if (u) user = u[1]!;
    finalUser.set(stage, user);
  }
  for (const image of ['host', 'provider', 'exec']) {
    const u = finalUser.get(image);
    t.truthy(u && /^[1-9]\d*(:[1-9]\d*)?$/.test(u), `${image} runs as ${u}, a numeric non-root user`);
  }
});

test('.dockerignore: what the Dockerfile copies is in the context; local, secret and test files are not', async (t) => {
  const inContext = await contextFilter();
  const tracked = (await run('git', ['ls-files'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
  // What a developer's tree holds beside the tracked files.
  const local = [
    '.localcluster/pki/admin.key',
    '.localcluster/kubeconfig',
    '.localcloud/state.json',
    'node_modules/pino/package.json',
    'host/node_modules/x/index.js',
    'dist/host/main.js',
    'host/dist/x.js',
    'tsconfig.tsbuildinfo',
    '.git/config',
    'plugins/python/.venv/bin/python',
    'sdk/java/target/classes/dev/ccm/provider/sdk/Provider.class',
    'plugins/java/target/memjava.jar',
  ];
  for (const path of local) t.false(inContext(path), `${path} stays out of the build context`);
  const sent = tracked.filter(inContext);
  for (const path of sent) {
    t.false(
      /^(test|demo|tools|docs|deploy|\.ci)\//.test(path) ||
        /^plugins\/(go|python|[a-z]+-bridge)\//.test(path) ||
        /^sdk\/(go|python|java)(-[a-z]+)?\//.test(path),
      `${path} is not needed to build the image`,
    );
  }
  // Every COPY source from the context (not --from a stage) is there.
  for (const l of await instructions()) {
    if (!l.startsWith('COPY ') || l.includes('--from=')) continue;
    const parts = l
      .split(/\s+/)
      .slice(1)
      .filter((p) => !p.startsWith('--'));
    for (const src of parts.slice(0, -1)) {
      t.true(inContext(src), `${src} (${l}) is in the build context`);
      t.true(
        tracked.some((p) => p === src || p.startsWith(`${src}/`)),
        `${src} names tracked files`,
      );
    }
  }
  for (const must of ['package-lock.json', 'host/main.ts', 'plugins/local/main.ts', 'sdk/serve.ts', 'proto/gen/ccm/provider/v1/common.ts']) {
    t.true(sent.includes(must), `${must} is sent`);
  }
});

/** The checkout's files: tracked, and new ones git does not ignore. */
const checkoutFiles = async () =>
  (await run('git', ['ls-files', '-co', '--exclude-standard'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);

/** What a developer's tree and a test run put beside the tracked files (build output, Maven's, npm pack's, local state), and names near the rules' edges. */
const LOCAL = [
  '.localcluster/pki/admin.key',
  'node_modules/pino/package.json',
  'host/node_modules/x/index.js',
  'dist/host/main.js',
  'sdk/dist/index.js',
  'conformance/dist/run.js',
  'host/tsconfig.tsbuildinfo',
  'sdk/.pack.lock',
  'conformance/.pack.lock',
  'host/x.pack.lock',
  'sdk/java/target/classes/dev/ccm/provider/sdk/Provider.class',
  'sdk/java-proto/target/x.jar',
  'plugins/java/target/memjava.jar',
  'host/target/x.ts',
  'sdk/go-extra/x.ts',
  'sdk/javascript/x.ts',
  'sdk/python/.venv/bin/python',
  'release/v0.1.0/release.json',
  'host/docs/notes.md',
];

test("the host image's hash covers exactly its build context: every file .dockerignore lets through, nothing else", async (t) => {
  const inContext = await contextFilter();
  const files = await checkoutFiles();
  for (const path of [...files, ...LOCAL])
    t.is(HOST_IMAGE.context(path), inContext(path), `${path}: sent ${inContext(path)}, hashed ${HOST_IMAGE.context(path)}`);
});

test("the host image's hash leaves out what the suite builds in the tree, the other languages' SDKs and what the build does not read: a Java SDK build mid-run or a README edit does not change it", (t) => {
  for (const [path, inHash] of [
    ['sdk/java/target/classes/dev/ccm/provider/sdk/Provider.class', false],
    ['sdk/java/src/main/java/dev/ccm/provider/sdk/Provider.java', false],
    ['sdk/java/pom.xml', false],
    ['sdk/java-proto/target/x.jar', false],
    ['sdk/dist/index.js', false],
    ['host/tsconfig.tsbuildinfo', false],
    ['sdk/README.md', false],
    ['plugins/local/README.md', false],
    ['sdk/package.json', false],
    ['conformance/tsconfig.json', false],
    ['package.json', true],
    ['tsconfig.json', true],
    ['host/main.ts', true],
    ['sdk/serve.ts', true],
  ] as const)
    t.is(HOST_IMAGE.context(path), inHash, path);
});

test("each provider image's hash covers exactly its build context (deploy/providers/Dockerfile.dockerignore)", async (t) => {
  const rules = (await readFile(join(REPO, 'deploy/providers/Dockerfile.dockerignore'), 'utf8')).split('\n');
  const inContext = ignore().add(rules).createFilter();
  const files = await checkoutFiles();
  const local = ['sdk/go/x_test.go', 'plugins/aws-bridge/testdata/a.json', 'plugins/aws-bridge/main.go', 'plugins/go/main.go'];
  for (const p of BRIDGED_PROVIDERS) {
    const spec = providerImage(p);
    for (const path of [...files, ...local]) t.is(spec.context(path), inContext(path), `${p}: ${path}`);
  }
});
