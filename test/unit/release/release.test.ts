/**
 * The release command's pure parts (tools/release/release.ts) as tables, and
 * the development setup of the Go modules it relies on: the bridge's go.mod
 * has no replace and requires the SDK at the version sdk/go/go.work replaces
 * with the directory next to it. The release itself (images, manifests, Go
 * proxy) is test/integration/release/release.test.ts.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO } from '../../../tools/release/files.js';
import { HOST_IMAGE, machineArch, nodeImage, providerImage } from '../../../tools/release/images.js';
import { aggregatorPom, JAVA_ARTIFACTS, JAVA_POMS, pomAt } from '../../../tools/release/maven.js';
import {
  changelogForRelease,
  GO_MODULES,
  installsAt,
  mavenDeployCommand,
  parseVersion,
  pinImages,
  RELEASED_IMAGES,
  releaseImageName,
  requireAt,
} from '../../../tools/release/release.js';

const D = 'sha256:' + 'a'.repeat(64);
const OLD = 'sha256:' + 'b'.repeat(64);
const PINS = new Map([['ghcr.io/grpc-ccm/cloud-controller-manager', `ghcr.io/grpc-ccm/cloud-controller-manager:v0.2.0@${D}`]]);

const pinCases: [string, string, string][] = [
  [
    'a tag',
    '          image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.1.0',
    `          image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.2.0@${D}`,
  ],
  [
    'a tag and an older digest',
    `  image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.1.0@${OLD}`,
    `  image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.2.0@${D}`,
  ],
  ['no tag', '  image: ghcr.io/grpc-ccm/cloud-controller-manager', `  image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.2.0@${D}`],
  [
    'quoted, in a list',
    '  - image: "ghcr.io/grpc-ccm/cloud-controller-manager:v0.1.0"',
    `  - image: "ghcr.io/grpc-ccm/cloud-controller-manager:v0.2.0@${D}"`,
  ],
  [
    'a trailing comment',
    '  image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.1.0 # the host',
    `  image: ghcr.io/grpc-ccm/cloud-controller-manager:v0.2.0@${D} # the host`,
  ],
  ['another repository (not built)', '  image: ghcr.io/grpc-ccm/ccm-provider-aws:v0.1.0', '  image: ghcr.io/grpc-ccm/ccm-provider-aws:v0.1.0'],
  [
    'a repository whose name only starts alike',
    '  image: ghcr.io/grpc-ccm/cloud-controller-manager-local:v0.1.0',
    '  image: ghcr.io/grpc-ccm/cloud-controller-manager-local:v0.1.0',
  ],
  ['not an image: line', '# ghcr.io/grpc-ccm/cloud-controller-manager:v0.1.0', '# ghcr.io/grpc-ccm/cloud-controller-manager:v0.1.0'],
];

for (const [name, input, want] of pinCases) {
  test(`pinImages: ${name}`, (t) => {
    t.is(pinImages(input, PINS), want);
  });
}

test("releaseImageName: the machine's architecture under the tests' own names (one cached image of the same inputs), another with its architecture", (t) => {
  const other = machineArch() === 'amd64' ? 'arm64' : 'amd64';
  const rows: [string, string, string][] = [
    [releaseImageName(nodeImage('host'), machineArch()), HOST_IMAGE.name, 'the host image as the image test names it'],
    [releaseImageName(providerImage('aws'), machineArch()), 'ccm-provider-aws', 'the AWS provider image as the image test names it'],
    [releaseImageName(nodeImage('host'), other), `ccm-host-${other}`, 'another architecture'],
  ];
  for (const [got, want, what] of rows) t.is(got, want, what);
  t.is(RELEASED_IMAGES.find((i) => i.key === 'host')!.spec.name, HOST_IMAGE.name, "the released host image is the image test's spec");
});

test('changelogForRelease: Unreleased (whatever follows it on the line) becomes the version and date; a new empty Unreleased above', (t) => {
  const input = ['# Changelog', '', '## [Unreleased] (0.1.0)', '', '### Added', '- a thing', '', '## [0.0.9] - 2025-01-01', '- old', ''].join('\n');
  t.is(
    changelogForRelease(input, '0.2.0', '2026-01-02'),
    [
      '# Changelog',
      '',
      '## [Unreleased]',
      '',
      '## [0.2.0] - 2026-01-02',
      '',
      '### Added',
      '- a thing',
      '',
      '## [0.0.9] - 2025-01-01',
      '- old',
      '',
    ].join('\n'),
  );
});

const refused: [string, string, RegExp][] = [
  ['no Unreleased section', '# Changelog\n\n## [0.1.0] - 2025-01-01\n- x\n', /no "## \[Unreleased\]" section/],
  ['an empty Unreleased', '# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2025-01-01\n- x\n', /is empty/],
];
for (const [name, input, err] of refused) {
  test(`changelogForRelease refuses ${name}`, (t) => {
    t.throws(() => changelogForRelease(input, '0.2.0', '2026-01-02'), { message: err });
  });
}

const versions: [string, string | RegExp][] = [
  ['v0.2.0', '0.2.0'],
  ['v1.10.3', '1.10.3'],
  ['0.2.0', /not vMAJOR\.MINOR\.PATCH/],
  ['v0.2', /not vMAJOR\.MINOR\.PATCH/],
  ['v0.2.0-rc.1', /not vMAJOR\.MINOR\.PATCH/],
];
for (const [input, want] of versions) {
  test(`parseVersion(${input})`, (t) => {
    if (typeof want === 'string') t.is(parseVersion(input), want);
    else t.throws(() => parseVersion(input), { message: want });
  });
}

test('the bridge has no replace and requires the SDK at the version sdk/go/go.work gives the SDK next to it', async (t) => {
  const [sdk, bridge] = GO_MODULES;
  const mod = await readFile(join(REPO, bridge.dir, 'go.mod'), 'utf8');
  t.notRegex(mod, /^replace\b/m, 'a replace in the bridge would be ignored by consumers and refused by go install');
  const required = new RegExp(`^\\s*${sdk.path.replace(/\./g, '\\.')} (v\\S+)$`, 'm').exec(mod)?.[1];
  t.truthy(required);
  const work = await readFile(join(REPO, sdk.dir, 'go.work'), 'utf8');
  t.regex(work, /^use \(\n\t\.\n\t\.\/bridge\n\)$/m);
  t.is(new RegExp(`^replace ${sdk.path.replace(/\./g, '\\.')} (v\\S+) => \\./$`, 'm').exec(work)?.[1], required);
});

const SDK = 'github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go';
const BRIDGE = `${SDK}/bridge`;
const requireCases: [string, string, string][] = [
  ['a require line', `require ${SDK} v0.0.0\n`, `require ${SDK} v0.2.0\n`],
  ['in a block, indirect kept', `require (\n\t${SDK} v0.1.0 // indirect\n)\n`, `require (\n\t${SDK} v0.2.0 // indirect\n)\n`],
  ['a pseudo-version', `\t${BRIDGE} v0.0.0-00010101000000-000000000000\n`, `\t${BRIDGE} v0.2.0\n`],
  ['both modules, each its own line', `\t${SDK} v0.0.0\n\t${BRIDGE} v0.0.0\n`, `\t${SDK} v0.2.0\n\t${BRIDGE} v0.2.0\n`],
  ['a replace is left alone (development)', `replace ${SDK} => ../../sdk/go\n`, `replace ${SDK} => ../../sdk/go\n`],
  ['a module whose path only starts alike', `\t${SDK}x v0.0.0\n`, `\t${SDK}x v0.0.0\n`],
];

for (const [name, input, want] of requireCases) {
  test(`requireAt: ${name}`, (t) => {
    t.is(requireAt(input, [SDK, BRIDGE], 'v0.2.0'), want);
  });
}

const installCases: [string, string, string][] = [
  ['go mod edit of the SDK', `go mod edit -require=${SDK}@v0.1.0`, `go mod edit -require=${SDK}@v0.2.0`],
  ['go get of the bridge', `go get ${BRIDGE}@v0.1.0`, `go get ${BRIDGE}@v0.2.0`],
  ["a module's tag", 'resolves the tag `sdk/go/v0.1.0`.', 'resolves the tag `sdk/go/v0.2.0`.'],
  ['pip', 'pip install "ccm-provider-sdk==0.1.0"', 'pip install "ccm-provider-sdk==0.2.0"'],
  ['an npm pack tarball', 'npm install ./grpc-ccm-provider-sdk-0.1.0.tgz', 'npm install ./grpc-ccm-provider-sdk-0.2.0.tgz'],
  [
    'a Maven dependency of ours',
    '<groupId>dev.ccm</groupId>\n  <artifactId>ccm-provider-sdk</artifactId>\n  <version>0.1.0</version>',
    '<groupId>dev.ccm</groupId>\n  <artifactId>ccm-provider-sdk</artifactId>\n  <version>0.2.0</version>',
  ],
  [
    "the vendor's own Maven project stays",
    '<groupId>com.example.acme</groupId>\n  <artifactId>ccm-provider-acme</artifactId>\n  <version>0.1.0</version>',
    '<groupId>com.example.acme</groupId>\n  <artifactId>ccm-provider-acme</artifactId>\n  <version>0.1.0</version>',
  ],
  ['a kustomize ref', 'deploy/providers/aws?ref=v0.1.0', 'deploy/providers/aws?ref=v0.2.0'],
  [
    '"Until X is published"',
    '# Until v0.1.0 is published: take the SDK from the clone.',
    '# Until v0.2.0 is published: take the SDK from the clone.',
  ],
  ["a vendor's own version stays", 'VendorVersion: "0.1.0"', 'VendorVersion: "0.1.0"'],
  ['history stays', 'Before 0.1.0 ours was named', 'Before 0.1.0 ours was named'],
  [
    "another artifact's version stays",
    '<artifactId>gson</artifactId>\n  <version>0.1.0</version>',
    '<artifactId>gson</artifactId>\n  <version>0.1.0</version>',
  ],
  ['a longer version stays', `go get ${SDK}@v0.1.0-rc.1`, `go get ${SDK}@v0.1.0-rc.1`],
];

for (const [name, input, want] of installCases) {
  test(`installsAt: ${name}`, (t) => {
    t.is(installsAt(input, '0.1.0', '0.2.0'), want);
  });
}

const POM = `<project>
  <groupId>dev.ccm</groupId>
  <artifactId>ccm-provider-sdk</artifactId>
  <version>0.1.0</version>
  <dependencies>
    <dependency>
      <groupId>dev.ccm</groupId>
      <artifactId>ccm-provider-proto</artifactId>
      <version>0.1.0</version>
    </dependency>
    <dependency>
      <groupId>io.grpc</groupId>
      <artifactId>grpc-stub</artifactId>
      <version>1.70.0</version>
    </dependency>
  </dependencies>
</project>`;

test('pomAt: every version of a ccm-provider-* artifact, declared or depended on, moves; others stay; idempotent', (t) => {
  const at = pomAt(POM, '0.2.0');
  const versions = [...at.matchAll(/<artifactId>([\w.-]+)<\/artifactId>\s*<version>([^<]*)<\/version>/g)].map((m) => [m[1], m[2]]);
  t.deepEqual(versions, [
    ['ccm-provider-sdk', '0.2.0'],
    ['ccm-provider-proto', '0.2.0'],
    ['grpc-stub', '1.70.0'],
  ]);
  t.is(pomAt(at, '0.2.0'), at);
});

const AGGREGATORS: { what: string; pom: string; want: { artifactId: string; modules: string[]; properties: string[]; plugins: string[] } }[] = [
  {
    what: "the test suite's reactor: stubs, SDK and example, nothing else",
    pom: aggregatorPom('ccm-java-build', ['sdk/java-proto', 'sdk/java', 'plugins/java']),
    want: { artifactId: 'ccm-java-build', modules: ['sdk/java-proto', 'sdk/java', 'plugins/java'], properties: [], plugins: [] },
  },
  {
    what: "the release's: stubs and SDK, itself not deployed, install and deploy plugins pinned",
    pom: aggregatorPom('ccm-java-release', ['sdk/java-proto', 'sdk/java'], {
      properties: { 'maven.deploy.skip': 'true' },
      plugins: { 'maven-install-plugin': '3.1.3', 'maven-deploy-plugin': '3.1.3' },
    }),
    want: {
      artifactId: 'ccm-java-release',
      modules: ['sdk/java-proto', 'sdk/java'],
      properties: ['maven.deploy.skip=true'],
      plugins: ['org.apache.maven.plugins:maven-install-plugin:3.1.3', 'org.apache.maven.plugins:maven-deploy-plugin:3.1.3'],
    },
  },
];

/** The texts of every `<tag>` in `xml`, in order. */
const texts = (xml: string, tag: string) => [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) => m[1]!);
/** What lies inside the first `<tag>` block of `xml` ('' if none). */
const block = (xml: string, tag: string) => xml.split(`<${tag}>`)[1]?.split(`</${tag}>`)[0] ?? '';

