/**
 * The service controller end to end: the real host with --controllers=service,
 * the local cloud as a real plugin process whose load balancers carry TCP
 * traffic, and the real kube-apiserver. Backends are small TCP servers on the
 * nodes' (loopback) InternalIPs at the nodePort the API server assigned.
 *
 * Scoping for the shared API server: namespace lb-lifecycle, nodes labelled
 * lbtest=lifecycle, loopback addresses 127.0.51.0/24 (ingress pool) and
 * 127.0.52.0/24 (nodes).
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTcpBackend, tcpRequest, type Backend } from '../../helpers/backends.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, ensureNamespace, LB_FINALIZER, lbService, pluginCalls, serviceEvents } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-lifecycle';
const SELECTOR = { lbtest: 'lifecycle' };
const test = anyTest as TestFn<{ dir: string; cloud: string; host: TestHost; core: CoreV1Api; backends: Backend[]; nodes: string[] }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-it-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=lifecycle',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.51.0/24',
  ]);
  t.context = { dir, cloud: join(dir, 'cloud'), host, core, backends: [], nodes: [] };
});

test.after.always(async (t) => {
  const { host, core, backends, nodes } = t.context;
  await host?.stop();
  await Promise.all((backends ?? []).map((b) => b.close()));
  for (const name of nodes ?? []) await core.deleteNode({ name }).catch(() => undefined);
});

async function addNode(t: { context: { core: CoreV1Api; nodes: string[] } }, name: string, ip: string): Promise<void> {
  await createBackendNode(t.context.core, name, ip, SELECTOR);
  t.context.nodes.push(name);
}

async function readSvc(core: CoreV1Api, name: string): Promise<V1Service | undefined> {
  return core.readNamespacedService({ name, namespace: NS }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

const ingressIp = (s: V1Service | undefined) => s?.status?.loadBalancer?.ingress?.[0]?.ip;

/** Waits until the cloud load balancers of Services n1 and n2 both have exactly the backends `want` (node names, sorted, comma-joined). */
async function settleN1N2(cloud: string, want: string, what: string): Promise<void> {
  const backendsOf = async () =>
    (await cloudLbs(cloud))
      .filter((l) => l.serviceName === 'n1' || l.serviceName === 'n2')
      .map((l) =>
        l.backends
          .map((b) => b.nodeName)
          .sort()
          .join(','),
      );
  await waitFor(
    async () => {
      const got = await backendsOf();
      return got.length === 2 && got.every((b) => b === want);
    },
    { what },
  );
}

test.serial(
  'create → finalizer, ingress, TCP round trip; port change → traffic follows; delete → LB gone, then finalizer, then Service',
  async (t) => {
    const { core, cloud, backends } = t.context;
    await addNode(t, 'lbit-a', '127.0.52.1');
    await addNode(t, 'lbit-b', '127.0.52.2');
    const created = await core.createNamespacedService({ namespace: NS, body: lbService('web', NS, [{ port: 8080 }]) });
    const nodePort = created.spec!.ports![0]!.nodePort!;
    backends.push(await startTcpBackend('a', '127.0.52.1', nodePort), await startTcpBackend('b', '127.0.52.2', nodePort));

    const svc = await waitFor(
      async () => {
        const s = await readSvc(core, 'web');
        return ingressIp(s) ? s : undefined;
      },
      { what: 'ingress in status' },
    );
    t.true(svc.metadata!.finalizers!.includes(LB_FINALIZER));
    const ing = svc.status!.loadBalancer!.ingress![0]!;
    t.regex(ing.ip!, /^127\.0\.51\./);
    t.is(ing.ipMode, 'VIP');
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) seen.add(await tcpRequest(ing.ip!, 8080));
    t.deepEqual([...seen].sort(), ['a', 'b'], 'traffic reaches both backend nodes');
    const events = await waitFor(
      async () => {
        const ev = await serviceEvents(core, svc);
        return ev.some((e) => e.reason === 'EnsuredLoadBalancer') ? ev : undefined;
      },
      { what: 'EnsuredLoadBalancer event' },
    );
    t.true(events.some((e) => e.reason === 'EnsuringLoadBalancer'));

    // Change the port: the load balancer listens on the new one.
    await core.patchNamespacedService({ name: 'web', namespace: NS, body: [{ op: 'replace', path: '/spec/ports/0/port', value: 9090 }] });
    await waitFor(async () => (await cloudLbs(cloud)).some((l) => l.serviceName === 'web' && l.ports[0]?.port === 9090), { what: 'LB on port 9090' });
    t.is(await waitFor(() => tcpRequest(ing.ip!, 9090), { what: 'traffic on the new port' }).then((r) => /^[ab]$/.test(r)), true);
    await t.throwsAsync(tcpRequest(ing.ip!, 8080), undefined, 'the old port no longer answers');

    // Delete: the cloud LB goes first, then the finalizer, then the Service.
    await core.deleteNamespacedService({ name: 'web', namespace: NS });
    await waitFor(async () => (await readSvc(core, 'web')) === undefined, { what: 'Service gone' });
    t.false(
      (await cloudLbs(cloud)).some((l) => l.serviceName === 'web'),
      'no cloud LB left',
    );
    await t.throwsAsync(tcpRequest(ing.ip!, 9090), undefined, 'the listener is closed');
    const del = await serviceEvents(core, svc);
    t.true(del.some((e) => e.reason === 'DeletedLoadBalancer'));
  },
);

