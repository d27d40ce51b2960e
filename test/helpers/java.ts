/**
 * The Java SDK (sdk/java, on the protocol stubs of sdk/java-proto) and the
 * Java example provider (plugins/java) built by Maven on first use and cached
 * outside the repository:
 *   ~/.cache/ccm-host/providers/java-<hash>/ccm-provider-memjava (the launcher)
 *   ~/.cache/ccm-host/providers/java-<hash>/lib/*.jar (the provider, the SDK, their dependencies)
 *   ~/.cache/ccm-host/providers/java-<hash>/surefire-reports/ (the SDK's JUnit results)
 * The hash covers sdk/java-proto, sdk/java, plugins/java and proto/ccm (the
 * stubs are generated in the build), the aggregator pom, the Java and Maven versions. Maven works on a copy of those
 * sources (nothing is written into the checkout) with a private local
 * repository, ~/.cache/ccm-host/maven/repository, so a warm run does no
 * network and a cached one runs no Maven at all. Built under `nice -n 19`
 * (it competes with the tests for 2 cores); the SDK's unit tests run in the build.
 *
 * The hash is computed once per run: the runner (test/builds.ts) hands the
 * directory it built to the test workers in JAVA_DIR_ENV, so a file edited
 * under sdk/java while a Java test runs cannot make a worker look for (and
 * build) another directory than the one the runner built.
 */
