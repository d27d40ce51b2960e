/**
 * Two clusters, one cloud, one --cluster-name (issue 29, finding 1): the
 * shared control plane (cluster A) and a second control plane of its own
 * (cluster B), each with a host running the service controller and a fast
 * orphan sweep (every second, no grace), both hosts' local clouds on one
 * state directory. Every load balancer of the other cluster looks orphaned
 * from either host (its Service uid is not in that host's cache), so only the
 * cluster UID (the kube-system Namespace's uid, sent in every request and
 * tagged on every load balancer) keeps each sweep off the neighbour's.
 *
 * Over many sweeps of both hosts, no load balancer of either cluster is
 * deleted or re-made, both Services keep their ingress, and each host counts
 * the other's load balancers as foreign. Then a Service of A deleted while
 * A's host is down, its finalizer removed by hand, leaves an orphan that A's
 * next host does delete with its sweep: the sweep runs, it only leaves what
 * is not A's.
 *
 * Scoping: namespace lb-two in both clusters (a Service `web` of the same
 * name in each), nodes labelled lbtest=two (none), ingress pool
 * 127.0.64.0/24, cluster name twins.
 */
import test from 'ava';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, dropFinalizers, ensureNamespace, lbService, pluginCalls } from '../../helpers/lb.js';
import { applyShippedRbac, serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-two';
const CLUSTER = 'twins';
/** Sweeps each host must have made (ListLoadBalancers calls) while both clusters' load balancers exist. */
const SWEEPS = 12;

/** Sum of ccm_orphan_load_balancers_total{outcome} in a host's registry. */
async function orphanCount(host: TestHost, outcome: string): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_orphan_load_balancers_total')?.get();
  return (m?.values ?? []).filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
}

