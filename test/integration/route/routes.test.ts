/**
 * The route controller end to end, once with a provider that has the batch
 * ReconcileRoutes and once without: the real host,
 * the local cloud as a real plugin process (its route table read with
 * `localcloud route list`), the shared real kube-apiserver. Each host only
 * sees its own nodes (--node-selector) and has its own cloud. With
 * --node-selector the host never uses the batch call (it would delete the
 * routes of nodes outside the selector), so both run single calls here; the
 * batch call's use is covered by test/unit/controllers/routes.test.ts.
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { condition, createTestNode, deleteScopedNodes, nodeEvents, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';

interface Mode {
  batch: boolean;
  scope: ReturnType<typeof testScope>;
  state: string;
  host: TestHost;
}
const test = anyTest as TestFn<{ core: CoreV1Api; modes: Mode[] }>;
const CLUSTER_CIDR = '10.240.0.0/16,fd00:10:240::/48';

test.before(async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const modes: Mode[] = [];
  for (const batch of [true, false]) {
    const dir = await mkdtemp(join(tmpdir(), `ccm-routes-${batch ? 'batch' : 'single'}-it-`));
    const scope = testScope(batch ? 'rtb' : 'rts');
    const host = await startTestHost(dir, [
      '--controllers=route',
      `--cluster-cidr=${CLUSTER_CIDR}`,
      '--route-reconciliation-period=2s',
      `--node-selector=${scope.selector}`,
      ...(batch ? [] : ['--plugin-env=LOCALCLOUD_NO_BATCH=1']),
    ]);
    modes.push({ batch, scope, state: join(dir, 'cloud'), host });
  }
  t.context = { core, modes };
});

test.after.always(async (t) => {
  for (const m of t.context.modes ?? []) {
    await m.host.stop();
    await deleteScopedNodes(t.context.core, m.scope.selector);
  }
});

interface CloudRouteRecord {
  name: string;
  targetNode: string;
  destinationCidr: string;
  blackhole: boolean;
}

async function cloudRoutes(state: string): Promise<CloudRouteRecord[]> {
  return JSON.parse(await localcloud(state, 'route', 'list', '--cluster', 'test', '-o', 'json')) as CloudRouteRecord[];
}

async function networkCondition(core: CoreV1Api, name: string) {
  return condition(await core.readNode({ name }), 'NetworkUnavailable');
}

async function scenario(t: ExecutionContext<{ core: CoreV1Api; modes: Mode[] }>, batch: boolean): Promise<void> {
  const { core } = t.context;
  const m = t.context.modes.find((x) => x.batch === batch)!;
  t.is(m.host.cloud.routes()!.batched, batch);
  const { state, scope } = m;
  const names = Array.from({ length: 20 }, (_, i) => `${scope.prefix}-${i}`);
  const want = new Map<string, string>(); // destination → node
  await localcloud(state, 'instance', 'add', ...names);
  for (const [i, n] of names.entries()) {
    // Node 0 is dual-stack: both of its pod CIDRs get a route.
    const podCidrs = i === 0 ? ['10.240.0.0/24', 'fd00:10:240::/64'] : [`10.240.${i}.0/24`];
    for (const c of podCidrs) want.set(c, n);
    await createTestNode(core, n, { labels: scope.labels, podCidrs });
  }
  // Strays made by hand in the cloud: one inside the cluster CIDR, one outside.
  await localcloud(state, 'route', 'add', '10.240.200.0/24', '--node', `${scope.prefix}-ghost`, '--cluster', 'test');
  await localcloud(state, 'route', 'add', '192.168.77.0/24', '--node', `${scope.prefix}-ghost`, '--cluster', 'test');

  const routes = await waitFor(
    async () => {
      const r = await cloudRoutes(state);
      const ok = [...want].every(([dest, node]) => r.some((x) => x.destinationCidr === dest && x.targetNode === node));
      return ok && !r.some((x) => x.destinationCidr === '10.240.200.0/24') ? r : undefined;
    },
    { what: '21 routes for 20 nodes and the stray inside the cluster CIDR removed' },
  );
  t.is(routes.filter((r) => r.destinationCidr !== '192.168.77.0/24').length, 21);
  t.true(
    routes.some((r) => r.destinationCidr === '192.168.77.0/24'),
    'the route outside the cluster CIDR is kept',
  );
  t.false(routes.some((r) => r.blackhole && r.destinationCidr.startsWith('10.240.')));
  for (const n of names) {
    const c = await waitFor(
      async () => {
        const cond = await networkCondition(core, n);
        return cond?.status === 'False' ? cond : undefined;
      },
      { what: `NetworkUnavailable=False on ${n}` },
    );
    t.is(c.reason, 'RouteCreated');
  }

  // Nodes without pod CIDRs that routes point to, as upstream: NetworkUnavailable=True/NoRouteCreated, and
  // the route inside the cluster CIDR deleted (the live read finds the node without that pod CIDR). The
  // routes are listed in both modes, so a route outside the cluster CIDR is seen too, as upstream.
  const bare = `${scope.prefix}-bare`;
  const bareOutside = `${scope.prefix}-bare-out`;
  await localcloud(state, 'instance', 'add', bare, bareOutside);
  await createTestNode(core, bare, { labels: scope.labels });
  await createTestNode(core, bareOutside, { labels: scope.labels });
  // Outside first: once the inside route is handled, a reconcile has seen both.
  await localcloud(state, 'route', 'add', '192.168.78.0/24', '--node', bareOutside, '--cluster', 'test');
  await localcloud(state, 'route', 'add', '10.240.210.0/24', '--node', bare, '--cluster', 'test');
  const bareCondition = await waitFor(
    async () => {
      const cond = await networkCondition(core, bare);
      return cond?.status === 'True' ? cond : undefined;
    },
    { what: `NetworkUnavailable=True on ${bare} (no pod CIDRs, a route to it)`, log: m.host.logPath },
  );
  t.is(bareCondition.reason, 'NoRouteCreated');
  await waitFor(async () => !(await cloudRoutes(state)).some((r) => r.destinationCidr === '10.240.210.0/24'), {
    what: `the route to ${bare} removed`,
  });
  const c = await waitFor(
    async () => {
      const cond = await networkCondition(core, bareOutside);
      return cond?.status === 'True' ? cond : undefined;
    },
    { what: `NetworkUnavailable=True on ${bareOutside} (no pod CIDRs, a route outside the cluster CIDR to it)` },
  );
  t.is(c.reason, 'NoRouteCreated');
  t.true(
    (await cloudRoutes(state)).some((r) => r.destinationCidr === '192.168.78.0/24'),
    'the route outside the cluster CIDR is kept',
  );

  // A deleted node loses its route.
  await core.deleteNode({ name: names[5]! });
  await waitFor(async () => !(await cloudRoutes(state)).some((r) => r.destinationCidr === '10.240.5.0/24'), {
    what: 'route of the deleted node removed',
  });
  t.true(
    (await cloudRoutes(state)).some((r) => r.destinationCidr === '192.168.77.0/24'),
    'the outside route is still kept',
  );

  // Bad input written by someone else: a pod CIDR outside --cluster-cidr, and one that another node already has.
  const outside = `${scope.prefix}-outside`;
  const dup = `${scope.prefix}-dup`;
  await localcloud(state, 'instance', 'add', outside, dup);
  await createTestNode(core, outside, { labels: scope.labels, podCidrs: ['10.250.0.0/24'] });
  await createTestNode(core, dup, { labels: scope.labels, podCidrs: ['10.240.3.0/24'] });
  const outsideEvent = await waitFor(async () => (await nodeEvents(core, outside)).find((e) => e.reason === 'FailedToCreateRoute'), {
    what: 'FailedToCreateRoute on the outside node',
  });
  t.is(outsideEvent.type, 'Warning');
  t.regex(outsideEvent.message ?? '', /not inside --cluster-cidr/);
  const dupEvent = await waitFor(async () => (await nodeEvents(core, dup)).find((e) => e.reason === 'PodCIDRConflict'), {
    what: 'PodCIDRConflict on the duplicate node',
  });
  t.regex(dupEvent.message ?? '', new RegExp(`overlaps pod CIDR 10\\.240\\.3\\.0/24 of node ${names[3]}`));
  for (const n of [outside, dup]) {
    const c = await waitFor(
      async () => {
        const cond = await networkCondition(core, n);
        return cond?.status === 'True' ? cond : undefined;
      },
      { what: `NetworkUnavailable=True on ${n}` },
    );
    t.is(c.reason, 'NoRouteCreated');
  }
  const after = await cloudRoutes(state);
  t.false(
    after.some((r) => r.destinationCidr === '10.250.0.0/24'),
    'no route outside the cluster CIDR is created',
  );
  const r3 = after.filter((r) => r.destinationCidr === '10.240.3.0/24');
  t.deepEqual(
    r3.map((r) => r.targetNode),
    [names[3]],
    'the existing route is kept for its node',
  );
  t.is((await networkCondition(core, names[3]!))?.reason, 'RouteCreated');
  // Only the nodes with bad pod CIDRs are affected: every other node keeps its route and NetworkUnavailable=False.
  for (const n of names.filter((_, i) => i !== 5)) t.is((await networkCondition(core, n))?.status, 'False', `${n} is not affected`);
}

test.serial(
  'batch mode: routes for every pod CIDR, NetworkUnavailable=False/RouteCreated, strays inside the cluster CIDR removed, bad pod CIDRs reported',
  (t) => scenario(t, true),
);
test.serial('single-call mode: the same', (t) => scenario(t, false));