import { cp, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { buildOnce, exists } from './build-once.js';
import { aggregatorPom, javaToolVersions } from '../../tools/release/maven.js';
import { cacheRoot, filesUnder, hashFiles, REPO, type ProviderUnderTest } from './providers.js';

export const JAVA_SDK_DIR = join(REPO, 'sdk', 'java');
/** The protocol stubs' Maven module (dev.ccm:ccm-provider-proto), a dependency of the SDK. */
export const JAVA_PROTO_DIR = join(REPO, 'sdk', 'java-proto');
export const JAVA_PLUGIN_DIR = join(REPO, 'plugins', 'java');
export const PROTO_CCM_DIR = join(REPO, 'proto', 'ccm');

/** The private Maven repository of the test builds (shared by every hash: artifacts are immutable). */
export function mavenRepository(): string {
  return join(cacheRoot(), '..', 'maven', 'repository');
}

/** Whether `rel` (inside sdk/java-proto, sdk/java or plugins/java) is a build input: not Maven's output. */
function javaSource(rel: string): boolean {
  return !rel.startsWith('target/') && !rel.includes('/target/');
}

/** The aggregator that builds the stubs, the SDK and the example in one reactor (no `mvn install` of either needed). */
const AGGREGATOR = aggregatorPom('ccm-java-build', ['sdk/java-proto', 'sdk/java', 'plugins/java']);

/** The runner's javaProviderDir, in the test workers' environment. */
export const JAVA_DIR_ENV = 'CCM_TEST_JAVA_DIR';

/** The runner's javaToolVersions (as JSON: they hold NUL bytes), in the test workers' environment. */
export const JAVA_TOOLS_ENV = 'CCM_TEST_JAVA_TOOLS';

/**
 * javaToolVersions, the runner's when it handed them over (JAVA_TOOLS_ENV):
 * a worker then starts no JVM to read them (two, seconds on a loaded
 * machine), neither here nor in the release tooling's Java build
 * (tools/release/maven.ts reads the same once-per-process value).
 */
export function testJavaToolVersions(): Promise<string> {
  const given = process.env[JAVA_TOOLS_ENV];
  return javaToolVersions(given ? (JSON.parse(given) as string) : undefined);
}

let providerDir: Promise<string> | undefined;

/**
 * The cache directory of the Java build: the runner's (JAVA_DIR_ENV) when it
 * is there, else hashed from the current sources and tools. Once per process
 * (the runner's readiness check and its build agree too).
 */
export function javaProviderDir(): Promise<string> {
  return (providerDir ??= (async () => {
    const given = process.env[JAVA_DIR_ENV];
    // Not there: the runner's build failed or never ran; this process builds what it hashes.
    if (given && (await exists(given))) return given;
    return hashedJavaProviderDir();
  })());
}

/** The cache directory of the Java build for the current sources and tools. */
async function hashedJavaProviderDir(): Promise<string> {
  const parts = await Promise.all([
    hashFiles(JAVA_PROTO_DIR, await filesUnder(JAVA_PROTO_DIR, javaSource), ''),
    hashFiles(JAVA_SDK_DIR, await filesUnder(JAVA_SDK_DIR, javaSource), ''),
    hashFiles(JAVA_PLUGIN_DIR, await filesUnder(JAVA_PLUGIN_DIR, javaSource), ''),
    hashFiles(PROTO_CCM_DIR, await filesUnder(PROTO_CCM_DIR, (rel) => rel.endsWith('.proto')), ''),
  ]);
  return join(cacheRoot(), `java-${await hashFiles(JAVA_SDK_DIR, [], `${parts.join('\0')}\0${AGGREGATOR}\0${await testJavaToolVersions()}`)}`);
}

let built: Promise<string> | undefined;

/**
 * Builds (once per input hash) and returns javaProviderDir: `mvn package`
 * of sdk/java-proto, sdk/java and plugins/java, the SDK's JUnit tests included. `say` gets a
 * line when it starts and when it is done, with its time.
 */
export function javaBuild(say: (line: string) => void = () => undefined): Promise<string> {
  return (built ??= (async () => {
    const dir = await javaProviderDir();
    await buildOnce(dir, async (tmp) => {
      const t0 = Date.now();
      say(`building the Java SDK and ccm-provider-memjava with Maven into ${dir}`);
      const src = join(tmp, 'src');
      const skipTarget = (from: string) => !/\/target(\/|$)/.test(from.slice(REPO.length));
      await cp(JAVA_PROTO_DIR, join(src, 'sdk', 'java-proto'), { recursive: true, filter: skipTarget });
      await cp(JAVA_SDK_DIR, join(src, 'sdk', 'java'), { recursive: true, filter: skipTarget });
      await cp(JAVA_PLUGIN_DIR, join(src, 'plugins', 'java'), { recursive: true, filter: skipTarget });
      await cp(PROTO_CCM_DIR, join(src, 'proto', 'ccm'), { recursive: true });
      await writeFile(join(src, 'pom.xml'), AGGREGATOR);
      await mkdir(mavenRepository(), { recursive: true });
      await execa('nice', ['-n', '19', 'mvn', '-B', '-q', `-Dmaven.repo.local=${mavenRepository()}`, 'package'], { cwd: src, all: true }).catch(
        (e: { all?: string }) => {
          throw new Error(`mvn package of sdk/java-proto, sdk/java and plugins/java failed:\n${(e.all ?? String(e)).slice(-6000)}`);
        },
      );
      await cp(join(src, 'plugins', 'java', 'target', 'lib'), join(tmp, 'lib'), { recursive: true });
      await cp(join(src, 'plugins', 'java', 'ccm-provider-memjava'), join(tmp, 'ccm-provider-memjava'));
      await cp(join(src, 'sdk', 'java', 'target', 'surefire-reports'), join(tmp, 'surefire-reports'), { recursive: true });
      say(`the Java SDK and ccm-provider-memjava built in ${Math.round((Date.now() - t0) / 1000)} s`);
    });
    return dir;
  })());
}

/** The launcher of the built Java example provider (exec mode: --plugin-path; sidecar: with --endpoint). */
export async function javaProviderLauncher(): Promise<string> {
  return join(await javaBuild(), 'ccm-provider-memjava');
}

/** The built classpath entries (the SDK, the example, their dependencies). */
export async function javaClasspath(): Promise<string[]> {
  const lib = join(await javaBuild(), 'lib');
  return (await readdir(lib)).filter((f) => f.endsWith('.jar')).map((f) => join(lib, f));
}

/** The Java example provider (plugins/java); its providerIDs are memjava://<instance id>. */
export const JAVA_PROVIDER: ProviderUnderTest = { name: 'memjava', executable: () => javaProviderLauncher() };