test.serial('loadBalancerClass set → ignored; type change LoadBalancer → ClusterIP → LB deleted and finalizer removed', async (t) => {
  const { core, cloud } = t.context;
  await core.createNamespacedService({ namespace: NS, body: lbService('classy', NS, [{ port: 81 }], { loadBalancerClass: 'example.com/other' }) });
  await core.createNamespacedService({ namespace: NS, body: lbService('flip', NS, [{ port: 82 }]) });
  await waitFor(async () => ingressIp(await readSvc(core, 'flip')), { what: 'flip ensured' });
  // The queue has moved past "classy" (created first): it got nothing.
  const classy = await readSvc(core, 'classy');
  t.falsy(classy?.metadata?.finalizers?.includes(LB_FINALIZER));
  t.falsy(ingressIp(classy));
  t.false((await cloudLbs(cloud)).some((l) => l.serviceName === 'classy'));

  await core.patchNamespacedService({
    name: 'flip',
    namespace: NS,
    body: [
      { op: 'replace', path: '/spec/type', value: 'ClusterIP' },
      { op: 'remove', path: '/spec/ports/0/nodePort' },
    ],
  });
  const flipped = await waitFor(
    async () => {
      const s = await readSvc(core, 'flip');
      return s && !s.metadata?.finalizers?.includes(LB_FINALIZER) ? s : undefined;
    },
    { what: 'finalizer removed after the type change' },
  );
  t.false(
    (await cloudLbs(cloud)).some((l) => l.serviceName === 'flip'),
    'cloud LB deleted',
  );
  t.falsy(ingressIp(flipped), 'status cleared');
  await core.deleteNamespacedService({ name: 'flip', namespace: NS });
  await core.deleteNamespacedService({ name: 'classy', namespace: NS });
});

