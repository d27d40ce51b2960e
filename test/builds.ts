/**
 * Everything `npm test` builds before a test can use it, and in what order,
 * so that the first run on a fresh machine (every cache empty) stays well
 * inside CI's 90 minutes. docs/testing.md has the measured times.
 *
 * Each build is cached outside the repository, keyed by its inputs (its own
 * helper says how), and is skipped when its cache is ready. On a fresh
 * machine the runner:
 *   1. starts every pending build's module download at once (`go list -deps`,
 *      pip): network time overlaps the compiles;
 *   2. compiles one Go build at a time (2 cores: `go build` already uses both;
 *      two compiles at once only split them), all with one Go build cache
 *      and module cache and the same settings (test/helpers/go-build.ts), so
 *      a package shared by two builds is compiled once; the non-Go work
 *      (pip, apt-get, the image bases) runs beside them;
 *   3. starts the tests when every build is done. EARLY builds (the control
 *      plane, kustomize, the small providers and venvs) are the ones nearly
 *      every file needs, compiled first; LATE ones (the bridged providers,
 *      promtool, the images, the upstream CCM) only a dozen files need. They
 *      used to run beside the tests, and a cold run failed 34 tests on
 *      timeouts: a compile takes the CPU the tests' bounded waits count on.
 * Only what the selected test files need is built: a file's needs are read
 * from its imports (buildsNeeded). Each build prints its time; the run ends
 * with a table of them (buildSummary).
 */
import { readFileSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binariesReady, ensureBinaries, kubeVersion } from './controlplane/binaries.js';
import { exists } from './helpers/build-once.js';
import { IMAGES_ENV, imageBasesBuilt, imagesBuilt, prepareImageBases, prepareImages, testImageTags } from './helpers/images.js';
import { JAVA_DIR_ENV, JAVA_TOOLS_ENV, javaBuild, javaProviderDir, testJavaToolVersions } from './helpers/java.js';
import { kubectlBinary, kubectlDir } from './helpers/kubectl.js';
import { kustomizeBinary, kustomizeDir } from './helpers/kustomize.js';
import { prepareRelease, prepareReleaseBases, releaseBasesBuilt, releaseBuilt } from './helpers/release.js';
import { motoPython, motoVenvDir } from './helpers/moto.js';
import { OPENSTACK_BRIDGE_DIR, OPENSTACK_TARGETS, openstackBinaries } from './helpers/openstack.js';
import { fetchPromtool, promtoolBinary, promtoolDir } from './helpers/promtool.js';
import {
  AWS_BRIDGE_DIR,
  AWS_TARGETS,
  awsCloudBinary,
  bridgedModuleDir,
  fakeCloudBinary,
  fakeCloudDir,
  fetchBridgedModule,
  GO_BRIDGE_DIR,
  GO_DIR,
  goProviderBinary,
  goProviderDir,
  pythonProviderInterpreter,
  pythonVenvDir,
} from './helpers/providers.js';
import { goFetch } from './helpers/go-build.js';
import { awsCloudControllerManager, awsCloudControllerManagerDir, fetchAwsCloudControllerManager } from './helpers/aws-ccm.js';
import { ensureUpstreamCcm, fetchUpstreamCcm, upstreamCcmPath } from './helpers/upstream-ccm.js';
import { VSPHERE_BRIDGE_DIR, VSPHERE_TARGETS, vsphereBinaries } from './helpers/vsphere.js';

export type BuildName =
  | 'controlplane'
  | 'kustomize'
  | 'kubectl'
  | 'go-provider'
  | 'fake-cloud'
  | 'python-venv'
  | 'java-provider'
  | 'moto-venv'
  | 'aws'
  | 'vsphere'
  | 'openstack'
  | 'promtool'
  | 'images'
  | 'upstream-ccm'
  | 'aws-ccm'
  | 'image-bases'
  | 'release-bases'
  | 'release';

