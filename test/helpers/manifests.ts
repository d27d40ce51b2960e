/** The shipped manifests (deploy/): files parsed, and kustomizations rendered by the real kustomize. */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { renderKustomization } from './kustomize.js';

/** Repository's deploy/ directory (tests run from dist/test/...). */
export const DEPLOY_DIR = fileURLToPath(new URL('../../../deploy/', import.meta.url));

/**
 * The flavours. Each is shipped as a demo of the simulated local cloud,
 * `kubectl apply -k deploy/overlays/local-demo-<flavour>` (the only renderings
 * that run it), and as a component for a provider of one's own
 * (deploy/components/<flavour>).
 */
export const OVERLAYS = ['exec', 'sidecar'] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** The local cloud's demo overlay of a flavour, relative to deploy/. */
export function localDemoDir(flavour: Overlay): string {
  return `overlays/local-demo-${flavour}`;
}

/** What an operator applies: a flavour (its local demo), alone or with the per-controller RBAC component. */
export interface Rendering {
  overlay: Overlay;
  perController: boolean;
}

/** Every combination the repository supports. */
export const RENDERINGS: readonly Rendering[] = OVERLAYS.flatMap((overlay) => [false, true].map((perController) => ({ overlay, perController })));

export function renderingName(r: Rendering): string {
  const dir = `local-demo-${r.overlay}`;
  return r.perController ? `${dir} + per-controller-rbac` : dir;
}

/** The objects of `dir` (absolute), used as its header says: alone, or with the per-controller RBAC component from a kustomization of one's own. */
async function renderWithRbacMode(overlay: string, perController: boolean): Promise<KubernetesObject[]> {
  if (!perController) return renderKustomization(overlay);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kustomization-'));
  try {
    // kustomize refuses absolute paths to other kustomizations.
    await writeFile(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${relative(dir, overlay)}`,
        'components:',
        `  - ${relative(dir, join(DEPLOY_DIR, 'components', 'per-controller-rbac'))}`,
        '',
      ].join('\n'),
    );
    return await renderKustomization(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The objects of a rendering, in kustomize's order. The component is used as
 * its header says an operator uses it: from a kustomization of one's own
 * (written to a temporary directory and removed afterwards).
 */
export function renderDeploy(r: Rendering): Promise<KubernetesObject[]> {
  return renderWithRbacMode(join(DEPLOY_DIR, localDemoDir(r.overlay)), r.perController);
}

/** The bridged real providers with a rendering of their own: `kubectl apply -k deploy/providers/<name>` (sidecar flavour). */
export const PROVIDER_RENDERINGS = ['aws', 'vsphere', 'openstack'] as const;
export type ProviderRendering = (typeof PROVIDER_RENDERINGS)[number];

/** The objects of deploy/providers/<name>, in kustomize's order; with the per-controller RBAC component when `perController`. */
export function renderProvider(name: ProviderRendering, perController = false): Promise<KubernetesObject[]> {
  return renderWithRbacMode(join(DEPLOY_DIR, 'providers', name), perController);
}

/** Every YAML file under deploy/, recursively, sorted; paths relative to deploy/. */
export async function manifestFiles(dir = DEPLOY_DIR, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...(await manifestFiles(join(dir, e.name), `${prefix}${e.name}/`)));
    else if (/\.ya?ml$/.test(e.name)) out.push(`${prefix}${e.name}`);
  }
  return out.sort();
}

/** The objects of one manifest file (empty documents dropped). */
export async function loadManifest(rel: string): Promise<KubernetesObject[]> {
  const docs = loadAllYaml(await readFile(join(DEPLOY_DIR, rel), 'utf8')) as (KubernetesObject | null)[];
  return docs.filter((d): d is KubernetesObject => d !== null && typeof d === 'object');
}
