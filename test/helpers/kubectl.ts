/**
 * The real kubectl, for tests that check what a user sees at `kubectl apply`
 * (the API server's refusals and Warning headers as kubectl prints them):
 * k8s.io/kubernetes/cmd/kubectl at the control plane's Kubernetes version,
 * built from Go modules on first use by build-binaries.sh --kubectl into its
 * own cache entry (<controlplane cache>/kubectl-<version>/kubectl), so adding
 * it never rebuilds the control plane's binaries. It shares their module and
 * build caches (test/helpers/go-build.ts), so it compiles only the packages
 * that are kubectl's own. A kubectl on the PATH is never used: a fresh CI
 * machine has none, and another version would print other messages.
 *
 * TEST_ASSET_KUBECTL (a path) overrides the cache, as TEST_ASSET_* do for the
 * control plane (test/controlplane/binaries.ts).
 */
import { access, constants as fsc } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { cacheDir, kubeVersion } from '../controlplane/binaries.js';
import { buildOnce } from './build-once.js';
import { niced } from './go-build.js';

/** How long a build may take (the modules are the control plane's, so they are usually there). */
const BUILD_TIMEOUT_MS = 45 * 60_000;

let binary: Promise<string> | undefined;

/** The cache directory of kubectl: its Kubernetes version, the control plane's. */
export function kubectlDir(k8s = kubeVersion()): string {
  return join(cacheDir(), `kubectl-${k8s}`);
}

/**
 * Path of a kubectl of the control plane's Kubernetes version: TEST_ASSET_KUBECTL
 * when set (checked), else the cache, built on first use (needs Go and the
 * module proxy once; prints its build time to `say`). Idempotent; concurrent
 * callers, in this process or others, build once.
 */
export function kubectlBinary(say: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  return (binary ??= (async () => {
    const given = process.env.TEST_ASSET_KUBECTL;
    if (given) {
      await access(given, fsc.X_OK).catch(() => {
        throw new Error(
          `kubectl not found or not executable at ${given} (from TEST_ASSET_KUBECTL); fix that path or unset it to build into the cache`,
        );
      });
      return given;
    }
    const k8s = kubeVersion();
    const dir = kubectlDir(k8s);
    await buildOnce(dir, async (tmp) => {
      const started = Date.now();
      say(`building kubectl ${k8s} into ${dir} (first run only; shares the control plane's Go caches)`);
      const script = fileURLToPath(new URL('../../../test/controlplane/build-binaries.sh', import.meta.url));
      const r = await execa(...niced('bash', [script, '--kubectl', tmp, k8s]), { reject: false, all: true, timeout: BUILD_TIMEOUT_MS });
      if (r.failed) {
        throw new Error(
          `building kubectl ${k8s} failed (Go and the Go module proxy are needed once): ${(r.all ?? r.message).split('\n').slice(-20).join('\n')}`,
        );
      }
      say(`kubectl ${k8s} built in ${Math.round((Date.now() - started) / 1000)} s`);
    });
    return join(dir, 'kubectl');
  })());
}
