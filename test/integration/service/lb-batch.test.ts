/**
 * Batch ensure (EnsureLoadBalancers) with one service worker, against the
 * real API server and the local cloud: Services queued behind a held call are
 * drained in batches (the worker's own ensure plus queued companions), so the
 * cloud sees far fewer ensure calls than Services, yet every Service gets
 * exactly one ensure, one load balancer and its ingress. Services deleted (or
 * deleted and recreated) while the batch that carries them is in flight
 * keep no load balancer.
 *
 * Scoping: namespace lb-batch, nodes labelled lbtest=batch (node
 * lb-batch-n0), ingress pool 127.0.57.0/24, cluster name batch.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { mapLimit } from '../../../host/util/map-limit.js';
import { readJournal, type JournalEntry } from '../../../plugins/local/journal.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, dropFinalizers, ensureNamespace, LB_FINALIZER, lbService } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-batch';
const CLUSTER = 'batch';
const NODE = 'lb-batch-n0';
const ENSURES = new Set(['loadBalancers.ensureLoadBalancer', 'loadBalancers.ensureLoadBalancers']);
const test = anyTest as TestFn<{ cloud: string; host: TestHost; core: CoreV1Api }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-batch-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE, '127.0.57.250', { lbtest: 'batch' });
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--cluster-name=${CLUSTER}`,
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=batch',
    '--concurrent-service-syncs=1',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.57.0/24',
  ]);
  t.context = { cloud: join(dir, 'cloud'), host, core };
});

test.after.always(async (t) => {
  await localcloud(t.context.cloud, 'knobs', 'unset', 'hold').catch(() => undefined);
  await t.context.host?.stop();
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

const hold = (cloud: string, methods: string) => localcloud(cloud, 'knobs', 'set', `hold=${methods}`);

async function readSvc(core: CoreV1Api, name: string): Promise<V1Service | undefined> {
  return core.readNamespacedService({ name, namespace: NS }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

async function createAll(core: CoreV1Api, names: string[]): Promise<Map<string, string>> {
  const created = await mapLimit(names, 16, (name) => core.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8080 }]) }));
  return new Map(created.map((s) => [s.metadata!.name!, s.metadata!.uid!]));
}

/** Ensure calls of the journal naming any of `uids`, and the uids each names. */
function ensureCalls(journal: JournalEntry[], uids: Set<string>): { entry: JournalEntry; uids: string[] }[] {
  return journal
    .filter((e) => ENSURES.has(e.method))
    .map((entry) => ({ entry, uids: (entry.keys ?? (entry.key ? [entry.key] : [])).filter((u) => uids.has(u)) }))
    .filter((c) => c.uids.length > 0);
}

/** Makes the one worker busy: a lone Service whose (single) ensure is held; resolves once it has the finalizer. */
async function busyWorker(cloud: string, core: CoreV1Api, name: string, methods: string): Promise<void> {
  await hold(cloud, methods);
  await core.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8080 }]) });
  await waitFor(async () => ((await readSvc(core, name))?.metadata?.finalizers ?? []).includes(LB_FINALIZER), {
    what: `finalizer on ${NS}/${name} (its ensure is held)`,
  });
}

test.serial('one worker drains many queued Services in batch calls: one ensure and one load balancer per Service, every ingress set', async (t) => {
  const { cloud, core } = t.context;
  const n = 60;
  await busyWorker(cloud, core, 'many-first', 'EnsureLoadBalancer');
  const byName = await createAll(
    core,
    Array.from({ length: n }, (_, i) => `many-${i}`),
  );
  byName.set('many-first', (await readSvc(core, 'many-first'))!.metadata!.uid!);
  await localcloud(cloud, 'knobs', 'unset', 'hold');
  const uids = new Set(byName.values());
  const lbs = await waitFor(
    async () => {
      const mine = (await cloudLbs(cloud)).filter((l) => uids.has(l.serviceUid));
      return mine.length === uids.size ? mine : undefined;
    },
    { what: `${uids.size} load balancers; see ${t.context.host.logPath}`, timeoutMs: 120_000 },
  );
  for (const [name, uid] of byName) {
    const svc = await waitFor(
      async () => {
        const s = await readSvc(core, name);
        return s?.status?.loadBalancer?.ingress?.[0]?.ip ? s : undefined;
      },
      { what: `ingress on ${NS}/${name}` },
    );
    t.is(
      svc.status!.loadBalancer!.ingress![0]!.ip,
      lbs.find((l) => l.serviceUid === uid)!.ingressIp,
      `${name} shows its own load balancer's address`,
    );
  }
  t.is(new Set(lbs.map((l) => l.ingressIp)).size, lbs.length, 'no address shared');
  const calls = ensureCalls(await readJournal(cloud), uids);
  const ensured = calls.flatMap((c) => c.uids);
  t.is(ensured.length, uids.size, 'exactly one ensure per Service');
  t.is(new Set(ensured).size, uids.size);
  t.true(calls.length <= uids.size / 4, `far fewer ensure calls than Services: ${calls.length} for ${uids.size}`);
  t.true(
    calls.some((c) => c.entry.method === 'loadBalancers.ensureLoadBalancers' && c.uids.length > 1),
    'batch calls were made',
  );
  const created = calls.flatMap((c) => c.entry.createdKeys ?? (c.entry.created && c.entry.key ? [c.entry.key] : []));
  t.deepEqual([...created].sort(), [...uids].sort(), 'each load balancer created once');
});

