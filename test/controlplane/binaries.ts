/**
 * Locates (or, once per machine, builds) the real kube-apiserver,
 * kube-controller-manager and etcd binaries that test control planes run,
 * and the hollow kubelet (kubemark) that test nodes run.
 * Nothing here fakes an API server.
 *
 * Resolution order, modelled on controller-runtime envtest:
 *   1. `TEST_ASSET_KUBE_APISERVER` / `TEST_ASSET_ETCD` /
 *      `TEST_ASSET_KUBE_CONTROLLER_MANAGER` / `TEST_ASSET_HOLLOW_KUBELET`
 *      (paths to the binaries),
 *   2. `KUBEBUILDER_ASSETS` (a directory holding `kube-apiserver` and `etcd`;
 *      envtest ships no kube-controller-manager or hollow kubelet, so those
 *      are taken from there only when present),
 *   3. the version-keyed cache (`CCM_CONTROLPLANE_CACHE`, default
 *      `${XDG_CACHE_HOME:-~/.cache}/ccm-host/controlplane`) at the
 *      Kubernetes version `CCM_KUBE_VERSION` (default: the host's), filled by
 *      `build-binaries.sh` from Go modules the first time it is needed. Each
 *      binary has its own directory, so adding one never rebuilds the others.
 */
import { createHash } from 'node:crypto';
import { constants as fsc, readdirSync, readFileSync } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import type { Logger } from '../../host/log.js';
import { K8S_VERSION } from '../../host/names.js';
import { acquireLock, pidAlive } from '../../tools/release/build-lock.js';
import { niced } from '../helpers/go-build.js';

export { pidAlive };

/** The host's targeted Kubernetes version: the control plane's unless CCM_KUBE_VERSION says otherwise. */
export { K8S_VERSION };

/**
 * Newest Kubernetes release the suite is run on (`npm run test:kube-latest`);
 * docs/support-matrix.md says which tests ran on it.
 */
export const K8S_LATEST_VERSION = 'v1.37.2';

/**
 * Kubernetes version of the test control plane (kube-apiserver,
 * kube-controller-manager, hollow kubelet): `CCM_KUBE_VERSION` (a release
 * such as v1.37.2, built from k8s.io/kubernetes at that version into its own
 * cache directory), else `K8S_VERSION`, the host's target. Throws on a value
 * that is not a v1.x.y release, naming it.
 */
export function kubeVersion(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.CCM_KUBE_VERSION?.trim();
  if (!v) return K8S_VERSION;
  if (!/^v1\.\d+\.\d+$/.test(v)) throw new Error(`CCM_KUBE_VERSION=${v} is not a Kubernetes release such as ${K8S_LATEST_VERSION}`);
  return v;
}
/** etcd version built into the cache. */
export const ETCD_VERSION = 'v3.6.16';

/** Paths of the control-plane binaries. */
export interface Binaries {
  kubeApiserver: string;
  etcd: string;
  /** Same Kubernetes version as kubeApiserver; runs the PV binder, attach/detach and protection controllers. */
  kubeControllerManager: string;
  /**
   * Same Kubernetes version: kubemark's hollow kubelet set up as an
   * external-cloud kubelet (test/controlplane/hollow-kubelet/*.go).
   */
  hollowKubelet: string;
}

export interface EnsureBinariesOptions {
  /** Structured log for lock waits and build progress. */
  log?: Logger;
  /**
   * Receives human-readable progress lines (the build's stderr, "still
   * building" ticks). Defaults to `log.info`, or to process.stderr without a log.
   */
  onProgress?: (line: string) => void;
}

/** How long a from-scratch build (module download + compile) may take. */
const BUILD_TIMEOUT_MS = 60 * 60_000;
/** How often a person watching a long build is told it is still going. */
const TICK_MS = 30_000;

/** The directory holding version-keyed binaries built by build-binaries.sh. */
export function cacheDir(): string {
  if (process.env.CCM_CONTROLPLANE_CACHE) return process.env.CCM_CONTROLPLANE_CACHE;
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(xdg, 'ccm-host', 'controlplane');
}

