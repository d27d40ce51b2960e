/**
 * What the probes see (host/health.ts), on the host as a real process against
 * the real API server: liveness (/healthz, /livez) is the host process only,
 * readiness (/readyz) the plugin, the cloud and the controllers. A plugin in
 * restart backoff, a full cloud outage and a PersistentVolume label webhook
 * that could not bind its port each fail /readyz (and show in the metrics)
 * while /healthz and /livez stay 200, so the kubelet never restarts the host
 * for them; "controllers started" names only controllers that started.
 */
import test from 'ava';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { freePorts } from '../controlplane/probe.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { startHostProcess, type HostProcess } from '../helpers/host-process.js';
import { ALLOW_SIMULATION_FLAG, localcloud } from '../helpers/localcloud.js';
import { scrape } from '../helpers/scraper.js';
import { deleteScopedNodes, testScope } from '../helpers/nodes.js';
import { hostKubeConfig } from '../helpers/service-account.js';
import { waitFor } from '../helpers/wait.js';

const BAD = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const scope = testScope('healthprobes');

test.after.always(async () => {
  await deleteScopedNodes((await testKubeConfig()).makeApiClient(CoreV1Api), scope.selector);
});

interface Probed {
  dir: string;
  host: HostProcess;
  /** GET a path of the health server: status and body. */
  get(path: string): Promise<{ status: number; body: string }>;
}

/** Starts the host as a process with `args(dir)` (as the shipped ServiceAccount, no leader election), serving health on a free port. */
async function startProbed(t: { teardown(fn: () => unknown): void }, name: string, args: (dir: string) => string[]): Promise<Probed> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-${name}-`));
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, (await hostKubeConfig()).exportConfig(), { mode: 0o600 });
  const [port] = await freePorts(1);
  const host = await startHostProcess(
    [
      `--kubeconfig=${kubeconfig}`,
      `--cluster-name=${name}`,
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      '--logging-format=json',
      `--node-selector=${scope.selector}`,
      ...args(dir),
    ],
    join(dir, 'host.log'),
  );
  t.teardown(() => host.kill());
  return { dir, host, get: (path) => scrape(port, path) };
}

/** Liveness must pass on both endpoints, whatever readiness says. */
async function assertLive(t: { is(a: unknown, b: unknown, m?: string): void }, h: Probed): Promise<void> {
  for (const path of ['/healthz', '/livez']) t.is((await h.get(path)).status, 200, `${path} stays 200`);
}

/** Waits until /readyz fails with `check` named as failed; returns the body. */
async function waitNotReady(h: Probed, check: string, what: string): Promise<string> {
  return waitFor(
    async () => {
      const r = await h.get('/readyz');
      return r.status === 500 && r.body.includes(`[-]${check} failed`) ? r.body : undefined;
    },
    { what, timeoutMs: 120_000, intervalMs: 250, log: h.host.logPath },
  );
}

test('a plugin in restart backoff fails readiness and ccm_plugin_ready, not liveness', async (t) => {
  const h = await startProbed(t, 'healthprobes-backoff', (dir) => [
    `--cloud-provider=${BAD_PROVIDER_NAME}`,
    `--plugin-path=${BAD}`,
    '--plugin-env=BAD_PROVIDER_NODE_PREFIX=healthprobes-nobody-',
    `--plugin-env=BAD_PROVIDER_HANG_FILE=${join(dir, 'hang')}`,
    '--plugin-start-timeout=5s',
    '--plugin-shutdown-grace=1s',
    '--controllers=cloud-node',
  ]);
  await waitFor(async () => (await h.get('/readyz')).status === 200, { what: '/readyz ok', log: h.host.logPath });
  const hangFile = join(h.dir, 'hang');
  // Probe hangs from now on: the host gives the plugin up, and every restart times out in Probe.
  await writeFile(hangFile, '');
  const body = await waitNotReady(h, 'plugin', '/readyz failing on the plugin');
  t.regex(body, /\[-\]plugin failed: plugin bad is (backoff|starting)/);
  await assertLive(t, h);
  t.regex((await h.get('/metrics')).body, /^ccm_plugin_ready\{plugin="bad"\} 0$/m);
  await rm(hangFile);
  await waitFor(async () => (await h.get('/readyz')).status === 200, {
    what: '/readyz ok after the plugin recovered',
    timeoutMs: 120_000,
    log: h.host.logPath,
  });
  t.is(await h.host.stop(), 0);
});

test('a full cloud outage fails readiness (check "cloud") and shows in the RPC error metrics, not liveness; "controllers started" names only started ones', async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const h = await startProbed(t, 'healthprobes-outage', (dir) => [
    '--cloud-provider=local',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`,
    ALLOW_SIMULATION_FLAG,
    '--controllers=cloud-node,route,nodeipam',
    '--configure-cloud-routes=false',
  ]);
  await waitFor(async () => (await h.get('/readyz')).status === 200, { what: '/readyz ok', log: h.host.logPath });
  const started = (await readFile(h.host.logPath, 'utf8')).split('\n').find((l) => l.includes('"controllers started"'));
  t.deepEqual(
    (JSON.parse(started ?? '{}') as { controllers?: string[] }).controllers,
    ['cloud-node-controller'],
    'route and node-ipam were enabled but not started',
  );

  // Every cloud call fails UNAVAILABLE from now on (the provider itself stays up); a new node makes the node controller call.
  const cloud = join(h.dir, 'cloud');
  const nodeName = `${scope.prefix}-outage`;
  await localcloud(cloud, 'instance', 'add', nodeName, '--zone', 'zone-h', '--address', '127.0.5.1');
  await localcloud(cloud, 'knobs', 'set', 'failAll=true');
  await core.createNode({
    body: {
      metadata: { name: nodeName, labels: { ...scope.labels, 'kubernetes.io/hostname': nodeName } },
      spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
    },
  });
  const body = await waitNotReady(h, 'cloud', '/readyz failing on the cloud');
  t.regex(body, /\[-\]cloud failed: the last \d+ cloud calls over \d+s got no answer \(last: \w+ UNAVAILABLE\)/);
  t.regex(body, /\[\+\]plugin ok/, 'the provider itself is fine');
  await assertLive(t, h);
  const metrics = (await h.get('/metrics')).body;
  t.regex(metrics, /^ccm_plugin_rpc_errors_total\{[^}]*code="UNAVAILABLE"[^}]*\} [1-9]/m);
  t.regex(metrics, /^ccm_plugin_ready\{plugin="local"\} 1$/m);

  // The outage ends: the next answered call makes the host ready again, and the node is initialized.
  await localcloud(cloud, 'knobs', 'unset', 'failAll');
  await waitFor(
    async () => {
      const n: V1Node = await core.readNode({ name: nodeName });
      return !(n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED);
    },
    { what: 'node initialized after the outage', timeoutMs: 180_000, log: h.host.logPath },
  );
  await waitFor(async () => (await h.get('/readyz')).status === 200, { what: '/readyz ok after the outage', log: h.host.logPath });
  t.is(await h.host.stop(), 0);
});

