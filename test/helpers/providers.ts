/**
 * The Go and Python providers (plugins/go, plugins/python) as runnable
 * executables for tests, built on first use and cached outside the repository:
 *   ~/.cache/ccm-host/providers/go-<source hash>/ccm-provider-memgo
 *   ~/.cache/ccm-host/providers/python-<hash of the SDK's requirements and sources>/venv
 *     (sdk/python installed into it; plugins/python runs on it)
 *   ~/.cache/ccm-host/providers/fake-<source hash>/ccm-provider-fake (upstream's
 *     k8s.io/cloud-provider/fake behind the bridge, sdk/go/bridge/example/fake)
 *   ~/.cache/ccm-host/providers/aws-<source hash>/ccm-provider-aws
 *     (k8s.io/cloud-provider-aws behind the bridge, plugins/aws-bridge)
 * Go modules come from the Go module proxy, Python packages from PyPI. A
 * directory lock keeps parallel test files from building the same thing twice.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { filesUnder, hashFiles } from '../../tools/release/files.js';
import { buildOnce } from './build-once.js';
import { motoPython } from './moto.js';

/** The repository root (dist/test/helpers → ../../..). */
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const GO_DIR = join(REPO, 'plugins', 'go');
/** The Go SDK module (sdk/go), which plugins/go uses through a replace directive. */
export const GO_SDK_DIR = join(REPO, 'sdk', 'go');
export const PYTHON_DIR = join(REPO, 'plugins', 'python');
/** The Python SDK package (sdk/python, ccm-provider-sdk), pip-installed into the test venv. */
export const PYTHON_SDK_DIR = join(REPO, 'sdk', 'python');
/** The cloudprovider.Interface bridge (sdk/go/bridge), its own module next to the SDK it replaces with ../. */
export const GO_BRIDGE_DIR = join(GO_SDK_DIR, 'bridge');
/** k8s.io/cloud-provider-aws through the bridge (plugins/aws-bridge), its own module replacing the bridge and the SDK. */
export const AWS_BRIDGE_DIR = join(REPO, 'plugins', 'aws-bridge');

/** Where built providers are cached, outside the repository, keyed by source hash. */
export function cacheRoot(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host', 'providers');
}

export { filesUnder, hashFiles };

let goBinary: Promise<string> | undefined;

/** Whether `rel` (a path inside a Go module) is part of what `go build` compiles. */
export function goSource(rel: string): boolean {
  return /^(go\.mod|go\.sum|(.+\/)?[^/]+\.go)$/.test(rel) && !rel.endsWith('_test.go');
}

/** Hash of the SDK module's sources (sdk/go without the nested bridge module). */
export async function goSdkHash(goVersion: string): Promise<string> {
  return hashFiles(GO_SDK_DIR, await filesUnder(GO_SDK_DIR, (rel) => goSource(rel) && !rel.startsWith('bridge/')), goVersion);
}

/**
 * Path of the built Go provider (go build on first use). The cache key covers
 * plugins/go and the SDK module it replaces with ../../sdk/go.
 */
export function goProviderBinary(): Promise<string> {
  return (goBinary ??= (async () => {
    const goVersion = (await execa('go', ['env', 'GOVERSION'])).stdout.trim();
    const sdkHash = await goSdkHash(goVersion);
    const files = await filesUnder(GO_DIR, goSource);
    const dir = join(cacheRoot(), `go-${await hashFiles(GO_DIR, files, `${goVersion}\0${sdkHash}`)}`);
    await buildOnce(dir, async (tmp) => {
      await execa('go', ['build', '-trimpath', '-o', join(tmp, 'ccm-provider-memgo'), '.'], { cwd: GO_DIR });
    });
    return join(dir, 'ccm-provider-memgo');
  })());
}

let fakeBinary: Promise<string> | undefined;

/**
 * Path of ccm-provider-fake: upstream's k8s.io/cloud-provider/fake served by
 * the bridge (go build of sdk/go/bridge/example/fake on first use; the cache
 * key covers the bridge module and the SDK it replaces with ../).
 */
