#!/usr/bin/env node
/**
 * Packs the provider protocol as a versioned archive that vendors in any
 * language can consume without this repository:
 * `ccm-provider-proto-<version>.tar.gz` holding `ccm-provider-proto-<version>/`
 * with a `buf.yaml` (a buf module rooted there), the `.proto` files of
 * `ccm.provider.v1`, the test-only `ccm.provider.testing.v1` and the
 * wire-compatible `google.rpc` copies, the contract (`protocol.md`) and a
 * `VERSION` file (package version, protocol major and minor).
 *
 *   node dist/tools/pack-proto.js [--out DIR]   # npm run pack:proto
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { CORE_PROTOCOL_VERSION, PROTOCOL_MINOR } from '../sdk/protocol.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The archive's buf module: the repository's lint rules, without the repository's paths. */
const BUF_YAML = `version: v2
lint:
  use:
    - STANDARD
  ignore:
    # Minimal copies of the google.rpc wire messages (status, error details); their names are fixed.
    - google
breaking:
  use:
    - FILE
`;

/** Writes the archive of the checkout `repo` (default this one) at its package.json version into `outDir` and returns its path. */
export async function packProto(outDir: string, repo = REPO): Promise<string> {
  const { version } = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as { version: string };
  const name = `ccm-provider-proto-${version}`;
  const staging = await mkdtemp(join(tmpdir(), 'ccm-proto-pack-'));
  try {
    const root = join(staging, name);
    await cp(join(repo, 'proto', 'ccm'), join(root, 'ccm'), { recursive: true });
    await cp(join(repo, 'proto', 'google'), join(root, 'google'), { recursive: true });
    await cp(join(repo, 'docs', 'protocol.md'), join(root, 'protocol.md'));
    await writeFile(join(root, 'buf.yaml'), BUF_YAML);
    await writeFile(join(root, 'VERSION'), `package ${version}\nprotocol ccm.provider.v${CORE_PROTOCOL_VERSION}, minor ${PROTOCOL_MINOR}\n`);
    const archive = resolve(outDir, `${name}.tar.gz`);
    await execa('tar', ['-czf', archive, '-C', staging, name]);
    return archive;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--out');
  const out = i > 0 ? process.argv[i + 1] : process.cwd();
  if (!out) throw new Error('--out needs a directory');
  process.stdout.write(`${await packProto(out)}\n`);
}
