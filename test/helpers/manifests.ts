/** The shipped manifests (deploy/**.yaml), parsed. */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';

/** Repository's deploy/ directory (tests run from dist/test/...). */
export const DEPLOY_DIR = fileURLToPath(new URL('../../../deploy/', import.meta.url));

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