export function fakeCloudBinary(): Promise<string> {
  return (fakeBinary ??= (async () => {
    const goVersion = (await execa('go', ['env', 'GOVERSION'])).stdout.trim();
    const files = await filesUnder(GO_BRIDGE_DIR, goSource);
    const dir = join(cacheRoot(), `fake-${await hashFiles(GO_BRIDGE_DIR, files, `${goVersion}\0${await goSdkHash(goVersion)}`)}`);
    await buildOnce(dir, async (tmp) => {
      await execa('go', ['build', '-trimpath', '-o', join(tmp, 'ccm-provider-fake'), './example/fake'], { cwd: GO_BRIDGE_DIR });
    });
    return join(dir, 'ccm-provider-fake');
  })());
}

let awsBinary: Promise<string> | undefined;

/**
 * Path of ccm-provider-aws: k8s.io/cloud-provider-aws (the version of
 * plugins/aws-bridge/go.mod), unmodified, served by the bridge. Built on
 * first use (cold: a few minutes on 2 cores, the AWS SDK is large); the
 * cache key covers plugins/aws-bridge (its go.sum pins the provider and
 * every dependency), the bridge module, the SDK and the Go version. `say`
 * gets progress lines while it builds.
 */
export function awsCloudBinary(say: (line: string) => void = () => undefined): Promise<string> {
  return (awsBinary ??= buildBridgedModule(
    'aws',
    AWS_BRIDGE_DIR,
    // The upstream CCM with the same provider linked in (test/integration/providers/real-provider-parity.test.ts).
    { 'ccm-provider-aws': '.', 'upstream-ccm': './cmd/upstream-ccm' },
    'k8s.io/cloud-provider-aws through the bridge, and the upstream CCM linking it; the first build takes minutes (the AWS SDK is large)',
    say,
  ).then((out) => out['ccm-provider-aws']!));
}

/**
 * How deploy/providers/Dockerfile builds a bridged provider, and so how the
 * tests build every target of those modules: static (the image has no libc),
 * paths trimmed. test/unit/deploy/provider-image.test.ts checks the
 * Dockerfile's RUN line against it.
 */
export const BRIDGED_BUILD = { env: { CGO_ENABLED: '0' }, flags: ['-trimpath'] } as const;

/**
 * Builds the packages `targets` (output name → package path) of a module that
 * serves a real provider through the bridge (plugins/<name>-bridge) into the
 * cache, once per source change: the key covers the module (its go.sum pins
 * the provider and every dependency), the bridge module, the SDK and the Go
 * version, BRIDGED_BUILD and the targets. `say` gets a line when it starts, every 30 s, and when it is done.
 * Resolves to each target's path.
 */
export async function buildBridgedModule(
  name: string,
  moduleDir: string,
  targets: Record<string, string>,
  what: string,
  say: (line: string) => void,
): Promise<Record<string, string>> {
  const goVersion = (await execa('go', ['env', 'GOVERSION'])).stdout.trim();
  const bridgeHash = await hashFiles(
    GO_BRIDGE_DIR,
    await filesUnder(GO_BRIDGE_DIR, (rel) => goSource(rel) && !rel.startsWith('example/')),
    goVersion,
  );
  const files = await filesUnder(moduleDir, goSource);
  // The targets too: a directory built for fewer targets must not be taken for a complete one.
  const how = JSON.stringify({ build: BRIDGED_BUILD, targets });
  const dir = join(cacheRoot(), `${name}-${await hashFiles(moduleDir, files, `${goVersion}\0${bridgeHash}\0${await goSdkHash(goVersion)}\0${how}`)}`);
  await buildOnce(dir, async (tmp) => {
    const t0 = Date.now();
    const names = Object.keys(targets).join(', ');
    say(`building ${names} (${what}) into ${dir}`);
    const tick = setInterval(() => say(`still building ${names} (${Math.round((Date.now() - t0) / 1000)} s elapsed)`), 30_000);
    try {
      for (const [out, pkg] of Object.entries(targets))
        await execa('go', ['build', ...BRIDGED_BUILD.flags, '-o', join(tmp, out), pkg], { cwd: moduleDir, env: BRIDGED_BUILD.env });
    } finally {
      clearInterval(tick);
    }
    say(`${names} built in ${Math.round((Date.now() - t0) / 1000)} s`);
  });
  return Object.fromEntries(Object.keys(targets).map((out) => [out, join(dir, out)]));
}

