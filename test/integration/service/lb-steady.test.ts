/**
 * The steady state of the service controller (issue 34, item 3): once every
 * load balancer is ensured and nothing changes, the periodic re-ensure
 * (--lb-resync-period, not in upstream) calls the cloud but asks nothing of
 * the API server: no Service status re-write, no Event, no finalizer patch,
 * no GET. Upstream never re-ensures an unchanged Service, so it makes none
 * of these requests either. The real host with --controllers=service, the
 * local cloud as a real plugin process, the real kube-apiserver (its audit
 * log names which Service writes were made).
 *
 * Scoping: namespace lb-steady, node labelled lbtest=steady, ingress pool
 * 127.0.171.0/24, node 127.0.172.1.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testAuditLogPath, testKubeConfig } from '../../controlplane/shared.js';
import { auditLogFromNow } from '../../helpers/audit.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { createBackendNode, ensureNamespace, fromApiServerRepair, lbService, pluginCalls } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-steady';
const NODE = 'lb-steady-node';
const SERVICES = ['steady-a', 'steady-b', 'steady-c'];
/** Re-ensure passes watched: each re-ensures every Service. */
const PASSES = 3;
const test = anyTest as TestFn<{ host: TestHost; core: CoreV1Api }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-steady-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE, '127.0.172.1', { lbtest: 'steady' });
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=steady',
    '--lb-resync-period=1s',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.171.0/24',
  ]);
  t.context = { host, core };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

/** rest_client_requests_total of the host by method (any code). */
async function requestsByMethod(host: TestHost): Promise<Map<string, number>> {
  const metric = await host.metrics.registry.getSingleMetric('rest_client_requests_total')?.get();
  const out = new Map<string, number>();
  for (const v of metric?.values ?? []) out.set(String(v.labels.method), (out.get(String(v.labels.method)) ?? 0) + v.value);
  return out;
}

/** Ensure calls to the plugin, single or batched (a batch covers every Service of a pass). */
const ensures = async (host: TestHost) =>
  (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer')) + (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancers'));

test('re-ensuring unchanged Services writes nothing to the API server: no status, no Event, no finalizer', async (t) => {
  const { core, host } = t.context;
  for (const name of SERVICES) await core.createNamespacedService({ namespace: NS, body: lbService(name, NS) });
  const events = async () => (await core.listNamespacedEvent({ namespace: NS })).items.filter((e) => !fromApiServerRepair(e)).length;
  // Converged: every ingress written, and one re-ensure pass after it (its Events, if any, written too).
  await waitFor(
    async () => {
      const list = await core.listNamespacedService({ namespace: NS });
      return list.items.length === SERVICES.length && list.items.every((s) => (s.status?.loadBalancer?.ingress?.length ?? 0) > 0);
    },
    { what: 'every Service has its ingress' },
  );
  const settled = (await ensures(host)) + SERVICES.length;
  await waitFor(async () => (await ensures(host)) >= settled, { what: 'one re-ensure pass after convergence' });

  const audit = await auditLogFromNow(await testAuditLogPath());
  const before = await requestsByMethod(host);
  const events0 = await events();
  const ensures0 = await ensures(host);
  await waitFor(async () => (await ensures(host)) >= ensures0 + PASSES * SERVICES.length, { what: `${PASSES} re-ensure passes` });
  const after = await requestsByMethod(host);

  const delta = Object.fromEntries([...after].map(([m, n]) => [m, n - (before.get(m) ?? 0)]).filter(([, n]) => n !== 0));
  const serviceWrites = (await audit.events())
    .filter(
      (e) => e.objectRef?.resource === 'services' && e.objectRef.namespace === NS && e.verb !== 'get' && e.verb !== 'list' && e.verb !== 'watch',
    )
    .map((e) => `${e.verb} ${e.objectRef?.name}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`);
  const rows: { what: string; got: unknown; want: unknown }[] = [
    { what: 'host requests to the API server (watches excepted), by method', got: delta, want: {} },
    { what: 'Service writes in the audit log', got: serviceWrites, want: [] },
    { what: 'Events written', got: (await events()) - events0, want: 0 },
  ];
  for (const r of rows) t.deepEqual(r.got, r.want, r.what);
});
