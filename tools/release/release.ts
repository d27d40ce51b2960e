/**
 * A release of the repository at `vX.Y.Z` (docs/releasing.md): what the
 * release commit changes in the tree, the images, the Go module proxy the
 * tags will serve, and the Java artifacts (tools/release/maven.ts). Each step is idempotent for the same version: running
 * the release again rewrites the same files with the same content and reuses
 * the images built from the same inputs.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { buildOnce } from './build-once.js';
import { filesUnder, hashFiles, REPO } from './files.js';
import {
  ARCHES,
  archBases,
  BRIDGED_PROVIDERS,
  buildImage,
  cacheBase,
  ensureImageTools,
  imageStore,
  machineArch,
  nodeImage,
  providerImage,
  secs,
  type Arch,
  type ImageSpec,
} from './images.js';
import { JAVA_POMS, javaArtifacts, pomAt, type JavaArtifact } from './maven.js';
import { writeIndex, type IndexInfo } from './oci.js';
import { buildPackages, publishPackages, type PackageArtifact } from './packages.js';

export { JAVA_POMS } from './maven.js';

const run = promisify(execFile);

/** Where the images are published (the manifests in deploy/ name them). */
export const REGISTRY = 'ghcr.io/grpc-ccm';

/** One released image: its key (for --images), the build, and its repository. */
export interface ReleasedImage {
  key: string;
  spec: ImageSpec;
  repository: string;
}

/** Every image a release builds, each for every architecture in ARCHES. */
export const RELEASED_IMAGES: readonly ReleasedImage[] = [
  { key: 'host', spec: nodeImage('host'), repository: `${REGISTRY}/cloud-controller-manager` },
  { key: 'local-provider', spec: nodeImage('provider'), repository: `${REGISTRY}/ccm-provider-local` },
  { key: 'local-exec', spec: nodeImage('exec'), repository: `${REGISTRY}/cloud-controller-manager-local` },
  ...BRIDGED_PROVIDERS.map((p) => ({ key: p, spec: providerImage(p), repository: `${REGISTRY}/ccm-provider-${p}` })),
];

/** The Go modules a release tags (Go's tag scheme for modules in subdirectories: `<dir>/vX.Y.Z`). */
export const GO_MODULES = [
  { dir: 'sdk/go', path: 'github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go' },
  { dir: 'sdk/go/bridge', path: 'github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge' },
] as const;

export interface ReleaseOptions {
  /** `vX.Y.Z`. */
  version: string;
  /** The checkout to release (its files are rewritten; its images built from it). */
  repo?: string;
  /** Output directory (default `<repo>/release/<version>`). */
  out?: string;
  /** Keys of RELEASED_IMAGES to build (default: all). Manifests pin only what was built. */
  images?: string[];
  arches?: readonly Arch[];
  /** The CHANGELOG date (default: today, UTC). */
  date?: string;
  /** Build the npm, PyPI and protocol packages into `<out>/packages` (default true; tools/release/packages.ts). */
  packages?: boolean;
  /** The Java artifacts: false builds none; otherwise Maven's local repository (default Maven's own, ~/.m2/repository). */
  java?: false | { localRepository?: string };
  say?: (line: string) => void;
}

export interface ReleasedImageResult {
  key: string;
  repository: string;
  tag: string;
  /** `<repository>:<tag>@<index digest>`: what the manifests name. */
  reference: string;
  index: IndexInfo;
  /** The local image of each architecture in the image store (its tag is the hash of its inputs). */
  built: { arch: Arch; image: string }[];
}

export interface ReleaseResult {
  version: string;
  out: string;
  images: ReleasedImageResult[];
  /** Files of the release commit the release rewrote (relative to the repo). */
  changed: string[];
  /** Tags to push with the release commit. */
  tags: string[];
  /** The file:// GOPROXY holding the tagged Go modules. */
  goproxy: string;
  /** The packages built (none with `packages: false`). */
  packages: PackageArtifact[];
  /** The Maven repository directory holding the Java artifacts (absent with `java: false`). */
  maven?: { repository: string; artifacts: JavaArtifact[] };
}

