/**
 * Exit detection and liveness of exec-mode plugins, with real child processes
 * (the bad provider, test/fixtures/bad-provider.ts): a plugin that exits
 * while a process it started holds its pipes is seen as exited and restarted,
 * and that process is killed; a host stop with such a process in a session
 * of its own neither hangs nor leaves it running, and after a SIGKILLed host
 * the next host kills it; a live plugin whose Probe hangs, or that closed its
 * server and removed its socket, is killed and restarted (readiness false
 * meanwhile).
 */
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../host/log.js';
import { PluginSupervisor } from '../../host/plugin/supervisor.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { kubeconfigFile, startHostProcess } from '../helpers/host-process.js';
import { waitFor } from '../helpers/wait.js';
import { scrape, scrapeMetrics } from '../helpers/scraper.js';

const BAD = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));

/** Whether `pid` is a running process (a zombie is dead: it only waits for its parent or init to reap it). */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

/** Running processes whose environment holds `entry` (NAME=VALUE). */
async function processesWithEnv(entry: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const environ = await readFile(`/proc/${name}/environ`).catch(() => Buffer.alloc(0));
    if (environ.toString('utf8').split('\0').includes(entry) && (await running(Number(name)))) found.push(Number(name));
  }
  return found;
}

async function pidFrom(file: string): Promise<number> {
  return waitFor(async () => Number(await readFile(file, 'utf8').catch(() => '')) || undefined, { what: `a pid in ${file}`, timeoutMs: 30_000 });
}

/** A TCP port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

function supervisor(env: string[]): PluginSupervisor {
  return new PluginSupervisor({
    name: 'liveness',
    mode: { kind: 'exec', path: BAD, env: ['BAD_PROVIDER_NODE_PREFIX=liveness-nobody-', ...env] },
    startTimeoutMs: 15_000,
    shutdownGraceMs: 2_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'liveness', hostVersion: 'test' },
    log: silentLogger(),
    restart: { initialMs: 200, maxMs: 1_000 },
    probeIntervalMs: 300,
  });
}

const holders = [
  { holder: 'group', description: 'a child in its process group' },
  { holder: 'setsid', description: 'a grandchild in a session of its own' },
];

for (const c of holders) {
  test(`a plugin that exits while ${c.description} holds its pipes is seen as exited and restarted, and the holder is killed`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ccm-live-'));
    const holderPidFile = join(dir, 'holder.pid');
    const exitFile = join(dir, 'exit');
    const s = supervisor([`BAD_PROVIDER_HOLDER=${c.holder}`, `BAD_PROVIDER_HOLDER_PID_FILE=${holderPidFile}`, `BAD_PROVIDER_EXIT_FILE=${exitFile}`]);
    t.teardown(() => s.stop());
    await s.start();
    const firstPid = s.pid!;
    const firstDir = dirname(s.connection().target.replace(/^unix:\/\//, ''));
    const holder = await pidFrom(holderPidFile);
    t.true(await running(holder), 'the holder runs alongside the plugin');
    await writeFile(exitFile, '');
    await waitFor(() => (s.state === 'ready' && s.pid !== firstPid) || undefined, {
      what: 'the plugin restarted after its exit',
      timeoutMs: 60_000,
      intervalMs: 100,
    });
    t.false(await running(firstPid), 'the first plugin process is gone');
    t.false(await running(holder), 'the process it left holding its pipes was killed');
    t.false(existsSync(firstDir), "the first process's socket directory was removed");
    t.is(s.restartCount, 1);
  });
}

test('a plugin that closes its gRPC server and removes its socket but keeps running is killed and restarted', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-live-'));
  const closeFile = join(dir, 'close');
  const s = supervisor([`BAD_PROVIDER_CLOSE_FILE=${closeFile}`]);
  t.teardown(() => s.stop());
  await s.start();
  const firstPid = s.pid!;
  await writeFile(closeFile, '');
  await waitFor(() => s.state !== 'ready' || undefined, { what: 'the dead socket noticed', timeoutMs: 60_000, intervalMs: 50 });
  await waitFor(() => (s.state === 'ready' && s.pid !== firstPid) || undefined, { what: 'the plugin restarted', timeoutMs: 60_000, intervalMs: 100 });
  t.false(await running(firstPid), 'the process behind the dead socket was killed');
  t.is(s.restartCount, 1);
});

/** Starts the real host with the bad provider and `env` (--plugin-env entries); returns it with its /readyz/plugin and /metrics. */
async function hostWithBadProvider(t: { teardown(fn: () => unknown): void }, name: string, env: string[]) {
  const dir = await mkdtemp(join(tmpdir(), `ccm-${name}-`));
  const port = await freePort();
  const logPath = join(dir, 'host.log');
  const host = await startHostProcess(
    [
      `--cloud-provider=${BAD_PROVIDER_NAME}`,
      `--plugin-path=${BAD}`,
      `--kubeconfig=${await kubeconfigFile(dir)}`,
      `--plugin-env=BAD_PROVIDER_NODE_PREFIX=${name}-nobody-`,
      ...env.map((e) => `--plugin-env=${e}`),
      '--plugin-shutdown-grace=2s',
      '--controllers=cloud-node',
      `--node-selector=ccm-test/${name}=none`,
      `--cluster-name=${name}`,
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
    ],
    logPath,
  );
  t.teardown(() => host.kill());
  return {
    dir,
    host,
    logPath,
    pluginReady: async () => (await scrape(port, '/readyz/plugin')).status === 200,
    metrics: () => scrapeMetrics(port),
  };
}

