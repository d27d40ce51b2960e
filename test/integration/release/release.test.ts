/**
 * The release command (tools/release, docs/releasing.md) run on copies of
 * this checkout (test/helpers/release.ts). Of the checkout's own version
 * (`own`): the host image is built for every architecture and written as one
 * OCI image index, every blob of which matches its digest; its image of the
 * machine's architecture is the image test's; the manifests name exactly the
 * index digest built. Of the next version (`next`, no images): the CHANGELOG
 * and every version move to the release; and the Go modules, served from the
 * release's GOPROXY directory as the tags will serve them, resolve and build
 * without a replace: a consumer module requiring only the bridge at the
 * release version, and the bridge module itself at its tag; and the Java
 * artifacts, served from the release's Maven repository directory, build an
 * empty Maven project depending only on the SDK into a provider that passes
 * the kit's launch checks.
 */
import test from 'ava';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { runConformance } from '../../../conformance/run.js';
import { buildOnce } from '../../../tools/release/build-once.js';
import { filesUnder, REPO } from '../../../tools/release/files.js';
import { ARCHES, archBaseTags, cacheBase, HOST_IMAGE, imageStore, imageTag, machineArch } from '../../../tools/release/images.js';
import { JAVA_ARTIFACTS } from '../../../tools/release/maven.js';
import { readIndex } from '../../../tools/release/oci.js';
import { GO_MODULES } from '../../../tools/release/release.js';
import { javaBuild, mavenRepository } from '../../helpers/java.js';
import { renderKustomization } from '../../helpers/kustomize.js';
import { currentVersion, RELEASE_DATE, releaseFixture, type ReleaseFixture } from '../../helpers/release.js';

const say = (line: string) => process.stderr.write(`[release] ${line}\n`);
let own: ReleaseFixture;
let next: ReleaseFixture;

test.before(async () => {
  // The runner's 'release' build (test/builds.ts) made the same release before this file started (its images are cached); run with ava alone, it builds them here.
  own = await releaseFixture('images', say);
  next = await releaseFixture('next', say);
});

test.after.always(async () => {
  await own?.remove();
  await next?.remove();
});

/** Containers' images in a rendering. */
function imagesOf(objects: Awaited<ReturnType<typeof renderKustomization>>): string[] {
  const out: string[] = [];
  for (const o of objects as { spec?: { template?: { spec?: { containers?: { image: string }[]; initContainers?: { image: string }[] } } } }[]) {
    const pod = o.spec?.template?.spec;
    for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) out.push(c.image);
  }
  return out;
}

test('each built image is one OCI image index with one manifest per architecture, every blob matching its digest', async (t) => {
  t.is(own.result.images.length, 1);
  for (const img of own.result.images) {
    // Read again from disk: the layout as the operator copies it to the registry.
    const index = await readIndex(img.index.layout, own.result.version);
    t.is(index.digest, img.index.digest, img.repository);
    t.deepEqual(
      index.platforms.map((p) => [p.os, p.arch, p.configArch]).sort(),
      ARCHES.map((a) => ['linux', a, a]).sort(),
      `${img.repository}: one manifest per architecture, each image's config of that architecture`,
    );
    t.is(new Set(index.platforms.map((p) => p.digest)).size, ARCHES.length, 'a distinct manifest per architecture');
    t.is(img.reference, `${img.repository}:${own.result.version}@${index.digest}`);
  }
});

/** ELF e_machine of each architecture's binaries. */
const ELF_MACHINE: Record<string, number> = { amd64: 0x3e, arm64: 0xb7 };

