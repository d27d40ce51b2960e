/**
 * The kit as one executable (tools/conformance-exe.ts, issue 32 item 3): built
 * (or taken from its cache), copied to a directory outside the repository,
 * and run there with a PATH that holds no Node.js, against the local cloud in
 * exec mode, as a vendor without Node or a clone would run it.
 */
import test from 'ava';
import { chmod, copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { CONFORMANCE_EXE_NAME, conformanceExecutable } from '../../../tools/conformance-exe.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from '../../helpers/localcloud.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const LOCAL_HOOK = fileURLToPath(new URL('../../../conformance/hooks/localcloud.js', import.meta.url));

test('the single executable kit, copied out of the repository and run without Node.js on PATH, passes the local cloud', async (t) => {
  const built = await conformanceExecutable((line) => t.log(line));
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-exe-run-'));
  t.true(relative(REPO, dir).startsWith('..'), `${dir} is outside the repository`);
  const exe = join(dir, CONFORMANCE_EXE_NAME);
  await copyFile(built, exe);
  await chmod(exe, 0o755);
  // The provider under test (the local cloud) and its hook are Node programs; the kit is not.
  const state = join(dir, 'cloud');
  const provider = join(dir, 'ccm-provider-local');
  await writeFile(provider, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`);
  await chmod(provider, 0o755);
  const emptyPath = join(dir, 'empty-path');
  await mkdir(emptyPath);
  const run = (args: string[]) =>
    execa(exe, args, { cwd: dir, env: { PATH: emptyPath, HOME: dir }, extendEnv: false, reject: false, timeout: 600_000 });

  const help = await run(['--help']);
  t.is(help.exitCode, 0, help.stderr);
  t.regex(help.stdout, /^Usage: ccm-provider-conformance/m);

  const r = await run([
    '--plugin-path',
    provider,
    '--plugin-env',
    `LOCALCLOUD_STATE_DIR=${state}`,
    '--plugin-env',
    'LOCALCLOUD_LB_CIDR=127.0.81.0/24',
    '--plugin-env',
    ALLOW_SIMULATION,
    '--test-hook-command',
    `'${process.execPath}' '${LOCAL_HOOK}' --state '${state}'`,
    '--junit',
    join(dir, 'results.xml'),
  ]);
  t.is(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
  t.notRegex(r.stdout, /^FAIL /m);
  t.regex(r.stdout, /^PASS {2}lifecycle\/not-configured /m);
  t.regex(r.stdout, /^PASS {2}instances\/test-instance /m);
});
