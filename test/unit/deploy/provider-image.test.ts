/**
 * deploy/providers/Dockerfile and its build context, checked without Docker:
 * the binary is built exactly as the tests build the binary they run
 * (BRIDGED_BUILD), from a context (Dockerfile.dockerignore) holding the Go
 * SDK, the bridge and the providers' modules and nothing else; the image runs
 * it as a non-root user. That the binary runs as the rendered pods run it is
 * test/integration/deploy/run-provider-manifests.test.ts.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from '../../helpers/image-layout.js';
import { PROVIDER_RENDERINGS } from '../../helpers/manifests.js';
import { BRIDGED_BUILD, BRIDGED_IMAGE_ENTRYPOINT } from '../../helpers/providers.js';

const run = promisify(execFile);
// A CommonJS module whose types declare an ES default export: loaded as what it is.
const ignore = createRequire(import.meta.url)('@balena/dockerignore') as (typeof import('@balena/dockerignore'))['default'];

/** Instructions without comments and blank lines. */
async function instructions(): Promise<string[]> {
  return (await readFile(join(REPO, 'deploy/providers/Dockerfile'), 'utf8'))
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

test('the provider is built as the tests build it: static, paths trimmed, from its module directory', async (t) => {
  const lines = await instructions();
  const env = Object.entries(BRIDGED_BUILD.env).map(([k, v]) => `${k}=${v}`);
  t.deepEqual(
    lines.filter((l) => l.startsWith('RUN ')),
    [`RUN ${[...env, 'GOOS=$TARGETOS', 'GOARCH=$TARGETARCH', 'go', 'build', ...BRIDGED_BUILD.flags, '-o', '/out/ccm-provider', '.'].join(' ')}`],
    "cross-compiled on the build platform for the image's platform",
  );
  t.true(lines.includes('WORKDIR /src/plugins/${PROVIDER}-bridge'));
  t.true(
    lines.includes('FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build'),
    'the build stage runs on the build platform (no emulation for arm64)',
  );
  const goMod = await readFile(join(REPO, 'plugins/aws-bridge/go.mod'), 'utf8');
  const goLine = /^go (\d+\.\d+)/m.exec(goMod)![1]!;
  t.is(
    lines.find((l) => l.startsWith('ARG GO_IMAGE=')),
    `ARG GO_IMAGE=golang:${goLine}-bookworm`,
    `the builder's Go is the modules' go ${goLine}`,
  );
});

test('the image holds the binary alone on distroless static and runs it as a numeric non-root user', async (t) => {
  const lines = await instructions();
  t.is(
    lines.find((l) => l.startsWith('ARG BASE_IMAGE=')),
    'ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot',
  );
  const final = lines.slice(lines.lastIndexOf('FROM ${BASE_IMAGE} AS provider'));
  t.deepEqual(final, [
    'FROM ${BASE_IMAGE} AS provider',
    `COPY --from=build /out/ccm-provider ${BRIDGED_IMAGE_ENTRYPOINT}`,
    'USER 65532:65532',
    `ENTRYPOINT ["${BRIDGED_IMAGE_ENTRYPOINT}"]`,
  ]);
});

test('Dockerfile.dockerignore: each provider rendering has its module in the context; nothing else but the Go SDK', async (t) => {
  const rules = (await readFile(join(REPO, 'deploy/providers/Dockerfile.dockerignore'), 'utf8')).split('\n');
  const inContext = ignore().add(rules).createFilter();
  const tracked = (await run('git', ['ls-files'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
  const sent = tracked.filter(inContext);
  for (const path of sent) {
    t.regex(path, /^(sdk\/go|plugins\/[a-z]+-bridge)\//, `${path} is the SDK or a bridged module`);
    t.false(path.endsWith('_test.go'), `${path}: no tests`);
  }
  const copies = (await instructions()).filter((l) => l.startsWith('COPY ') && !l.includes('--from='));
  for (const p of PROVIDER_RENDERINGS) {
    t.true(copies.includes(`COPY plugins/${p}-bridge ./plugins/${p}-bridge`), `${p}'s module is copied`);
    for (const f of ['go.mod', 'go.sum', 'main.go']) t.true(sent.includes(`plugins/${p}-bridge/${f}`), `${p}-bridge/${f} is sent`);
  }
  t.true(copies.includes('COPY sdk/go ./sdk/go'));
  for (const f of ['sdk/go/go.mod', 'sdk/go/bridge/go.mod', 'sdk/go/bridge/bridge.go']) t.true(sent.includes(f), `${f} is sent`);
  for (const local of ['node_modules/x/index.js', '.localcluster/kubeconfig', 'test/helpers/moto.ts', 'plugins/local/main.ts', '.git/config'])
    t.false(inContext(local), `${local} stays out`);
});