test('two clusters with one --cluster-name in one cloud: over many sweeps neither deletes the other’s load balancers; a real orphan is still swept', async (t) => {
  t.timeout(240_000);
  const cpB = await ControlPlane.start();
  t.teardown(() => cpB.stop());
  await applyShippedRbac(cpB.kubeConfig());
  const hostKcB = await serviceAccountKubeConfig(cpB.kubeConfig());
  const core = { a: (await testKubeConfig()).makeApiClient(CoreV1Api), b: cpB.kubeConfig().makeApiClient(CoreV1Api) };
  const clusterUid = {
    a: (await core.a.readNamespace({ name: 'kube-system' })).metadata!.uid!,
    b: (await core.b.readNamespace({ name: 'kube-system' })).metadata!.uid!,
  };
  t.not(clusterUid.a, clusterUid.b, 'two clusters, two kube-system uids');
  await ensureNamespace(core.a, NS);
  await ensureNamespace(core.b, NS);

  const root = await mkdtemp(join(tmpdir(), 'ccm-lb-two-'));
  const state = join(root, 'cloud');
  const flags = [
    '--controllers=service',
    `--cluster-name=${CLUSTER}`,
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=two',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.64.0/24',
    '--lb-orphan-sweep-period=1s',
    '--lb-orphan-grace-period=0s',
  ];
  const hosts: TestHost[] = [];
  t.teardown(async () => {
    for (const h of hosts) await h.stop();
  });
  const start = async (name: string, extra: { kubeConfig?: typeof hostKcB } = {}) => {
    await mkdir(join(root, name), { recursive: true });
    const h = await startTestHost(join(root, name), flags, extra);
    hosts.push(h);
    return h;
  };
  let hostA = await start('a1');
  const hostB = await start('b', { kubeConfig: hostKcB });

  const ensured = async (api: CoreV1Api, name: string): Promise<V1Service> => {
    await api.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8080 }]) });
    return waitFor(
      async () => {
        const s = await api.readNamespacedService({ name, namespace: NS });
        return s.status?.loadBalancer?.ingress?.[0]?.ip ? s : undefined;
      },
      { what: `ingress on ${NS}/${name}` },
    );
  };
  const webA = await ensured(core.a, 'web');
  const doomed = await ensured(core.a, 'doomed');
  const webB = await ensured(core.b, 'web');
  const uid = (s: V1Service) => s.metadata!.uid!;

  // Each load balancer as first made: name, ingress, creation time, cluster UID tag.
  const snapshot = async () =>
    new Map(
      (await cloudLbs(state))
        .filter((l) => l.clusterName === CLUSTER)
        .map((l) => [l.serviceUid, `${l.name} ${l.ingressIp} ${l.createdAt} ${l.clusterUid ?? ''}`] as const),
    );
  const before = await snapshot();
  t.deepEqual([...before.keys()].sort(), [uid(webA), uid(doomed), uid(webB)].sort(), 'three load balancers, all of cluster name twins');
  const tags = new Map((await cloudLbs(state)).map((l) => [l.serviceUid, l.clusterUid]));
  t.deepEqual(
    [tags.get(uid(webA)), tags.get(uid(doomed)), tags.get(uid(webB))],
    [clusterUid.a, clusterUid.a, clusterUid.b],
    'each tagged with its cluster’s UID',
  );

  // Many sweeps of both hosts; after each round, nothing changed.
  const baseA = await pluginCalls(hostA.metrics.registry, 'ListLoadBalancers');
  const baseB = await pluginCalls(hostB.metrics.registry, 'ListLoadBalancers');
  await waitFor(
    async () => {
      t.deepEqual(await snapshot(), before, 'no load balancer deleted or re-made while both hosts sweep');
      const a = (await pluginCalls(hostA.metrics.registry, 'ListLoadBalancers')) - baseA;
      const b = (await pluginCalls(hostB.metrics.registry, 'ListLoadBalancers')) - baseB;
      return a >= SWEEPS && b >= SWEEPS;
    },
    { what: `${SWEEPS} sweeps of each host; see ${hostA.logPath} and ${hostB.logPath}`, timeoutMs: 90_000, intervalMs: 500 },
  );
  t.deepEqual(await snapshot(), before, `no load balancer deleted or re-made over ${SWEEPS}+ sweeps of each host`);
  t.is(await orphanCount(hostA, 'foreign'), 1, 'A counts B’s load balancer as foreign, once');
  t.is(await orphanCount(hostB, 'foreign'), 2, 'B counts A’s two load balancers as foreign, once each');
  t.is(await orphanCount(hostA, 'deleted'), 0);
  t.is(await orphanCount(hostB, 'deleted'), 0);
  for (const [api, svc] of [
    [core.a, webA],
    [core.b, webB],
  ] as const) {
    const now = await api.readNamespacedService({ name: 'web', namespace: NS });
    t.deepEqual(now.status?.loadBalancer?.ingress, svc.status?.loadBalancer?.ingress, 'the Service keeps its ingress');
  }

  // A real orphan of A, made while A's host is down: A's next host sweeps it, and nothing else.
  await hostA.stop();
  hosts.splice(hosts.indexOf(hostA), 1);
  await dropFinalizers(core.a, doomed);
  await core.a.deleteNamespacedService({ name: 'doomed', namespace: NS });
  hostA = await start('a2');
  await waitFor(async () => !(await snapshot()).has(uid(doomed)), {
    what: `A's orphan swept; see ${join(root, 'a2', 'host.log')}`,
    timeoutMs: 30_000,
  });
  t.is(await orphanCount(hostA, 'deleted'), 1, 'deleted by the sweep');
  const after = await snapshot();
  before.delete(uid(doomed));
  t.deepEqual(after, before, 'the other two load balancers are as first made');

  // Cleanup through the normal path.
  await core.a.deleteNamespacedService({ name: 'web', namespace: NS });
  await core.b.deleteNamespacedService({ name: 'web', namespace: NS });
  await waitFor(async () => (await snapshot()).size === 0, { what: 'both webs deleted through their finalizers' });
});