// A webhook whose port something else holds: the PV label controller stops (its webhook is its job); the
// service controller keeps running (its check before ensure still holds) but says why in /readyz.
const webhookRows = [
  {
    controller: 'pvl',
    check: 'persistentvolume-label-controller',
    failure: /\[-\]persistentvolume-label-controller failed: persistentvolume-label-controller stopped: .*EADDRINUSE/,
    running: 0,
  },
  {
    controller: 'service',
    check: 'service-lb-controller',
    failure: /\[-\]service-lb-controller failed: service-lb-controller: the Service validation webhook is not served \(.*EADDRINUSE.*\)/,
    running: 1,
  },
] as const;

for (const row of webhookRows) {
  test(`a webhook that cannot bind its port fails readiness, not liveness: ${row.check}`, async (t) => {
    // Something else holds the webhook's port.
    const holder: Server = createServer();
    const [port] = await freePorts(1);
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const h = await startProbed(t, `healthprobes-webhook-${row.controller}`, (dir) => [
      `--plugin-env=LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`,
      ALLOW_SIMULATION_FLAG,
      '--cloud-provider=local',
      `--controllers=${row.controller}`,
      `--volume-provisioner-name=${scope.prefix}.health.test`,
      '--webhook-bind-address=127.0.0.1',
      `--webhook-secure-port=${port}`,
    ]);
    const body = await waitNotReady(h, row.check, '/readyz failing on the webhook');
    t.regex(body, row.failure);
    await assertLive(t, h);
    t.regex(
      (await h.get('/metrics')).body,
      new RegExp(`^running_managed_controllers\\{manager="cloud-controller-manager",name="${row.controller}"\\} ${row.running}$`, 'm'),
      'running_managed_controllers: stopped or still running',
    );
    t.is(await h.host.stop(), 0);
  });
}
