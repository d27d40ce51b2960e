/**
 * The plugin runtime with real child processes over real gRPC: start-up
 * failures, crash and restart, graceful stop, and sidecar mode.
 */
import test from 'ava';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { CloudCallError, PluginUnavailableError } from '../../host/errors.js';
import { createLogger, silentLogger } from '../../host/log.js';
import { Writable } from 'node:stream';
import { GrpcCloud } from '../../host/plugin/grpc-cloud.js';
import { PluginSupervisor, type PluginMode } from '../../host/plugin/supervisor.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN, localcloud } from '../helpers/localcloud.js';
import { ALLOW_SIMULATION_ENV } from '../../plugins/local/simulation-guard.js';
import { waitFor } from '../helpers/wait.js';
import { startSidecar as startSidecarProcess } from '../helpers/sidecar.js';

const MISBEHAVING = fileURLToPath(new URL('../fixtures/plugins/misbehaving.js', import.meta.url));
const BAD = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true; // a zombie would still answer here: only a reaped process is ESRCH
  } catch {
    return false;
  }
}

function supervisor(mode: PluginMode, extra: Partial<ConstructorParameters<typeof PluginSupervisor>[0]> = {}): PluginSupervisor {
  return new PluginSupervisor({
    name: 'test',
    mode,
    startTimeoutMs: 10_000,
    shutdownGraceMs: 2_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'runtime-test', hostVersion: 'test' },
    log: silentLogger(),
    restart: { initialMs: 200, maxMs: 2_000 },
    probeIntervalMs: 300,
    ...extra,
  });
}

const node = (name: string) => ({ name, addresses: [], labels: {} });

// Only the silent plugin needs a short start timeout; the others end by themselves, and a node
// process on a loaded machine can take longer than 1.5 s just to start and crash.
const startFailures = [
  {
    description: 'a handshake for a protocol the host does not speak',
    mode: 'wrong-version',
    startTimeoutMs: 60_000,
    want: /plugin speaks protocol 9, host speaks 1: upgrade the host/,
  },
  {
    description: 'no handshake within the start timeout (SIGTERM ignored)',
    mode: 'silent',
    startTimeoutMs: 1500,
    want: /no handshake within 1500 ms \(--plugin-start-timeout\)/,
  },
  { description: 'an exit before the handshake', mode: 'crash', startTimeoutMs: 60_000, want: /exited before its handshake \(exit code 3\)/ },
];

for (const c of startFailures) {
  test(`start fails clearly and leaves no process behind: ${c.description}`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
    const pidFile = join(dir, 'pid');
    const sup = supervisor(
      { kind: 'exec', path: MISBEHAVING, env: [`FIXTURE_MODE=${c.mode}`, `FIXTURE_PID_FILE=${pidFile}`] },
      { startTimeoutMs: c.startTimeoutMs },
    );
    const err = await t.throwsAsync(sup.start());
    t.regex(err!.message, c.want);
    const pid = Number(await readFile(pidFile, 'utf8'));
    t.false(alive(pid), `plugin pid ${pid} is gone and reaped`);
  });
}

test('a plugin that never becomes ready: the error names the start timeout and its flag, not a call deadline', async (t) => {
  // Long enough for the handshake even on a loaded machine, so what times out is Probe.
  const sup = supervisor({ kind: 'exec', path: BAD, env: ['BAD_PROVIDER_NEVER_READY=1'] }, { startTimeoutMs: 12_000 });
  const err = await t.throwsAsync(sup.start());
  t.regex(
    err!.message,
    /^plugin did not become ready within the start timeout of 12 s \(--plugin-start-timeout\): Probe (kept answering ready=false|was not answered in time)/,
  );
  t.notRegex(err!.message, /Deadline exceeded/);
  t.is(sup.pid, undefined, 'the process was stopped');
});

