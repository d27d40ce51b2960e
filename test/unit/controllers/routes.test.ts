/**
 * The route controller with fakes (no API server, no cloud): a deletion the
 * cache proposes happens only when a live GET of the target Node confirms it
 * (issue 29, item 5 and finding 5), the batch call is used only when it would
 * delete exactly the confirmed routes and no --node-selector is set, and a
 * bad pod CIDR affects only its own node (finding 10).
 */
import test from 'ava';
import { Writable } from 'node:stream';
import type { V1Node } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { OwnershipSource } from '../../../host/ownership/gate.js';
import { nodeOwnershipDeclarations } from '../../../host/ownership/nodes.js';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { CloudRoute, DesiredRoute, Routes } from '../../../host/cloud-routes.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { ApiError } from '../../../host/kube/rest.js';
import { createLogger } from '../../../host/log.js';
import { parseCidr, type Cidr } from '../../../host/util/cidr.js';
import { RouteController } from '../../../host/controllers/route/route-controller.js';
import { confirmRouteDeletion, type LiveNode } from '../../../host/controllers/route/confirm.js';

const silent = createLogger({ verbosity: 0, destination: new Writable({ write: (_c, _e, cb) => cb() }) });
const CLUSTER = [parseCidr('10.240.0.0/16')!] as Cidr[];

function node(name: string, podCidrs: string[], uid = `uid-${name}`): V1Node {
  return {
    metadata: { name, uid, creationTimestamp: new Date(0) },
    spec: { podCIDR: podCidrs[0], podCIDRs: podCidrs },
    status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }], conditions: [] },
  };
}

const route = (targetNode: string, destinationCidr: string, blackhole = false): CloudRoute => ({
  name: `r-${targetNode}-${destinationCidr}`,
  targetNode,
  targetNodeAddresses: [],
  destinationCidr,
  blackhole,
});

const gone: LiveNode = { state: 'gone' };
const exists = (n: V1Node): LiveNode => ({ state: 'exists', node: n });

test('the verdict table: only a live fact deletes', (t) => {
  const a = node('a', ['10.240.1.0/24']);
  const rows: [string, CloudRoute, V1Node | undefined, LiveNode | undefined, boolean, string][] = [
    ['node gone (404)', route('a', '10.240.1.0/24'), a, gone, true, 'node_gone'],
    ['node gone, not cached', route('x', '10.240.9.0/24'), undefined, gone, true, 'node_gone'],
    ['read failed', route('a', '10.240.1.0/24'), a, { state: 'error', error: 'timeout' }, false, 'read_failed'],
    ['exists, outside the selector (not cached)', route('b', '10.240.2.0/24'), undefined, exists(node('b', ['10.240.2.0/24'])), false, 'node_exists'],
    ['exists, outside the selector, blackhole', route('b', '10.240.2.0/24', true), undefined, exists(node('b', [])), false, 'node_exists'],
    ['exists under another uid than the cache', route('a', '10.240.1.0/24'), a, exists(node('a', [], 'new')), false, 'node_exists'],
    ['ours, cache behind: live still has the CIDR', route('a', '10.240.1.0/24'), a, exists(a), false, 'cache_behind'],
    ['ours, pod CIDR really changed', route('a', '10.240.7.0/24'), a, exists(a), true, 'pod_cidr_changed'],
    ['ours, blackhole', route('a', '10.240.1.0/24', true), a, exists(a), true, 'blackhole'],
    ['no target node, blackhole', route('', '10.240.3.0/24', true), undefined, undefined, true, 'blackhole'],
    ['no target node', route('', '10.240.3.0/24'), undefined, undefined, false, 'no_target'],
  ];
  for (const [what, r, cached, live, del, why] of rows) t.deepEqual(confirmRouteDeletion(r, cached, live), { delete: del, why } as never, what);
});

interface Harness {
  c: RouteController;
  deleted: string[];
  created: string[];
  batchCalls: DesiredRoute[][];
  gets: string[];
  patches: Map<string, string>;
  events: string[];
  registry: Registry;
}