/** Where the cache keeps the binaries for the pinned versions. */
export function cachedBinaries(cache = cacheDir(), k8s = kubeVersion()): Binaries {
  return {
    kubeApiserver: join(cache, `kube-apiserver-${k8s}`, 'kube-apiserver'),
    etcd: join(cache, `etcd-${ETCD_VERSION}`, 'etcd'),
    kubeControllerManager: join(cache, `kube-controller-manager-${k8s}`, 'kube-controller-manager'),
    hollowKubelet: join(cache, `hollow-kubelet-${k8s}-${hollowKubeletKey()}`, 'hollow-kubelet'),
  };
}

/**
 * The hollow kubelet's cache key beside the version: a hash of our Go files
 * (main.go and the per-version cri_*.go), names and contents, so editing any
 * of them builds a new binary instead of reusing the old one.
 */
export function hollowKubeletKey(): string {
  const candidates = [
    fileURLToPath(new URL('./hollow-kubelet/', import.meta.url)),
    fileURLToPath(new URL('../../../test/controlplane/hollow-kubelet/', import.meta.url)),
  ];
  for (const dir of candidates) {
    let files: string[];
    try {
      files = readdirSync(dir)
        .filter((f) => f.endsWith('.go'))
        .sort();
    } catch {
      continue; // try the next place
    }
    if (files.length === 0) continue;
    const h = createHash('sha256');
    for (const f of files)
      h.update(`${f}\0`)
        .update(readFileSync(join(dir, f)))
        .update('\0');
    return h.digest('hex').slice(0, 12);
  }
  return 'nosource';
}

/** Whether every control-plane binary is given (TEST_ASSET_*, KUBEBUILDER_ASSETS) or in the cache: ensureBinaries builds nothing. */
export async function binariesReady(): Promise<boolean> {
  if (process.env.KUBEBUILDER_ASSETS || process.env.TEST_ASSET_KUBE_APISERVER) return true;
  return (await Promise.all(Object.values(cachedBinaries()).map(isExecutable))).every(Boolean);
}

/**
 * Returns paths to runnable kube-apiserver, etcd, kube-controller-manager
 * and hollow kubelet binaries.
 *
 * With `TEST_ASSET_*` or `KUBEBUILDER_ASSETS` set, those are used as given and
 * an error names the file that is missing or not executable. Otherwise the
 * cache is used; when it lacks a binary, build-binaries.sh is run (under a
 * lock, so concurrent callers build once and the rest wait). Fails with a
 * one-line message when Go is not installed, and with the build's last output
 * when the build fails or exceeds its time limit.
 */
export async function ensureBinaries(opts: EnsureBinariesOptions = {}): Promise<Binaries> {
  const say = progressSink(opts);
  const kubeApiserver = await explicitBinary('kube-apiserver', 'TEST_ASSET_KUBE_APISERVER');
  const etcd = await explicitBinary('etcd', 'TEST_ASSET_ETCD');
  const kubeControllerManager = await explicitBinary('kube-controller-manager', 'TEST_ASSET_KUBE_CONTROLLER_MANAGER', { optionalInAssets: true });
  const hollowKubelet = await explicitBinary('hollow-kubelet', 'TEST_ASSET_HOLLOW_KUBELET', { optionalInAssets: true });
  const explicit: Partial<Binaries> = { kubeApiserver, etcd, kubeControllerManager, hollowKubelet };
  // Only what is not given explicitly is looked up in (or built into) the cache.
  const need = (Object.keys(explicit) as (keyof Binaries)[]).filter((k) => explicit[k] === undefined);
  if (need.length === 0) return explicit as Binaries;
  const cached = await ensureCached(cacheDir(), need, say, opts.log);
  return { ...cached, ...Object.fromEntries(Object.entries(explicit).filter(([, v]) => v !== undefined)) };
}

/**
 * The binary named by TEST_ASSET_* or KUBEBUILDER_ASSETS, checked; undefined
 * when neither is set (or, with `optionalInAssets`, when KUBEBUILDER_ASSETS
 * lacks it: the cache provides it then).
 */
async function explicitBinary(file: string, envName: string, opts: { optionalInAssets?: boolean } = {}): Promise<string | undefined> {
  const direct = process.env[envName];
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (!direct && assets && opts.optionalInAssets && !(await isExecutable(join(assets, file)))) return undefined;
  const path = direct || (assets ? join(assets, file) : undefined);
  if (path && !(await isExecutable(path))) {
    const from = direct ? envName : `KUBEBUILDER_ASSETS=${assets}`;
    throw new Error(`${file} not found or not executable at ${path} (from ${from}); fix that path or unset it to build into the cache`);
  }
  return path;
}

