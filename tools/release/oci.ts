/**
 * Multi-architecture images as OCI image layouts
 * (https://github.com/opencontainers/image-spec/blob/main/image-layout.md):
 * the per-architecture images of one release image are put in one local
 * manifest list and pushed with `buildah manifest push --all` into an OCI
 * layout directory, whose index.json names the image index by the release
 * tag. No registry is reachable here: the operator copies the layout to the
 * registry with `skopeo copy --all --preserve-digests`, which keeps every
 * digest (docs/releasing.md), so the digests read here are the ones the
 * registry serves.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { cp, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { buildOnce } from './build-once.js';
import type { Arch, Buildah } from './images.js';

const INDEX_TYPES = ['application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.list.v2+json'];
const REF_NAME = 'org.opencontainers.image.ref.name';

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}

/** One image index read back from a layout, every blob checked against its digest and size. */
export interface IndexInfo {
  /** The layout directory. */
  layout: string;
  /** The tag (the index.json entry's ref.name). */
  ref: string;
  /** `sha256:…` of the image index: what manifests pin. */
  digest: string;
  /** Per architecture: the image manifest's digest and the architecture its config says. */
  platforms: { arch: string; os: string; digest: string; configArch: string }[];
}

async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}`;
}

/** Reads the blob of `d` from `layout`, failing when its content's digest or size differs from the descriptor's. */
async function blob(layout: string, d: Descriptor): Promise<string> {
  const [alg, hex] = d.digest.split(':');
  if (alg !== 'sha256' || !/^[0-9a-f]{64}$/.test(hex ?? '')) throw new Error(`${layout}: unsupported digest ${d.digest}`);
  const path = join(layout, 'blobs', alg, hex!);
  const got = await sha256File(path);
  if (got !== d.digest) throw new Error(`${layout}: blob ${d.digest} has content ${got}`);
  const size = (await stat(path)).size;
  if (size !== d.size) throw new Error(`${layout}: blob ${d.digest} is ${size} bytes, its descriptor says ${d.size}`);
  return readFile(path, 'utf8');
}

/**
 * Reads and verifies the image index tagged `ref` in `layout`: every blob it
 * reaches (the index, each manifest, config and layer) has the digest and size
 * its descriptor says. Idempotent, read-only.
 */
export async function readIndex(layout: string, ref: string): Promise<IndexInfo> {
  const top = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const entries = top.manifests.filter((m) => m.annotations?.[REF_NAME] === ref);
  if (entries.length !== 1) throw new Error(`${layout}: ${entries.length} entries tagged ${ref} in index.json (want 1)`);
  const entry = entries[0]!;
  if (!INDEX_TYPES.includes(entry.mediaType)) throw new Error(`${layout}: ${ref} is a ${entry.mediaType}, not an image index`);
  const index = JSON.parse(await blob(layout, entry)) as { manifests: Descriptor[] };
  const platforms: IndexInfo['platforms'] = [];
  for (const m of index.manifests) {
    const manifest = JSON.parse(await blob(layout, m)) as { config: Descriptor; layers: Descriptor[] };
    const config = JSON.parse(await blob(layout, manifest.config)) as { architecture: string; os: string };
    for (const l of manifest.layers) {
      const [alg, hex] = l.digest.split(':');
      const path = join(layout, 'blobs', alg!, hex!);
      if ((await sha256File(path)) !== l.digest || (await stat(path)).size !== l.size)
        throw new Error(`${layout}: layer ${l.digest} does not match its descriptor`);
    }
    platforms.push({ arch: m.platform?.architecture ?? '', os: m.platform?.os ?? '', digest: m.digest, configArch: config.architecture });
  }
  return { layout, ref, digest: entry.digest, platforms };
}

/**
 * Writes the image index of `images` (one local image per architecture) into
 * the OCI layout `layout`, tagged `ref`, replacing what was there, and
 * resolves to it read back and verified. The layout is made once per set of
 * image IDs and tag (cached in the store directory) and copied.
 */
export async function writeIndex(b: Buildah, images: { arch: Arch; image: string }[], layout: string, ref: string): Promise<IndexInfo> {
  const ids: string[] = [];
  for (const i of images) ids.push((await b.run(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', i.image])).trim());
  const key = createHash('sha256')
    .update(JSON.stringify({ ids, ref, arches: images.map((i) => i.arch) }))
    .digest('hex')
    .slice(0, 16);
  const cached = join(b.dir, 'oci', key);
  await buildOnce(cached, async (tmp) => {
    // A list of this process's own: another release or test may push at the same time.
    const list = `localhost/ccm-release-list-${process.pid}-${randomBytes(4).toString('hex')}`;
    await b.run(['manifest', 'create', list]);
    try {
      for (const i of images) {
        // arm64 is v8 unless said otherwise (as the official multi-arch images say it).
        const variant = i.arch === 'arm64' ? ['--variant', 'v8'] : [];
        await b.run(['manifest', 'add', '--arch', i.arch, '--os', 'linux', ...variant, list, `containers-storage:${i.image}`]);
      }
      await mkdir(tmp, { recursive: true });
      await b.run(['manifest', 'push', '--all', '--format', 'oci', list, `oci:${tmp}:${ref}`], { timeoutMs: 20 * 60_000 });
    } finally {
      await b.run(['manifest', 'rm', list]).catch(() => undefined);
    }
    const got = await readIndex(tmp, ref);
    const want = images.map((i) => i.arch).sort();
    const have = got.platforms.map((p) => p.arch).sort();
    if (JSON.stringify(want) !== JSON.stringify(have)) throw new Error(`index of ${ref} has ${have.join(', ')}, want ${want.join(', ')}`);
  });
  await rm(layout, { recursive: true, force: true });
  await mkdir(join(layout, '..'), { recursive: true });
  await cp(cached, layout, { recursive: true });
  return readIndex(layout, ref);
}