test('host stop with a setsid grandchild of the plugin holding its pipes: the host exits 0 without hanging, and no process of the plugin survives', async (t) => {
  const tag = `BAD_PROVIDER_TEST_TAG=${randomUUID()}`;
  const scratch = await mkdtemp(join(tmpdir(), 'ccm-live-'));
  const holderPidFile = join(scratch, 'holder.pid');
  const h = await hostWithBadProvider(t, 'liveness-setsid', ['BAD_PROVIDER_HOLDER=setsid', `BAD_PROVIDER_HOLDER_PID_FILE=${holderPidFile}`, tag]);
  const holder = await pidFrom(holderPidFile);
  t.true(await running(holder));
  t.true((await processesWithEnv(tag)).length >= 2, 'the plugin and its holder carry the tag');
  // Before the fix the stop hung on the held pipes until the shutdown backstop (exit 1) and the holder survived.
  t.is(await h.host.stop(), 0);
  const log = await readFile(h.logPath, 'utf8');
  t.false(log.includes('shutdown did not finish in time'), 'no backstop');
  t.false(await running(holder), 'the holder was killed');
  t.deepEqual(await processesWithEnv(tag), [], 'no process with the plugin environment survives');
});

test('a SIGKILLed host cannot clean up: the next host to start kills what its plugin left running', async (t) => {
  const tag = `BAD_PROVIDER_TEST_TAG=${randomUUID()}`;
  const scratch = await mkdtemp(join(tmpdir(), 'ccm-live-'));
  const holderPidFile = join(scratch, 'holder.pid');
  const first = await hostWithBadProvider(t, 'liveness-killed', ['BAD_PROVIDER_HOLDER=setsid', `BAD_PROVIDER_HOLDER_PID_FILE=${holderPidFile}`, tag]);
  const holder = await pidFrom(holderPidFile);
  await first.host.kill();
  t.true(await running(holder), 'nothing killed the holder with its host');
  const next = await hostWithBadProvider(t, 'liveness-next', []);
  await waitFor(async () => !(await running(holder)) || undefined, {
    what: 'the holder killed by the next host',
    timeoutMs: 60_000,
    log: next.logPath,
  });
  t.deepEqual(await processesWithEnv(tag), [], "no process of the killed host's plugin survives");
  t.is(await next.host.stop(), 0);
});

test('a live plugin whose Probe hangs is killed and restarted within the liveness bound; /readyz is false meanwhile, then true', async (t) => {
  const scratch = await mkdtemp(join(tmpdir(), 'ccm-live-'));
  const hangFile = join(scratch, 'hang');
  const h = await hostWithBadProvider(t, 'liveness-hang', [`BAD_PROVIDER_HANG_FILE=${hangFile}`]);
  await waitFor(h.pluginReady, { what: '/readyz/plugin ok', timeoutMs: 60_000, log: h.logPath });
  await writeFile(hangFile, '');
  // Bound: two failed checks 10 s apart, each cut by a 5 s deadline, and the kill; generous on top.
  await waitFor(async () => !(await h.pluginReady()), {
    what: '/readyz/plugin false once the hung plugin is given up',
    timeoutMs: 90_000,
    intervalMs: 200,
    log: h.logPath,
  });
  await rm(hangFile);
  await waitFor(h.pluginReady, { what: '/readyz/plugin ok again after the restart', timeoutMs: 90_000, intervalMs: 200, log: h.logPath });
  const restarts = Number(/^ccm_plugin_restarts_total\{plugin="bad"\} (\d+)$/m.exec(await h.metrics())?.[1]);
  t.true(restarts >= 1, `restarts ${restarts}`);
  t.true((await readFile(h.logPath, 'utf8')).includes('plugin stopped answering; killing it to restart'));
  t.is(await h.host.stop(), 0);
});
