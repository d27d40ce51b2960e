/**
 * The real kustomize, to render deploy/ exactly as `kubectl apply -k` does:
 * sigs.k8s.io/kustomize/kustomize/v5 at the version kubectl of the targeted
 * Kubernetes release embeds, built from Go modules on first use into the
 * control-plane cache (<cache>/kustomize-<version>/kustomize, beside the
 * binaries build-binaries.sh makes), once per machine.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { cacheDir } from '../controlplane/binaries.js';
import { buildOnce } from './build-once.js';
import { niced } from './go-build.js';

/** The kustomize kubectl v1.34 embeds (`kubectl version --client`). */
export const KUSTOMIZE_VERSION = 'v5.7.1';

let binary: Promise<string> | undefined;

/** The cache directory of kustomize (its version). */
export function kustomizeDir(): string {
  return join(cacheDir(), `kustomize-${KUSTOMIZE_VERSION}`);
}

/** Path of the kustomize binary, built on first use (needs Go and the module proxy once). */
export function kustomizeBinary(): Promise<string> {
  return (binary ??= (async () => {
    const dir = kustomizeDir();
    await buildOnce(dir, async (tmp) => {
      await mkdir(tmp, { recursive: true });
      const r = await execa(...niced('go', ['install', '-trimpath', '-ldflags=-s -w', `sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}`]), {
        env: { GOBIN: tmp, GOTOOLCHAIN: 'local', CGO_ENABLED: '0' },
        reject: false,
        timeout: 30 * 60_000,
      });
      if (r.failed) {
        throw new Error(
          `building kustomize ${KUSTOMIZE_VERSION} with "go install" failed (Go and the Go module proxy are needed once): ${r.stderr || r.message}`,
        );
      }
    });
    return join(dir, 'kustomize');
  })());
}

/** `kustomize build DIR`, parsed into objects in kustomize's order. */
export async function renderKustomization(dir: string): Promise<KubernetesObject[]> {
  const r = await execa(await kustomizeBinary(), ['build', dir], { reject: false });
  if (r.exitCode !== 0) throw new Error(`kustomize build ${dir} failed: ${r.stderr}`);
  return (loadAllYaml(r.stdout) as (KubernetesObject | null)[]).filter((d): d is KubernetesObject => d !== null && typeof d === 'object');
}
