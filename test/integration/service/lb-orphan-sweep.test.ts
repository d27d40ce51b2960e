/**
 * The orphan sweep against the real API server and the local cloud as a real
 * plugin process: load balancers whose Service went away where no controller
 * could see it are deleted, and nothing else is.
 *
 * The orphans are made while no host runs: a finalizer removed by hand and
 * the Service deleted; a finalizer removed by hand and the Service turned
 * into ClusterIP; a namespace deleted (its Service's finalizer cleared by
 * hand, the namespace finalized). A load balancer of another cluster name
 * sits in the same cloud, and one host never touches the namespace of the
 * other. Two more of this cluster name look orphaned but are not this
 * cluster's (issue 29): one tagged with another cluster UID, one untagged;
 * they are counted (foreign, untagged) and never deleted.
 *
 * Scoping: namespaces lb-sweep and lb-sweep-ns, nodes labelled lbtest=sweep
 * (none), ingress pool 127.0.56.0/24, cluster name sweep.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { patchService } from '../../helpers/kube-patch.js';
import { StateStore } from '../../../plugins/local/state.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, dropFinalizers, ensureNamespace, lbService, serviceEvents } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-sweep';
const NS_GONE = 'lb-sweep-ns';
const CLUSTER = 'sweep';

/** Service uids of the load balancers of cluster name `sweep` that are not this cluster's (another cluster UID, none). */
const NOT_OURS = { foreign: 'f0f0f0f0-0000-4000-8000-000000000002', untagged: 'f0f0f0f0-0000-4000-8000-000000000003' };

/** This cluster's `sweep` load balancers in the cloud, by Service uid. */
async function sweepUids(state: string): Promise<Set<string>> {
  const notOurs = new Set(Object.values(NOT_OURS));
  return new Set((await cloudLbs(state)).filter((l) => l.clusterName === CLUSTER && !notOurs.has(l.serviceUid)).map((l) => l.serviceUid));
}

/** Sum of ccm_orphan_load_balancers_total{outcome} in a host's registry. */
async function orphanCount(host: TestHost, outcome: string): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_orphan_load_balancers_total')?.get();
  return (m?.values ?? []).filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
}