test.serial('Services deleted, or deleted and recreated, while the batch carrying them is in flight keep no load balancer', async (t) => {
  const { cloud, core } = t.context;
  await busyWorker(cloud, core, 'del-first', 'EnsureLoadBalancer');
  const names = Array.from({ length: 12 }, (_, i) => `del-${i}`);
  const byName = await createAll(core, names);
  // The lone call goes on; the worker's next ensure carries the queued Services as companions and is held.
  await hold(cloud, 'EnsureLoadBalancers');
  const held = await waitFor(
    async () => {
      const svcs = await Promise.all(names.map((n) => readSvc(core, n)));
      return svcs.every((s) => s?.metadata?.finalizers?.includes(LB_FINALIZER)) ? svcs.map((s) => s!) : undefined;
    },
    { what: 'every queued Service given its finalizer for the held batch', timeoutMs: 60_000 },
  );
  const [graceful, gone, recreated] = [held[1]!, held[2]!, held[3]!];
  await core.deleteNamespacedService({ name: graceful.metadata!.name!, namespace: NS });
  for (const svc of [gone, recreated]) {
    await dropFinalizers(core, svc);
    await core.deleteNamespacedService({ name: svc.metadata!.name!, namespace: NS });
    await waitFor(async () => (await readSvc(core, svc.metadata!.name!)) === undefined, { what: `${svc.metadata!.name} gone from the API` });
  }
  const again = await core.createNamespacedService({ namespace: NS, body: lbService(recreated.metadata!.name!, NS, [{ port: 9090 }]) });
  await localcloud(cloud, 'knobs', 'unset', 'hold');
  const deadUids = new Set([graceful, gone, recreated].map((s) => s.metadata!.uid!));
  const liveUids = new Set([...byName.values()].filter((u) => !deadUids.has(u)));
  liveUids.add(again.metadata!.uid!);
  const journal = await waitFor(
    async () => {
      const j = await readJournal(cloud);
      return j.some((e) => e.method === 'loadBalancers.ensureLoadBalancers' && e.ok && [...deadUids].every((u) => e.keys?.includes(u)))
        ? j
        : undefined;
    },
    { what: 'the held batch carrying the deleted Services completed (journal)' },
  );
  t.truthy(journal);
  const relevant = new Set([...deadUids, ...liveUids]);
  await waitFor(
    async () => {
      const have = (await cloudLbs(cloud)).map((l) => l.serviceUid).filter((u) => relevant.has(u));
      return have.length === liveUids.size && have.every((u) => liveUids.has(u));
    },
    { what: `load balancers only for the live Services; see ${t.context.host.logPath}`, timeoutMs: 60_000 },
  );
  await waitFor(async () => (await readSvc(core, graceful.metadata!.name!)) === undefined, {
    what: 'the gracefully deleted Service finished deleting (finalizer removed)',
  });
  for (const name of names.filter((n) => n !== gone.metadata!.name)) {
    await waitFor(
      async () => {
        const s = await readSvc(core, name);
        return s === undefined ? name === graceful.metadata!.name : Boolean(s.status?.loadBalancer?.ingress?.[0]?.ip);
      },
      { what: `ingress on ${NS}/${name}` },
    );
  }
  t.pass();
});