/** One build the suite needs: how to tell it is cached, fetch its downloads and build it. */
export interface Build {
  name: BuildName;
  /** What it is, for the progress lines. */
  what: string;
  /** Nearly every file needs it (compiled first); a late build only a few files need. Every build ends before the tests start. */
  early: boolean;
  /** A CPU-bound compile: runs alone in the compile queue. */
  compile: boolean;
  /** Whether its cache is ready (nothing to build); cheap, builds nothing. */
  ready(): Promise<boolean>;
  /** Downloads its inputs without compiling (started at once for every pending build). */
  fetch?(): Promise<void>;
  /** Builds it into its cache (idempotent: a ready cache is used as is); `say` gets progress lines. */
  build(say: (line: string) => void): Promise<unknown>;
  /**
   * What the test workers get in their environment so that they use the
   * build the runner made (its cache directory, hashed once per run) rather
   * than hash its inputs again: those may have been edited since. Cheap.
   */
  env?(): Promise<Record<string, string>>;
}

export const BUILDS: readonly Build[] = [
  {
    name: 'controlplane',
    // CCM_KUBE_VERSION picks the control plane's Kubernetes version (docs/support-matrix.md); the host's own target otherwise.
    what: `etcd, kube-apiserver, kube-controller-manager and the hollow kubelet ${kubeVersion()} from Go modules (test/controlplane/build-binaries.sh)`,
    early: true,
    compile: true,
    ready: binariesReady,
    build: (say) => ensureBinaries({ onProgress: say }),
  },
  {
    name: 'kustomize',
    what: 'kustomize, to render deploy/ (test/helpers/kustomize.ts)',
    early: true,
    compile: true,
    ready: () => exists(kustomizeDir()),
    build: () => kustomizeBinary(),
  },
  {
    name: 'go-provider',
    what: 'the Go provider plugins/go (test/helpers/providers.ts)',
    early: true,
    compile: true,
    ready: async () => exists(await goProviderDir()),
    fetch: () => goFetch(GO_DIR, ['.']),
    build: () => goProviderBinary(),
  },
  {
    name: 'fake-cloud',
    what: "upstream's fake cloud through the bridge (test/helpers/providers.ts)",
    early: true,
    compile: true,
    ready: async () => exists(await fakeCloudDir()),
    fetch: () => goFetch(GO_BRIDGE_DIR, ['./example/fake']),
    build: () => fakeCloudBinary(),
  },
  {
    name: 'python-venv',
    what: 'the Python SDK venv from PyPI (test/helpers/providers.ts)',
    early: true,
    compile: false,
    ready: async () => exists(await pythonVenvDir()),
    build: () => pythonProviderInterpreter(),
  },
  {
    name: 'java-provider',
    what: 'the Java SDK and the Java example provider plugins/java with Maven, from Maven Central (test/helpers/java.ts)',
    // Only the Java files need it: beside the tests, not before them.
    early: false,
    compile: true,
    ready: async () => exists(await javaProviderDir()),
    build: (say) => javaBuild(say),
    env: async () => ({ [JAVA_DIR_ENV]: await javaProviderDir(), [JAVA_TOOLS_ENV]: JSON.stringify(await testJavaToolVersions()) }),
  },
  {
    name: 'moto-venv',
    what: 'moto from PyPI (test/helpers/moto.ts)',
    early: true,
    compile: false,
    ready: async () => exists(await motoVenvDir()),
    build: (say) => motoPython(say),
  },
  // Late builds, in the order they compile: the one the longest test file (parity/upstream-parity) waits for and the cheapest first.
  {
    name: 'upstream-ccm',
    what: 'the upstream CCM forwarding to a plugin, tools/upstream-ccm (test/helpers/upstream-ccm.ts)',
    early: false,
    compile: true,
    ready: async () => exists(await upstreamCcmPath()),
    fetch: fetchUpstreamCcm,
    build: (say) => ensureUpstreamCcm(say),
  },
  {
    name: 'kubectl',
    what: "kubectl of the control plane's version, for what `kubectl apply` prints (test/helpers/kubectl.ts); after the control plane, whose modules and packages it shares",
    early: false,
    compile: true,
    ready: async () => process.env.TEST_ASSET_KUBECTL !== undefined || (await exists(kubectlDir())),
    build: (say) => kubectlBinary(say),
  },
  {
    name: 'promtool',
    what: 'promtool from tools/promtool (test/helpers/promtool.ts)',
    early: false,
    compile: true,
    ready: async () => exists(await promtoolDir()),
    fetch: fetchPromtool,
    build: (say) => promtoolBinary(say),
  },
  {
    name: 'aws',
    what: 'k8s.io/cloud-provider-aws through the bridge and its upstream CCM (test/helpers/providers.ts)',
    early: false,
    compile: true,
    ready: async () => exists(await bridgedModuleDir('aws', AWS_BRIDGE_DIR, AWS_TARGETS)),
    fetch: () => fetchBridgedModule(AWS_BRIDGE_DIR, AWS_TARGETS),
    build: (say) => awsCloudBinary(say),
  },
  {
    name: 'aws-ccm',
    what: "upstream's own aws-cloud-controller-manager, tools/aws-cloud-controller-manager (test/helpers/aws-ccm.ts); after the bridged AWS provider, whose packages it shares",
    early: false,
    compile: true,
    ready: async () => exists(await awsCloudControllerManagerDir()),
    fetch: fetchAwsCloudControllerManager,
    build: (say) => awsCloudControllerManager(say),
  },
  {
    name: 'openstack',
    what: 'k8s.io/cloud-provider-openstack through the bridge and its upstream CCM (test/helpers/openstack.ts)',
    early: false,
    compile: true,
    ready: async () => exists(await bridgedModuleDir('openstack', OPENSTACK_BRIDGE_DIR, OPENSTACK_TARGETS)),
    fetch: () => fetchBridgedModule(OPENSTACK_BRIDGE_DIR, OPENSTACK_TARGETS),
    build: (say) => openstackBinaries(say),
  },
  {
    name: 'vsphere',
    what: 'k8s.io/cloud-provider-vsphere through the bridge, vcsim and its upstream CCM (test/helpers/vsphere.ts)',
    early: false,
    compile: true,
    ready: async () => exists(await bridgedModuleDir('vsphere', VSPHERE_BRIDGE_DIR, VSPHERE_TARGETS)),
    fetch: () => fetchBridgedModule(VSPHERE_BRIDGE_DIR, VSPHERE_TARGETS),
    build: (say) => vsphereBinaries(say),
  },
  {
    name: 'image-bases',
    what: 'buildah (apt-get) and the local base images the Dockerfiles build from: downloads and copies, beside the compiles (test/helpers/images.ts)',
    early: false,
    compile: false,
    ready: imageBasesBuilt,
    build: (say) => prepareImageBases(say),
  },
  {
    name: 'release-bases',
    what: "the release's local base images of the other architecture (arm64: mmdebstrap of the same Debian packages, Node's official arm64 binary), after image-bases: downloads and copies, beside the compiles (test/helpers/release.ts)",
    early: false,
    compile: false,
    ready: releaseBasesBuilt,
    build: (say) => prepareReleaseBases(say),
  },
  {
    name: 'images',
    what: "deploy/Dockerfile's host image and the AWS provider image with buildah (test/helpers/images.ts)",
    early: false,
    // The bases are apt-get and npm downloads; the images' RUN steps (npm ci, tsc, go build) compile.
    compile: true,
    ready: imagesBuilt,
    build: (say) => prepareImages(say),
    env: async () => ({ [IMAGES_ENV]: JSON.stringify(await testImageTags()) }),
  },
  {
    name: 'release',
    what: "the release command on a copy of the checkout: the host image for amd64 and arm64 as one OCI index (its amd64 image is the image test's), and the next version's Java artifacts with Maven (test/helpers/release.ts)",
    early: false,
    // The images' RUN steps (npm ci, tsc) and Maven compile; the arm64 bases (downloads) are 'release-bases', beside. After 'images': the host image of the machine's architecture is then built.
    compile: true,
    ready: releaseBuilt,
    build: (say) => prepareRelease(say),
    // The release test's own releases hash their copies of the checkout (that is the release command under test); only the Java and Maven versions, read once, are handed over.
    env: async () => ({ [JAVA_TOOLS_ENV]: JSON.stringify(await testJavaToolVersions()) }),
  },
];

