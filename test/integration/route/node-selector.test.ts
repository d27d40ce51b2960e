/**
 * --node-selector with the route and node IPAM controllers (issue 29,
 * finding 5): leaving the selector is never read as deletion. The real host,
 * the local cloud as a real plugin, the shared real kube-apiserver.
 *
 * | case                                   | expected                                         |
 * |----------------------------------------|--------------------------------------------------|
 * | node relabelled out of the selector    | its route stays; a live read says it exists      |
 * | that node deleted                      | its route is deleted (live read: 404)            |
 * | a second host, mistyped selector       | no route of the cloud is deleted                 |
 * | IPAM: node relabelled out of selector  | its range is not handed out to a new node        |
 *
 * (A relabelled node deleted later is re-checked by IPAM every minute; that
 * wait is left to the unit test.)
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, nodeEvents, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';
import { patchNode } from '../../helpers/kube-patch.js';

const test = anyTest as TestFn<{ core: CoreV1Api; hosts: TestHost[]; selectors: string[] }>;
const CLUSTER_CIDR = '10.241.0.0/16';

test.before(async (t) => {
  t.context = { core: (await testKubeConfig()).makeApiClient(CoreV1Api), hosts: [], selectors: [] };
});

test.after.always(async (t) => {
  for (const h of t.context.hosts) await h.stop();
  for (const s of t.context.selectors) await deleteScopedNodes(t.context.core, s);
});

async function cloudRoutes(state: string): Promise<{ destinationCidr: string; targetNode: string }[]> {
  return JSON.parse(await localcloud(state, 'route', 'list', '--cluster', 'test', '-o', 'json')) as { destinationCidr: string; targetNode: string }[];
}

/** Sum of a counter's samples with these label values (0 when absent). */
async function counter(host: TestHost, name: string, labels: Record<string, string>): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric(name)?.get();
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
}

test.serial(
  'routes: a node relabelled out of --node-selector keeps its route until it is really deleted; a mistyped selector deletes nothing',
  async (t) => {
    const { core } = t.context;
    const scope = testScope('rsel');
    const other = testScope('rselx');
    t.context.selectors.push(scope.selector, other.selector);
    const dir = await mkdtemp(join(tmpdir(), 'ccm-route-selector-it-'));
    const state = join(dir, 'cloud');
    const flags = ['--controllers=route', `--cluster-cidr=${CLUSTER_CIDR}`, '--route-reconciliation-period=1s'];
    const host = await startTestHost(dir, [...flags, `--node-selector=${scope.selector}`]);
    t.context.hosts.push(host);
    const [keep, moved] = [`${scope.prefix}-keep`, `${scope.prefix}-moved`];
    await localcloud(state, 'instance', 'add', keep, moved);
    await createTestNode(core, keep, { labels: scope.labels, podCidrs: ['10.241.1.0/24'] });
    await createTestNode(core, moved, { labels: scope.labels, podCidrs: ['10.241.2.0/24'] });
    await waitFor(async () => (await cloudRoutes(state)).length === 2, { what: 'routes of both nodes', log: host.logPath });

    // Relabelled into another shard: the cache reports it DELETED, the live read finds it.
    await patchNode(core, moved, { metadata: { labels: other.labels } }, 'strategic');
    await waitFor(async () => (await counter(host, 'ccm_route_deletions_refused_total', { why: 'node_exists' })) > 0, {
      what: 'a route deletion refused because the node still exists',
      log: host.logPath,
    });
    t.deepEqual((await cloudRoutes(state)).map((r) => r.targetNode).sort(), [keep, moved].sort(), 'the relabelled node keeps its route');

    // A second host on the same cloud whose selector matches no node: every route looks unclaimed to its cache.
    const typoDir = await mkdtemp(join(tmpdir(), 'ccm-route-selector-typo-it-'));
    const typo = await startTestHost(typoDir, [...flags, `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`, `--node-selector=${scope.key}=no-such-value`]);
    t.context.hosts.push(typo);
    await waitFor(async () => (await counter(typo, 'ccm_route_deletions_refused_total', { why: 'node_exists' })) >= 2, {
      what: 'the mistyped selector host refusing both deletions',
      log: typo.logPath,
    });
    t.is((await cloudRoutes(state)).length, 2, 'a mistyped selector deletes no route');
    await typo.stop();
    t.context.hosts.pop();

    // Really deleted: the live read answers 404 and the route goes.
    await core.deleteNode({ name: moved });
    await waitFor(async () => !(await cloudRoutes(state)).some((r) => r.targetNode === moved), {
      what: 'the deleted node’s route removed (read again after 30 periods)',
      timeoutMs: 120_000,
      log: host.logPath,
    });
    t.true((await counter(host, 'ccm_live_reads_total', { controller: 'node-route-controller', resource: 'nodes', outcome: 'gone' })) > 0);
    t.deepEqual(
      (await cloudRoutes(state)).map((r) => r.targetNode),
      [keep],
    );
  },
);

test.serial('IPAM: the range of a node relabelled out of --node-selector is not handed out again', async (t) => {
  const { core } = t.context;
  const scope = testScope('isel');
  const other = testScope('iselx');
  t.context.selectors.push(scope.selector, other.selector);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-ipam-selector-it-'));
  // Two ranges in all.
  const host = await startTestHost(dir, [
    '--controllers=nodeipam',
    '--allocate-node-cidrs',
    '--cluster-cidr=10.132.0.0/23',
    '--node-cidr-mask-size=24',
    `--node-selector=${scope.selector}`,
  ]);
  t.context.hosts.push(host);
  const [a, b, c] = ['a', 'b', 'c'].map((s) => `${scope.prefix}-${s}`) as [string, string, string];
  await createTestNode(core, a, { labels: scope.labels });
  await createTestNode(core, b, { labels: scope.labels });
  const ranges = await waitFor(
    async () => {
      const got = await Promise.all([a, b].map(async (n) => (await core.readNode({ name: n })).spec?.podCIDRs ?? []));
      return got.every((g) => g.length === 1) ? got.map((g) => g[0]!) : undefined;
    },
    { what: 'ranges for a and b', log: host.logPath },
  );
  t.not(ranges[0], ranges[1]);

  await patchNode(core, a, { metadata: { labels: other.labels } }, 'strategic');
  await waitFor(
    async () => (await counter(host, 'ccm_live_reads_total', { controller: 'node-ipam-controller', resource: 'nodes', outcome: 'changed' })) > 0,
    {
      what: 'the live read of the relabelled node',
      log: host.logPath,
    },
  );
  await createTestNode(core, c, { labels: scope.labels });
  const ev = await waitFor(async () => (await nodeEvents(core, c)).find((e) => e.reason === 'CIDRNotAvailable'), {
    what: 'CIDRNotAvailable on the third node (a still holds its range)',
    log: host.logPath,
  });
  t.is(ev.type, 'Warning');
  t.deepEqual((await core.readNode({ name: c })).spec?.podCIDRs ?? [], []);
});
