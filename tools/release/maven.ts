/**
 * The Java artifacts of a release (docs/releasing.md): the protocol stubs
 * `dev.ccm:ccm-provider-proto` (sdk/java-proto) and the Java SDK
 * `dev.ccm:ccm-provider-sdk` (sdk/java, which depends on the stubs), each as
 * jar, sources jar and pom at the release version, deployed by `mvn deploy`
 * into a Maven repository directory (`release/vX.Y.Z/maven/`) that is
 * published as it is (or served as a `file://` repository before that).
 *
 * Maven works on a copy of the two modules and proto/ccm with the poms at the
 * release version (nothing is written into the checkout, and nothing is
 * installed into the local repository: a consumer must find the release in
 * the repository directory, not in a local install). The result is cached
 * under ~/.cache/ccm-host/release-maven-<hash>/, keyed by the modules'
 * inputs at that version, the protos and the Java and Maven versions: the
 * same release again, or the test suite's fixture the runner made before the
 * tests, runs no Maven. Built under `nice -n 19`.
 */
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { buildOnce } from './build-once.js';
import { filesUnder } from './files.js';
import { cacheBase, secs } from './images.js';

/** The group of our Maven artifacts. */
export const MAVEN_GROUP = 'dev.ccm';

/** The Maven modules a release deploys, in build order (the SDK depends on the stubs). */
export const JAVA_ARTIFACTS = [
  { dir: 'sdk/java-proto', artifactId: 'ccm-provider-proto' },
  { dir: 'sdk/java', artifactId: 'ccm-provider-sdk' },
] as const;

/** The poms whose versions the release sets: the released modules, and the example provider that depends on the SDK. */
export const JAVA_POMS = [...JAVA_ARTIFACTS.map((a) => `${a.dir}/pom.xml`), 'plugins/java/pom.xml'] as const;

/**
 * `pom` with the version of every artifact of ours (artifactId
 * `ccm-provider-*`), where it is declared and where one is depended on,
 * set to `version` (`X.Y.Z`). Idempotent. Pure.
 */
export function pomAt(pom: string, version: string): string {
  return pom.replace(/(<artifactId>ccm-provider-[\w.-]+<\/artifactId>\s*<version>)[^<]*(<\/version>)/g, `$1${version}$2`);
}

/** What a module's build reads: its pom and sources (not Maven's output, not its README). */
const moduleInput = (rel: string) => rel === 'pom.xml' || rel.startsWith('src/');

/** The protos the stubs are generated from. */
const protoInput = (rel: string) => rel.endsWith('.proto');

/** What an aggregator pom holds besides its modules. */
export interface AggregatorExtra {
  /** Its <properties>, in this order (e.g. maven.deploy.skip). */
  properties?: Record<string, string>;
  /** Plugins of group org.apache.maven.plugins pinned in its <build> (artifactId to version). */
  plugins?: Record<string, string>;
}

/**
 * A Maven aggregator pom (`dev.ccm.build:<artifactId>:0`, packaging pom)
 * that builds `modules` (directories relative to it) in one reactor, so no
 * module needs another `mvn install`ed first. The release's and the test
 * suite's Java builds each write one, with their own modules and `extra`;
 * the text is part of each build's cache key. Pure.
 */
export function aggregatorPom(artifactId: string, modules: readonly string[], extra: AggregatorExtra = {}): string {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<project xmlns="http://maven.apache.org/POM/4.0.0">',
    '  <modelVersion>4.0.0</modelVersion>',
    '  <groupId>dev.ccm.build</groupId>',
    `  <artifactId>${artifactId}</artifactId>`,
    '  <version>0</version>',
    '  <packaging>pom</packaging>',
  ];
  const properties = Object.entries(extra.properties ?? {});
  if (properties.length > 0) lines.push('  <properties>', ...properties.map(([k, v]) => `    <${k}>${v}</${k}>`), '  </properties>');
  lines.push('  <modules>', ...modules.map((m) => `    <module>${m}</module>`), '  </modules>');
  const plugins = Object.entries(extra.plugins ?? {});
  if (plugins.length > 0) {
    lines.push('  <build>', '    <plugins>');
    for (const [artifact, version] of plugins)
      lines.push(
        '      <plugin>',
        '        <groupId>org.apache.maven.plugins</groupId>',
        `        <artifactId>${artifact}</artifactId>`,
        `        <version>${version}</version>`,
        '      </plugin>',
      );
    lines.push('    </plugins>', '  </build>');
  }
  return `${lines.join('\n')}\n</project>\n`;
}

/** The aggregator that builds both modules in one reactor; itself neither installed nor deployed. */
const AGGREGATOR = aggregatorPom(
  'ccm-java-release',
  JAVA_ARTIFACTS.map((a) => a.dir),
  {
    properties: { 'maven.deploy.skip': 'true' },
    plugins: { 'maven-install-plugin': '3.1.3', 'maven-deploy-plugin': '3.1.3' },
  },
);

/** `mvn deploy` without tests (the suite runs them) and without installing into the local repository. */
function mavenArgs(repository: string, localRepository: string | undefined): string[] {
  return [
    '-B',
    '-q',
    ...(localRepository ? [`-Dmaven.repo.local=${localRepository}`] : []),
    '-DskipTests',
    '-Dmaven.install.skip=true',
    `-DaltDeploymentRepository=ccm-release::file://${repository}`,
    'deploy',
  ];
}

let tools: Promise<string> | undefined;

/**
 * The Java and Maven versions (`java -version`, `mvn -v`'s first line), part
 * of every Java build's cache key (this file's and the test suite's,
 * test/helpers/java.ts). Read once per process: two JVM starts, seconds on a
 * loaded machine. `given` (the test runner's, handed to its workers) is taken
 * as read instead when this process has not read them yet.
 */
