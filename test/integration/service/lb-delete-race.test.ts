/**
 * The window between the finalizer and the first EnsureLoadBalancer, made
 * deterministic: the local cloud holds EnsureLoadBalancer (knob `hold`) while
 * the test changes the Service under the host, then lets the call finish.
 *
 * kube-apiserver can remove a Service whose finalizer was added after the
 * DELETE read it (kubernetes/kubernetes#77988). The first test makes that race
 * happen for real (a validating webhook holds the DELETE between its read and
 * its delete: slow-delete-webhook.ts); the others remove the finalizer by hand.
 * Whatever happens to the Service while its load balancer is being made, the
 * load balancer made for that uid must not outlive it.
 *
 * Scoping: namespace lb-race, nodes labelled lbtest=race (none: no backends
 * needed), ingress pool 127.0.55.0/24, cluster name race.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { patchService } from '../../helpers/kube-patch.js';
import { readJournal } from '../../../plugins/local/journal.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, dropFinalizers, ensureNamespace, LB_FINALIZER, lbService } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { SLOW_DELETE_LABEL, startSlowDeleteWebhook, type SlowDeleteWebhook } from '../../helpers/slow-delete-webhook.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-race';
const CLUSTER = 'race';
const test = anyTest as TestFn<{ cloud: string; host: TestHost; core: CoreV1Api; webhook: SlowDeleteWebhook }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-race-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--cluster-name=${CLUSTER}`,
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=race',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.55.0/24',
  ]);
  const webhook = await startSlowDeleteWebhook(await testKubeConfig(), 'ccm-test-lb-race-slow-delete', NS, 'services');
  t.context = { cloud: join(dir, 'cloud'), host, core, webhook };
});

test.after.always(async (t) => {
  await localcloud(t.context.cloud, 'knobs', 'unset', 'hold').catch(() => undefined);
  await t.context.webhook?.close();
  await t.context.host?.stop();
});

async function readSvc(core: CoreV1Api, name: string): Promise<V1Service | undefined> {
  return core.readNamespacedService({ name, namespace: NS }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

async function deleteAndWaitGone(core: CoreV1Api, name: string): Promise<void> {
  await core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(async () => (await readSvc(core, name)) === undefined, { what: `Service ${NS}/${name} gone from the API` });
}

/** Cloud load balancers of this test's cluster, by the uid of the Service they were made for. */
async function lbUids(cloud: string): Promise<string[]> {
  return (await cloudLbs(cloud)).filter((l) => l.clusterName === CLUSTER).map((l) => l.serviceUid);
}

/** Creates a Service while EnsureLoadBalancer is held; resolves once the host put its finalizer on it (the ensure is next). */
async function createHeld(t: { context: { cloud: string; core: CoreV1Api } }, name: string): Promise<V1Service> {
  const { cloud, core } = t.context;
  await localcloud(cloud, 'knobs', 'set', 'hold=EnsureLoadBalancer');
  await core.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8080 }]) });
  return waitFor(
    async () => {
      const s = await readSvc(core, name);
      return s?.metadata?.finalizers?.includes(LB_FINALIZER) ? s : undefined;
    },
    { what: `finalizer on ${NS}/${name} (the host is in its first sync)` },
  );
}

const release = (cloud: string) => localcloud(cloud, 'knobs', 'unset', 'hold');

/** Waits until kube-apiserver sends DELETEs of labelled Services to the webhook (its configuration is loaded asynchronously). */
async function webhookActive(core: CoreV1Api, webhook: SlowDeleteWebhook): Promise<void> {
  await waitFor(
    async () => {
      const before = webhook.calls;
      const probe = { metadata: { name: 'webhook-probe', namespace: NS, labels: { [SLOW_DELETE_LABEL]: 'true' } }, spec: { ports: [{ port: 80 }] } };
      await core.createNamespacedService({ namespace: NS, body: probe });
      await core.deleteNamespacedService({ name: 'webhook-probe', namespace: NS });
      return webhook.calls > before;
    },
    { what: 'the slow-delete webhook is called by kube-apiserver' },
  );
}