/** The upstream cloud-controller-manager with k8s.io/cloud-provider-aws linked in, built beside ccm-provider-aws. */
export async function awsUpstreamCcm(): Promise<string> {
  return join(dirname(await awsCloudBinary()), 'upstream-ccm');
}

let venvPython: Promise<string> | undefined;

/** Whether `rel` (a path inside sdk/python) is part of what pip installs, or pins what it installs. */
function pythonSdkSource(rel: string): boolean {
  return /^(pyproject\.toml|README\.md|requirements(-dev)?\.txt|src\/.+\.pyi?)$/.test(rel);
}

/**
 * The Python interpreter of a venv with sdk/python/requirements-dev.txt (the
 * pinned runtime dependencies and grpcio-tools) and the SDK package itself
 * installed. The cache key covers the requirements and the SDK's sources, so
 * a changed SDK builds a new venv.
 */
export function pythonProviderInterpreter(): Promise<string> {
  return (venvPython ??= (async () => {
    const base = process.env.CCM_TEST_PYTHON || 'python3';
    const version = (await execa(base, ['--version'])).stdout.trim();
    const files = await filesUnder(PYTHON_SDK_DIR, pythonSdkSource);
    const dir = join(cacheRoot(), `python-${await hashFiles(PYTHON_SDK_DIR, files, version)}`);
    await buildOnce(dir, async (tmp) => {
      await execa(base, ['-m', 'venv', join(tmp, 'venv')]);
      // Only bin/python is used afterwards, which keeps working after the rename.
      // One pip run: the pins of requirements-dev.txt decide the versions within the SDK's ranges.
      await execa(join(tmp, 'venv', 'bin', 'python'), [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        '-r',
        join(PYTHON_SDK_DIR, 'requirements-dev.txt'),
        PYTHON_SDK_DIR,
      ]);
    });
    return join(dir, 'venv', 'bin', 'python');
  })());
}

/** Writes an executable launcher for the Python provider into `dir` and returns its path. */
export async function pythonProviderLauncher(dir: string): Promise<string> {
  const python = await pythonProviderInterpreter();
  const path = join(dir, 'ccm-provider-mempy');
  await writeFile(path, `#!/bin/sh\nexec '${python}' '${join(PYTHON_DIR, 'main.py')}' "$@"\n`);
  await chmod(path, 0o755);
  return path;
}

/** A provider under test: how to run it and what it calls itself. */
export interface ProviderUnderTest {
  /** --cloud-provider and providerID prefix. */
  name: 'memgo' | 'mempy' | 'fake' | 'aws';
  /** An executable for --plugin-path (exec) or to start as a sidecar. */
  executable(dir: string): Promise<string>;
}

export const GO_PROVIDER: ProviderUnderTest = { name: 'memgo', executable: () => goProviderBinary() };
export const PYTHON_PROVIDER: ProviderUnderTest = { name: 'mempy', executable: (dir) => pythonProviderLauncher(dir) };
/** Upstream's fake cloud through the bridge; its providerIDs are fake://<node name>. */
export const FAKE_CLOUD_PROVIDER: ProviderUnderTest = { name: 'fake', executable: () => fakeCloudBinary() };
/** k8s.io/cloud-provider-aws through the bridge; its providerIDs are aws:///<zone>/<instance id>. */
export const AWS_CLOUD_PROVIDER: ProviderUnderTest = { name: 'aws', executable: () => awsCloudBinary() };

/**
 * Builds the providers before the tests start (the test runner calls this),
 * so a first run on a fresh machine does not spend a test's timeout on go
 * build or pip install.
 */
export async function prepareTestProviders(say: (line: string) => void): Promise<void> {
  const t0 = Date.now();
  say(
    'building the Go provider, the fake cloud and the AWS provider through the bridge, the Python provider venv and the moto venv if needed (first run: Go proxy and PyPI)',
  );
  const [go, fake, py] = await Promise.all([goProviderBinary(), fakeCloudBinary(), pythonProviderInterpreter()]);
  // After the others: the largest Go build, on its own so the two cores are not split three ways.
  const [aws, moto] = await Promise.all([awsCloudBinary(say), motoPython(say)]);
  say(`providers ready in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${go}, ${fake}, ${py}, ${aws}, ${moto}`);
}