/**
 * The environment the test workers get from `builds` (each one's env): what
 * the runner hashed, once per run. A build whose env fails (its tools are
 * missing) adds nothing: its tests then hash, build and fail themselves.
 */
export async function workerEnv(builds: readonly Build[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const b of builds) Object.assign(out, await b.env?.().catch(() => undefined));
  return out;
}

/** The compiled tests' root (dist/test). */
export const DIST_TEST = dirname(fileURLToPath(import.meta.url));

/** Helper modules (relative to dist/test) whose import alone means a build: they build on use. */
const MODULE_NEEDS: Record<string, BuildName> = {
  'helpers/kustomize.js': 'kustomize',
  'helpers/kubectl.js': 'kubectl',
  'helpers/java.js': 'java-provider',
  'helpers/moto.js': 'moto-venv',
  'helpers/vsphere.js': 'vsphere',
  'helpers/openstack.js': 'openstack',
  'helpers/promtool.js': 'promtool',
  'helpers/upstream-ccm.js': 'upstream-ccm',
  'helpers/aws-ccm.js': 'aws-ccm',
  'helpers/release.js': 'release',
};
/** providers.js and images.js build several things, or also hold what builds nothing: a module that names one of these uses it. */
const NAME_NEEDS: [RegExp, BuildName][] = [
  [/\b(GO_PROVIDER|goProviderBinary)\b/, 'go-provider'],
  [/\b(FAKE_CLOUD_PROVIDER|fakeCloudBinary)\b/, 'fake-cloud'],
  [/\b(PYTHON_PROVIDER|pythonProviderInterpreter|pythonProviderLauncher)\b/, 'python-venv'],
  [/\b(AWS_CLOUD_PROVIDER|awsCloudBinary|awsUpstreamCcm)\b/, 'aws'],
  // images.js also holds rootfsCommand (test/helpers/pod-runner.ts runs manifests with it): only these build.
  [/\b(prepareImages|imageRootfs|buildImage|baseImages)\b/, 'images'],
];
/**
 * Modules that define the builds (and builds.ts's test, which names every
 * entry point): not read for names, their imports not followed. The release
 * tooling (tools/release/*) builds only when a test helper above calls it.
 */
