/**
 * The protocol as a versioned archive (`npm run pack:proto`,
 * tools/pack-proto.ts): unpacked in an empty directory, it is a buf module of
 * its own that builds and lints without this repository, holds exactly the
 * repository's .proto files and the contract, and names its versions.
 */
import test from 'ava';
import { mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { CORE_PROTOCOL_VERSION, PROTOCOL_MINOR } from '../../../sdk/protocol.js';
import { REPO } from '../../helpers/providers.js';

const PACK = fileURLToPath(new URL('../../../tools/pack-proto.js', import.meta.url));
const BUF = join(REPO, 'node_modules', '.bin', 'buf');

async function protoFiles(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.proto')).sort();
}

test('the protocol archive is a buf module that builds and lints on its own, with the repository protos, the contract and its versions', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-proto-archive-'));
  // npm run pack:proto is `npm run build && node dist/tools/pack-proto.js`; the tests run from the built tree.
  const archive = (await execa(process.execPath, [PACK, '--out', dir])).stdout.trim();
  const { version } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { version: string };
  t.is(relative(dir, archive), `ccm-provider-proto-${version}.tar.gz`);
  const unpacked = join(dir, 'unpacked');
  await mkdir(unpacked);
  await execa('tar', ['-xzf', archive, '-C', unpacked]);
  const root = join(unpacked, `ccm-provider-proto-${version}`);

  const files = await protoFiles(root);
  t.deepEqual(files, await protoFiles(join(REPO, 'proto')).then((all) => all.filter((f) => !f.startsWith('gen/') && !f.startsWith('baseline/'))));
  for (const f of files) t.true((await readFile(join(root, f))).equals(await readFile(join(REPO, 'proto', f))), f);
  t.true((await readFile(join(root, 'protocol.md'))).equals(await readFile(join(REPO, 'docs', 'protocol.md'))));
  t.is(
    await readFile(join(root, 'VERSION'), 'utf8'),
    `package ${version}\nprotocol ccm.provider.v${CORE_PROTOCOL_VERSION}, minor ${PROTOCOL_MINOR}\n`,
  );

  await execa(BUF, ['build', '-o', join(dir, 'image.binpb')], { cwd: root });
  const lint = await execa(BUF, ['lint'], { cwd: root, reject: false, all: true });
  t.is(lint.exitCode, 0, lint.all);
});
