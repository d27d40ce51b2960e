/**
 * Alpha sharding (--shard-count/--shard-index, docs/design/sharding.md) end
 * to end: two hosts, shards 0 and 1 of 2, each with its own local-cloud
 * plugin process over one shared cloud state, on the shared real
 * kube-apiserver. The cloud's journal (LOCALCLOUD_JOURNAL=all: reads too)
 * names the host behind every call, so it shows which replica touched which
 * Node and Service. Last, every instance disappears at once: the node
 * deletion brake is one for the cluster, so both shards together delete no
 * more than one replica would.
 *
 * Scoping for the shared API server: Nodes by testScope('shard'), namespace
 * shard-it, cluster name shardit, ingress pool 127.0.141.0/24, pod CIDRs
 * from 10.150.0.0/16.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, type V1Node, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { shardOfUid } from '../../../host/kube/shard-view.js';
import { readJournal } from '../../../plugins/local/journal.js';
import { StateStore } from '../../../plugins/local/state.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, ensureNamespace, ingressIp, lbService } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { deleteScopedNodes, nodeEvents, readNodeOrUndefined, testScope, UNINITIALIZED_TAINT } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';
import { callersByKey } from './ha-checks.js';

const NS = 'shard-it';
const SHARDS = 2;
const NODES = 12;
const SERVICES = 12;
const scope = testScope('shard');
const test = anyTest as TestFn<{ core: CoreV1Api; cloud: string; hosts: TestHost[] }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-shard-it-'));
  const cloud = join(dir, 'cloud');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  t.context = { core, cloud, hosts: [] };
  await ensureNamespace(core, NS);
  await localcloud(cloud, 'instance', 'add', ...nodeNames(), '--zone', 'zone-a', '--region', 'region-x');
  for (let index = 0; index < SHARDS; index++) {
    const own = join(dir, `shard-${index}`);
    await mkdir(own);
    t.context.hosts.push(
      await startTestHost(own, [
        '--controllers=cloud-node,cloud-node-lifecycle,service,nodeipam',
        '--cluster-name=shardit',
        `--node-selector=${scope.selector}`,
        `--watch-namespace=${NS}`,
        '--allocate-node-cidrs',
        '--cluster-cidr=10.150.0.0/16',
        '--node-cidr-mask-size=24',
        '--node-monitor-period=1s',
        '--lb-orphan-sweep-period=1s',
        `--plugin-env=LOCALCLOUD_STATE_DIR=${cloud}`,
        '--plugin-env=LOCALCLOUD_JOURNAL=all',
        '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.141.0/24',
        `--shard-count=${SHARDS}`,
        `--shard-index=${index}`,
      ]),
    );
  }
});

test.after.always(async (t) => {
  for (const h of t.context.hosts ?? []) await h.stop();
  await deleteScopedNodes(t.context.core, scope.selector).catch(() => undefined);
  await t.context.core?.deleteCollectionNamespacedService({ namespace: NS }).catch(() => undefined);
});

function nodeNames(): string[] {
  return Array.from({ length: NODES }, (_, i) => `${scope.prefix}-${i}`);
}

async function runningControllers(host: TestHost): Promise<string[]> {
  const text = await host.metrics.registry.metrics();
  return [...text.matchAll(/^running_managed_controllers\{[^}]*name="([^"]+)"[^}]*\} 1$/gm)].map((m) => m[1]!).sort();
}

const initialized = (n: V1Node) => !(n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED_TAINT) && (n.spec?.providerID ?? '') !== '';

test.serial('each Node and Service is handled by the replica of its uid shard only; IPAM and the orphan sweep run on shard 0 only', async (t) => {
  const { core, cloud, hosts } = t.context;
  for (const name of nodeNames()) {
    await core.createNode({
      body: {
        metadata: { name, labels: { ...scope.labels, 'kubernetes.io/hostname': name } },
        spec: { taints: [{ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' }] },
      },
    });
  }
  for (let i = 0; i < SERVICES; i++) await core.createNamespacedService({ namespace: NS, body: lbService(`s${i}`, NS) });

  const nodes = await waitFor(
    async () => {
      const items = (await core.listNode({ labelSelector: scope.selector })).items;
      return items.length === NODES && items.every((n) => initialized(n) && (n.spec?.podCIDRs ?? []).length > 0) ? items : undefined;
    },
    { what: `${NODES} Nodes initialized with pod CIDRs` },
  );
  const services = await waitFor(
    async () => {
      const items = (await core.listNamespacedService({ namespace: NS })).items;
      return items.length === SERVICES && items.every((s) => ingressIp(s)) ? items : undefined;
    },
    { what: `${SERVICES} Services with an ingress` },
  );
  // The sweep (shard 0's) has listed the cloud's load balancers at least once.
  const journal = await waitFor(
    async () => {
      const j = await readJournal(cloud);
      return j.some((e) => e.method === 'loadBalancers.listLoadBalancers') ? j : undefined;
    },
    { what: 'an orphan sweep' },
  );

  const nodeCallers = callersByKey(journal, 'instances');
  const lbCallers = callersByKey(journal, 'loadBalancers');
  const owner = (uid: string) => hosts[shardOfUid(uid, SHARDS)]!.identity;
  const rows = [
    ...nodes.map((n) => ({ what: `Node ${n.metadata!.name}`, want: owner(n.metadata!.uid!), got: nodeCallers.get(n.metadata!.name!) })),
    ...services.map((s: V1Service) => ({ what: `Service ${s.metadata!.name}`, want: owner(s.metadata!.uid!), got: lbCallers.get(s.metadata!.uid!) })),
  ];
  for (const r of rows) t.deepEqual([...(r.got ?? [])], [r.want], `${r.what}: cloud calls from its own shard's host only`);
  // Both shards had work (12 + 12 objects on 2 shards: all in one would be a broken hash).
  for (const [index, h] of hosts.entries()) {
    t.true(
      rows.some((r) => r.want === h.identity && r.what.startsWith('Node')),
      `shard ${index} initialized Nodes`,
    );
    t.true(
      rows.some((r) => r.want === h.identity && r.what.startsWith('Service')),
      `shard ${index} served Services`,
    );
  }
  // Singletons: the cluster-wide IPAM gave every Node (either shard's) a distinct range; the sweep listed from shard 0 only.
  const cidrs = nodes.map((n) => n.spec!.podCIDRs![0]!);
  t.is(new Set(cidrs).size, NODES, 'pod CIDRs distinct');
  t.deepEqual(await runningControllers(hosts[0]!), ['cloud-node', 'cloud-node-lifecycle', 'nodeipam', 'service']);
  t.deepEqual(await runningControllers(hosts[1]!), ['cloud-node', 'cloud-node-lifecycle', 'service']);
  const listers = new Set(journal.filter((e) => e.method === 'loadBalancers.listLoadBalancers').map((e) => e.caller));
  t.deepEqual([...listers], [hosts[0]!.identity], 'the orphan sweep runs on shard 0 only');
  // Nothing was deleted: no Node, and no load balancer of a live Service.
  t.is((await core.listNode({ labelSelector: scope.selector })).items.length, NODES);
  t.false(
    journal.some((e) => e.method === 'loadBalancers.ensureLoadBalancerDeleted'),
    'no load balancer deleted',
  );
});

test.serial("deleting one Service of each shard: its own shard deletes its load balancer, the other shard's stay", async (t) => {
  const { core, cloud, hosts } = t.context;
  const services = (await core.listNamespacedService({ namespace: NS })).items;
  const victims = Array.from({ length: SHARDS }, (_, i) => services.find((s) => shardOfUid(s.metadata!.uid!, SHARDS) === i)!);
  for (const s of victims) await core.deleteNamespacedService({ name: s.metadata!.name!, namespace: NS });
  const gone = new Set(victims.map((s) => s.metadata!.uid!));
  await waitFor(
    async () => {
      const lbs = (await cloudLbs(cloud)).filter((l) => l.clusterName === 'shardit');
      const left = (await core.listNamespacedService({ namespace: NS })).items;
      return lbs.length === SERVICES - SHARDS && lbs.every((l) => !gone.has(l.serviceUid)) && left.length === SERVICES - SHARDS;
    },
    { what: 'the two load balancers and Services gone, the others kept' },
  );
  const deletes = (await readJournal(cloud)).filter((e) => e.method === 'loadBalancers.ensureLoadBalancerDeleted');
  for (const s of victims) {
    const uid = s.metadata!.uid!;
    const callers = new Set(deletes.filter((e) => e.key === uid).map((e) => e.caller));
    t.deepEqual([...callers], [hosts[shardOfUid(uid, SHARDS)]!.identity], `Service ${s.metadata!.name}: deleted by its own shard`);
  }
  t.true(
    deletes.every((e) => gone.has(e.key ?? '')),
    'no other load balancer deleted',
  );
});

/** Completed lifecycle passes of `host` (its pass duration histogram's count). */
async function lifecyclePasses(host: TestHost): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_node_lifecycle_pass_duration_seconds')!.get();
  return m.values.find((v) => (v as { metricName?: string }).metricName === 'ccm_node_lifecycle_pass_duration_seconds_count')?.value ?? 0;
}