export function javaToolVersions(given?: string): Promise<string> {
  return (tools ??= given
    ? Promise.resolve(given)
    : (async () => {
        const java = (await execa('java', ['-version'], { all: true })).all ?? '';
        const mvn = (await execa('mvn', ['-v'], { env: { MAVEN_OPTS: '' } })).stdout.split('\n')[0] ?? '';
        return `${java}\0${mvn}`;
      })());
}

/** The files Maven builds from, relative to the repository, each with its content at `version` (the poms rewritten). */
async function inputs(repo: string, version: string): Promise<[string, Buffer][]> {
  const out: [string, Buffer][] = [];
  for (const a of JAVA_ARTIFACTS) {
    for (const rel of await filesUnder(join(repo, a.dir), moduleInput)) {
      const bytes = await readFile(join(repo, a.dir, rel));
      out.push([`${a.dir}/${rel}`, rel === 'pom.xml' ? Buffer.from(pomAt(bytes.toString('utf8'), version)) : bytes]);
    }
  }
  for (const rel of await filesUnder(join(repo, 'proto', 'ccm'), protoInput))
    out.push([`proto/ccm/${rel}`, await readFile(join(repo, 'proto', 'ccm', rel))]);
  return out;
}

/**
 * The cache directory of the Java artifacts of `repo` at `version` (`X.Y.Z`):
 * a hash of what Maven builds from at that version and of the tools. Builds
 * nothing (it runs `java -version` and `mvn -v`).
 */
export async function javaArtifactsDir(repo: string, version: string): Promise<string> {
  const h = createHash('sha256').update(`${AGGREGATOR}\0${mavenArgs('', undefined).join(' ')}\0${await javaToolVersions()}\0`);
  for (const [rel, bytes] of await inputs(repo, version)) h.update(rel).update('\0').update(bytes).update('\0');
  return join(cacheBase(), `release-maven-${h.digest('hex').slice(0, 16)}`);
}

export interface JavaArtifactsOptions {
  /** Maven's local repository (`-Dmaven.repo.local`; default Maven's own, ~/.m2/repository). */
  localRepository?: string;
  say?: (line: string) => void;
}

/** One released Maven artifact: its coordinates and its files in the repository directory. */
export interface JavaArtifact {
  groupId: string;
  artifactId: string;
  version: string;
  /** Paths relative to the repository directory: the jar, the sources jar and the pom. */
  files: string[];
}

/**
 * Builds (once per input hash, see the top) the Java artifacts of `repo` at
 * `version` (`X.Y.Z`) and returns the cache's Maven repository directory.
 * Fails with Maven's output's tail when the build fails.
 */
export async function buildJavaArtifacts(repo: string, version: string, opts: JavaArtifactsOptions = {}): Promise<string> {
  const say = opts.say ?? (() => undefined);
  const dir = await javaArtifactsDir(repo, version);
  await buildOnce(dir, async (tmp) => {
    const t0 = Date.now();
    say(`building the Java artifacts ${JAVA_ARTIFACTS.map((a) => `${MAVEN_GROUP}:${a.artifactId}:${version}`).join(', ')} with Maven into ${dir}`);
    const src = await mkdtemp(join(tmpdir(), 'ccm-release-maven-'));
    try {
      for (const [rel, bytes] of await inputs(repo, version)) {
        await mkdir(join(src, rel, '..'), { recursive: true });
        await writeFile(join(src, rel), bytes);
      }
      await writeFile(join(src, 'pom.xml'), AGGREGATOR);
      await mkdir(join(tmp, 'repository'), { recursive: true });
      if (opts.localRepository) await mkdir(opts.localRepository, { recursive: true });
      await execa('nice', ['-n', '19', 'mvn', ...mavenArgs(join(tmp, 'repository'), opts.localRepository)], { cwd: src, all: true }).catch(
        (e: { all?: string }) => {
          throw new Error(`mvn deploy of ${JAVA_ARTIFACTS.map((a) => a.dir).join(' and ')} failed:\n${(e.all ?? String(e)).slice(-6000)}`);
        },
      );
    } finally {
      await rm(src, { recursive: true, force: true });
    }
    say(`the Java artifacts built in ${secs(t0)} s`);
  });
  return join(dir, 'repository');
}

/**
 * The Java artifacts of the release: built (or taken from the cache) and
 * copied into `out` (the release's `maven/` directory, a Maven repository
 * layout with maven-metadata.xml and checksums). Resolves to the artifacts.
 */
export async function javaArtifacts(repo: string, version: string, out: string, opts: JavaArtifactsOptions = {}): Promise<JavaArtifact[]> {
  const built = await buildJavaArtifacts(repo, version, opts);
  await rm(out, { recursive: true, force: true });
  await cp(built, out, { recursive: true });
  const artifacts: JavaArtifact[] = [];
  for (const a of JAVA_ARTIFACTS) {
    const at = join(MAVEN_GROUP.replace(/\./g, '/'), a.artifactId, version);
    const names = await readdir(join(out, at)).catch(() => [] as string[]);
    const files = [`${a.artifactId}-${version}.jar`, `${a.artifactId}-${version}-sources.jar`, `${a.artifactId}-${version}.pom`];
    const missing = files.filter((f) => !names.includes(f));
    if (missing.length > 0) throw new Error(`mvn deploy left no ${missing.join(', ')} in ${join(out, at)}`);
    artifacts.push({ groupId: MAVEN_GROUP, artifactId: a.artifactId, version, files: files.map((f) => join(at, f)) });
  }
  return artifacts;
}
