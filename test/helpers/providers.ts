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
import { GO_BUILD, goFetch, niced } from './go-build.js';

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

/** The machine's Go version (part of every Go build's cache key). */
export async function goVersion(): Promise<string> {
  return (await execa('go', ['env', 'GOVERSION'])).stdout.trim();
}

/** The cache directory of the Go provider for the current sources: plugins/go, the SDK module it replaces with ../../sdk/go, GO_BUILD. */
export async function goProviderDir(): Promise<string> {
  const v = await goVersion();
  const files = await filesUnder(GO_DIR, goSource);
  return join(cacheRoot(), `go-${await hashFiles(GO_DIR, files, `${v}\0${await goSdkHash(v)}\0${JSON.stringify(GO_BUILD)}`)}`);
}

/** Path of the built Go provider (go build on first use, into goProviderDir). */
export function goProviderBinary(): Promise<string> {
  return (goBinary ??= (async () => {
    const dir = await goProviderDir();
    await buildOnce(dir, async (tmp) => {
      await execa(...niced('go', ['build', ...GO_BUILD.flags, '-o', join(tmp, 'ccm-provider-memgo'), '.']), { cwd: GO_DIR, env: GO_BUILD.env });
    });
    return join(dir, 'ccm-provider-memgo');
  })());
}

let fakeBinary: Promise<string> | undefined;

/** The cache directory of ccm-provider-fake for the current sources: the bridge module, the SDK it replaces with ../, GO_BUILD. */
export async function fakeCloudDir(): Promise<string> {
  const v = await goVersion();
  const files = await filesUnder(GO_BRIDGE_DIR, goSource);
  return join(cacheRoot(), `fake-${await hashFiles(GO_BRIDGE_DIR, files, `${v}\0${await goSdkHash(v)}\0${JSON.stringify(GO_BUILD)}`)}`);
}

/**
 * Path of ccm-provider-fake: upstream's k8s.io/cloud-provider/fake served by
 * the bridge (go build of sdk/go/bridge/example/fake on first use, into fakeCloudDir).
 */
export function fakeCloudBinary(): Promise<string> {
  return (fakeBinary ??= (async () => {
    const dir = await fakeCloudDir();
    await buildOnce(dir, async (tmp) => {
      await execa(...niced('go', ['build', ...GO_BUILD.flags, '-o', join(tmp, 'ccm-provider-fake'), './example/fake']), {
        cwd: GO_BRIDGE_DIR,
        env: GO_BUILD.env,
      });
    });
    return join(dir, 'ccm-provider-fake');
  })());
}

let awsBinary: Promise<string> | undefined;

/** What awsCloudBinary builds: the plugin, and the upstream CCM with the same provider linked in (test/integration/providers/real-provider-parity.test.ts). */
export const AWS_TARGETS = { 'ccm-provider-aws': '.', 'upstream-ccm': './cmd/upstream-ccm' } as const;

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
    AWS_TARGETS,
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
 * Where deploy/providers/Dockerfile puts the binary (its ENTRYPOINT), as the
 * manifests' exec probes name it; pod-runner.ts maps it to the local binary.
 * test/unit/deploy/provider-image.test.ts checks it against the Dockerfile.
 */
export const BRIDGED_IMAGE_ENTRYPOINT = '/ccm-provider';

/**
 * The cache directory of a module that serves a real provider through the
 * bridge (plugins/<name>-bridge) built for `targets` (output name → package
 * path): the key covers the module (its go.sum pins the provider and every
 * dependency), the bridge module, the SDK and the Go version, BRIDGED_BUILD
 * and the targets.
 */
export async function bridgedModuleDir(name: string, moduleDir: string, targets: Record<string, string>): Promise<string> {
  const v = await goVersion();
  const bridgeHash = await hashFiles(GO_BRIDGE_DIR, await filesUnder(GO_BRIDGE_DIR, (rel) => goSource(rel) && !rel.startsWith('example/')), v);
  const files = await filesUnder(moduleDir, goSource);
  // The targets too: a directory built for fewer targets must not be taken for a complete one.
  const how = JSON.stringify({ build: BRIDGED_BUILD, targets });
  return join(cacheRoot(), `${name}-${await hashFiles(moduleDir, files, `${v}\0${bridgeHash}\0${await goSdkHash(v)}\0${how}`)}`);
}

/** Downloads what buildBridgedModule of `targets` needs from the module proxy, compiling nothing (goFetch). */
export async function fetchBridgedModule(moduleDir: string, targets: Record<string, string>): Promise<void> {
  await goFetch(moduleDir, Object.values(targets));
}

/**
 * Builds `targets` of a bridged provider's module into bridgedModuleDir,
 * once per source change. `say` gets a line when it starts, every 30 s, and
 * when it is done (with its time). Resolves to each target's path.
 */
export async function buildBridgedModule(
  name: string,
  moduleDir: string,
  targets: Record<string, string>,
  what: string,
  say: (line: string) => void,
): Promise<Record<string, string>> {
  const dir = await bridgedModuleDir(name, moduleDir, targets);
  await buildOnce(dir, async (tmp) => {
    const t0 = Date.now();
    const names = Object.keys(targets).join(', ');
    say(`building ${names} (${what}) into ${dir}`);
    const tick = setInterval(() => say(`still building ${names} (${Math.round((Date.now() - t0) / 1000)} s elapsed)`), 30_000);
    try {
      for (const [out, pkg] of Object.entries(targets))
        await execa(...niced('go', ['build', ...BRIDGED_BUILD.flags, '-o', join(tmp, out), pkg]), {
          cwd: moduleDir,
          env: { ...GO_BUILD.env, ...BRIDGED_BUILD.env },
        });
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

/** The cache directory of the Python provider's venv: the interpreter's version, the SDK's requirements and sources. */
export async function pythonVenvDir(): Promise<string> {
  const version = (await execa(process.env.CCM_TEST_PYTHON || 'python3', ['--version'])).stdout.trim();
  const files = await filesUnder(PYTHON_SDK_DIR, pythonSdkSource);
  return join(cacheRoot(), `python-${await hashFiles(PYTHON_SDK_DIR, files, version)}`);
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
    const dir = await pythonVenvDir();
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
  name: 'memgo' | 'mempy' | 'memjava' | 'fake' | 'aws';
  /** An executable for --plugin-path (exec) or to start as a sidecar. */
  executable(dir: string): Promise<string>;
}

export const GO_PROVIDER: ProviderUnderTest = { name: 'memgo', executable: () => goProviderBinary() };
export const PYTHON_PROVIDER: ProviderUnderTest = { name: 'mempy', executable: (dir) => pythonProviderLauncher(dir) };
/** Upstream's fake cloud through the bridge; its providerIDs are fake://<node name>. */
export const FAKE_CLOUD_PROVIDER: ProviderUnderTest = { name: 'fake', executable: () => fakeCloudBinary() };
/** k8s.io/cloud-provider-aws through the bridge; its providerIDs are aws:///<zone>/<instance id>. */
export const AWS_CLOUD_PROVIDER: ProviderUnderTest = { name: 'aws', executable: () => awsCloudBinary() };
