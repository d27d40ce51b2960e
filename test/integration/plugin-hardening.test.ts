/**
 * The plugin boundary with real child processes: environment allowlist,
 * refusal of plugin files others could change, socket and directory modes,
 * socket and socket directory removal (after a crash too, of dead hosts'
 * directories at start, of hosts that were still exiting then, and of its
 * own when a host exits through process.exit), and (as root) that another user cannot
 * connect.
 */
import test from 'ava';
import { existsSync, writeFileSync } from 'node:fs';
import { chmod, chown, copyFile, lstat, mkdir, mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { PluginUnavailableError } from '../../host/errors.js';
import { silentLogger } from '../../host/log.js';
import { readJournal } from '../../plugins/local/journal.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from '../helpers/localcloud.js';
import { EnsureLoadBalancerRequest, Protocol } from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import { executableProblem } from '../../host/plugin/file-checks.js';
import { MAX_CLOUD_CONFIG_BYTES } from '../../host/config/cloud-config.js';
import { kubeconfigFile } from '../helpers/host-process.js';
import { DEFAULT_ENV_ALLOWLIST } from '../../host/plugin/process.js';
import { createSocketDir, OWNER_MARKER, ownerMarker, removeStaleSocketDirs, watchStaleSocketDirs } from '../../host/plugin/socket-dir.js';
import { waitFor } from '../helpers/wait.js';
import { PluginSupervisor, type PluginMode } from '../../host/plugin/supervisor.js';

const ENV_REPORTER = fileURLToPath(new URL('../fixtures/plugins/env-reporter.js', import.meta.url));
const ECHO = fileURLToPath(new URL('../fixtures/echo-provider.js', import.meta.url));
const BAD = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));
const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));
const isRoot = process.getuid?.() === 0;
const OTHER_UID = 4321;

function supervisor(mode: PluginMode): PluginSupervisor {
  return new PluginSupervisor({
    name: 'hardening',
    mode,
    startTimeoutMs: 15_000,
    shutdownGraceMs: 2_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'hardening', hostVersion: 'test' },
    log: silentLogger(),
    restart: { initialMs: 200, maxMs: 2_000 },
  });
}

/** A plugin file in a fresh 0755 directory: a .js that loads the echo provider. */
async function pluginFile(fileMode = 0o644): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-harden-'));
  await chmod(dir, 0o755);
  const file = join(dir, 'ccm-provider-echo.js');
  await writeFile(file, `import ${JSON.stringify(ECHO)};\n`);
  await chmod(file, fileMode);
  return file;
}

test('the plugin gets only the allowlisted environment, the --plugin-env entries and the protocol variables', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-env-'));
  const report = join(dir, 'env.json');
  process.env.CCM_TEST_CANARY_SECRET = 'canary-do-not-pass';
  process.env.CCM_TEST_PASSED = 'passed-by-name';
  t.teardown(() => {
    delete process.env.CCM_TEST_CANARY_SECRET;
    delete process.env.CCM_TEST_PASSED;
  });
  const s = supervisor({ kind: 'exec', path: ENV_REPORTER, env: [`ENV_REPORT_FILE=${report}`, 'CCM_TEST_PASSED', 'CCM_TEST_UNSET'] });
  await s.start();
  await s.stop();
  const env = JSON.parse(await readFile(report, 'utf8')) as Record<string, string>;
  const allowed = new Set([...DEFAULT_ENV_ALLOWLIST, 'ENV_REPORT_FILE', 'CCM_TEST_PASSED']);
  // Node itself may add nothing; anything else came from the host and is a leak.
  const extra = Object.keys(env).filter((k) => !allowed.has(k) && !k.startsWith('CCM_PLUGIN_'));
  t.deepEqual(extra, []);
  t.is(env.CCM_TEST_PASSED, 'passed-by-name');
  t.false('CCM_TEST_CANARY_SECRET' in env);
  t.false(JSON.stringify(env).includes('canary-do-not-pass'));
  for (const k of ['CCM_PLUGIN_MAGIC_COOKIE', 'CCM_PLUGIN_ENDPOINT', 'CCM_PLUGIN_INSTANCE_ID', 'CCM_PLUGIN_PROTOCOL_VERSIONS']) t.truthy(env[k], k);
});

test('a world-writable plugin file is refused before it runs', async (t) => {
  const file = await pluginFile(0o666);
  await chmod(file, 0o666); // umask-proof
  const s = supervisor({ kind: 'exec', path: file });
  const err = await t.throwsAsync(s.start());
  t.regex(err!.message, /refusing to start the plugin: plugin .* is world-writable \(mode 0666\)/);
});