test('kill -9 mid-call: in-flight calls fail at once, the plugin restarts with backoff, calls succeed again', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
  const state = join(dir, 'cloud');
  await localcloud(state, 'instance', 'add', 'n1', '--address', '127.0.3.1');
  const sup = supervisor({ kind: 'exec', path: LOCAL_PLUGIN, env: [`LOCALCLOUD_STATE_DIR=${state}`, ALLOW_SIMULATION] });
  t.teardown(() => sup.stop());
  await sup.start();
  const cloud = new GrpcCloud(sup, { readMs: 60_000, mutateMs: 60_000 });
  const instances = cloud.instances()!;
  t.is((await instances.instanceMetadata(node('n1'))).providerId.startsWith('local://'), true);

  await localcloud(state, 'knobs', 'set', 'latencyMs=30000');
  const firstPid = sup.pid!;
  const inflight = [instances.instanceMetadata(node('n1')), instances.instanceExists(node('n1'))];
  await new Promise((r) => setTimeout(r, 300));
  const killedAt = Date.now();
  process.kill(firstPid, 'SIGKILL');
  for (const r of await Promise.allSettled(inflight)) {
    t.is(r.status, 'rejected');
    const err = (r as PromiseRejectedResult).reason as Error;
    // Either the host saw the exit first (PluginUnavailableError) or gRPC saw the socket drop first (UNAVAILABLE).
    const transient = err instanceof PluginUnavailableError || (err instanceof CloudCallError && err.code === 'UNAVAILABLE');
    t.true(transient, `rejected as transient, got ${err.name}: ${err.message}`);
  }
  // Rejected because the process died, not because the 60 s deadline passed.
  t.true(Date.now() - killedAt < 30_000);
  await localcloud(state, 'knobs', 'unset', 'latencyMs');
  await waitFor(() => sup.state === 'ready' && sup.pid !== firstPid, { what: 'plugin restarted', timeoutMs: 30_000 });
  t.is(sup.restartCount, 1);
  t.false(alive(firstPid));
  const m = await instances.instanceMetadata(node('n1'));
  t.is(m.nodeAddresses.find((a) => a.type === 'InternalIP')?.address, '127.0.3.1');
});

test('graceful stop: Shutdown, the process exits and its socket directory is removed', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
  const sup = supervisor({ kind: 'exec', path: LOCAL_PLUGIN, env: [`LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`, ALLOW_SIMULATION] });
  const identity = await sup.start();
  t.is(identity.capabilities.providerName, 'local');
  const pid = sup.pid!;
  const socketDir = join(sup.connection().target.replace(/^unix:\/\//, ''), '..');
  t.true(existsSync(socketDir));
  await sup.stop();
  t.is(sup.state, 'stopped');
  t.false(alive(pid));
  t.false(existsSync(socketDir));
  t.throws(() => sup.connection(), { instanceOf: PluginUnavailableError });
});

test('sidecar mode: dials a separately started provider, redials after it restarts, never signals it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
  const state = join(dir, 'cloud');
  const socket = join(dir, 'sidecar.sock');
  await localcloud(state, 'instance', 'add', 'side-1', '--address', '127.0.3.9');
  const startSidecar = () =>
    execa(process.execPath, [LOCAL_PLUGIN, `--endpoint=unix://${socket}`], {
      env: { LOCALCLOUD_STATE_DIR: state, [ALLOW_SIMULATION_ENV]: 'true' },
      reject: false,
      stdin: 'ignore',
    });
  let sidecar = startSidecar();
  t.teardown(() => {
    sidecar.kill('SIGKILL');
  });
  const sup = supervisor({ kind: 'socket', endpoint: `unix://${socket}` });
  await sup.start();
  const instances = new GrpcCloud(sup, { readMs: 5_000, mutateMs: 5_000 }).instances()!;
  t.true(await instances.instanceExists(node('side-1')));

  sidecar.kill('SIGKILL');
  await sidecar;
  await waitFor(() => sup.state !== 'ready', { what: 'sidecar loss noticed', timeoutMs: 30_000 });
  await t.throwsAsync(instances.instanceExists(node('side-1')), { instanceOf: PluginUnavailableError });
  sidecar = startSidecar();
  await waitFor(() => sup.state === 'ready', { what: 'redialed the restarted sidecar', timeoutMs: 30_000 });
  t.true(await instances.instanceExists(node('side-1')));

  await sup.stop();
  t.true(alive(sidecar.pid!), 'the host never stops a sidecar');
});