function harness(
  cached: V1Node[],
  live: V1Node[],
  cloud: CloudRoute[],
  o: { batched?: boolean; nodesScoped?: boolean; onCreate?: () => void; ownership?: OwnershipSource } = {},
): Harness {
  const h = {
    deleted: [] as string[],
    created: [] as string[],
    batchCalls: [] as DesiredRoute[][],
    gets: [] as string[],
    patches: new Map<string, string>(),
    events: [] as string[],
  };
  const routes: Routes = {
    batched: o.batched ?? false,
    listRoutes: async () => cloud,
    createRoute: async (_c, _h, r) => {
      o.onCreate?.();
      h.created.push(`${r.targetNode} ${r.destinationCidr}`);
      return { ...r, name: 'new', blackhole: false };
    },
    deleteRoute: async (_c, r) => void h.deleted.push(`${r.targetNode} ${r.destinationCidr}`),
    reconcileRoutes: async (_c, desired) => {
      h.batchCalls.push(desired);
      return { created: [], deleted: [], failed: [] };
    },
  };
  const core = {
    readNode: async ({ name }: { name: string }) => {
      h.gets.push(name);
      const n = live.find((x) => x.metadata!.name === name);
      if (!n) throw new ApiError(404, { message: 'not found' }, 'GET', `/api/v1/nodes/${name}`);
      return n;
    },
    patchNodeStatus: async ({ name, body }: { name: string; body: { status: { conditions: { status: string }[] } } }) => {
      h.patches.set(name, body.status.conditions[0]!.status);
      return {};
    },
  } as unknown as CoreV1Api;
  const registry = new Registry();
  const c = new RouteController({
    core,
    nodes: {
      list: () => cached,
      get: (name: string) => cached.find((n) => n.metadata?.name === name),
      addEventHandler: () => undefined,
    } as unknown as Informer<V1Node>,
    routes,
    recorder: { event: (_o: unknown, _t: string, reason: string) => h.events.push(reason) } as unknown as EventRecorder,
    log: silent,
    registry,
    clusterName: 'k',
    clusterCidrs: CLUSTER,
    periodMs: 1000,
    nodesScoped: o.nodesScoped,
    ownership: o.ownership,
  });
  return { c, registry, ...h };
}

test('a node outside the selector keeps its route; a gone node loses it; one GET per target node', async (t) => {
  const a = node('a', ['10.240.1.0/24']);
  const outside = node('b', ['10.240.2.0/24']);
  const h = harness(
    [a],
    [a, outside],
    [route('a', '10.240.1.0/24'), route('b', '10.240.2.0/24'), route('ghost', '10.240.9.0/24'), route('ghost', '10.240.10.0/24')],
    {
      nodesScoped: true,
    },
  );
  const r = await h.c.reconcile();
  t.deepEqual(h.deleted.sort(), ['ghost 10.240.10.0/24', 'ghost 10.240.9.0/24']);
  t.deepEqual(h.gets.sort(), ['b', 'ghost']);
  t.is(r.mode, 'single');
  const reads = await h.registry.getSingleMetric('ccm_live_reads_total')!.get();
  // b exists outside the cache (changed: its route stays), ghost is gone (its routes go).
  t.deepEqual(Object.fromEntries(reads.values.map((v) => [`${v.labels.controller} ${v.labels.resource} ${v.labels.outcome}`, v.value])), {
    'node-route-controller nodes changed': 1,
    'node-route-controller nodes gone': 1,
  });
});

test("NetworkUnavailable: a network plugin's status set while routes were created is not overwritten", async (t) => {
  const cached = [node('a', ['10.240.1.0/24']), node('b', ['10.240.2.0/24'])];
  const calico = { type: 'NetworkUnavailable', status: 'False', reason: 'CalicoIsUp' };
  // The informer replaces objects: node a arrives with the plugin's condition while the cloud call runs.
  const onCreate = () => void (cached[0] = { ...cached[0]!, status: { ...cached[0]!.status, conditions: [calico] } });
  const h = harness(cached, cached, [], { onCreate });
  const r = await h.c.reconcile();
  t.deepEqual(h.created.sort(), ['a 10.240.1.0/24', 'b 10.240.2.0/24']);
  t.deepEqual([...h.patches], [['b', 'False']], 'only b, whose condition was still unset, is patched');
  t.is(r.conditionsPatched, 1);
});