test('a plugin file owned by another non-root user is refused', async (t) => {
  const file = await pluginFile();
  if (isRoot) {
    await chown(file, OTHER_UID, OTHER_UID);
    const err = await t.throwsAsync(supervisor({ kind: 'exec', path: file }).start());
    t.regex(err!.message, new RegExp(`owned by uid ${OTHER_UID}, which is neither root nor the host's user`));
  } else {
    // Without root the file cannot be given away: check as if the host were someone else.
    const problem = await executableProblem(file, { uid: (process.getuid?.() ?? 0) + 1 });
    t.regex(problem ?? '', /which is neither root nor the host's user/);
  }
});

test('a plugin in a world-writable, non-sticky directory is refused; a relative path too', async (t) => {
  const file = await pluginFile();
  await chmod(dirname(file), 0o777);
  const err = await t.throwsAsync(supervisor({ kind: 'exec', path: file }).start());
  t.regex(err!.message, /is in world-writable directory/);
  t.regex((await executableProblem('relative/ccm-provider-x')) ?? '', /is not absolute/);
  await chmod(dirname(file), 0o1777); // sticky, like /tmp: accepted
  t.is(await executableProblem(file), undefined);
});

test('exec mode: the socket is 0600 in a 0700 directory, refused to other users, and removed with its directory at stop', async (t) => {
  const file = await pluginFile();
  const s = supervisor({ kind: 'exec', path: file });
  await s.start();
  const target = s.connection().target.replace(/^unix:\/\//, '');
  const sock = await lstat(target);
  t.true(sock.isSocket());
  t.is(sock.mode & 0o777, 0o600);
  t.is((await stat(dirname(target))).mode & 0o777, 0o700);
  if (isRoot) {
    // Another user cannot even reach the socket (the directory is 0700).
    const r = await execa(
      process.execPath,
      [
        '-e',
        `require('net').connect(${JSON.stringify(target)}).on('error', e => { console.log(e.code); process.exit(0) }).on('connect', () => { console.log('CONNECTED'); process.exit(0) })`,
      ],
      {
        uid: OTHER_UID,
        gid: OTHER_UID,
        reject: false,
      },
    );
    t.is(r.stdout.trim(), 'EACCES');
  }
  await s.stop();
  t.false(existsSync(target), 'socket removed');
  t.false(existsSync(dirname(target)), 'private directory removed');
});

test('exec mode: the socket directory of every crashed plugin process is removed at once, the last one at stop', async (t) => {
  const crashes = 5;
  // Each process kills itself (SIGKILL) once it is ready: the test drops the kill file on every 'ready'.
  const killFile = join(await mkdtemp(join(tmpdir(), 'ccm-crashing-')), 'kill');
  const s = new PluginSupervisor({
    name: 'crashing',
    mode: { kind: 'exec', path: BAD, env: [`BAD_PROVIDER_KILL_FILE=${killFile}`] },
    startTimeoutMs: 15_000,
    shutdownGraceMs: 2_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'hardening', hostVersion: 'test' },
    log: silentLogger(),
    restart: { initialMs: 100, maxMs: 300 },
  });
  const dirs: string[] = [];
  s.on('ready', () => {
    dirs.push(dirname(s.connection().target.replace(/^unix:\/\//, '')));
    if (dirs.length <= crashes) writeFileSync(killFile, '');
  });
  t.teardown(() => s.stop());
  await s.start();
  await waitFor(() => dirs.length > crashes || undefined, { what: `${crashes} crashes and restarts`, timeoutMs: 120_000, intervalMs: 100 });
  t.is(new Set(dirs).size, dirs.length, 'every process got its own directory');
  t.deepEqual(dirs.slice(0, crashes).filter(existsSync), [], 'crashed processes left no directory');
  await s.stop();
  t.deepEqual(dirs.filter(existsSync), []);
});

test('at start, socket directories of host processes that are gone are removed, and only those', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'ccm-stale-'));
  const dead = execa(process.execPath, ['-e', '']);
  const deadPid = dead.pid!;
  await dead;
  const cases: { name: string; marker?: string; removed: boolean }[] = [
    { name: 'ccm-plugin-dead', marker: ownerMarker(deadPid), removed: true },
    { name: 'ccm-plugin-live', marker: ownerMarker(process.pid), removed: false },
    { name: 'ccm-plugin-other-pid-namespace', marker: `${deadPid} pid:[1]`, removed: false },
    { name: 'ccm-plugin-unmarked', removed: false },
    { name: 'ccm-plugin-garbage', marker: 'not a pid', removed: false },
    { name: 'ccm-plugin-huge', marker: `${ownerMarker(deadPid)}${' '.repeat(100)}`, removed: false },
    { name: 'someone-else-dead', marker: ownerMarker(deadPid), removed: false },
  ];
  for (const c of cases) {
    const dir = join(parent, c.name);
    await mkdir(dir, { mode: 0o700 });
    await writeFile(join(dir, 'provider.sock'), '');
    if (c.marker !== undefined) await writeFile(join(dir, OWNER_MARKER), c.marker);
  }
  const ours = await createSocketDir(parent);
  const removed = await removeStaleSocketDirs(silentLogger(), parent);
  t.deepEqual(removed, [join(parent, 'ccm-plugin-dead')]);
  for (const c of cases) t.is(existsSync(join(parent, c.name)), !c.removed, c.name);
  t.true(existsSync(ours), "this process's own directory stays");
});

test('a socket directory whose host was still alive (exiting) at start is removed once that host is gone, while this host runs', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'ccm-stale-'));
  // Stands for a host that is still exiting when this one starts.
  const exiting = execa(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { reject: false });
  const dir = join(parent, 'ccm-plugin-exiting');
  await mkdir(dir, { mode: 0o700 });
  await writeFile(join(dir, OWNER_MARKER), ownerMarker(exiting.pid!));
  const stop = await watchStaleSocketDirs(silentLogger(), { parent, intervalMs: 100 });
  t.teardown(stop);
  t.true(existsSync(dir), 'kept while its host lives');
  exiting.kill('SIGKILL');
  await exiting;
  await waitFor(() => !existsSync(dir) || undefined, { what: 'the directory removed after its host died', timeoutMs: 30_000, intervalMs: 100 });
  t.pass();
});

