/**
 * Load-balancer conditions on the Service and "not now" answers (issue 33
 * items 2 and 3), end to end: the real host with --controllers=service, the
 * local cloud as a real plugin process, the real kube-apiserver.
 *  - A provider error: LoadBalancerServing False (Infrastructure) and
 *    LoadBalancerProvisioning False (Error) say why the Service has no
 *    address; served: Serving True, Provisioning False (Complete); type
 *    ClusterIP: both removed; another writer's condition is kept throughout.
 *  - A quota deferral (the local cloud's lbQuota knob answers DEFERRED,
 *    reason QuotaExhausted, retry after 2 s): Provisioning True (Deferred),
 *    Serving False (QuotaExhausted), retried after the provider's delay with
 *    no status write while nothing changes, one Normal event and no Warning;
 *    served once the quota is lifted.
 *
 * Scoping: namespace lb-conditions, nodes labelled lbtest=conditions,
 * ingress pool 127.0.93.0/24, node 127.0.94.1. The tests share one cloud and
 * run serially (the quota counts every load balancer of the cloud).
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Condition, type V1Service } from '@kubernetes/client-node';
import { patchService, patchServiceStatus } from '../../helpers/kube-patch.js';
import { updateKnobs } from '../../../plugins/local/knobs.js';
import { StateStore } from '../../../plugins/local/state.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, ensureNamespace, lbService, serviceEvents } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-conditions';
const NODE = 'lb-conditions-node';
const test = anyTest as TestFn<{ dir: string; store: StateStore; host: TestHost; core: CoreV1Api }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-conditions-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE, '127.0.94.1', { lbtest: 'conditions' });
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=conditions',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.93.0/24',
  ]);
  t.context = { dir, store: new StateStore(join(dir, 'cloud')), host, core };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

const read = (core: CoreV1Api, name: string): Promise<V1Service> => core.readNamespacedService({ name, namespace: NS });
const cond = (s: V1Service, type: string): V1Condition | undefined => s.status?.conditions?.find((c) => c.type === type);
/** "status/reason" of a condition, or "-" when absent. */
const sr = (s: V1Service, type: string): string => {
  const c = cond(s, type);
  return c ? `${c.status}/${c.reason}` : '-';
};