/** The ELF e_machine of `path` in the image of `manifestDigest` in `layout` (the last layer holding it wins), or undefined. */
async function elfMachine(layout: string, manifestDigest: string, path: string): Promise<number | undefined> {
  const blobPath = (d: string) => join(layout, 'blobs', ...d.split(':'));
  const manifest = JSON.parse(await readFile(blobPath(manifestDigest), 'utf8')) as { layers: { digest: string }[] };
  let machine: number | undefined;
  for (const l of manifest.layers) {
    // The first 20 bytes: e_machine is the little-endian 16 bits at offset 18.
    const r = await execa('sh', ['-c', 'tar -xzOf "$1" "$2" 2>/dev/null | head -c 20 | od -An -tx1', 'sh', blobPath(l.digest), path], {
      reject: false,
    });
    const bytes = r.stdout.trim().split(/\s+/).filter(Boolean);
    if (bytes.length === 20 && bytes.slice(0, 4).join('') === '7f454c46') machine = parseInt(bytes[18]!, 16) | (parseInt(bytes[19]!, 16) << 8);
  }
  return machine;
}

test("each architecture's image holds that architecture's Node binary", async (t) => {
  for (const img of own.result.images) {
    for (const p of img.index.platforms) {
      t.is(
        await elfMachine(img.index.layout, p.digest, 'usr/local/bin/node'),
        ELF_MACHINE[p.arch],
        `${img.repository} ${p.arch}: /usr/local/bin/node`,
      );
    }
  }
});

test("the host image of the machine's architecture is the image test's: one build of the same inputs", async (t) => {
  const host = own.result.images.find((i) => i.key === 'host')!;
  const arch = machineArch();
  const image = host.built.find((b) => b.arch === arch)?.image;
  // What the image test builds and the runner checks (test/helpers/images.ts): the checkout's inputs, the same build-args.
  t.is(image, (await imageTag(await imageStore(), HOST_IMAGE, await archBaseTags(arch))).tag);
});

test('the release metadata lists the images, digests and tags', async (t) => {
  const meta = JSON.parse(await readFile(join(own.result.out, 'release.json'), 'utf8')) as {
    version: string;
    tags: string[];
    images: { repository: string; digest: string; reference: string }[];
  };
  t.is(meta.version, own.result.version);
  t.deepEqual(meta.tags, [own.result.version, `sdk/go/${own.result.version}`, `sdk/go/bridge/${own.result.version}`]);
  t.deepEqual(
    meta.images.map((i) => [i.repository, i.digest]),
    own.result.images.map((i) => [i.repository, i.index.digest]),
  );
});

test('the rendered manifests name exactly the digests built; every other image keeps its reference', async (t) => {
  const built = new Map(own.result.images.map((i) => [i.repository, i.reference]));
  const renderings = [
    'deploy/providers/aws',
    'deploy/providers/vsphere',
    'deploy/providers/openstack',
    'deploy/overlays/local-demo-sidecar',
    'deploy/overlays/local-demo-exec',
  ];
  let pinned = 0;
  for (const dir of renderings) {
    const before = imagesOf(await renderKustomization(join(REPO, dir)));
    const after = imagesOf(await renderKustomization(join(own.repo, dir)));
    t.is(after.length, before.length, dir);
    for (const [i, image] of after.entries()) {
      const repo = before[i]!.replace(/@.*$/, '').replace(/:[^:/]*$/, '');
      const want = built.get(repo) ?? before[i]!;
      t.is(image, want, `${dir}: ${repo}`);
      if (built.has(repo)) pinned++;
    }
  }
  // Every rendering but the exec demo's (its image is cloud-controller-manager-local) runs the host image.
  t.is(pinned, renderings.length - 1, 'the host image is pinned in every rendering that runs it');
});

