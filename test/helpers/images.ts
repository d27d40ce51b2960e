/**
 * The shipped images, built and run on this machine without a daemon: how
 * they are built (buildah, local bases, the cache) is
 * tools/release/images.ts, which the release command uses for the same
 * builds; here, what the tests add: an image's root filesystem, the command
 * that runs a process in it as the image would, and the two images the image
 * test runs.
 */
import {
  archBases,
  archBaseTags,
  baseImages,
  basesBuilt,
  buildahAt,
  buildTagged,
  ensureImageTools,
  HOST_IMAGE,
  imageStore,
  imageTag,
  machineArch,
  providerImage,
  secs,
  type Buildah,
  type ImageTag,
} from '../../tools/release/images.js';
import { exists } from '../../tools/release/build-once.js';

export {
  BASE_INPUTS,
  baseImages,
  buildImage,
  ensureImageTools,
  HOST_IMAGE,
  imageStore,
  providerImage,
  type Buildah,
  type ImageSpec,
} from '../../tools/release/images.js';

/** An image's container, its root filesystem on disk, and its config as built. */
export interface ImageRootfs {
  image: string;
  /** The mounted root filesystem (vfs: a directory). */
  path: string;
  entrypoint: string[];
  /** `uid:gid` (numeric, as the Dockerfiles set USER). */
  user: string;
  env: Record<string, string>;
  workingDir: string;
  remove(): Promise<void>;
}