/**
 * The local name of a released image of `arch` in the image store: the
 * machine's architecture builds under the spec's own name, as the tests'
 * images do (test/helpers/images.ts), so the same inputs are one cached
 * image whoever builds it; another architecture's name carries it (a build
 * removes older tags of its name).
 */
export function releaseImageName(spec: ImageSpec, arch: Arch): string {
  return arch === machineArch() ? spec.name : `${spec.name}-${arch}`;
}

/** `X.Y.Z` of `vX.Y.Z`, or an error. */
export function parseVersion(v: string): string {
  const m = /^v(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) throw new Error(`release version ${JSON.stringify(v)} is not vMAJOR.MINOR.PATCH (e.g. v0.2.0)`);
  return `${m[1]}.${m[2]}.${m[3]}`;
}

/**
 * CHANGELOG.md with its "## [Unreleased]" section (whatever follows the
 * bracket on that line) renamed to the version and date, and a new empty
 * "## [Unreleased]" above it. Fails when there is no such section or it is
 * empty: a release says what changed. Pure.
 */
export function changelogForRelease(text: string, version: string, date: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => /^## \[Unreleased\]/.test(l));
  if (at < 0) throw new Error('CHANGELOG.md has no "## [Unreleased]" section');
  const next = lines.findIndex((l, i) => i > at && /^## /.test(l));
  const body = lines.slice(at + 1, next < 0 ? undefined : next).filter((l) => l.trim() !== '');
  if (body.length === 0) throw new Error('CHANGELOG.md "## [Unreleased]" is empty: a release lists what changed');
  return [...lines.slice(0, at), '## [Unreleased]', '', `## [${version}] - ${date}`, ...lines.slice(at + 1)].join('\n');
}

/**
 * `text` with every `image:` of a released repository rewritten to
 * `<repository>:<tag>@<digest>`, whatever tag or digest it had. Pure.
 */
export function pinImages(text: string, pins: ReadonlyMap<string, string>): string {
  return text.replace(
    /^(\s*(?:-\s+)?image:\s*)(["']?)([a-z0-9.-]+\/[a-z0-9./-]+?)(?::[\w.-]+)?(?:@sha256:[0-9a-f]{64})?\2(\s*(?:#.*)?)$/gm,
    (all, pre: string, q: string, repo: string, post: string) => {
      const ref = pins.get(repo);
      return ref === undefined ? all : `${pre}${q}${ref}${q}${post}`;
    },
  );
}

/** Rewrites `rel` in `repo` with `edit`; resolves to whether it changed. */
async function rewrite(repo: string, rel: string, edit: (s: string) => string): Promise<boolean> {
  const path = join(repo, rel);
  const before = await readFile(path, 'utf8');
  const after = edit(before);
  if (after === before) return false;
  await writeFile(path, after);
  return true;
}

/** Sets the one version of the host, the TypeScript SDK, the conformance kit and the Python SDK (docs/release-policy.md). */
async function setVersions(repo: string, v: string): Promise<string[]> {
  const changed: string[] = [];
  for (const rel of ['package.json', 'sdk/package.json', 'conformance/package.json']) {
    if (await rewrite(repo, rel, (s) => s.replace(/^( {2}"version": )"[^"]*"/m, `$1"${v}"`))) changed.push(rel);
  }
  // npm's own format (two spaces, a final newline): the root package's version in both places it appears.
  if (
    await rewrite(repo, 'package-lock.json', (s) => {
      const lock = JSON.parse(s) as { version: string; packages: Record<string, { version?: string }> };
      lock.version = v;
      lock.packages['']!.version = v;
      return JSON.stringify(lock, null, 2) + '\n';
    })
  )
    changed.push('package-lock.json');
  if (await rewrite(repo, 'sdk/python/pyproject.toml', (s) => s.replace(/^version = "[^"]*"/m, `version = "${v}"`)))
    changed.push('sdk/python/pyproject.toml');
  const init = 'sdk/python/src/ccm_provider_sdk/__init__.py';
  if (await rewrite(repo, init, (s) => s.replace(/^__version__ = "[^"]*"/m, `__version__ = "${v}"`))) changed.push(init);
  // Maven: the version of every artifact of ours (artifactId ccm-provider-*), where a pom declares it and where one depends on it.
  for (const rel of JAVA_POMS) if (await rewrite(repo, rel, (s) => pomAt(s, v))) changed.push(rel);
  return changed;
}

/**
 * `goMod` with every `require` of a module in `paths` (a `require` line or a
 * line of a require block, any version, a `// indirect` kept) moved to
 * `version`. Replace directives are left as they are. Pure.
 */
export function requireAt(goMod: string, paths: readonly string[], version: string): string {
  let out = goMod;
  for (const p of paths) {
    const re = new RegExp(`^(\\s*(?:require\\s+)?${p.replace(/\./g, '\\.')}) v\\S+`, 'gm');
    out = out.replace(re, `$1 ${version}`);
  }
  return out;
}

/**
 * The repository's other Go modules that require a released module (the
 * providers under plugins/): not tagged (binaries built from the tree into
 * the images), they keep their development replaces, but their requires
 * move to the release too, or a bridge requiring the SDK at the new version
 * leaves their go.mod untidy (`-mod=readonly` refuses to build).
 */
async function consumerModules(repo: string): Promise<string[]> {
  const listed = await run('git', ['ls-files', '-co', '--exclude-standard', '--', '*go.mod'], { cwd: repo }).then(
    (r) => r.stdout.split('\n').filter(Boolean),
    async () => (await filesUnder(repo, (r) => r.endsWith('/go.mod') && !r.includes('node_modules/'))).filter(Boolean),
  );
  const released = new Set<string>(GO_MODULES.map((m) => `${m.dir}/go.mod`));
  const out: string[] = [];
  for (const rel of listed.filter((r) => r.endsWith('go.mod') && !released.has(r)).sort()) {
    const text = await readFile(join(repo, rel), 'utf8').catch(() => '');
    if (GO_MODULES.some((m) => new RegExp(`^\\s*(?:require\\s+)?${m.path.replace(/\./g, '\\.')} v`, 'm').test(text))) out.push(rel);
  }
  return out;
}

/** Files of the module in `dir` as a release commit holds them: tracked (and new, unignored) files, or every file outside git. */
async function moduleFiles(repo: string, dir: string): Promise<string[]> {
  const listed = await run('git', ['ls-files', '-co', '--exclude-standard', '--', dir], { cwd: repo, maxBuffer: 64 * 1024 * 1024 }).then(
    (r) => r.stdout.split('\n').filter(Boolean),
    () => undefined,
  );
  return (listed ?? (await filesUnder(join(repo, dir), () => true)).map((f) => join(dir, f))).map((f) => relative(dir, f));
}

let modzip: Promise<string> | undefined;

/** tools/release/modzip built once per source (cached like every tool). */
function modzipBinary(): Promise<string> {
  return (modzip ??= (async () => {
    const src = join(REPO, 'tools/release/modzip');
    const dir = join(
      cacheBase(),
      `modzip-${await hashFiles(src, ['go.mod', 'go.sum', 'main.go'], (await execa('go', ['env', 'GOVERSION'])).stdout)}`,
    );
    await buildOnce(dir, async (tmp) => {
      await execa('nice', ['-n', '19', 'go', 'build', '-trimpath', '-o', join(tmp, 'modzip'), '.'], {
        cwd: src,
        env: { GOWORK: 'off', GOFLAGS: '-mod=readonly' },
      });
    });
    return join(dir, 'modzip');
  })());
}

/**
 * The Go modules at the release version: the bridge requires the SDK at
 * `version` (no replace: its go.mod never has one; sdk/go/go.work gives the
 * SDK next to it inside the repository, its replace moved to `version`), and
 * the bridge's go.sum gets the SDK's hashes at `version`. Each module is
 * written at `version` into a GOPROXY directory, from the files the release
 * commit holds. Resolves to the changed files.
 */
async function goModules(repo: string, version: string, goproxy: string): Promise<string[]> {
  const changed: string[] = [];
  const [sdk, bridge] = GO_MODULES;
  if (await rewrite(repo, `${bridge.dir}/go.mod`, (s) => requireAt(s, [sdk.path], version))) changed.push(`${bridge.dir}/go.mod`);
  const paths = GO_MODULES.map((m) => m.path);
  for (const rel of await consumerModules(repo)) if (await rewrite(repo, rel, (s) => requireAt(s, paths, version))) changed.push(rel);
  const workRe = new RegExp(`^(replace ${sdk.path.replace(/\./g, '\\.')}) v\\S+ =>`, 'm');
  if (await rewrite(repo, `${sdk.dir}/go.work`, (s) => s.replace(workRe, `$1 ${version} =>`))) changed.push(`${sdk.dir}/go.work`);
  await rm(goproxy, { recursive: true, force: true });
  const bin = await modzipBinary();
  const zipModule = async (m: (typeof GO_MODULES)[number]): Promise<string[]> => {
    // A copy of exactly the release commit's files (the module zip takes whatever its directory holds).
    const tmp = join(goproxy, '..', `.module-${m.dir.replace(/\//g, '_')}`);
    await rm(tmp, { recursive: true, force: true });
    for (const f of await moduleFiles(repo, m.dir)) await cp(join(repo, m.dir, f), join(tmp, f), { recursive: false }).catch(() => undefined);
    const { stdout } = await execa(bin, ['-dir', tmp, '-module', m.path, '-version', version, '-out', goproxy]);
    await rm(tmp, { recursive: true, force: true });
    return stdout.trim().split('\n');
  };
  const sdkSums = await zipModule(sdk);
  if (
    await rewrite(repo, `${bridge.dir}/go.sum`, (s) => {
      const kept = s.split('\n').filter((l) => l && !l.startsWith(`${sdk.path} `));
      return [...kept, ...sdkSums].sort().join('\n') + '\n';
    })
  )
    changed.push(`${bridge.dir}/go.sum`);
  await zipModule(bridge);
  return changed;
}

/**
 * `text` with what installs our packages at `oldVersion` (`X.Y.Z`) moved to
 * `version` (`X.Y.Z`): `go get`/`go mod edit` of the Go modules and their
 * tags, pip's `ccm-provider-sdk==`, npm pack tarballs, Maven `<version>`s of
 * our artifacts (group `dev.ccm`), a kustomize `?ref=`, and "Until X.Y.Z is published". A
 * vendor's own version in an example (`VendorVersion: "0.1.0"`) and history
 * ("as of 0.1.0") stay. Pure.
 */
export function installsAt(text: string, oldVersion: string, version: string): string {
  const o = oldVersion.replace(/\./g, '\\.');
  const end = '(?![\\w.-])';
  return text
    .replace(new RegExp(`(/sdk/go(?:/bridge)?@v)${o}${end}`, 'g'), `$1${version}`)
    .replace(new RegExp(`(\\bsdk/go(?:/bridge)?/v)${o}${end}`, 'g'), `$1${version}`)
    .replace(new RegExp(`(\\bccm-provider-sdk==)${o}${end}`, 'g'), `$1${version}`)
    .replace(new RegExp(`(\\bgrpc-ccm-provider-[a-z-]+?-)${o}(\\.tgz)`, 'g'), `$1${version}$2`)
    .replace(new RegExp(`(<groupId>dev\\.ccm</groupId>\\s*<artifactId>[\\w.-]+</artifactId>\\s*<version>)${o}(</version>)`, 'g'), `$1${version}$2`)
    .replace(new RegExp(`(\\?ref=v)${o}${end}`, 'g'), `$1${version}`)
    .replace(new RegExp(`(\\b[Uu]ntil v?)${o}( is published)`, 'g'), `$1${version}$2`)
    .replace(new RegExp(`(\\binstalls )${o}( locally)`, 'g'), `$1${version}$2`);
}

/**
 * The repository's Markdown and Dockerfiles that name released images by the
 * old tag, moved to the new one (tag only: prose names no digest); in the
 * Markdown, what installs our packages moves too (installsAt: the tutorials
 * run as printed against the clone's new version).
 */
async function retagProse(repo: string, oldVersion: string, version: string): Promise<string[]> {
  const changed: string[] = [];
  const markdown = [
    'README.md',
    'CONTRIBUTING.md',
    'conformance/README.md',
    ...(await filesUnder(join(repo, 'docs'), (r) => r.endsWith('.md'))).map((f) => `docs/${f}`),
    ...(await filesUnder(join(repo, 'sdk'), (r) => r.endsWith('README.md') && !r.includes('node_modules/'))).map((f) => `sdk/${f}`),
  ];
  const files = [...markdown, 'deploy/Dockerfile', 'deploy/providers/Dockerfile'];
  const re = new RegExp(`(${REGISTRY.replace(/\./g, '\\.')}/[a-z0-9-]+):v${oldVersion.replace(/\./g, '\\.')}(?![\\w.@-])`, 'g');
  for (const rel of files) {
    const edit = (s: string) => {
      const retagged = s.replace(re, `$1:${version}`);
      return rel.endsWith('.md') ? installsAt(retagged, oldVersion, version.slice(1)) : retagged;
    };
    if (await rewrite(repo, rel, edit).catch(() => false)) changed.push(rel);
  }
  return changed;
}

/**
 * Makes the release: versions, CHANGELOG, Go modules, images and their
 * indexes, manifests pinned to the built digests, and `<out>/release.json`
 * listing it all. Prints each step's time.
 */
export async function release(opts: ReleaseOptions): Promise<ReleaseResult> {
  const say = opts.say ?? (() => undefined);
  const repo = opts.repo ?? REPO;
  const v = parseVersion(opts.version);
  const out = opts.out ?? join(repo, 'release', opts.version);
  const arches = opts.arches ?? ARCHES;
  const date = opts.date ?? new Date().toISOString().slice(0, 10);
  const selected = opts.images ? RELEASED_IMAGES.filter((i) => opts.images!.includes(i.key)) : RELEASED_IMAGES;
  const unknown = (opts.images ?? []).filter((k) => !RELEASED_IMAGES.some((i) => i.key === k));
  if (unknown.length > 0) throw new Error(`unknown image(s) ${unknown.join(', ')}; known: ${RELEASED_IMAGES.map((i) => i.key).join(', ')}`);
  const t0 = Date.now();
  await mkdir(out, { recursive: true });
  const oldVersion = (JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as { version: string }).version;

  const changed: string[] = [];
  if (await rewrite(repo, 'CHANGELOG.md', (s) => (s.includes(`## [${v}] - `) ? s : changelogForRelease(s, v, date)))) changed.push('CHANGELOG.md');
  changed.push(...(await setVersions(repo, v)));
  changed.push(...(await retagProse(repo, oldVersion, opts.version)));
  const t1 = Date.now();
  const goproxy = join(out, 'goproxy');
  changed.push(...(await goModules(repo, opts.version, goproxy)));
  say(`Go modules ${GO_MODULES.map((m) => `${m.dir}@${opts.version}`).join(', ')} written to ${goproxy} in ${secs(t1)} s`);
  const packages = opts.packages === false ? [] : await buildPackages(repo, v, out, say);

  // The Java artifacts, from the poms just set to the release.
  let maven: ReleaseResult['maven'];
  if (opts.java !== false) {
    const t = Date.now();
    const repository = join(out, 'maven');
    const artifacts = await javaArtifacts(repo, v, repository, { localRepository: opts.java?.localRepository, say });
    maven = { repository, artifacts };
    say(`Java artifacts ${artifacts.map((a) => `${a.groupId}:${a.artifactId}:${a.version}`).join(', ')} written to ${repository} in ${secs(t)} s`);
  }

  // Images, built from the tree as the release commit holds it (the new versions in package.json).
  const t2 = Date.now();
  const images: ReleasedImageResult[] = [];
  // No image selected: no tools installed, no bases built.
  const store = selected.length > 0 ? await imageStore() : undefined;
  const bases = new Map<Arch, Record<string, string>>();
  if (store) {
    await ensureImageTools(
      say,
      arches.some((a) => a !== machineArch()),
    );
    for (const arch of arches) bases.set(arch, await archBases(store, say, arch));
  }
  for (const img of selected) {
    const built: { arch: Arch; image: string }[] = [];
    for (const arch of arches) {
      built.push({
        arch,
        image: await buildImage(store!, img.spec, bases.get(arch)!, say, { context: repo, arch, name: releaseImageName(img.spec, arch) }),
      });
    }
    const t = Date.now();
    const name = img.repository.slice(img.repository.lastIndexOf('/') + 1);
    const index = await writeIndex(store!, built, join(out, 'images', name), opts.version);
    say(`${img.repository}:${opts.version} ${index.digest} (${index.platforms.map((p) => `${p.arch} ${p.digest}`).join(', ')}) in ${secs(t)} s`);
    images.push({
      key: img.key,
      repository: img.repository,
      tag: opts.version,
      reference: `${img.repository}:${opts.version}@${index.digest}`,
      index,
      built,
    });
  }
  say(`images in ${secs(t2)} s`);

  // The manifests: every image: of a built repository pinned to tag@digest.
  const pins = new Map(images.map((i) => [i.repository, i.reference]));
  for (const rel of await filesUnder(join(repo, 'deploy'), (r) => /\.ya?ml$/.test(r))) {
    if (await rewrite(repo, `deploy/${rel}`, (s) => pinImages(s, pins))) changed.push(`deploy/${rel}`);
  }

  const tags = [opts.version, ...GO_MODULES.map((m) => `${m.dir}/${opts.version}`)];
  const result: ReleaseResult = { version: opts.version, out, images, changed: [...new Set(changed)].sort(), tags, goproxy, packages, maven };
  await writeFile(
    join(out, 'release.json'),
    JSON.stringify(
      {
        version: opts.version,
        date,
        tags,
        images: images.map((i) => ({
          repository: i.repository,
          tag: i.tag,
          digest: i.index.digest,
          reference: i.reference,
          layout: relative(out, i.index.layout),
          platforms: i.index.platforms,
        })),
        goModules: GO_MODULES.map((m) => ({ path: m.path, version: opts.version, tag: `${m.dir}/${opts.version}` })),
        packages: packages.map((p) => ({ ecosystem: p.ecosystem, name: p.name, version: v, file: relative(out, p.file) })),
        maven: maven && {
          repository: relative(out, maven.repository),
          artifacts: maven.artifacts.map((a) => ({ ...a, files: a.files.map((f) => join(relative(out, maven!.repository), f)) })),
        },
        changed: result.changed,
      },
      null,
      2,
    ) + '\n',
  );
  say(`release ${opts.version} in ${secs(t0)} s: ${out}`);
  return result;
}

/**
 * The command that uploads one built Java artifact (jar, sources jar, pom) to
 * the Maven repository at `$MAVEN_REPOSITORY_URL` with the credentials of
 * the settings.xml server `$MAVEN_REPOSITORY_ID` (docs/releasing.md).
 */
export function mavenDeployCommand(repository: string, a: JavaArtifact): string {
  const [jar, sources, pom] = a.files.map((f) => join(repository, f));
  return (
    'mvn -B org.apache.maven.plugins:maven-deploy-plugin:3.1.3:deploy-file -Durl="$MAVEN_REPOSITORY_URL" -DrepositoryId="$MAVEN_REPOSITORY_ID" ' +
    `-DpomFile=${pom} -Dfile=${jar} -Dsources=${sources}`
  );
}

/** The commands that publish `r` (printed by the CLI; docs/releasing.md explains them). */
export function publishCommands(r: ReleaseResult): string[] {
  return [
    `git commit -am 'release ${r.version}'`,
    ...r.tags.map((t) => `git tag ${t}`),
    `git push origin HEAD ${r.tags.join(' ')}`,
    ...r.images.map((i) => `skopeo copy --all --preserve-digests oci:${i.index.layout}:${i.tag} docker://${i.repository}:${i.tag}`),
    ...publishPackages(r.version, r.packages),
    // The stubs before the SDK, which depends on them.
    ...(r.maven?.artifacts ?? []).map((a) => mavenDeployCommand(r.maven!.repository, a)),
  ];
}