test.serial(
  'every instance gone at once: both shards together delete at most the cluster-wide limit (5 of 12), the rest are held back',
  async (t) => {
    const { core, cloud, hosts } = t.context;
    const nodes = (await core.listNode({ labelSelector: scope.selector })).items;
    t.is(nodes.length, NODES);
    const shardOf = new Map(nodes.map((n) => [n.metadata!.name!, shardOfUid(n.metadata!.uid!, SHARDS)]));
    const existing = async () => {
      const out: string[] = [];
      for (const n of nodeNames()) if (await readNodeOrUndefined(core, n)) out.push(n);
      return out;
    };
    // One write of the cloud's state: the instances of both shards' Nodes vanish together.
    const names = new Set(nodeNames());
    await new StateStore(cloud).update((draft) => {
      draft.instances = draft.instances.filter((i) => !names.has(i.name));
    });

    // The default limit, max(10 % of the cluster's 12 Nodes, 5) = 5 per 5m, for both shards together
    // (counted per shard, each shard would delete up to 5 of its own).
    await waitFor(async () => (await existing()).length <= NODES - 5, { what: '5 Nodes deleted' });
    const before = await Promise.all(hosts.map(lifecyclePasses));
    await waitFor(async () => (await Promise.all(hosts.map(lifecyclePasses))).every((p, i) => p >= before[i]! + 3), {
      what: 'three more lifecycle passes of each shard',
    });
    const kept = await existing();
    t.is(kept.length, NODES - 5, `no more than 5 deleted in the cluster; kept ${kept.join(', ')}`);

    for (const n of kept) {
      const ev = await waitFor(async () => (await nodeEvents(core, n)).find((e) => e.reason === 'DeletingNodeHeldBack'), {
        what: `DeletingNodeHeldBack on ${n}`,
      });
      t.is(ev.type, 'Warning');
      t.regex(ev.message ?? '', /at most 5 nodes are deleted per 5m0s \(--node-deletion-limit\)/);
    }
    for (const [index, h] of hosts.entries()) {
      if (!kept.some((n) => shardOf.get(n) === index)) continue;
      t.true((await readFile(h.logPath, 'utf8')).includes('node deletion limit reached'), `shard ${index} says why in its log`);
    }

    // One record for the cluster: keyed by the unsharded lock, holding both shards' deletions.
    const coordination = (await testKubeConfig()).makeApiClient(CoordinationV1Api);
    const lease = await coordination.readNamespacedLease({ name: 'cloud-controller-manager-node-deletions', namespace: 'kube-system' });
    const records = Object.entries(lease.metadata?.annotations ?? {})
      .filter(([k]) => k.startsWith('lifecycle.ccm.dev/node-deletions-'))
      .map(([, v]) => JSON.parse(v) as { for: string; deletions: { count: number }[] })
      .filter((v) => v.for.includes(scope.selector));
    t.deepEqual(
      records.map((r) => r.for),
      [`lock kube-system/cloud-controller-manager, node selector ${JSON.stringify(scope.selector)}`],
    );
    t.is(
      records[0]?.deletions.reduce((n, d) => n + d.count, 0),
      5,
    );
  },
);