test('a host that exits through process.exit (e.g. its shutdown backstop) removes its socket directories on the way out', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'ccm-exit-'));
  const socketDirModule = fileURLToPath(new URL('../../host/plugin/socket-dir.js', import.meta.url));
  const script = `const { createSocketDir } = await import(${JSON.stringify(socketDirModule)}); console.log(await createSocketDir(${JSON.stringify(parent)})); process.exit(1);`;
  const r = await execa(process.execPath, ['--input-type=module', '-e', script], { reject: false });
  t.is(r.exitCode, 1, String(r.stderr));
  const made = String(r.stdout).trim();
  t.true(made.startsWith(join(parent, 'ccm-plugin-')), made);
  t.false(existsSync(made));
});

test('sidecar mode: a stale socket file from a killed provider is replaced at start and removed at exit', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-side-'));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, 'provider.sock');
  // A provider that is SIGKILLed leaves its socket file behind.
  const first = execa(process.execPath, [ECHO, `--endpoint=unix://${path}`], {
    reject: false,
    env: { PATH: process.env.PATH ?? '' },
    extendEnv: false,
  });
  await waitForFile(path);
  first.kill('SIGKILL');
  await first;
  t.true((await lstat(path)).isSocket(), 'stale socket left behind');
  const second = execa(process.execPath, [ECHO, `--endpoint=unix://${path}`], {
    reject: false,
    env: { PATH: process.env.PATH ?? '' },
    extendEnv: false,
  });
  const s = supervisor({ kind: 'socket', endpoint: `unix://${path}` });
  await s.start();
  t.is((await lstat(path)).mode & 0o777, 0o600);
  await s.stop();
  second.kill('SIGTERM');
  await second;
  t.false(existsSync(path), 'socket removed at exit');
});

async function waitForFile(path: string): Promise<void> {
  for (let i = 0; i < 200 && !existsSync(path); i++) await new Promise((r) => setTimeout(r, 50));
}

test('copying a safe plugin keeps it runnable (control)', async (t) => {
  const file = await pluginFile();
  const copy = join(dirname(file), 'copy.js');
  await copyFile(file, copy);
  t.is(await executableProblem(copy), undefined);
});

test('every call carries the caller identity; mutations are refused locally while the policy says so', async (t) => {
  const state = await mkdtemp(join(tmpdir(), 'ccm-caller-'));
  let refuse: string | undefined = 'this replica is not the leader';
  const s = new PluginSupervisor({
    name: 'local',
    mode: { kind: 'exec', path: LOCAL_PLUGIN, env: [`LOCALCLOUD_STATE_DIR=${state}`, 'LOCALCLOUD_JOURNAL=all', ALLOW_SIMULATION] },
    startTimeoutMs: 15_000,
    shutdownGraceMs: 2_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'caller', hostVersion: 'test' },
    log: silentLogger(),
    callPolicy: { caller: 'replica-1_abc', refuseMutation: () => refuse },
  });
  await s.start();
  t.teardown(() => s.stop());
  const conn = s.connection();
  const req = EnsureLoadBalancerRequest.fromPartial({
    meta: { clusterName: 'caller' },
    service: {
      uid: 'uid-caller',
      namespace: 'default',
      name: 'svc',
      ports: [{ name: 'p', protocol: Protocol.PROTOCOL_TCP, port: 80, nodePort: 30080 }],
    },
  });
  const err = await t.throwsAsync(conn.unary(conn.loadBalancers, 'EnsureLoadBalancer', req, 5000));
  t.true(err instanceof PluginUnavailableError);
  t.regex(err!.message, /EnsureLoadBalancer not sent: this replica is not the leader/);
  await conn.unary(conn.loadBalancers, 'GetLoadBalancer', req, 5000); // reads always pass
  refuse = undefined;
  await conn.unary(conn.loadBalancers, 'EnsureLoadBalancer', req, 5000);
  const entries = await readJournal(state);
  t.deepEqual(
    entries.map((e) => [e.method, e.caller]),
    [
      ['loadBalancers.getLoadBalancer', 'replica-1_abc'],
      ['loadBalancers.ensureLoadBalancer', 'replica-1_abc'],
    ],
  );
});

