/**
 * The release's packages (tools/release/packages.ts), the pure parts: the
 * publish commands printed for what was built, and the table of npm
 * packages agreeing with the repository (each package's name, and the
 * script that packs it). Building and installing them is
 * test/integration/release/packages.test.ts.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO } from '../../../tools/release/files.js';
import { NPM_PACKAGES, publishPackages, type PackageArtifact } from '../../../tools/release/packages.js';

const P = '/r/release/v0.2.0/packages';
const ALL: PackageArtifact[] = [
  { ecosystem: 'npm', name: '@grpc-ccm/provider-sdk', file: `${P}/grpc-ccm-provider-sdk-0.2.0.tgz` },
  { ecosystem: 'npm', name: '@grpc-ccm/provider-conformance', file: `${P}/grpc-ccm-provider-conformance-0.2.0.tgz` },
  { ecosystem: 'pypi', name: 'ccm-provider-sdk', file: `${P}/ccm_provider_sdk-0.2.0.tar.gz` },
  { ecosystem: 'pypi', name: 'ccm-provider-sdk', file: `${P}/ccm_provider_sdk-0.2.0-py3-none-any.whl` },
  { ecosystem: 'proto', name: 'ccm-provider-proto', file: `${P}/ccm-provider-proto-0.2.0.tar.gz` },
];

const cases: [string, PackageArtifact[], string[]][] = [
  [
    'every package: one npm publish each, one twine upload of sdist and wheel, the protocol archive on the GitHub release',
    ALL,
    [
      `npm publish --access public ${P}/grpc-ccm-provider-sdk-0.2.0.tgz`,
      `npm publish --access public ${P}/grpc-ccm-provider-conformance-0.2.0.tgz`,
      `twine upload ${P}/ccm_provider_sdk-0.2.0.tar.gz ${P}/ccm_provider_sdk-0.2.0-py3-none-any.whl`,
      `gh release create v0.2.0 --title v0.2.0 ${P}/ccm-provider-proto-0.2.0.tar.gz`,
    ],
  ],
  ['no packages built (packages: false): nothing to publish', [], []],
  ['npm only: no twine, no GitHub release', ALL.slice(0, 1), [`npm publish --access public ${P}/grpc-ccm-provider-sdk-0.2.0.tgz`]],
];

for (const [name, artifacts, want] of cases) {
  test(`publishPackages: ${name}`, (t) => {
    t.deepEqual(publishPackages('v0.2.0', artifacts), want);
  });
}

test("each npm package of the release is its directory's package.json, packed by a script of the root package.json", async (t) => {
  const root = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  for (const p of NPM_PACKAGES) {
    const manifest = JSON.parse(await readFile(join(REPO, p.dir, 'package.json'), 'utf8')) as { name: string };
    t.is(manifest.name, p.name, p.dir);
    t.regex(root.scripts[p.script] ?? '', new RegExp(`npm pack \\./${p.dir}\\b`), p.script);
  }
});
