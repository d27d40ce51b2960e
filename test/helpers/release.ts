/**
 * Releases made by the release command (tools/release) on copies of this
 * checkout, for the release test. Each copy holds the files git would commit
 * (tracked, and new unignored ones) and every file the host image is built
 * from. Two fixtures, each with a fixed CHANGELOG date:
 *
 * | fixture  | version                                | images                          | shows                                    |
 * |----------|----------------------------------------|---------------------------------|------------------------------------------|
 * | `images` | the checkout's own (package.json's)    | the host, for every architecture | the OCI index, each architecture's image, the pinned manifests |
 * | `next`   | the next minor version                 | none                            | the CHANGELOG, every version, the Go modules, the Java artifacts |
 *
 * Releasing the checkout's own version changes no file an image is built
 * from, so the `images` fixture's host image of the machine's architecture
 * has the image test's inputs: it is the very image the image test builds
 * (one cached build, test/helpers/images.ts), and a fresh machine pays only
 * for the other architecture. The runner makes the `images` fixture before
 * the tests that need it (prepareRelease, the late build 'release' in
 * test/builds.ts) so that a cold build does not spend a test's timeout,
 * and builds the `next` fixture's Java artifacts (their Maven build is
 * cached by its inputs at that version, tools/release/maven.ts) for the
 * same reason. Maven uses the suite's private repository
 * (test/helpers/java.ts), so the `images` fixture builds no Java artifacts:
 * one Maven build, not two.
 */
import { rm } from 'node:fs/promises';
import { exists } from '../../tools/release/build-once.js';
import { REPO } from '../../tools/release/files.js';
import { ARCHES, archBases, archBaseTags, basesBuilt, ensureImageTools, imageStore, imageTag, machineArch } from '../../tools/release/images.js';
import { buildJavaArtifacts, javaArtifactsDir } from '../../tools/release/maven.js';
import { release, releaseImageName, RELEASED_IMAGES, type ReleaseResult } from '../../tools/release/release.js';
import { prepareImageBases } from './images.js';
import { mavenRepository, testJavaToolVersions } from './java.js';
import { copyCheckout, currentVersion, nextVersion, RELEASE_DATE } from './release-checkout.js';

export { currentVersion, nextVersion, RELEASE_DATE };

/** The images the `images` fixture builds (each for every architecture). */
export const RELEASE_IMAGES = ['host'];

/** The two fixtures (see the top). */
export type FixtureKind = 'images' | 'next';

export interface ReleaseFixture {
  /** The released copy of the checkout. */
  repo: string;
  result: ReleaseResult;
  remove(): Promise<void>;
}

/** Makes the fixture release `kind` (see the top). */
export async function releaseFixture(kind: FixtureKind, say: (line: string) => void = () => undefined): Promise<ReleaseFixture> {
  const repo = await copyCheckout();
  try {
    const [version, images] = kind === 'images' ? [await currentVersion(), RELEASE_IMAGES] : [await nextVersion(), []];
    const java = kind === 'images' ? false : { localRepository: mavenRepository() };
    // The runner's Java and Maven versions, if it handed them over: the release's Java build key then starts no JVM.
    if (java) await testJavaToolVersions();
    const result = await release({ version, repo, images, arches: ARCHES, date: RELEASE_DATE, packages: false, java, say });
    return { repo, result, remove: () => rm(repo, { recursive: true, force: true }) };
  } catch (err) {
    await rm(repo, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Whether the `images` fixture would build no image (every architecture's
 * bases and RELEASE_IMAGES' images of the checkout's inputs are marked
 * built; buildah need not be installed) and the `next` fixture no Java
 * artifact. Builds nothing.
 */
export async function releaseBuilt(): Promise<boolean> {
  if (!(await exists(await javaArtifactsDir(REPO, (await nextVersion()).slice(1))))) return false;
  const store = await imageStore();
  for (const arch of ARCHES) if (!(await basesBuilt(store, arch))) return false;
  for (const img of RELEASED_IMAGES.filter((i) => RELEASE_IMAGES.includes(i.key)))
    for (const arch of ARCHES) {
      const { marker } = await imageTag(store, img.spec, await archBaseTags(arch), { arch, name: releaseImageName(img.spec, arch) });
      if (!(await exists(marker))) return false;
    }
  return true;
}

/** Whether the `images` fixture's bases of every architecture are built (prepareReleaseBases would build nothing). Builds nothing. */
export async function releaseBasesBuilt(): Promise<boolean> {
  const store = await imageStore();
  for (const arch of ARCHES) if (!(await basesBuilt(store, arch))) return false;
  return true;
}

/**
 * The bases of every architecture the `images` fixture builds for: the
 * machine's first (the runner's 'image-bases' build, the same promise in
 * this process: one apt-get at a time), then mmdebstrap and the other
 * architectures' (the Debian packages of that architecture, Node's official
 * binary for it). Downloads and copies, no compile: the runner starts it
 * beside the Go builds (the late build 'release-bases' in test/builds.ts),
 * so the release build in the compile queue finds them built.
 */
export async function prepareReleaseBases(say: (line: string) => void): Promise<void> {
  await prepareImageBases(say);
  await ensureImageTools(say, true);
  const store = await imageStore();
  for (const arch of ARCHES) if (arch !== machineArch()) await archBases(store, say, arch);
}

/** Builds what the release test needs before it runs (the `images` fixture's images, the `next` fixture's Java artifacts) and prints the time. */
export async function prepareRelease(say: (line: string) => void): Promise<void> {
  const t0 = Date.now();
  const f = await releaseFixture('images', say);
  await f.remove();
  // The poms at the next version are what the `next` fixture's copy holds (the build rewrites them the same way).
  await buildJavaArtifacts(REPO, (await nextVersion()).slice(1), { localRepository: mavenRepository(), say });
  say(`release fixture ready in ${Math.round((Date.now() - t0) / 1000)} s`);
}