/** A logger whose records the test reads back. */
function recordingLogger(): { log: ReturnType<typeof createLogger>; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) records.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger({ level: 'debug', destination }), records };
}

/** Not JSON: the local cloud answers Configure INVALID_ARGUMENT. */
const REFUSED_CONFIG = Buffer.from('{not a config');

test('a cloud config the plugin refuses ends the start with one line naming it, after the whole stop sequence: the plugin exits 0', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
  const { log, records } = recordingLogger();
  const sup = supervisor(
    { kind: 'exec', path: LOCAL_PLUGIN, env: [`LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`, ALLOW_SIMULATION] },
    { log, configure: { cloudConfig: REFUSED_CONFIG, clusterName: 'runtime-test', hostVersion: 'test' } },
  );
  const err = await t.throwsAsync(sup.start());
  t.regex(
    err!.message,
    /^plugin \S+ refused its cloud config \(Configure answered INVALID_ARGUMENT: Configure: cloud config is not a JSON object.*\): fix the cloud config \(--cloud-config\) and restart the host$/,
  );
  t.is(err!.message.split('\n').length, 1, 'one line');
  t.is(sup.restartCount, 0, 'not retried: the bytes would be refused again');
  // Shutdown with the grace period, then stdin EOF: the provider stops once, gracefully. Without
  // the Shutdown and the grace, the SDK reads the SIGTERM after stdin EOF as a second signal and exits 1.
  const stopped = records.find((r) => r.msg === 'plugin stopped after a failed start');
  t.is(stopped?.how, 'exit code 0', JSON.stringify(stopped));
  // The provider's own line (re-logged by the host) says what stopped it: the Shutdown, not stdin EOF or SIGTERM.
  const stopping = records.filter((r) => r.msg === 'provider stopping').map((r) => r.reason);
  t.deepEqual(stopping, ['shutdown requested'], JSON.stringify(records.filter((r) => r.msg === 'provider stopping')));
});

test('sidecar mode: a refused cloud config ends the start instead of redialing forever', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`);
  await chmod(launcher, 0o755);
  const sidecar = await startSidecarProcess(launcher, dir, { LOCALCLOUD_STATE_DIR: join(dir, 'cloud'), [ALLOW_SIMULATION_ENV]: 'true' });
  t.teardown(() => sidecar.stop());
  const sup = supervisor(
    { kind: 'socket', endpoint: sidecar.endpoint },
    { configure: { cloudConfig: REFUSED_CONFIG, clusterName: 'runtime-test', hostVersion: 'test' } },
  );
  const err = await t.throwsAsync(sup.start());
  t.regex(err!.message, /refused its cloud config \(Configure answered INVALID_ARGUMENT/);
  await sup.stop();
});

const UNGUARDED = fileURLToPath(new URL('../fixtures/unguarded-provider.js', import.meta.url));

test('a host that was ready retries a refused cloud config with backoff (a restarted sidecar refusing it) and never stops', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-rt-'));
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${UNGUARDED}' "$@"\n`);
  await chmod(launcher, 0o755);
  let sidecar = await startSidecarProcess(launcher, dir);
  t.teardown(() => sidecar.stop());
  const sup = supervisor({ kind: 'socket', endpoint: sidecar.endpoint });
  t.teardown(() => sup.stop());
  await sup.start();
  // The sidecar is replaced by one that refuses the same config: the host keeps trying, not ready.
  sidecar.signal('SIGKILL');
  await waitFor(() => sup.state !== 'ready', { what: 'sidecar loss noticed', timeoutMs: 30_000 });
  sidecar = await startSidecarProcess(launcher, dir, { FIXTURE_REFUSE_CONFIG: '1' });
  const before = sup.restartCount;
  await waitFor(() => sup.restartCount >= before + 2, { what: 'two more start attempts against the refusing sidecar', timeoutMs: 60_000 });
  t.not(sup.state, 'ready');
  t.not(sup.state, 'stopped');
  // A sidecar that takes the config again: ready again, without a host restart.
  await sidecar.stop();
  sidecar = await startSidecarProcess(launcher, dir);
  await waitFor(() => sup.state === 'ready', { what: 'ready again with a sidecar that takes the config', timeoutMs: 60_000 });
});