/** PATCH requests the host sent to the API server so far (rest_client_requests_total, any code). */
async function patches(host: TestHost): Promise<number> {
  const metric = await host.metrics.registry.getSingleMetric('rest_client_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.method === 'PATCH').reduce((n, v) => n + v.value, 0);
}

async function deferredCount(host: TestHost, reason: string): Promise<number> {
  const text = await host.metrics.registry.metrics();
  const m = new RegExp(`^ccm_cloud_deferred_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

test.serial('a provider error says why there is no address; served turns True; ClusterIP removes them; other conditions stay', async (t) => {
  const { core, store, host } = t.context;
  await updateKnobs(store, { fail: 'ensureLoadBalancer@cond-err=UNAVAILABLE,ensureLoadBalancers@cond-err=UNAVAILABLE' });
  t.teardown(() => updateKnobs(store, {}, ['fail']).then(() => undefined));
  await core.createNamespacedService({ namespace: NS, body: lbService('cond-err', NS) });

  const failing = await waitFor(
    async () => {
      const s = await read(core, 'cond-err');
      return sr(s, 'LoadBalancerServing') === 'False/Infrastructure' ? s : undefined;
    },
    { what: 'LoadBalancerServing False/Infrastructure', log: host.logPath },
  );
  t.is(sr(failing, 'LoadBalancerProvisioning'), 'False/Error');
  t.regex(cond(failing, 'LoadBalancerServing')!.message!, /injected \(fail knob\)/, 'the message says why');
  t.deepEqual(failing.status?.loadBalancer?.ingress ?? [], []);
  // Another writer's condition on the same Service (e.g. a policy controller), after ours.
  const theirs = { type: 'example.com/Audited', status: 'True', reason: 'Checked', message: 'not ours', lastTransitionTime: '2026-01-01T00:00:00Z' };
  await patchServiceStatus(core, NS, 'cond-err', [{ op: 'add', path: '/status/conditions/-', value: theirs }], 'json');

  await updateKnobs(store, {}, ['fail']);
  const served = await waitFor(
    async () => {
      const s = await read(core, 'cond-err');
      return sr(s, 'LoadBalancerServing') === 'True/Serving' ? s : undefined;
    },
    { what: 'LoadBalancerServing True/Serving', log: host.logPath },
  );
  const ip = served.status?.loadBalancer?.ingress?.[0]?.ip;
  t.truthy(ip, 'served with an address');
  t.is(sr(served, 'LoadBalancerProvisioning'), 'False/Complete');
  t.is(cond(served, 'LoadBalancerServing')!.message, `Load balancer serving at ${ip}`);
  t.is(sr(served, 'example.com/Audited'), 'True/Checked', 'the other writer’s condition is kept');

  await patchService(core, NS, 'cond-err', { spec: { type: 'ClusterIP' } }, 'merge');
  const plain = await waitFor(
    async () => {
      const s = await read(core, 'cond-err');
      return sr(s, 'LoadBalancerServing') === '-' && sr(s, 'LoadBalancerProvisioning') === '-' && !s.status?.loadBalancer?.ingress?.length
        ? s
        : undefined;
    },
    { what: 'the conditions and the address removed', log: host.logPath },
  );
  t.is(sr(plain, 'example.com/Audited'), 'True/Checked', 'the other writer’s condition is still kept');
  t.false(
    (await cloudLbs(join(t.context.dir, 'cloud'))).some((l) => l.serviceName === 'cond-err'),
    'its load balancer is deleted',
  );
});

test.serial('a quota "not now": Deferred conditions, retried after the provider delay without writes or Warnings, served when lifted', async (t) => {
  const { core, store, host, dir } = t.context;
  // A quota of what the cloud holds now: the next load balancer is one too many.
  const inUse = (await cloudLbs(join(dir, 'cloud'))).length;
  await updateKnobs(store, { lbQuota: Math.max(inUse, 1), lbQuotaRetryMs: 2000 });
  t.teardown(() => updateKnobs(store, {}, ['lbQuota', 'lbQuotaRetryMs']).then(() => undefined));
  if (inUse === 0) {
    // Fill the quota of one with a Service of its own.
    await core.createNamespacedService({ namespace: NS, body: lbService('cond-fill', NS) });
    await waitFor(async () => (await cloudLbs(join(dir, 'cloud'))).length === 1, { what: 'the quota filled', log: host.logPath });
  }
  const before = await deferredCount(host, 'QuotaExhausted');
  await core.createNamespacedService({ namespace: NS, body: lbService('cond-quota', NS) });
  const deferred = await waitFor(
    async () => {
      const s = await read(core, 'cond-quota');
      return sr(s, 'LoadBalancerProvisioning') === 'True/Deferred' ? s : undefined;
    },
    { what: 'LoadBalancerProvisioning True/Deferred', log: host.logPath },
  );
  t.is(sr(deferred, 'LoadBalancerServing'), 'False/QuotaExhausted', 'the Serving reason is the provider’s');
  t.regex(
    cond(deferred, 'LoadBalancerProvisioning')!.message!,
    /^QuotaExhausted: EnsureLoadBalancers?: load balancer quota of \d+ reached.*; retried in 2s$/,
  );

  // Retried after the provider's delay (2 s, not the 5 s.. backoff): further deferrals, none of which sends a write
  // (not even one the API server would find unchanged).
  const patched = await patches(host);
  const seen = await deferredCount(host, 'QuotaExhausted');
  await waitFor(async () => (await deferredCount(host, 'QuotaExhausted')) >= Math.max(seen, before + 1) + 2, {
    what: 'two more deferrals',
    log: host.logPath,
  });
  t.is(await patches(host), patched, 'an unchanged deferral sends no PATCH');
  const still = await read(core, 'cond-quota');
  t.is(still.metadata!.resourceVersion, deferred.metadata!.resourceVersion, 'nor changes the Service');
  const events = await serviceEvents(core, still);
  t.deepEqual(
    events.filter((e) => e.type === 'Warning').map((e) => e.reason),
    [],
    'no Warning event for a deferral',
  );
  const normal = events.filter((e) => e.reason === 'LoadBalancerDeferred');
  t.is(normal.length, 1, 'one LoadBalancerDeferred event');
  t.is(normal[0]!.count ?? 1, 1, 'emitted once, not per retry');
  t.deepEqual(
    events.filter((e) => e.reason === 'EnsuringLoadBalancer').map((e) => e.count ?? 1),
    [1],
    'the retries of a deferral are quiet: EnsuringLoadBalancer once',
  );

  await updateKnobs(store, {}, ['lbQuota']);
  const served = await waitFor(
    async () => {
      const s = await read(core, 'cond-quota');
      return sr(s, 'LoadBalancerServing') === 'True/Serving' ? s : undefined;
    },
    { what: 'served once the quota is lifted', log: host.logPath },
  );
  t.is(sr(served, 'LoadBalancerProvisioning'), 'False/Complete');
  t.truthy(served.status?.loadBalancer?.ingress?.[0]?.ip);
  t.deepEqual(
    (await serviceEvents(core, served)).filter((e) => e.type === 'Warning').map((e) => e.reason),
    [],
    'still no Warning event',
  );
});
