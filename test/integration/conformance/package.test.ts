/**
 * The conformance kit outside this repository: the repository's
 * `npm run pack:conformance` packs `@grpc-ccm/provider-conformance`, an empty
 * directory installs the tarball, and the installed `ccm-provider-conformance`
 * command checks the Go provider (a real process) and exits 0. The packed
 * packages (kit and SDK) ask for the same dependency versions as the host.
 */
import test from 'ava';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { GO_PROVIDER, REPO } from '../../helpers/providers.js';

interface Manifest {
  name: string;
  version: string;
  dependencies: Record<string, string>;
}

const readManifest = async (path: string) => JSON.parse(await readFile(path, 'utf8')) as Manifest;

/** Packs the kit with the repository's script and installs it into a new directory; returns the installed command. */
async function installedKit(): Promise<{ dir: string; command: string; tarball: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-package-'));
  const packs = join(dir, 'packs');
  await mkdir(packs);
  await execa('npm', ['run', '-s', 'pack:conformance', '--', '--pack-destination', packs], { cwd: REPO });
  const tarball = join(packs, (await readdir(packs))[0]);
  const project = join(dir, 'vendor-ci');
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'vendor-ci', private: true }));
  // Dependencies come from npm's cache, which the repository's own install filled.
  await execa('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], { cwd: project });
  return { dir, command: join(project, 'node_modules', '.bin', 'ccm-provider-conformance'), tarball };
}

const kit = installedKit();

test('the installed ccm-provider-conformance command checks the Go provider and exits 0, with JUnit output', async (t) => {
  const { dir, command } = await kit;
  const junit = join(dir, 'junit.xml');
  const r = await execa(command, ['--plugin-path', await GO_PROVIDER.executable(dir), '--junit', junit], { reject: false, cwd: dir });
  t.is(r.exitCode, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /^PASS {2}launch\/handshake /m);
  t.regex(r.stdout, /^PASS {2}instances\/test-instance /m);
  t.regex(r.stdout, /^conformance: \d+ passed, 0 failed, \d+ skipped$/m);
  t.regex(await readFile(junit, 'utf8'), /<testsuites name="ccm-provider-conformance" tests="\d+" failures="0"/);
});

test('the installed command refuses bad arguments with exit code 2', async (t) => {
  const { command } = await kit;
  const r = await execa(command, ['--plugin-endpoint', 'tcp://x'], { reject: false });
  t.is(r.exitCode, 2);
  t.regex(r.stderr, /--plugin-endpoint "tcp:\/\/x" is not unix:\/\/\/absolute\/path/);
});

test('the kit and SDK packages share the host version and ask for the dependency versions the host uses', async (t) => {
  const root = await readManifest(join(REPO, 'package.json'));
  for (const dir of ['conformance', 'sdk']) {
    const m = await readManifest(join(REPO, dir, 'package.json'));
    t.is(m.version, root.version, `${m.name}: version`);
    for (const [name, range] of Object.entries(m.dependencies)) t.is(range, root.dependencies[name], `${m.name}: ${name}`);
  }
  const { tarball } = await kit;
  const files = (await execa('tar', ['tzf', tarball])).stdout.split('\n');
  t.true(files.includes('package/dist/conformance/cli.js'));
  t.deepEqual(
    files.filter((f) => /\.ts$|\.map$|(^|\/)test\//.test(f)),
    [],
  );
});
