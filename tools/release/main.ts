/**
 * `npm run release -- vX.Y.Z [options]`: makes release vX.Y.Z of this
 * checkout (docs/releasing.md): rewrites the release commit's files (CHANGELOG,
 * versions, the bridge's go.mod, the manifests pinned to the built digests),
 * builds every image for amd64 and arm64 into OCI layouts under
 * release/vX.Y.Z/images, writes the tagged Go modules into
 * release/vX.Y.Z/goproxy, the Java artifacts into release/vX.Y.Z/maven and
 * the npm, PyPI and protocol packages into release/vX.Y.Z/packages, and prints what to commit, tag, push and upload. Exits 1
 * with one line on any error.
 */
import { Command } from 'commander';
import { ARCHES, type Arch } from './images.js';
import { publishCommands, release, RELEASED_IMAGES } from './release.js';

const program = new Command()
  .name('release')
  .argument('<version>', 'the version to release, vMAJOR.MINOR.PATCH')
  .option('--images <keys>', `comma-separated images to build (default all: ${RELEASED_IMAGES.map((i) => i.key).join(',')})`)
  .option('--arch <arches>', `comma-separated architectures (default ${ARCHES.join(',')})`)
  .option('--out <dir>', 'output directory (default release/<version>)')
  .option('--date <yyyy-mm-dd>', "the CHANGELOG entry's date (default today, UTC)")
  .option('--no-java', 'build no Java artifacts (default: dev.ccm:ccm-provider-proto and dev.ccm:ccm-provider-sdk with Maven)')
  .action(async (version: string, o: { images?: string; arch?: string; out?: string; date?: string; java: boolean }) => {
    const arches = o.arch?.split(',').map((a) => a.trim()) as Arch[] | undefined;
    const bad = (arches ?? []).filter((a) => !ARCHES.includes(a));
    if (bad.length > 0) throw new Error(`unknown architecture(s) ${bad.join(', ')}; known: ${ARCHES.join(', ')}`);
    const r = await release({
      version,
      images: o.images?.split(',').map((k) => k.trim()),
      arches,
      out: o.out,
      date: o.date,
      java: o.java ? {} : false,
      say: (line) => process.stderr.write(`[release] ${line}\n`),
    });
    process.stdout.write(
      `Release ${r.version} is ready in ${r.out}. Files changed:\n${r.changed.map((f) => `  ${f}\n`).join('')}\nPublish it:\n${publishCommands(r)
        .map((c) => `  ${c}\n`)
        .join('')}`,
    );
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`release: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