const BUILDERS = new Set([
  ...Object.keys(MODULE_NEEDS),
  'helpers/providers.js',
  'helpers/images.js',
  'builds.js',
  'controlplane/binaries.js',
  'unit/runner/builds.test.js',
]);

/** Module texts read so far (every file's needs read the same helpers). */
const sources = new Map<string, Promise<string>>();
const sourceOf = (path: string) => {
  let p = sources.get(path);
  if (!p) sources.set(path, (p = readFile(path, 'utf8').catch(() => '')));
  return p;
};

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+\.js)'/g;

/**
 * The builds the compiled test file `file` needs: the control plane always
 * (the runner starts it), and what the local modules it imports, directly or
 * through other local modules, build on use (MODULE_NEEDS, NAME_NEEDS).
 * Conservative: a module imported for a constant still counts. A build a file
 * needs but this misses is still made, by the test, on first use.
 */
export async function buildsNeeded(file: string): Promise<Set<BuildName>> {
  const seen = new Set<string>();
  const needs = new Set<BuildName>(['controlplane']);
  const visit = async (path: string): Promise<void> => {
    if (seen.has(path)) return;
    seen.add(path);
    const rel = relative(DIST_TEST, path);
    const direct = MODULE_NEEDS[rel];
    if (direct) needs.add(direct);
    if (BUILDERS.has(rel) || rel.startsWith('../tools/release/')) return;
    const text = await sourceOf(path);
    for (const [re, name] of NAME_NEEDS) if (re.test(text)) needs.add(name);
    for (const m of text.matchAll(IMPORT)) await visit(resolve(dirname(path), m[1]!));
  };
  await visit(resolve(file));
  if (needs.has('images') || needs.has('release')) needs.add('image-bases');
  if (needs.has('release')) needs.add('release-bases');
  return needs;
}

/** Every compiled test file under `dir` (package.json's ava.files: dist/test/**\/*.test.js). */
export async function testFilesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const parent = (e as { parentPath?: string; path?: string }).parentPath ?? (e as { path?: string }).path ?? dir;
    if (e.isFile() && e.name.endsWith('.test.js')) out.push(join(parent, e.name));
  }
  return out.sort();
}

/** ava's flags that take a value as the next argument. */
const VALUE_FLAGS = new Set(['--match', '-m', '--timeout', '-T', '--concurrency', '-c', '--node-arguments', '--config']);

/**
 * The test files `args` (the runner's arguments, passed on to ava) select:
 * every compiled test file when none is named, the named files and the test
 * files under named directories otherwise. undefined when an argument is
 * neither a flag nor an existing path (a glob): the run then builds all and
 * runs ava once, as asked.
 */