async function ensureCached(cache: string, need: (keyof Binaries)[], say: (line: string) => void, log?: Logger): Promise<Binaries> {
  const bins = cachedBinaries(cache);
  const haveAll = async () => (await Promise.all(need.map((k) => isExecutable(bins[k])))).every(Boolean);
  if (await haveAll()) return bins;

  await requireGo(cache);
  await mkdir(cache, { recursive: true });
  // Another process building waits here as long as it is alive (tools/release/build-lock.ts), then this one uses what it built.
  const held = await acquireLock(join(cache, '.build.lock'), {
    done: haveAll,
    waitMs: BUILD_TIMEOUT_MS,
    pollMs: 2_000,
    onWait: say,
    onBreak: (line) => log?.warn({ line }, 'removing stale control-plane build lock'),
  });
  if (!held) return bins;
  try {
    // The previous lock holder may have finished between our check and lock.
    if (await haveAll()) return bins;
    await runBuild(cache, say, log);
    if (!(await haveAll())) {
      throw new Error(`build-binaries.sh finished but one of ${need.map((k) => bins[k]).join(', ')} is missing; see the build output above`);
    }
    return bins;
  } finally {
    await held.release();
  }
}

async function runBuild(cache: string, say: (line: string) => void, log?: Logger): Promise<void> {
  const script = await buildScript();
  const started = Date.now();
  const k8s = kubeVersion();
  say(
    `building the missing ones of kube-apiserver, kube-controller-manager and hollow-kubelet ${k8s} and etcd ${ETCD_VERSION} into ${cache} (first run only; takes several minutes)`,
  );
  log?.info({ script, cache }, 'building control-plane binaries');
  const child = execa(...niced('bash', [script, cache, k8s, ETCD_VERSION, hollowKubeletKey()]), {
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    all: true,
    buffer: false,
    timeout: BUILD_TIMEOUT_MS,
    reject: false,
  });
  const tail: string[] = [];
  const lines = createInterface({ input: child.all! });
  lines.on('line', (line) => {
    tail.push(line);
    if (tail.length > 30) tail.shift();
    say(line);
  });
  const tick = setInterval(() => say(`still building (${Math.round((Date.now() - started) / 1000)}s elapsed)`), TICK_MS);
  try {
    const result = await child;
    if (result.timedOut) {
      throw new Error(`control-plane build exceeded ${BUILD_TIMEOUT_MS / 60_000} min and was stopped; rerun it or set KUBEBUILDER_ASSETS`);
    }
    if (result.exitCode !== 0) {
      throw new Error(`control-plane build failed (${script} exited ${result.exitCode ?? result.signal}); last output:\n${tail.join('\n')}`);
    }
  } finally {
    clearInterval(tick);
    lines.close();
  }
  say(`control-plane binaries (Kubernetes ${k8s}) built in ${Math.round((Date.now() - started) / 1000)}s`);
}

/** build-binaries.sh sits next to this file's source; compiled code runs from dist/. */
async function buildScript(): Promise<string> {
  const candidates = [
    fileURLToPath(new URL('./build-binaries.sh', import.meta.url)),
    fileURLToPath(new URL('../../../test/controlplane/build-binaries.sh', import.meta.url)),
  ];
  for (const c of candidates) {
    if (await exists(c)) return c;
  }
  throw new Error(
    `build-binaries.sh not found (looked at ${candidates.join(', ')}); run from a checkout of this repository or set KUBEBUILDER_ASSETS`,
  );
}

async function requireGo(cache: string): Promise<void> {
  try {
    await execa('go', ['version'], { timeout: 30_000 });
  } catch {
    throw new Error(
      `Go is needed once to build kube-apiserver, kube-controller-manager and hollow-kubelet ${kubeVersion()} and etcd ${ETCD_VERSION} into ${cache}: install Go (https://go.dev/dl) or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver, kube-controller-manager, hollow-kubelet and etcd`,
    );
  }
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    await access(path, fsc.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function progressSink(opts: EnsureBinariesOptions): (line: string) => void {
  if (opts.onProgress) return opts.onProgress;
  const log = opts.log;
  if (log) return (line) => log.info({ line }, 'control-plane build');
  return (line) => process.stderr.write(`${line}\n`);
}
