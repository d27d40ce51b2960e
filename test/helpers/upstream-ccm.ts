/**
 * Locates (or, once per source change, builds) tools/upstream-ccm: the
 * upstream Go cloud-controller-manager from k8s.io/cloud-provider at the
 * control plane's Kubernetes version, with a cloud provider that forwards
 * every call to a provider plugin over our protocol. `npm run bench` runs it
 * beside our host, and `npm test` runs the differential suite against it
 * (test/integration/parity; the runner builds it before the tests start).
 *
 * The binary lives outside the repository in
 * `${XDG_CACHE_HOME:-~/.cache}/ccm-host/upstream-ccm-<version>-<hash>/`, the
 * hash covering our Go sources (the forwarder and sdk/go: the generated
 * stubs, the SDK and the bridge it links), so editing them builds a new one
 * and an unchanged tree never does. `go test` in tools/upstream-ccm checks
 * its error mapping; the conversions are the bridge's (sdk/go/bridge).
 */
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { K8S_VERSION } from '../controlplane/binaries.js';
import { goFetch, niced } from './go-build.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const SOURCE = join(REPO, 'tools', 'upstream-ccm');
/** `npm run upstream:flags`'s lister (test/bench/upstream-flags.ts): in the module, not in the binary, so not hashed. */
export const FLAG_LIST = join(SOURCE, 'cmd', 'flag-list');
/** Inputs of the build besides the module cache, ours only: the forwarder and sdk/go (the stubs, ccmsdk, and the bridge whose conversions and error mapping it shares). */
const HASHED = [SOURCE, join(REPO, 'sdk', 'go')];
/** How long a from-scratch build (module download + compile) may take. */
const BUILD_TIMEOUT_MS = 45 * 60_000;
/** How often a person watching the build is told it is still going. */
const TICK_MS = 30_000;

/** k8s.io/cloud-provider's version for a Kubernetes version: v1.34.4 → v0.34.4. */
export const CLOUD_PROVIDER_VERSION = K8S_VERSION.replace(/^v1\./, 'v0.');

/** Every file under the hashed paths (go.mod, go.sum, *.go but tests), sorted, as paths relative to the repository. */
async function hashedFiles(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (p: string): Promise<void> => {
    const entries = await readdir(p, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    if (!entries) {
      out.push(relative(REPO, p));
      return;
    }
    for (const e of entries) {
      const child = join(p, e.name);
      // cmd/flag-list only lists upstream's flags (`npm run upstream:flags`); it is not built into the binary.
      if (e.isDirectory()) {
        if (child !== FLAG_LIST) await walk(child);
      }
      // Tests do not go into the binary, so they do not change its hash.
      else if (/(?<!_test)\.go$|^go\.(mod|sum)$/.test(e.name)) out.push(relative(REPO, child));
    }
  };
  for (const p of HASHED) await walk(p);
  return out.sort();
}

async function sourceHash(): Promise<string> {
  const h = createHash('sha256');
  for (const f of await hashedFiles())
    h.update(f)
      .update('\0')
      .update(await readFile(join(REPO, f)))
      .update('\0');
  return h.digest('hex').slice(0, 12);
}

/** go.mod must pin k8s.io/cloud-provider at the control plane's version, so both sides run the same Kubernetes code. */
async function checkPinnedVersion(): Promise<void> {
  const mod = await readFile(join(SOURCE, 'go.mod'), 'utf8');
  const pinned = /k8s\.io\/cloud-provider (v\S+)/.exec(mod)?.[1];
  if (pinned !== CLOUD_PROVIDER_VERSION) {
    throw new Error(
      `tools/upstream-ccm/go.mod pins k8s.io/cloud-provider ${pinned ?? '(nothing)'} but the control plane runs Kubernetes ${K8S_VERSION}; run \`go get k8s.io/cloud-provider@${CLOUD_PROVIDER_VERSION} && go mod tidy\` in tools/upstream-ccm`,
    );
  }
}

/** Where the upstream-ccm binary of the current sources is (or will be) cached. */
export async function upstreamCcmPath(): Promise<string> {
  const xdg = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(xdg, 'ccm-host', `upstream-ccm-${CLOUD_PROVIDER_VERSION}-${await sourceHash()}`, 'upstream-ccm');
}

/** The packages ensureUpstreamCcm builds. */
const PACKAGES = ['.', './cmd/client-bench'];

/** Downloads the modules the upstream-ccm build needs, compiling nothing (goFetch). */
export async function fetchUpstreamCcm(): Promise<void> {
  await goFetch(SOURCE, PACKAGES);
}

/** The client-bench binary built beside upstream-ccm (tools/upstream-ccm/cmd/client-bench): client-go measured on its own. */
export function clientBenchOf(upstreamCcm: string): string {
  return join(dirname(upstreamCcm), 'client-bench');
}

/**
 * Path of the upstream-ccm binary for the current sources, building it (and
 * client-bench beside it, see clientBenchOf) when missing (`progress`
 * receives the build's output and a tick every 30 s).
 * Fails with what to do when Go is missing or the build fails.
 */
export async function ensureUpstreamCcm(progress: (line: string) => void): Promise<string> {
  await checkPinnedVersion();
  const bin = await upstreamCcmPath();
  const dir = dirname(bin);
  if (
    await access(bin).then(
      () => true,
      () => false,
    )
  )
    return bin;

  await execa('go', ['version'], { timeout: 30_000 }).catch(() => {
    throw new Error(
      `Go is needed once to build the upstream cloud-controller-manager (tools/upstream-ccm) into ${dir}: install Go (https://go.dev/dl)`,
    );
  });
  await mkdir(dir, { recursive: true });
  // Built into a directory of its own and renamed when done, upstream-ccm
  // last, so a half-built or concurrently built pair is never mistaken for a
  // finished one.
  const partial = join(dir, `.partial.${process.pid}`);
  const started = Date.now();
  progress(
    `building the upstream cloud-controller-manager (k8s.io/cloud-provider ${CLOUD_PROVIDER_VERSION}, tools/upstream-ccm) into ${dir} (once per source change; several minutes on 2 cores)`,
  );
  const child = execa(...niced('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', `${partial}/`, ...PACKAGES]), {
    cwd: SOURCE,
    env: { GOTOOLCHAIN: 'local', CGO_ENABLED: '0' },
    stdin: 'ignore',
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
    progress(line);
  });
  const tick = setInterval(() => progress(`still building upstream-ccm (${Math.round((Date.now() - started) / 1000)}s elapsed)`), TICK_MS);
  try {
    const r = await child;
    if (r.exitCode !== 0) {
      await rm(partial, { recursive: true, force: true });
      const why = r.timedOut ? `exceeded ${BUILD_TIMEOUT_MS / 60_000} min` : `exited ${r.exitCode ?? r.signal}`;
      throw new Error(`building tools/upstream-ccm failed (go build ${why}); last output:\n${tail.join('\n')}`);
    }
  } finally {
    clearInterval(tick);
    lines.close();
  }
  await rename(join(partial, 'client-bench'), clientBenchOf(bin));
  await rename(join(partial, 'upstream-ccm'), bin);
  await rm(partial, { recursive: true, force: true });
  progress(`upstream-ccm built in ${Math.round((Date.now() - started) / 1000)}s: ${bin}`);
  return bin;
}