/** A fresh working container of `image` and its mounted root filesystem (removed with `remove`). */
export async function imageRootfs(b: Buildah, image: string): Promise<ImageRootfs> {
  const c = await b.run(['from', '--pull=never', image]);
  const path = await b.run(['mount', c]);
  const cfg = JSON.parse(await b.run(['inspect', '--type', 'image', image])) as {
    OCIv1: { config?: { Entrypoint?: string[]; User?: string; Env?: string[]; WorkingDir?: string } };
  };
  const config = cfg.OCIv1.config ?? {};
  const env = Object.fromEntries((config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  return {
    image,
    path,
    entrypoint: config.Entrypoint ?? [],
    user: config.User ?? '0:0',
    env,
    workingDir: config.WorkingDir || '/',
    remove: async () => {
      await b.run(['umount', c]).catch(() => undefined);
      await b.run(['rm', c]);
    },
  };
}

/**
 * The command that runs `argv` as the image's process would run: in a mount
 * namespace of its own, with `/proc`, the machine's `/dev` and each of
 * `binds` (host directories, at the same path) mounted into the image's root,
 * then chrooted into it, in its working directory, as its user. No network
 * namespace: the pod runs with hostNetwork. The last exec leaves the image's
 * process with this process's PID, so signals reach it directly.
 */
export function rootfsCommand(r: ImageRootfs, binds: string[], argv: string[]): [string, string[]] {
  const [uid, gid = uid] = r.user.split(':');
  if (!/^\d+$/.test(uid!) || !/^\d+$/.test(gid!)) throw new Error(`image ${r.image}: USER ${r.user} is not numeric`);
  const script = [
    'set -e',
    'r=$1 w=$2 u=$3 g=$4 n=$5',
    'shift 5',
    'i=0',
    'while [ "$i" -lt "$n" ]; do d=$1; shift; /bin/mkdir -p "$r$d"; /bin/mount --bind "$d" "$r$d"; i=$((i+1)); done',
    '/bin/mkdir -p "$r/proc" "$r/dev"',
    '/bin/mount -t proc proc "$r/proc"',
    '/bin/mount --rbind /dev "$r/dev"',
    'exec /usr/bin/unshare --root="$r" --wd="$w" --setgid="$g" --setuid="$u" -- "$@"',
  ].join('\n');
  return [
    '/usr/bin/unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '/bin/sh',
      '-c',
      script,
      'image-run',
      r.path,
      r.workingDir,
      uid!,
      gid!,
      String(binds.length),
      ...binds,
      ...argv,
    ],
  ];
}

/** The images the image test runs: deploy/Dockerfile's host and the AWS provider's (the one bridged provider built here: the cheapest, its Go build shares the machine's cache with the test build of the same module). */
export interface TestImages {
  store: Buildah;
  host: string;
  provider: string;
}

let prepared: Promise<TestImages> | undefined;

/** The images the image test runs. */
const TEST_IMAGES = () => [HOST_IMAGE, providerImage('aws')] as const;

/** The runner's test image tags (TestImageTags as JSON), in the test workers' environment. */
export const IMAGES_ENV = 'CCM_TEST_IMAGES';

/** Where the two test images are (or will be) built: the store's directory and each image's tag and marker. */
export interface TestImageTags {
  dir: string;
  host: ImageTag;
  provider: ImageTag;
}

let tags: Promise<TestImageTags> | undefined;

/**
 * The two test images' tags: the runner's (IMAGES_ENV) when both are built,
 * else hashed from the checkout. Once per process, so the runner's readiness
 * check, its build and what it hands the workers agree, and a worker neither
 * hashes the build context again nor, had a file under host/ been edited
 * since, builds another image in a test's before hook.
 */
export function testImageTags(): Promise<TestImageTags> {
  return (tags ??= (async () => {
    const given = process.env[IMAGES_ENV];
    if (given) {
      const t = JSON.parse(given) as TestImageTags;
      // Not built: the runner's build failed; this process builds what it hashes.
      if ((await exists(t.host.marker)) && (await exists(t.provider.marker))) return t;
    }
    const store = await imageStore();
    const bases = await archBaseTags(machineArch());
    const [host, provider] = await Promise.all(TEST_IMAGES().map((spec) => imageTag(store, spec, bases)));
    return { dir: store.dir, host: host!, provider: provider! };
  })());
}

/** Whether the local base images of the current inputs are built (baseImages would build nothing). */
export async function imageBasesBuilt(): Promise<boolean> {
  return basesBuilt(await imageStore());
}

let basesPrepared: Promise<void> | undefined;

/**
 * Installs buildah and builds the local base images (apt-get and npm
 * downloads, the rootfs): the part of prepareImages that is not compiling,
 * so the runner starts it beside the Go builds. Once per process: the
 * runner's 'image-bases' and 'release-bases' builds both wait for it (one
 * apt-get at a time; a second caller would otherwise poll the build lock).
 */
export function prepareImageBases(say: (line: string) => void = () => undefined): Promise<void> {
  basesPrepared ??= (async () => {
    await ensureImageTools(say);
    await baseImages(await imageStore(), say);
  })();
  return basesPrepared;
}

/** Whether prepareImages would build nothing (the bases and both images of the current inputs are marked built; buildah need not be installed). */
export async function imagesBuilt(): Promise<boolean> {
  const t = await testImageTags();
  if (!(await basesBuilt(buildahAt(t.dir)))) return false;
  return (await exists(t.host.marker)) && (await exists(t.provider.marker));
}

/** Installs the tools, builds the bases and both images (each cached; see the top) and prints each build's time and the total. */
export function prepareImages(say: (line: string) => void = () => undefined): Promise<TestImages> {
  prepared ??= (async () => {
    const t0 = Date.now();
    const t = await testImageTags();
    const store = buildahAt(t.dir);
    // Built (by the runner: IMAGES_ENV), nothing hashed again: one look at the store, since a marker can outlive its
    // image (another process's build of other inputs removes it); buildTagged below then builds it again.
    if ((await basesBuilt(store)) && (await exists(t.host.marker)) && (await exists(t.provider.marker))) {
      const present = (await store.run(['images', '--format', '{{.Name}}:{{.Tag}}']).catch(() => '')).split('\n');
      if (present.includes(t.host.tag) && present.includes(t.provider.tag)) return { store, host: t.host.tag, provider: t.provider.tag };
    }
    await ensureImageTools(say);
    // The build-args a release gives the machine's architecture: the release test's host image of it is this same cached image.
    await archBases(store, say, machineArch());
    const host = await buildTagged(store, HOST_IMAGE, t.host, say);
    const provider = await buildTagged(store, providerImage('aws'), t.provider, say);
    say(`images ready in ${secs(t0)} s (${host}, ${provider})`);
    return { store, host, provider };
  })();
  return prepared;
}