test.serial('kube-apiserver deletes the Service, finalizer and all, during the first EnsureLoadBalancer (kubernetes#77988): no orphan', async (t) => {
  const { cloud, core, webhook } = t.context;
  await webhookActive(core, webhook);
  const name = 'apirace';
  // Not a LoadBalancer yet: the DELETE reads it without finalizers.
  const created = await core.createNamespacedService({
    namespace: NS,
    body: {
      metadata: { name, namespace: NS, labels: { [SLOW_DELETE_LABEL]: 'true' } },
      spec: { type: 'ClusterIP', ports: [{ name: 'p0', port: 8080 }] },
    },
  });
  const uid = created.metadata!.uid!;
  await localcloud(cloud, 'knobs', 'set', 'hold=EnsureLoadBalancer');
  const held = webhook.holdNext();
  const deleting = core.deleteNamespacedService({ name, namespace: NS });
  await held;
  // While the DELETE waits in admission: the Service becomes a LoadBalancer, the host adds its finalizer and calls EnsureLoadBalancer (held).
  await patchService(core, NS, name, { spec: { type: 'LoadBalancer' } }, 'merge');
  await waitFor(async () => ((await readSvc(core, name))?.metadata?.finalizers ?? []).includes(LB_FINALIZER), {
    what: `the host's finalizer on ${NS}/${name}`,
  });
  webhook.release();
  const removed = await deleting;
  t.true(
    removed.metadata?.finalizers?.includes(LB_FINALIZER),
    'the DELETE removed the Service with our finalizer on it (the API server race happened)',
  );
  t.falsy(removed.metadata?.deletionTimestamp, 'no graceful deletion: the object went at once');
  t.is(await readSvc(core, name), undefined);
  await release(cloud);
  await waitFor(
    async () => (await readJournal(cloud)).some((e) => e.method === 'loadBalancers.ensureLoadBalancer' && e.key === uid && e.ok && e.created),
    {
      what: `the held EnsureLoadBalancer created a load balancer for uid ${uid} (journal)`,
    },
  );
  await waitFor(async () => !(await lbUids(cloud)).includes(uid), {
    what: `the load balancer of the deleted Service (uid ${uid}) deleted; see ${t.context.host.logPath}`,
  });
});

const cases: { name: string; during: (core: CoreV1Api, svc: V1Service) => Promise<string | undefined> }[] = [
  {
    name: 'finalizer removed by hand and Service deleted during the first EnsureLoadBalancer: its load balancer is deleted',
    during: async (core, svc) => {
      await dropFinalizers(core, svc);
      await deleteAndWaitGone(core, svc.metadata!.name!);
      return undefined;
    },
  },
  {
    name: 'Service deleted and recreated under the same name during the first EnsureLoadBalancer: only the new one has a load balancer',
    during: async (core, svc) => {
      await dropFinalizers(core, svc);
      await deleteAndWaitGone(core, svc.metadata!.name!);
      const again = await core.createNamespacedService({ namespace: NS, body: lbService(svc.metadata!.name!, NS, [{ port: 9090 }]) });
      return again.metadata!.uid;
    },
  },
];

for (const [i, c] of cases.entries()) {
  test.serial(c.name, async (t) => {
    const { cloud, core } = t.context;
    const name = `race${i}`;
    const held = await createHeld(t, name);
    const oldUid = held.metadata!.uid!;
    t.false((await lbUids(cloud)).includes(oldUid), 'nothing is made while EnsureLoadBalancer is held');
    const newUid = await c.during(core, held);
    await release(cloud);
    // The held call goes on and creates the load balancer for the old uid...
    await waitFor(
      async () => (await readJournal(cloud)).some((e) => e.method === 'loadBalancers.ensureLoadBalancer' && e.key === oldUid && e.ok && e.created),
      {
        what: `the held EnsureLoadBalancer created a load balancer for uid ${oldUid} (journal)`,
      },
    );
    // ...which must then go.
    const want = newUid ? [newUid] : [];
    const uids = await waitFor(
      async () => {
        const have = (await lbUids(cloud)).filter((u) => u === oldUid || u === newUid);
        return have.length === want.length && want.every((u) => have.includes(u)) ? have : undefined;
      },
      { what: `cloud load balancers == ${JSON.stringify(want)} (old uid ${oldUid} must not keep one; see the host log)`, timeoutMs: 60_000 },
    );
    t.false(uids.includes(oldUid), `no load balancer for the deleted Service (uid ${oldUid})`);
    if (newUid) {
      const svc = await waitFor(
        async () => {
          const s = await readSvc(core, name);
          return s?.status?.loadBalancer?.ingress?.[0]?.ip ? s : undefined;
        },
        { what: `ingress on the recreated ${NS}/${name}` },
      );
      const lb = (await cloudLbs(cloud)).find((l) => l.serviceUid === newUid)!;
      t.is(svc.status!.loadBalancer!.ingress![0]!.ip, lb.ingressIp, "the recreated Service shows its own load balancer's address");
      await deleteAndWaitGone(core, name);
      await waitFor(async () => !(await lbUids(cloud)).includes(newUid), { what: 'no load balancer after the recreated Service is deleted' });
    }
  });
}