for (const c of AGGREGATORS)
  test(`aggregatorPom: ${c.what}`, (t) => {
    t.true(c.pom.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<project xmlns="http://maven.apache.org/POM/4.0.0">\n'));
    t.true(c.pom.endsWith('</project>\n'));
    // The project's own coordinates come first (the plugins' follow).
    t.deepEqual(
      ['modelVersion', 'groupId', 'artifactId', 'version', 'packaging'].map((tag) => texts(c.pom, tag)[0]),
      ['4.0.0', 'dev.ccm.build', c.want.artifactId, '0', 'pom'],
    );
    t.deepEqual(texts(c.pom, 'module'), c.want.modules);
    t.deepEqual(
      [...block(c.pom, 'properties').matchAll(/<([\w.-]+)>([^<]*)<\/\1>/g)].map((m) => `${m[1]}=${m[2]}`),
      c.want.properties,
    );
    t.deepEqual(
      block(c.pom, 'plugins')
        .split('<plugin>')
        .slice(1)
        .map((p) => ['groupId', 'artifactId', 'version'].map((tag) => texts(p, tag)[0]).join(':')),
      c.want.plugins,
    );
  });

test('the release sets the version in every released Java module and in the example that depends on the SDK; the stubs build first', (t) => {
  t.deepEqual(
    JAVA_ARTIFACTS.map((a) => a.artifactId),
    ['ccm-provider-proto', 'ccm-provider-sdk'],
  );
  t.deepEqual([...JAVA_POMS], ['sdk/java-proto/pom.xml', 'sdk/java/pom.xml', 'plugins/java/pom.xml']);
});

test('mavenDeployCommand: one deploy-file of the jar with its pom and sources jar, to the repository the maintainer names', (t) => {
  const a = {
    groupId: 'dev.ccm',
    artifactId: 'ccm-provider-proto',
    version: '0.2.0',
    files: ['jar', 'sources', 'pom'].map((k) => `dev/ccm/ccm-provider-proto/0.2.0/${k}`),
  };
  t.is(
    mavenDeployCommand('/r/maven', a),
    'mvn -B org.apache.maven.plugins:maven-deploy-plugin:3.1.3:deploy-file -Durl="$MAVEN_REPOSITORY_URL" -DrepositoryId="$MAVEN_REPOSITORY_ID" ' +
      '-DpomFile=/r/maven/dev/ccm/ccm-provider-proto/0.2.0/pom -Dfile=/r/maven/dev/ccm/ccm-provider-proto/0.2.0/jar -Dsources=/r/maven/dev/ccm/ccm-provider-proto/0.2.0/sources',
  );
});