test('a node found outside the cache is not read again at the next reconcile', async (t) => {
  const outside = node('b', ['10.240.2.0/24']);
  const h = harness([], [outside], [route('b', '10.240.2.0/24')], { nodesScoped: true });
  await h.c.reconcile();
  await h.c.reconcile();
  t.deepEqual(h.gets, ['b']);
  t.deepEqual(h.deleted, []);
});

test('a mistyped selector (empty cache, nodes exist): nothing is deleted', async (t) => {
  const nodes = [node('a', ['10.240.1.0/24']), node('b', ['10.240.2.0/24'])];
  const h = harness([], nodes, [route('a', '10.240.1.0/24'), route('b', '10.240.2.0/24')], { nodesScoped: true, batched: true });
  await h.c.reconcile();
  t.deepEqual(h.deleted, []);
  t.deepEqual(h.batchCalls, [], 'no batch call with --node-selector');
});

test('batch call: only without --node-selector and when every proposed deletion is confirmed', async (t) => {
  const a = node('a', ['10.240.1.0/24']);
  const cases: [string, V1Node[], boolean | undefined, 'batch' | 'single'][] = [
    ['no selector, the stray node is gone', [a], false, 'batch'],
    ['no selector, the stray node exists (cache behind)', [a, node('s', ['10.240.5.0/24'])], false, 'single'],
    ['selector', [a], true, 'single'],
  ];
  for (const [what, live, nodesScoped, mode] of cases) {
    const h = harness([a], live, [route('s', '10.240.5.0/24')], { batched: true, nodesScoped });
    t.is((await h.c.reconcile()).mode, mode, what);
    t.is(h.batchCalls.length, mode === 'batch' ? 1 : 0, what);
    if (mode === 'single') t.deepEqual(h.deleted, nodesScoped ? ['s 10.240.5.0/24'] : [], what);
  }
});

test('node ownership: only owned nodes get routes and conditions; a route to a foreign node is kept; no batch call while one exists', async (t) => {
  const withId = (n: V1Node, providerID: string): V1Node => ({ ...n, spec: { ...n.spec, providerID } });
  const ours = withId(node('ours', ['10.240.1.0/24']), 'mycloud://1');
  const foreign = withId(node('foreign', ['10.240.2.0/24']), 'other://1');
  const nobody = node('nobody', ['10.240.3.0/24']);
  const twice = withId(node('twice', ['10.240.4.0/24']), 'shared://1');
  const all = [ours, foreign, nobody, twice];
  const declarations = nodeOwnershipDeclarations([
    { name: 'mycloud', providerName: 'mycloud', providerIdPrefixes: ['mycloud://', 'shared://'], nodeSelector: 'cloud=mycloud' },
    { name: 'other', providerName: 'other', providerIdPrefixes: ['other://', 'shared://'], nodeSelector: '' },
  ]);
  // The cloud has a route to the foreign node (made by someone else): the plan would delete it.
  const h = harness(all, all, [route('foreign', '10.240.2.0/24')], {
    batched: true,
    ownership: { provider: () => 'mycloud', declarations: () => declarations },
  });
  const r = await h.c.reconcile();
  t.is(r.mode, 'single', 'the batch call (which deletes every route it is not given) is not used');
  t.deepEqual(h.created, ['ours 10.240.1.0/24']);
  t.deepEqual(h.deleted, [], "the foreign node's route is kept");
  t.deepEqual([...h.patches.keys()], ['ours']);
  t.deepEqual(h.events, ['NodeOwnershipConflict']);
  t.regex(await h.registry.metrics(), /ccm_node_ownership_conflicts\{controller="node-route-controller"\} 1/);
});

test('a pod CIDR outside --cluster-cidr affects only its node (finding 10)', async (t) => {
  const good = [node('a', ['10.240.1.0/24']), node('b', ['10.240.2.0/24'])];
  const bad = node('bad', ['10.250.0.0/24']);
  for (const batched of [true, false]) {
    const h = harness([...good, bad], [...good, bad], [], { batched });
    await h.c.reconcile();
    t.deepEqual(Object.fromEntries(h.patches), { a: 'False', b: 'False', bad: 'True' }, `batched=${batched}`);
    t.deepEqual(h.events, ['FailedToCreateRoute']);
  }
});
