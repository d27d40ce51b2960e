/**
 * Protocol stewardship: the Go and Python code committed under sdk/go/gen and
 * sdk/python/src/ccm is what buf / grpcio-tools generate from proto/ today,
 * and `buf breaking` against the recorded v1 baseline catches an incompatible
 * change.
 */
import test from 'ava';
import { cp, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { execa } from 'execa';
import { GO_SDK_DIR, PYTHON_SDK_DIR, pythonProviderInterpreter, REPO } from '../../helpers/providers.js';

const BUF = join(REPO, 'node_modules', '.bin', 'buf');
const BASELINE = join(REPO, 'proto', 'baseline', 'ccm.provider.v1.json');

async function tree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || e.name.endsWith('.pyc')) continue;
    const parent = (e as { parentPath?: string; path?: string }).parentPath ?? (e as { path?: string }).path ?? dir;
    out.set(relative(dir, join(parent, e.name)), await readFile(join(parent, e.name), 'utf8'));
  }
  return out;
}

function stale(committed: Map<string, string>, fresh: Map<string, string>): string[] {
  const names = new Set([...committed.keys(), ...fresh.keys()]);
  return [...names].filter((n) => committed.get(n) !== fresh.get(n)).sort();
}

test('sdk/go/gen is what buf generates from proto/ (run npm run generate:go)', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'ccm-gen-go-'));
  await execa(BUF, ['generate', '--template', 'buf.gen.yaml', '-o', out], { cwd: GO_SDK_DIR });
  t.deepEqual(stale(await tree(join(GO_SDK_DIR, 'gen')), await tree(join(out, 'gen'))), []);
});

test('sdk/python/src/ccm is what grpcio-tools generates from proto/ (run npm run generate:python)', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'ccm-gen-py-'));
  await execa(join(PYTHON_SDK_DIR, 'generate.sh'), [out], { env: { PYTHON: await pythonProviderInterpreter() } });
  t.deepEqual(stale(await tree(join(PYTHON_SDK_DIR, 'src', 'ccm')), await tree(join(out, 'ccm'))), []);
});

test('buf breaking against the v1 baseline passes today and names an incompatible change', async (t) => {
  await execa(BUF, ['breaking', '--against', BASELINE], { cwd: REPO });
  const copy = await mkdtemp(join(tmpdir(), 'ccm-breaking-'));
  await cp(join(REPO, 'proto'), join(copy, 'proto'), { recursive: true });
  await cp(join(REPO, 'buf.yaml'), join(copy, 'buf.yaml'));
  const file = join(copy, 'proto', 'ccm', 'provider', 'v1', 'instances.proto');
  await writeFile(file, (await readFile(file, 'utf8')).replace('bool exists = 1;', 'bool exists = 7;'));
  const r = await execa(BUF, ['breaking', '--against', BASELINE], { cwd: copy, reject: false });
  t.not(r.exitCode, 0);
  t.regex(r.stdout + r.stderr, /InstanceExistsResponse/);
});

test('docs/protocol.md carries the service reference generated from the current proto comments (run npm run docs:protocol)', async (t) => {
  const r = await execa(process.execPath, [join(REPO, 'dist', 'tools', 'protocol-doc.js'), '--check'], { reject: false });
  t.is(r.exitCode, 0, r.stderr);
});