export async function selectedFiles(args: readonly string[]): Promise<{ files: string[]; flags: string[] } | undefined> {
  const files: string[] = [];
  const flags: string[] = [];
  let named = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('-')) {
      flags.push(a);
      if (VALUE_FLAGS.has(a) && i + 1 < args.length) flags.push(args[++i]!);
      continue;
    }
    const st = await stat(a).catch(() => undefined);
    if (!st) return undefined;
    named = true;
    if (st.isDirectory()) files.push(...(await testFilesUnder(resolve(a))));
    else files.push(resolve(a));
  }
  return { files: named ? files : await testFilesUnder(DIST_TEST), flags };
}

/** One build's outcome, for the summary. */
export interface BuildResult {
  name: BuildName;
  /** Whether its cache was ready: nothing was built. */
  cached: boolean;
  /** Seconds from its start (after waiting for the compile queue) to done. */
  seconds: number;
  /** Seconds of its downloads (fetch), which ran beside the compile queue. */
  fetchSeconds?: number;
  /** CPU seconds its processes used (one at a time only: otherwise they overlap and cannot be told apart). */
  cpuSeconds?: number;
  error?: string;
}

const secs = (t0: number) => (Date.now() - t0) / 1000;

/** CPU seconds of this process's finished children (Linux /proc; undefined elsewhere). */
function childrenCpu(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // After the command: state is field 3; cutime and cstime are fields 16 and 17, in clock ticks (100 a second on Linux).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * Runs `builds`: every pending one's fetch at once, the compiles one at a
 * time in the given order, the rest beside them. Resolves to a promise per
 * build (its result) so the caller can wait for each. A
 * failed build rejects its own promise; the others go on.
 */
export function startBuilds(
  builds: readonly Build[],
  say: (name: BuildName, line: string) => void,
  opts: { oneAtATime?: boolean } = {},
): Map<BuildName, Promise<BuildResult>> {
  let queue: Promise<unknown> = Promise.resolve();
  const out = new Map<BuildName, Promise<BuildResult>>();
  for (const b of builds) {
    const readyP = b.ready().catch(() => false);
    const fetched = (async () => {
      // One at a time: the downloads are part of the build (what a build costs on its own).
      if ((await readyP) || !b.fetch || opts.oneAtATime) return undefined;
      const t0 = Date.now();
      await b.fetch().catch(() => undefined);
      return secs(t0);
    })();
    const run = async (): Promise<BuildResult> => {
      if (await readyP) return { name: b.name, cached: true, seconds: 0 };
      const t0 = Date.now();
      const cpu0 = childrenCpu();
      say(b.name, `building ${b.what}`);
      try {
        await b.build((line) => say(b.name, line));
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        say(b.name, `FAILED after ${secs(t0).toFixed(0)} s: ${error}`);
        return { name: b.name, cached: false, seconds: secs(t0), fetchSeconds: await fetched, error };
      }
      const cpu1 = childrenCpu();
      const r: BuildResult = {
        name: b.name,
        cached: false,
        seconds: secs(t0),
        fetchSeconds: await fetched,
        cpuSeconds: opts.oneAtATime && cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined,
      };
      const fetch = r.fetchSeconds !== undefined ? ` (its downloads took ${r.fetchSeconds.toFixed(0)} s beside other builds)` : '';
      say(b.name, `built in ${r.seconds.toFixed(0)} s${r.cpuSeconds !== undefined ? `, ${r.cpuSeconds.toFixed(0)} CPU s` : ''}${fetch}`);
      return r;
    };
    if (b.compile || opts.oneAtATime) {
      const p = queue.then(run);
      queue = p;
      out.set(b.name, p);
    } else out.set(b.name, run());
  }
  return out;
}

/** The closing table: each build's time (or "cached"), and the total. */
export function buildSummary(results: readonly BuildResult[], wallSeconds: number): string {
  const lines = ['builds:'];
  for (const r of results) {
    const how = r.error ? `FAILED after ${r.seconds.toFixed(0)} s` : r.cached ? 'cached' : `${r.seconds.toFixed(0)} s`;
    const cpu = r.cpuSeconds !== undefined ? `, ${r.cpuSeconds.toFixed(0)} CPU s` : '';
    const fetch = r.fetchSeconds !== undefined ? ` (downloads ${r.fetchSeconds.toFixed(0)} s, beside)` : '';
    lines.push(`  ${r.name.padEnd(13)} ${how}${cpu}${fetch}`);
  }
  lines.push(`  builds took ${wallSeconds.toFixed(0)} s of wall time`);
  return lines.join('\n');
}