/** Runs the host binary with `args` until it exits (as `uid` when given); start-up errors go to its stderr. */
/**
 * Runs the host binary until it exits. `withoutCapabilities` (as root): the
 * host runs as root with an empty capability set (util-linux setpriv), so
 * file permissions apply to it like to any user, while the repository, wherever
 * it was cloned, stays readable (root owns it).
 */
async function hostFailsToStart(args: string[], withoutCapabilities = false): Promise<{ exitCode?: number; stderr: string }> {
  const command = [process.execPath, HOST_MAIN, '--leader-elect=false', '--secure-port=0', ...args];
  const [file, ...rest] = withoutCapabilities ? ['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', ...command] : command;
  const r = await execa(file!, rest, { reject: false, timeout: 60_000 });
  return { exitCode: r.exitCode, stderr: String(r.stderr) };
}

test('an oversized --cloud-config is refused at start, naming the flag and the limit, without reading it all', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-cloudcfg-'));
  const cases = [
    { size: MAX_CLOUD_CONFIG_BYTES + 1, want: new RegExp(`--cloud-config \\S+ is larger than ${MAX_CLOUD_CONFIG_BYTES} bytes, the limit`) },
    // Sparse: reading it whole would take 3 GiB (Node refuses files over 2 GiB with its own message).
    { size: 3 * 1024 ** 3, want: new RegExp(`--cloud-config \\S+ is larger than ${MAX_CLOUD_CONFIG_BYTES} bytes, the limit`) },
  ];
  const kubeconfig = await kubeconfigFile(dir);
  for (const c of cases) {
    const file = join(dir, `cloud-${c.size}.json`);
    await writeFile(file, '');
    await truncate(file, c.size);
    const r = await hostFailsToStart(['--cloud-provider=local', `--cloud-config=${file}`, `--kubeconfig=${kubeconfig}`]);
    t.not(r.exitCode, 0, `${c.size} bytes`);
    t.regex(r.stderr, c.want, `${c.size} bytes`);
  }
});

test('the local cloud without LOCALCLOUD_ALLOW_SIMULATION=true: the host does not start, and says why in one line of the provider', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-nosim-'));
  const kubeconfig = await kubeconfigFile(dir);
  for (const allow of [[], ['--plugin-env=LOCALCLOUD_ALLOW_SIMULATION=false']]) {
    const r = await hostFailsToStart([
      '--cloud-provider=local',
      `--kubeconfig=${kubeconfig}`,
      '--controllers=cloud-node',
      '--node-selector=ccm-test-scope=nosim-none',
      `--plugin-env=LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`,
      ...allow,
    ]);
    const what = allow.join(' ') || 'no --plugin-env for it';
    t.not(r.exitCode, 0, what);
    t.regex(r.stderr, /cannot start plugin for --cloud-provider=local/, what);
    t.regex(r.stderr, /refusing to start: the local cloud is a simulation for tests and demos/, what);
    t.regex(r.stderr, /--plugin-env=LOCALCLOUD_ALLOW_SIMULATION=true/, `${what}: says how to allow it`);
  }
});

test('a --plugin-path directory the host may not search is reported as permission denied, not as missing files', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-plugindir-'));
  const plugins = join(dir, 'plugins');
  t.teardown(async () => {
    await chmod(plugins, 0o755);
    await rm(dir, { recursive: true, force: true });
  });
  await mkdir(plugins);
  await writeFile(join(plugins, 'ccm-provider-foo.js'), '');
  await chmod(plugins, 0o000);
  // Root searches any directory unless it runs without capabilities.
  const r = await hostFailsToStart(['--cloud-provider=foo', `--plugin-path=${plugins}`], isRoot);
  t.not(r.exitCode, 0);
  t.regex(r.stderr, /--plugin-path \S+: cannot look up ccm-provider-foo: permission denied: give the host's user read and search permission/);
  t.notRegex(r.stderr, /holds neither/);
});