test.serial('nodes added, removed and excluded: backends follow, one batch update per change, none for heartbeats', async (t) => {
  const { core, cloud, host } = t.context;
  // Two LBs; lbit-a and lbit-b exist from the first test.
  for (const name of ['n1', 'n2']) await core.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8083 }]) });
  await waitFor(async () => ingressIp(await readSvc(core, 'n1')) && ingressIp(await readSvc(core, 'n2')), { what: 'both ensured' });
  const settle = (want: string, what: string) => settleN1N2(cloud, want, what);
  await settle('lbit-a,lbit-b', 'initial backends');
  const ensures0 = await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer');
  let batches = await pluginCalls(host.metrics.registry, 'UpdateLoadBalancerHosts');

  // A heartbeat-like status change and an unrelated label: no cloud call. Then a real change.
  await core.patchNodeStatus(
    { name: 'lbit-a', body: { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date() }] } } },
    (await import('../../helpers/kube-patch.js')).patchOptions('strategic'),
  );
  await core.patchNode(
    { name: 'lbit-b', body: { metadata: { labels: { unrelated: 'x' } } } },
    (await import('../../helpers/kube-patch.js')).patchOptions('merge'),
  );
  await addNode(t, 'lbit-c', '127.0.52.3');
  await settle('lbit-a,lbit-b,lbit-c', 'node added');
  t.is(
    await pluginCalls(host.metrics.registry, 'UpdateLoadBalancerHosts'),
    batches + 1,
    'one batch call for both LBs (heartbeat and label changes made none)',
  );
  batches += 1;

  await core.patchNode(
    { name: 'lbit-b', body: { metadata: { labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' } } } },
    (await import('../../helpers/kube-patch.js')).patchOptions('merge'),
  );
  await settle('lbit-a,lbit-c', 'excluded node removed');
  t.is(await pluginCalls(host.metrics.registry, 'UpdateLoadBalancerHosts'), batches + 1);
  batches += 1;

  await core.deleteNode({ name: 'lbit-c' });
  await settle('lbit-a', 'deleted node removed');
  t.is(await pluginCalls(host.metrics.registry, 'UpdateLoadBalancerHosts'), batches + 1);

  // Traffic goes only to the remaining backend node.
  const ip = ingressIp(await readSvc(core, 'n1'))!;
  const nodePort = (await readSvc(core, 'n1'))!.spec!.ports![0]!.nodePort!;
  const extra = [await startTcpBackend('a', '127.0.52.1', nodePort), await startTcpBackend('b', '127.0.52.2', nodePort)];
  t.context.backends.push(...extra);
  for (let i = 0; i < 4; i++) t.is(await tcpRequest(ip, 8083), 'a', 'the excluded node gets no traffic');
  t.is(await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer'), ensures0, 'node changes never re-ensure');
  const updated = await serviceEvents(core, (await readSvc(core, 'n1'))!);
  t.true(updated.some((e) => e.reason === 'UpdatedLoadBalancer'));
});

test.serial(
  "the autoscaler's taint and a deletionTimestamp start no backend update; the next update leaves such nodes out (upstream, KEP-3458)",
  async (t) => {
    // Continues the test above: n1 and n2 have the backend lbit-a (lbit-b excluded, lbit-c deleted).
    const { core, cloud, host } = t.context;
    const { patchOptions } = await import('../../helpers/kube-patch.js');
    const settle = (want: string, what: string) => settleN1N2(cloud, want, what);
    const batchCalls = () => pluginCalls(host.metrics.registry, 'UpdateLoadBalancerHosts');
    // lbit-e is held by a finalizer of ours, so its deletion leaves it with a deletionTimestamp.
    const HOLD = 'ccm.test/hold';
    await addNode(t, 'lbit-d', '127.0.52.4');
    await core.createNode({
      body: {
        metadata: { name: 'lbit-e', labels: { 'kubernetes.io/hostname': 'lbit-e', ...SELECTOR }, finalizers: [HOLD] },
        status: { addresses: [{ type: 'InternalIP', address: '127.0.52.5' }] },
      },
    });
    t.context.nodes.push('lbit-e');
    t.teardown(() =>
      core.patchNode({ name: 'lbit-e', body: { metadata: { finalizers: null } } }, patchOptions('merge')).then(
        () => undefined,
        () => undefined,
      ),
    );
    await settle('lbit-a,lbit-d,lbit-e', 'lbit-d and lbit-e are backends');
    const batches = await batchCalls();

    // Each is a backend until something else changes the node set: kube-proxy's health check drains it first.
    await core.patchNode(
      { name: 'lbit-d', body: { spec: { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' }] } } },
      patchOptions('merge'),
    );
    await core.deleteNode({ name: 'lbit-e' });
    await waitFor(async () => (await core.readNode({ name: 'lbit-e' })).metadata?.deletionTimestamp, { what: 'lbit-e being deleted' });
    await addNode(t, 'lbit-f', '127.0.52.6');
    await settle('lbit-a,lbit-f', 'the next update (a node added) leaves the tainted and the deleting node out');
    t.is(await batchCalls(), batches + 1, 'one batch call: the taint and the deletionTimestamp made none of their own');
  },
);