test('orphans made while no host ran are deleted by the sweep (dry run first), and nothing else', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-sweep-'));
  const state = join(dir, 'cloud');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await ensureNamespace(core, NS_GONE);
  const flags = (ns: string, extra: string[] = []) => [
    '--controllers=service',
    `--cluster-name=${CLUSTER}`,
    `--watch-namespace=${ns}`,
    '--node-selector=lbtest=sweep',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.56.0/24',
    '--lb-orphan-sweep-period=1s',
    '--lb-orphan-grace-period=2s',
    ...extra,
  ];
  let host: TestHost | undefined;
  t.teardown(async () => {
    await host?.stop();
  });
  const run = async (ns: string, extra: string[] = []) => {
    await host?.stop();
    host = await startTestHost(dir, flags(ns, extra));
    return host;
  };
  const ensured = async (ns: string, names: string[]) => {
    for (const name of names) await core.createNamespacedService({ namespace: ns, body: lbService(name, ns, [{ port: 8080 }]) });
    return Promise.all(
      names.map((name) =>
        waitFor(
          async () => {
            const s = await core.readNamespacedService({ name, namespace: ns });
            return s.status?.loadBalancer?.ingress?.[0]?.ip ? s : undefined;
          },
          { what: `ingress on ${ns}/${name}` },
        ),
      ),
    );
  };

  // Load balancers made by hosts, one namespace at a time.
  await run(NS);
  const [keep, byHand, flip] = await ensured(NS, ['keep', 'byhand', 'flip']);
  await run(NS_GONE);
  const [gone] = await ensured(NS_GONE, ['gone']);
  await host!.stop();
  host = undefined;

  // While no host runs: three orphans, and a load balancer of another cluster.
  await dropFinalizers(core, byHand!);
  await core.deleteNamespacedService({ name: 'byhand', namespace: NS });
  await dropFinalizers(core, flip!);
  await patchService(core, NS, 'flip', { spec: { type: 'ClusterIP' } }, 'merge');
  await dropFinalizers(core, gone!);
  await core.deleteNamespace({ name: NS_GONE });
  await core.deleteNamespacedService({ name: 'gone', namespace: NS_GONE }).catch(() => undefined);
  // The test control plane runs no namespace controller: finalize the namespace as it would once it is empty.
  const terminating = await core.readNamespace({ name: NS_GONE });
  await core.replaceNamespaceFinalize({ name: NS_GONE, body: { ...terminating, spec: { finalizers: [] } } });
  await waitFor(async () => !(await core.listNamespace()).items.some((n) => n.metadata?.name === NS_GONE), { what: `namespace ${NS_GONE} gone` });
  const foreign = {
    name: 'lb-other-foreign',
    clusterName: 'other',
    serviceUid: 'f0f0f0f0-0000-4000-8000-000000000001',
    serviceNamespace: NS,
    serviceName: 'byhand',
  };
  // Same cluster name, same namespace, Services this cluster never had: one of another cluster UID, one untagged.
  const sameName = [
    {
      name: 'lb-sweep-foreign-uid',
      clusterName: CLUSTER,
      clusterUid: 'uid-of-another-cluster',
      serviceUid: NOT_OURS.foreign,
      serviceNamespace: NS,
      serviceName: 'theirs',
    },
    { name: 'lb-sweep-untagged', clusterName: CLUSTER, serviceUid: NOT_OURS.untagged, serviceNamespace: NS, serviceName: 'old' },
  ];
  await new StateStore(state).update((d) => {
    for (const [i, lb] of [foreign, ...sameName].entries()) {
      d.loadBalancers.push({
        ...lb,
        ingressIp: `127.0.56.${250 + i}`,
        ipMode: 'VIP',
        ports: [],
        backends: [],
        sourceRanges: [],
        externalTrafficPolicy: 'Cluster',
        healthCheckNodePort: 0,
        sessionAffinity: 'None',
        createdAt: new Date().toISOString(),
      });
    }
  });
  const uid = (s: V1Service | undefined) => s!.metadata!.uid!;
  const all = [uid(keep), uid(byHand), uid(flip), uid(gone)];
  t.deepEqual([...(await sweepUids(state))].sort(), [...all].sort(), 'every load balancer is still there before any sweep');

  // Dry run: reported, not deleted.
  const dry = await run(NS, ['--lb-orphan-sweep-dry-run']);
  await waitFor(async () => (await orphanCount(dry, 'dry_run')) >= 2, {
    what: `dry-run reports of the two orphans in ${NS}; see ${dry.logPath}`,
    timeoutMs: 30_000,
  });
  t.deepEqual([...(await sweepUids(state))].sort(), [...all].sort(), 'a dry run deletes nothing');

  // For real: the orphans of this host's namespace go; the other namespace's and the other cluster's stay.
  const h1 = await run(NS);
  await waitFor(
    async () => {
      const have = await sweepUids(state);
      return !have.has(uid(byHand)) && !have.has(uid(flip));
    },
    { what: `orphans of ${NS} deleted; see ${h1.logPath}`, timeoutMs: 30_000 },
  );
  let have = await sweepUids(state);
  t.true(have.has(uid(keep)), 'the live Service keeps its load balancer');
  t.true(have.has(uid(gone)), `a host watching ${NS} leaves load balancers of other namespaces alone`);
  t.is(await orphanCount(h1, 'deleted'), 2);
  t.is(await orphanCount(h1, 'foreign'), 1, 'the load balancer of another cluster UID is counted once');
  t.is(await orphanCount(h1, 'untagged'), 1, 'the untagged load balancer is counted once');
  const flipEvents = await serviceEvents(core, flip!);
  t.true(
    flipEvents.some((e) => e.reason === 'DeletedLoadBalancer' && /orphaned/.test(e.message ?? '')),
    'the Service that stopped wanting one is told',
  );

  // The host of the deleted namespace sweeps its orphan.
  const h2 = await run(NS_GONE);
  await waitFor(async () => !(await sweepUids(state)).has(uid(gone)), {
    what: `orphan of deleted namespace ${NS_GONE} deleted; see ${h2.logPath}`,
    timeoutMs: 30_000,
  });
  have = await sweepUids(state);
  t.deepEqual([...have], [uid(keep)], 'only the live Service has a load balancer');
  t.true(
    (await cloudLbs(state)).some((l) => l.name === foreign.name),
    'a load balancer of another cluster name is never touched',
  );
  t.deepEqual(
    (await cloudLbs(state)).filter((l) => sameName.some((s) => s.name === l.name)).map((l) => l.name),
    sameName.map((s) => s.name),
    'load balancers of another cluster UID or none are never deleted',
  );

  // Cleanup through the normal path.
  await run(NS);
  await core.deleteNamespacedService({ name: 'keep', namespace: NS });
  await waitFor(async () => (await sweepUids(state)).size === 0, { what: 'keep deleted through its finalizer' });
  await core.deleteNamespacedService({ name: 'flip', namespace: NS });
});