test('the CHANGELOG entry: Unreleased becomes the version with its date, a new empty Unreleased above it', async (t) => {
  const text = await readFile(join(next.repo, 'CHANGELOG.md'), 'utf8');
  const v = next.result.version.slice(1);
  const heads = text.split('\n').filter((l) => l.startsWith('## '));
  t.is(heads[0], '## [Unreleased]');
  t.is(heads[1], `## [${v}] - ${RELEASE_DATE}`);
  // The version's section holds what Unreleased held in the checkout.
  const section = (s: string, head: RegExp) => {
    const lines = s.split('\n');
    const at = lines.findIndex((l) => head.test(l));
    const end = lines.findIndex((l, i) => i > at && l.startsWith('## '));
    return lines
      .slice(at + 1, end)
      .join('\n')
      .trim();
  };
  const original = await readFile(join(REPO, 'CHANGELOG.md'), 'utf8');
  t.is(section(text, new RegExp(`^## \\[${v.replace(/\./g, '\\.')}\\]`)), section(original, /^## \[Unreleased\]/));
  t.is(section(text, /^## \[Unreleased\]/), '', 'the new Unreleased is empty');
});

test('every version is the release: host, TypeScript SDK, conformance kit, Python SDK, Java SDK and example', async (t) => {
  const v = next.result.version.slice(1);
  for (const p of ['package.json', 'sdk/package.json', 'conformance/package.json']) {
    t.is((JSON.parse(await readFile(join(next.repo, p), 'utf8')) as { version: string }).version, v, p);
  }
  const lock = JSON.parse(await readFile(join(next.repo, 'package-lock.json'), 'utf8')) as {
    version: string;
    packages: Record<string, { version: string }>;
  };
  t.is(lock.version, v);
  t.is(lock.packages['']!.version, v);
  t.regex(await readFile(join(next.repo, 'sdk/python/pyproject.toml'), 'utf8'), new RegExp(`^version = "${v.replace(/\./g, '\\.')}"$`, 'm'));
  t.regex(
    await readFile(join(next.repo, 'sdk/python/src/ccm_provider_sdk/__init__.py'), 'utf8'),
    new RegExp(`^__version__ = "${v.replace(/\./g, '\\.')}"$`, 'm'),
  );
  // Maven: the stubs' and the SDK's own versions, the example's, and the versions each depends on.
  const ours = (pom: string) =>
    [...pom.matchAll(/<artifactId>(ccm-provider-[\w.-]+)<\/artifactId>\s*<version>([^<]*)<\/version>/g)].map((m) => [m[1], m[2]]);
  t.deepEqual(ours(await readFile(join(next.repo, 'sdk/java-proto/pom.xml'), 'utf8')), [['ccm-provider-proto', v]], 'sdk/java-proto/pom.xml');
  t.deepEqual(
    ours(await readFile(join(next.repo, 'sdk/java/pom.xml'), 'utf8')),
    [
      ['ccm-provider-sdk', v],
      ['ccm-provider-proto', v],
    ],
    'sdk/java/pom.xml',
  );
  t.deepEqual(
    ours(await readFile(join(next.repo, 'plugins/java/pom.xml'), 'utf8')),
    [
      ['ccm-provider-memjava', v],
      ['ccm-provider-sdk', v],
    ],
    'plugins/java/pom.xml',
  );
});

test('the install commands the tutorials and READMEs print move to the release (the tutorials run as printed against the clone)', async (t) => {
  const v = next.result.version.slice(1);
  const old = (await currentVersion()).slice(1);
  const [sdk, bridge] = GO_MODULES;
  const cases: [string, string][] = [
    ['docs/providers/go.md', `-require=${sdk.path}@v${v}`],
    ['docs/providers/existing-go-provider.md', `-require=${bridge.path}@v${v}`],
    ['docs/providers/python.md', `ccm-provider-sdk==${v}`],
    ['docs/providers/typescript.md', `./grpc-ccm-provider-sdk-${v}.tgz`],
    ['docs/providers/java.md', `<artifactId>ccm-provider-sdk</artifactId>\n      <version>${v}</version>`],
    ['sdk/go/README.md', `resolves the tag \`sdk/go/v${v}\``],
    ['sdk/python/README.md', `ccm-provider-sdk==${v}`],
  ];
  for (const [file, want] of cases) {
    const text = await readFile(join(next.repo, file), 'utf8');
    t.true(text.includes(want), `${file}: ${want}`);
    t.false(text.includes(want.replace(v, old)), `${file}: nothing left at ${old}`);
  }
});

/** Go modules in `repo` other than the released ones that require one of them (the providers under plugins/). */
async function consumersOfReleasedModules(repo: string): Promise<string[]> {
  const mods = (await execa('git', ['ls-files', '*go.mod'], { cwd: REPO })).stdout.split('\n').filter(Boolean);
  const out: string[] = [];
  for (const rel of mods) {
    if (GO_MODULES.some((m) => `${m.dir}/go.mod` === rel)) continue;
    const text = await readFile(join(repo, rel), 'utf8');
    if (GO_MODULES.some((m) => text.includes(`${m.path} v`))) out.push(rel.slice(0, -'/go.mod'.length));
  }
  return out.sort();
}

test("the repository's other Go modules (the providers, built from the tree) require the released modules at the release, keep their development replace, and their go.mod stays tidy", async (t) => {
  const v = next.result.version;
  const dirs = await consumersOfReleasedModules(next.repo);
  t.true(dirs.includes('plugins/go') && dirs.includes('plugins/aws-bridge'), dirs.join(', '));
  for (const dir of dirs) {
    const mod = await readFile(join(next.repo, dir, 'go.mod'), 'utf8');
    for (const m of GO_MODULES) {
      const at = new RegExp(`^\\s*(?:require\\s+)?${m.path.replace(/\./g, '\\.')} (v\\S+)`, 'm').exec(mod)?.[1];
      if (at !== undefined) t.is(at, v, `${dir} requires ${m.dir}`);
    }
    t.regex(mod, /^replace\b/m, `${dir}: development replace kept (not a tagged module)`);
    // -mod=readonly: an untidy go.mod (a bridge requiring the SDK above what the provider names) is refused before anything builds.
    // (the whole graph: `go list -m <one module>` does not notice).
    const r = await execa('nice', ['-n', '19', 'go', 'list', '-m', 'all'], {
      cwd: join(next.repo, dir),
      env: { GOWORK: 'off', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
      reject: false,
    });
    t.is(r.exitCode, 0, `${dir}: ${r.stderr}`);
    const ours = r.stdout.split('\n').filter((l) => GO_MODULES.some((m) => l.startsWith(`${m.path} `)));
    t.true(ours.length > 0, dir);
    for (const line of ours) t.regex(line, new RegExp(` ${v.replace(/\./g, '\\.')} => \\.\\./`), `${dir}: ${line}`);
  }
});

test('the tagged Go modules resolve without a replace: a consumer of the bridge, and the bridge at its tag, build from the release GOPROXY', async (t) => {
  const v = next.result.version;
  const [sdk, bridge] = GO_MODULES;
  const bridgeMod = await readFile(join(next.repo, bridge.dir, 'go.mod'), 'utf8');
  t.notRegex(bridgeMod, /^replace\b/m, 'the bridge has no replace');
  t.regex(
    bridgeMod,
    new RegExp(`^\\s*${sdk.path.replace(/\./g, '\\.')} ${v.replace(/\./g, '\\.')}$`, 'm'),
    'the bridge requires the SDK at the release',
  );
  // The builds below, once per content of the two modules as the proxy serves them (a marker under ~/.cache/ccm-host: made only when they pass).
  const served = GO_MODULES.flatMap((m) => ['mod', 'zip'].map((ext) => join(next.result.goproxy, m.path, '@v', `${v}.${ext}`)));
  // 'go get': the consumer starts as an empty project (the salt: a change of what the test does runs it again).
  const key = createHash('sha256')
    .update('go get')
    .update((await execa('go', ['env', 'GOVERSION'])).stdout);
  for (const file of served) key.update(await readFile(file));
  const marker = join(cacheBase(), `release-gomod-${key.digest('hex').slice(0, 16)}`);
  await buildOnce(marker, async (tmp) => {
    const work = await mkdtemp(join(tmpdir(), 'ccm-release-go-'));
    try {
      const goEnv = JSON.parse((await execa('go', ['env', '-json', 'GOMODCACHE'])).stdout) as { GOMODCACHE: string };
      // A module cache of its own (the released versions never enter the machine's); third-party modules from the machine's download cache.
      const env = {
        GOWORK: 'off',
        GOFLAGS: '-mod=mod',
        GOPROXY: `file://${next.result.goproxy},file://${goEnv.GOMODCACHE}/cache/download`,
        GOSUMDB: 'off',
        GOMODCACHE: join(work, 'modcache'),
        GOTOOLCHAIN: 'local',
        CGO_ENABLED: '0',
      };
      const consumer = join(work, 'consumer');
      await mkdir(consumer, { recursive: true });
      const go = async (args: string[], cwd: string, extra: Record<string, string> = {}) => {
        const r = await execa('nice', ['-n', '19', 'go', ...args], { cwd, env: { ...env, ...extra }, reject: false, timeout: 15 * 60_000 });
        if (r.exitCode !== 0) throw new Error(`go ${args.join(' ')} in ${cwd}: ${r.stderr}`);
        return r.stdout;
      };
      // An empty project, as a vendor starts: go mod init, go get of each module at the release (what sdk/go/README.md prints), a program importing both.
      await go(['mod', 'init', 'example.com/consumer'], consumer);
      await go(['get', `${sdk.path}@${v}`, `${bridge.path}@${v}`], consumer);
      await writeFile(join(consumer, 'main.go'), `package main\n\nimport (\n\t_ "${sdk.path}"\n\t_ "${bridge.path}"\n)\n\nfunc main() {}\n`);
      await go(['build', '-trimpath', '-o', join(work, 'consumer.bin'), '.'], consumer);
      const list = await go(['list', '-m', sdk.path, bridge.path], consumer);
      // The bridge as its tag holds it, as a main module: its own go.sum (the release wrote the SDK's hashes) must verify.
      await go(['build', '-trimpath', './...'], join(env.GOMODCACHE, `${bridge.path}@${v}`), { GOFLAGS: '-mod=readonly' });
      await mkdir(tmp, { recursive: true });
      await writeFile(join(tmp, 'modules'), list);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
  t.deepEqual(
    (await readFile(join(marker, 'modules'), 'utf8')).trim().split('\n'),
    [`${sdk.path} ${v}`, `${bridge.path} ${v}`],
    'the consumer resolved both at the release version',
  );
});

/** The empty project a Java vendor starts from: a pom naming only the SDK at the release, a provider on it, its launcher. */
function javaConsumer(version: string, releaseRepository: string): Record<string, string> {
  const plugin = (artifactId: string, version: string, rest = '') =>
    `      <plugin>\n        <groupId>org.apache.maven.plugins</groupId>\n        <artifactId>${artifactId}</artifactId>\n        <version>${version}</version>${rest}\n      </plugin>`;
  return {
    'pom.xml': `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example.minimal</groupId>
  <artifactId>ccm-provider-minimal</artifactId>
  <version>1.0.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository>
      <id>ccm-release</id>
      <url>file://${releaseRepository}</url>
    </repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>dev.ccm</groupId>
      <artifactId>ccm-provider-sdk</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
${[
  plugin('maven-compiler-plugin', '3.13.0'),
  plugin('maven-resources-plugin', '3.3.1'),
  plugin('maven-surefire-plugin', '3.5.2'),
  plugin(
    'maven-jar-plugin',
    '3.4.2',
    '\n        <configuration>\n          <outputDirectory>${project.build.directory}/lib</outputDirectory>\n        </configuration>',
  ),
  plugin(
    'maven-dependency-plugin',
    '3.8.1',
    '\n        <executions>\n          <execution>\n            <phase>package</phase>\n            <goals>\n              <goal>copy-dependencies</goal>\n            </goals>\n            <configuration>\n              <includeScope>runtime</includeScope>\n              <outputDirectory>${project.build.directory}/lib</outputDirectory>\n            </configuration>\n          </execution>\n        </executions>',
  ),
].join('\n')}
    </plugins>
  </build>
</project>
`,
    // The stubs' classes (Configure*) from the SDK's dependency: a missing one does not compile.
    'src/main/java/minimal/MinimalProvider.java': `package minimal;

import dev.ccm.provider.sdk.Errors;
import dev.ccm.provider.sdk.Info;
import dev.ccm.provider.sdk.Provider;
import dev.ccm.provider.sdk.ProviderServer;
import dev.ccm.provider.v1.ConfigureRequest;
import dev.ccm.provider.v1.ConfigureResponse;

public final class MinimalProvider implements Provider {
  @Override
  public Info info() {
    return Info.of("minimal.example.com", "minimal").withVendorVersion("1.0.0");
  }

  @Override
  public ConfigureResponse configure(ConfigureRequest request) {
    if (request.getCloudConfig().toStringUtf8().startsWith("{not")) throw Errors.invalidArgument("not a cloud config");
    return ConfigureResponse.getDefaultInstance();
  }

  public static void main(String[] args) {
    ProviderServer.main(new MinimalProvider(), args, new ProviderServer.Options());
  }
}
`,
    // docs/providers/java.md's launcher idiom.
    'ccm-provider-minimal': `#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
handshake=
if [ -n "\${CCM_PLUGIN_MAGIC_COOKIE+x}" ]; then
  exec 3>&1 1>&2
  handshake=-Dccm.handshake.fd=3
fi
exec java $handshake -Djava.io.tmpdir="\${TMPDIR:-/tmp}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$here/target/lib/*" minimal.MinimalProvider "$@"
`,
  };
}

/** The kit's checks the consumer's provider runs: it starts, hands shake, serves health and Identity, stops. */
const CONSUMER_CHECKS = ['launch/handshake', 'launch/health', 'identity/plugin-info', 'lifecycle/shutdown'];

/** Entries of the jar at `path`. */
async function jarEntries(path: string): Promise<string[]> {
  return (await execa('jar', ['tf', path])).stdout.split('\n').filter(Boolean);
}

test('the Java artifacts install into an empty Maven project from the release repository: a provider depending only on the SDK compiles and passes the kit', async (t) => {
  t.timeout(15 * 60_000);
  const v = next.result.version.slice(1);
  const maven = next.result.maven!;
  t.truthy(maven, 'the release built the Java artifacts');
  t.deepEqual(
    maven.artifacts.map((a) => [`${a.groupId}:${a.artifactId}:${a.version}`, a.files.map((f) => f.slice(f.lastIndexOf('/') + 1))]),
    JAVA_ARTIFACTS.map((a) => [
      `dev.ccm:${a.artifactId}:${v}`,
      [`${a.artifactId}-${v}.jar`, `${a.artifactId}-${v}-sources.jar`, `${a.artifactId}-${v}.pom`],
    ]),
  );
  const [proto, sdk] = maven.artifacts.map((a) => a.files.map((f) => join(maven.repository, f)));
  // The stubs are in their own artifact, with the .proto files; the SDK depends on them at the release instead of holding them.
  const protoJar = await jarEntries(proto![0]!);
  t.true(protoJar.includes('dev/ccm/provider/v1/IdentityServiceGrpc.class'));
  t.true(protoJar.includes('ccm/provider/v1/lifecycle.proto'));
  t.true((await jarEntries(proto![1]!)).includes('dev/ccm/provider/v1/IdentityServiceGrpc.java'), 'the sources jar holds the generated sources');
  t.false(
    (await jarEntries(sdk![0]!)).some((e) => e.startsWith('dev/ccm/provider/v1/')),
    'the SDK jar holds no stubs',
  );
  t.regex(
    await readFile(sdk![2]!, 'utf8'),
    new RegExp(`<artifactId>ccm-provider-proto</artifactId>\\s*<version>${v.replace(/\./g, '\\.')}</version>`),
  );

  // The private repository (mavenRepository) holds the third-party artifacts and Maven's plugins: the java-provider build's.
  await javaBuild((l) => t.log(l));
  // Once per content of the release repository and of the consumer (a marker under ~/.cache/ccm-host, made only when it passes).
  const files = javaConsumer(v, '@RELEASE@');
  const key = createHash('sha256').update(JSON.stringify([files, CONSUMER_CHECKS]));
  key.update((await execa('java', ['-version'], { all: true })).all ?? '').update((await execa('mvn', ['-v'])).stdout.split('\n')[0] ?? '');
  for (const f of await filesUnder(maven.repository, () => true))
    key
      .update(f)
      .update('\0')
      .update(await readFile(join(maven.repository, f)));
  const marker = join(cacheBase(), `release-maven-consumer-${key.digest('hex').slice(0, 16)}`);
  await buildOnce(marker, async (tmp) => {
    const work = await mkdtemp(join(tmpdir(), 'ccm-release-java-'));
    try {
      const t0 = Date.now();
      const project = join(work, 'minimal');
      for (const [rel, text] of Object.entries(javaConsumer(v, maven.repository))) {
        await mkdir(join(project, rel, '..'), { recursive: true });
        await writeFile(join(project, rel), text, { mode: rel.startsWith('ccm-provider-') ? 0o755 : 0o644 });
      }
      // An empty local repository: our artifacts come from the release repository only; everything else from the
      // private repository served as the mirror of every other repository (offline: no network).
      await writeFile(
        join(work, 'settings.xml'),
        `<settings><localRepository>${join(work, 'm2')}</localRepository><mirrors><mirror><id>ccm-cache</id><mirrorOf>*,!ccm-release</mirrorOf><url>file://${mavenRepository()}</url></mirror></mirrors></settings>\n`,
      );
      const mvn = await execa('nice', ['-n', '19', 'mvn', '-B', '-q', '-s', join(work, 'settings.xml'), 'package'], {
        cwd: project,
        all: true,
        reject: false,
        timeout: 10 * 60_000,
      });
      if (mvn.exitCode !== 0) throw new Error(`mvn package of the empty project failed:\n${(mvn.all ?? '').slice(-6000)}`);
      const t1 = Date.now();
      const results = await runConformance({
        target: { kind: 'exec', path: join(project, 'ccm-provider-minimal'), env: [] },
        cloudConfig: Buffer.alloc(0),
        startTimeoutMs: 60_000,
        shutdownGraceMs: 2_000,
        focus: new RegExp(`^(${CONSUMER_CHECKS.join('|')})$`),
      });
      say(`the empty Maven project built in ${Math.round((t1 - t0) / 1000)} s, the kit's checks ran in ${Math.round((Date.now() - t1) / 1000)} s`);
      const ran = results.filter((r) => CONSUMER_CHECKS.includes(r.id)).map((r) => ({ id: r.id, outcome: r.outcome, message: r.message }));
      const failed = ran.filter((r) => r.outcome !== 'pass');
      if (failed.length > 0) throw new Error(`the provider built from the release failed the kit: ${JSON.stringify(failed)}`);
      await mkdir(tmp, { recursive: true });
      await writeFile(join(tmp, 'results.json'), JSON.stringify(ran, null, 2));
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
  const ran = JSON.parse(await readFile(join(marker, 'results.json'), 'utf8')) as { id: string; outcome: string }[];
  t.deepEqual(
    ran.map((r) => [r.id, r.outcome]),
    CONSUMER_CHECKS.map((id) => [id, 'pass']),
  );
});
