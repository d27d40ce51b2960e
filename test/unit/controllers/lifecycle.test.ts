/**
 * The lifecycle pass with fakes (no API server): one status lookup per pass
 * for all NotReady nodes, errors never delete, the grace period needs two
 * consecutive "gone" answers, each node at most once per pass, a live read
 * confirms each deletion, and the mass-deletion brake (--node-deletion-limit)
 * with its window arithmetic, its record shared across restarts, and its
 * failures deleting nothing.
 */
import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { Instances, NodeRef, StatusResult } from '../../../host/cloud.js';
import { CloudCallError } from '../../../host/errors.js';
import { NodeLifecycleController } from '../../../host/controllers/lifecycle/lifecycle-controller.js';
import { DeletionBrake, MemoryDeletionLedger, parseDeletionLimit, type DeletionLimit } from '../../../host/controllers/lifecycle/deletion-brake.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { createLogger } from '../../../host/log.js';
import { ApiError } from '../../../host/kube/rest.js';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import type { OwnershipSource } from '../../../host/ownership/gate.js';
import { nodeOwnershipDeclarations } from '../../../host/ownership/nodes.js';

const silent = createLogger({ verbosity: 0, destination: new Writable({ write: (_c, _e, cb) => cb() }) });

function mkNode(name: string, ready: boolean | undefined, taints: string[] = []): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
    spec: { taints: taints.map((key) => ({ key, effect: 'NoSchedule' })) },
    status: { conditions: ready === undefined ? [] : [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

const apiError = (code: number) => new ApiError(code, {}, 'TEST', '/api/v1/nodes');

function harness(
  nodes: V1Node[],
  answer: (n: NodeRef) => Omit<StatusResult, 'nodeName'>,
  graceMs = 0,
  limit: DeletionLimit | null = null,
  windowMs = 300_000,
  ledger = new MemoryDeletionLedger(),
  registry?: Registry,
  ownership?: OwnershipSource,
  metricsProvider?: string,
) {
  const calls: string[][] = [];
  const deleted: string[] = [];
  /** Preconditions each delete carried. */
  const preconditions: { uid?: string; resourceVersion?: string }[] = [];
  /** GETs of Nodes (live reads). */
  const reads: string[] = [];
  /** What a live read answers instead of the listed Node (an Error is thrown). */
  const live = new Map<string, V1Node | Error>();
  /** Names whose delete fails with this error. */
  const deleteErrors = new Map<string, Error>();
  const patched: string[] = [];
  const events: string[] = [];
  let now = 0;
  const instances = {
    batched: true,
    async instancesStatus(refs: NodeRef[]) {
      calls.push(refs.map((r) => r.name));
      return refs.map((r) => ({ nodeName: r.name, ...answer(r) }));
    },
  } as unknown as Instances;
  const core = {
    async readNode(req: { name: string }) {
      reads.push(req.name);
      const l = live.get(req.name);
      if (l instanceof Error) throw l;
      const n = l ?? nodes.find((x) => x.metadata?.name === req.name);
      if (!n) throw apiError(404);
      return structuredClone(n);
    },
    async deleteNode(req: { name: string; body: { preconditions: { uid?: string; resourceVersion?: string } } }) {
      const e = deleteErrors.get(req.name);
      if (e) throw e;
      deleted.push(req.name);
      preconditions.push(req.body.preconditions);
      return {};
    },
    async patchNode(req: { name: string }) {
      patched.push(req.name);
      return {};
    },
  } as unknown as CoreV1Api;
  const c = new NodeLifecycleController({
    core,
    nodes: { list: () => nodes } as unknown as Informer<V1Node>,
    instances,
    providerName: () => 'mycloud',
    recorder: { event: (_o: unknown, _t: string, reason: string) => events.push(reason) } as unknown as EventRecorder,
    log: silent,
    periodMs: 1000,
    deletionGraceMs: graceMs,
    deletionLimit: limit,
    deletionLimitWindowMs: windowMs,
    deletionLedger: ledger,
    now: () => now,
    registry,
    ownership,
    metricsProvider,
  });
  return {
    c,
    calls,
    deleted,
    patched,
    events,
    reads,
    live,
    deleteErrors,
    preconditions,
    ledger,
    advance: (ms: number) => (now += ms),
    setNow: (ms: number) => (now = ms),
  };
}

test('one lookup per pass covers every NotReady node; Ready nodes cost no cloud call; each node once', async (t) => {
  const a = mkNode('a', false);
  const h = harness([a, mkNode('b', undefined), mkNode('r', true), a], () => ({ exists: true, shutdown: false }));
  const r = await h.c.tick();
  t.deepEqual(h.calls, [['a', 'b']]);
  t.is(r.notReady, 2);
  t.deepEqual(h.deleted, []);
});

test('gone → DeletingNode + delete; shut down → taint; Ready with the taint → untaint', async (t) => {
  const h = harness([mkNode('gone', false), mkNode('off', false), mkNode('back', true, ['node.cloudprovider.kubernetes.io/shutdown'])], (n) =>
    n.name === 'gone' ? { exists: false, shutdown: false } : { exists: true, shutdown: true },
  );
  const r = await h.c.tick();
  t.deepEqual(h.deleted, ['gone']);
  t.deepEqual(h.events, ['DeletingNode']);
  t.deepEqual(r.tainted, ['off']);
  t.deepEqual(r.untainted, ['back']);
});

test('errors (per node or for the whole lookup) never delete', async (t) => {
  const h = harness([mkNode('a', false)], () => ({ error: new CloudCallError('GetInstancesStatus', 'UNAVAILABLE', 'down') }));
  const r = await h.c.tick();
  t.is(r.errors, 1);
  t.deepEqual(h.deleted, []);
  const failing = harness([mkNode('a', false)], () => ({ exists: false }));
  (failing.c as unknown as { o: { instances: Instances } }).o.instances.instancesStatus = async () => {
    throw new CloudCallError('GetInstancesStatus', 'RESOURCE_EXHAUSTED', 'rate limited', 'RATE_LIMITED');
  };
  const r2 = await failing.c.tick();
  t.true(r2.lookupFailed);
  t.deepEqual(failing.deleted, []);
});

test('grace period: deleted only after two consecutive "gone" answers spanning the grace period; "exists" resets', async (t) => {
  let exists = false;
  const h = harness([mkNode('a', false)], () => ({ exists, shutdown: false }), 10_000);
  await h.c.tick();
  t.deepEqual(h.deleted, [], 'first gone: kept');
  h.advance(5_000);
  await h.c.tick();
  t.deepEqual(h.deleted, [], 'second gone but inside the grace period: kept');
  exists = true;
  h.advance(6_000);
  await h.c.tick();
  exists = false;
  h.advance(1_000);
  await h.c.tick();
  t.deepEqual(h.deleted, [], '"exists" reset the count');
  h.advance(10_000);
  await h.c.tick();
  t.deepEqual(h.deleted, ['a']);
});

test('parseDeletionLimit: counts, percentages, 0 = off, garbage rejected', (t) => {
  const rows: [string, DeletionLimit | null | undefined][] = [
    ['5', { count: 5 }],
    ['0', null],
    ['10%', { percent: 10 }],
    ['0%', undefined],
    ['1%', { percent: 1 }],
    ['100%', { percent: 100 }],
    ['101%', undefined],
    ['-1', undefined],
    ['1.5', undefined],
    ['ten', undefined],
    ['', undefined],
  ];
  for (const [text, want] of rows) t.deepEqual(parseDeletionLimit(text), want, text);
});

test('DeletionBrake.bound: a count as given; a percentage of the nodes, rounded down, never below 5', (t) => {
  const rows: [DeletionLimit | null, number, number][] = [
    [{ count: 3 }, 1000, 3],
    [{ percent: 10 }, 12, 5],
    [{ percent: 10 }, 59, 5],
    [{ percent: 10 }, 60, 6],
    [{ percent: 10 }, 1000, 100],
    [null, 1000, Infinity],
  ];
  for (const [limit, nodes, want] of rows)
    t.is(new DeletionBrake(limit, 60_000, new MemoryDeletionLedger()).bound(nodes), want, `${JSON.stringify(limit)} of ${nodes}`);
});

test('DeletionBrake window: deletions count for exactly one window, then free their slot', async (t) => {
  let now = 0;
  const b = new DeletionBrake({ count: 2 }, 60_000, new MemoryDeletionLedger(), () => now);
  const allowance = async (nodes: number) => (await b.allowance(nodes)).granted;
  t.is(await allowance(10), 2);
  t.is((await b.reserve(1, 10)).granted, 1);
  now = 10_000;
  t.is((await b.reserve(5, 10)).granted, 1, 'a reservation gets no more than the window allows');
  t.is(await allowance(10), 0);
  t.is((await b.reserve(1, 10)).granted, 0);
  now = 59_999;
  t.is(await allowance(10), 0, 'the first deletion is still inside the window');
  now = 60_000;
  t.is(await allowance(10), 1, 'the first deletion left the window');
  now = 70_000;
  t.is(await allowance(10), 2);
});

test('DeletionBrake percentage: Nodes deleted inside the window still count, so 10 % of 200 allows 20, not 19', async (t) => {
  let now = 0;
  const b = new DeletionBrake({ percent: 10 }, 60_000, new MemoryDeletionLedger(), () => now);
  const allowance = async (nodes: number) => (await b.allowance(nodes)).granted;
  for (let deleted = 0; deleted < 19; deleted++) {
    t.is(await allowance(200 - deleted), 20 - deleted, `after ${deleted} deletions`);
    await b.reserve(1, 200 - deleted);
  }
  t.is(await allowance(181), 1, 'the 20th of 200');
  await b.reserve(1, 181);
  t.is(await allowance(180), 0);
  now = 60_000;
  t.is(await allowance(180), 18, 'a new window: 10 % of the 180 left');
});

test('DeletionBrake: a conflicting writer is re-read, not overwritten; release gives back unused reservations', async (t) => {
  const ledger = new MemoryDeletionLedger();
  const b = new DeletionBrake({ count: 3 }, 60_000, ledger, () => 0);
  // Another replica reserves 2 between this one's read and write.
  const read = ledger.read.bind(ledger);
  let raced = false;
  ledger.read = async () => {
    const snap = await read();
    if (!raced) {
      raced = true;
      await ledger.write([{ at: 1000, count: 2 }], snap.version);
    }
    return snap;
  };
  t.is((await b.reserve(3, 10)).granted, 1, 'only what the other left');
  ledger.read = read;
  t.is((await b.allowance(10)).granted, 0);
  await b.release(1);
  t.is((await b.allowance(10)).granted, 1);
});

test('brake: of many "gone" nodes only the bound is deleted; the rest get one Warning each and go on later passes, oldest hold first', async (t) => {
  const nodes = Array.from({ length: 8 }, (_, i) => mkNode(`n${i}`, false));
  const h = harness(nodes, () => ({ exists: false }), 0, { count: 3 }, 60_000);
  const r1 = await h.c.tick();
  t.deepEqual(h.deleted, ['n0', 'n1', 'n2']);
  t.deepEqual(r1.heldBack, ['n3', 'n4', 'n5', 'n6', 'n7']);
  t.is(h.events.filter((e) => e === 'DeletingNodeHeldBack').length, 5);

  // Within the window: nothing more is deleted, and no second Warning per node.
  nodes.splice(0, 3);
  h.advance(30_000);
  const r2 = await h.c.tick();
  t.deepEqual(h.deleted, ['n0', 'n1', 'n2']);
  t.is(r2.heldBack.length, 5);
  t.is(h.events.filter((e) => e === 'DeletingNodeHeldBack').length, 5);

  // The window has passed: the next three held back go.
  h.advance(30_000);
  await h.c.tick();
  t.deepEqual(h.deleted, ['n0', 'n1', 'n2', 'n3', 'n4', 'n5']);
});

test('brake: a node reported to exist again leaves the hold; a node held again gets a new Warning', async (t) => {
  const nodes = [mkNode('a', false), mkNode('b', false)];
  let gone = true;
  const h = harness(nodes, () => (gone ? { exists: false } : { exists: true, shutdown: false }), 0, { count: 1 }, 60_000);
  await h.c.tick();
  t.deepEqual(h.deleted, ['a']);
  t.is(h.events.filter((e) => e === 'DeletingNodeHeldBack').length, 1);
  nodes.shift();
  gone = false;
  h.advance(1_000);
  t.deepEqual((await h.c.tick()).heldBack, []);
  gone = true;
  h.advance(1_000);
  t.deepEqual((await h.c.tick()).heldBack, ['b']);
  t.is(h.events.filter((e) => e === 'DeletingNodeHeldBack').length, 2);
});

test("a NotReady node with another provider's providerID gets no cloud call and is never deleted or tainted", async (t) => {
  const withId = (n: V1Node, id: string): V1Node => ({ ...n, spec: { ...n.spec, providerID: id } });
  const foreign = withId(mkNode('foreign', false), 'othercloud://i-1');
  const prefixOnly = withId(mkNode('prefix', false), 'mycloudx://i-2');
  const ours = withId(mkNode('ours', false), 'mycloud://i-3');
  const uninitialized = mkNode('new', false);
  // The provider says "gone" for everything: only our own nodes may be deleted.
  const h = harness([foreign, prefixOnly, ours, uninitialized], () => ({ exists: false, shutdown: false }));
  const r = await h.c.tick();
  t.deepEqual(h.calls, [['ours', 'new']], 'foreign nodes are not sent to the provider');
  t.deepEqual(h.deleted.sort(), ['new', 'ours']);
  t.deepEqual(r.foreign, ['foreign', 'prefix']);
  t.is(r.notReady, 2);
  const shutdown = harness([foreign], () => ({ exists: true, shutdown: true }));
  const r2 = await shutdown.c.tick();
  t.deepEqual(shutdown.calls, [], 'no lookup at all when every NotReady node is foreign');
  t.deepEqual(r2.tainted, []);
  t.deepEqual(shutdown.patched, []);
});

test('node ownership: only owned nodes are looked up or written; a Ready foreign node keeps its shutdown taint; a node two providers claim gets a Warning and the metric', async (t) => {
  const mk = (name: string, ready: boolean, providerID?: string, labels: Record<string, string> = {}, taints: string[] = []): V1Node => {
    const n = mkNode(name, ready, taints);
    return { ...n, metadata: { ...n.metadata, labels }, spec: { ...n.spec, providerID } };
  };
  const nodes = [
    mk('ours', false, 'mycloud://1'),
    mk('ours-unlabelled', false, undefined, { cloud: 'mycloud' }),
    mk('foreign-ready', true, 'other://x', {}, ['node.cloudprovider.kubernetes.io/shutdown']),
    mk('nobody', false, undefined, { cloud: 'elsewhere' }),
    mk('twice', false, 'shared://1'),
  ];
  const registry = new Registry();
  // Two providers in the host: this controller serves mycloud; both declare shared://.
  const declarations = nodeOwnershipDeclarations([
    { name: 'mycloud', providerName: 'mycloud', providerIdPrefixes: ['mycloud://', 'shared://'], nodeSelector: 'cloud=mycloud' },
    { name: 'other', providerName: 'other', providerIdPrefixes: ['other://', 'shared://'], nodeSelector: '' },
  ]);
  const h = harness(nodes, () => ({ exists: false }), 0, null, 300_000, new MemoryDeletionLedger(), registry, {
    provider: () => 'mycloud',
    declarations: () => declarations,
  });
  const r = await h.c.tick();
  t.deepEqual(h.calls, [['ours', 'ours-unlabelled']], 'only owned nodes are sent to the provider');
  t.deepEqual(h.deleted.sort(), ['ours', 'ours-unlabelled']);
  t.deepEqual(h.patched, [], 'the Ready foreign node keeps its shutdown taint');
  t.deepEqual(r.foreign.sort(), ['foreign-ready', 'nobody', 'twice']);
  t.deepEqual(
    h.events.filter((e) => e === 'NodeOwnershipConflict'),
    ['NodeOwnershipConflict'],
  );
  t.regex(await registry.metrics(), /ccm_node_ownership_conflicts\{controller="cloud-node-lifecycle-controller"\} 1/);
  await h.c.tick();
  t.is(h.events.filter((e) => e === 'NodeOwnershipConflict').length, 1, 'the Warning is not repeated every pass');
});

test('the brake remembers: a new controller on the same record (a restart, a new leader) deletes no more within the window', async (t) => {
  const ledger = new MemoryDeletionLedger();
  const nodes = Array.from({ length: 8 }, (_, i) => mkNode(`n${i}`, false));
  const first = harness(nodes, () => ({ exists: false }), 0, { count: 3 }, 60_000, ledger);
  await first.c.tick();
  t.deepEqual(first.deleted, ['n0', 'n1', 'n2']);
  nodes.splice(0, 3);
  // A new process, 30 s later: inside the window, so nothing more.
  const second = harness(nodes, () => ({ exists: false }), 0, { count: 3 }, 60_000, ledger);
  second.setNow(30_000);
  const r = await second.c.tick();
  t.deepEqual(second.deleted, []);
  t.deepEqual(r.heldBack, ['n3', 'n4', 'n5', 'n6', 'n7']);
  // Past the window: three more.
  second.setNow(61_000);
  await second.c.tick();
  t.deepEqual(second.deleted, ['n3', 'n4', 'n5']);
});

const recordFailures: [string, (l: MemoryDeletionLedger) => void][] = [
  ['the record cannot be read', (l) => (l.failRead = new Error('503 from the API server'))],
  ['the record cannot be written', (l) => (l.failWrite = new Error('403 Forbidden'))],
];
for (const [description, fail] of recordFailures) {
  test(`brake: when ${description}, no Node is deleted`, async (t) => {
    const ledger = new MemoryDeletionLedger();
    fail(ledger);
    const h = harness([mkNode('a', false), mkNode('b', false)], () => ({ exists: false }), 0, { count: 5 }, 60_000, ledger);
    const r = await h.c.tick();
    t.true(r.recordFailed);
    t.deepEqual(h.deleted, []);
    t.deepEqual(
      h.events.filter((e) => e === 'DeletingNode'),
      [],
    );
  });
}

test('brake: a delete that fails gives its reservation back', async (t) => {
  const h = harness([mkNode('a', false), mkNode('b', false)], () => ({ exists: false }), 0, { count: 2 }, 60_000);
  h.deleteErrors.set('a', apiError(409));
  await h.c.tick();
  t.deepEqual(h.deleted, ['b']);
  h.deleteErrors.clear();
  h.advance(1_000);
  await h.c.tick();
  t.deepEqual(h.deleted, ['b', 'a'], 'the failed one did not use up the window');
});

test('the cache never decides a deletion alone: each is confirmed by a live read, and deleted at the fresh resourceVersion', async (t) => {
  const withId = (n: V1Node, id: string): V1Node => ({ ...n, spec: { ...n.spec, providerID: id } });
  const names = ['same', 'recreated', 'ready', 'moved', 'gone', 'unreadable'];
  const nodes = names.map((n) => withId(mkNode(n, false), `mycloud://${n}`));
  const registry = new Registry();
  const h = harness(nodes, () => ({ exists: false }), 0, null, 300_000, new MemoryDeletionLedger(), registry);
  const fresh = (name: string, f: (n: V1Node) => void): V1Node => {
    const n = structuredClone(nodes.find((x) => x.metadata!.name === name)!);
    f(n);
    return n;
  };
  h.live.set(
    'same',
    fresh('same', (n) => (n.metadata!.resourceVersion = '7')),
  );
  h.live.set(
    'recreated',
    fresh('recreated', (n) => (n.metadata!.uid = 'uid-other')),
  );
  h.live.set(
    'ready',
    fresh('ready', (n) => (n.status!.conditions = [{ type: 'Ready', status: 'True' }])),
  );
  h.live.set(
    'moved',
    fresh('moved', (n) => (n.spec!.providerID = 'mycloud://elsewhere')),
  );
  h.live.set('gone', apiError(404));
  h.live.set('unreadable', new Error('connection reset'));
  const r = await h.c.tick();
  t.deepEqual(h.reads.sort(), [...names].sort(), 'one live read per node about to be deleted');
  t.deepEqual(h.deleted, ['same']);
  t.deepEqual(h.preconditions, [{ uid: 'uid-same', resourceVersion: '7' }], "the fresh object's preconditions");
  t.deepEqual(r.unconfirmed.sort(), ['gone', 'moved', 'ready', 'recreated', 'unreadable']);
  const counted = (await registry.getSingleMetric('ccm_live_reads_total')!.get()).values.map(
    (v) => `${v.labels.controller} ${v.labels.resource} ${v.labels.outcome} ${v.value}`,
  );
  t.deepEqual(
    counted.sort(),
    [
      'cloud-node-lifecycle-controller nodes changed 3',
      'cloud-node-lifecycle-controller nodes confirmed 1',
      'cloud-node-lifecycle-controller nodes error 1',
      'cloud-node-lifecycle-controller nodes gone 1',
    ],
    'each live read counted once, by what it found',
  );
});

test('held-back nodes cost no live read', async (t) => {
  const nodes = Array.from({ length: 6 }, (_, i) => mkNode(`n${i}`, false));
  const h = harness(nodes, () => ({ exists: false }), 0, { count: 2 }, 60_000);
  await h.c.tick();
  t.deepEqual(h.reads, ['n0', 'n1']);
  t.deepEqual(h.deleted, ['n0', 'n1']);
});

/** The lifecycle series of an exposition, without HELP and TYPE lines. */
function lifecycleSeries(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('ccm_node_lifecycle_') && !l.includes('_bucket'))
    .sort();
}

test('metrics: with one provider the series have no label (as before); with several, one series per provider', async (t) => {
  const one = new Registry();
  await harness([mkNode('a', false)], () => ({ exists: true, shutdown: false }), 0, null, 300_000, new MemoryDeletionLedger(), one).c.tick();
  const several = new Registry();
  const east = harness(
    [mkNode('a', false), mkNode('b', false)],
    () => ({ exists: true, shutdown: false }),
    0,
    null,
    300_000,
    new MemoryDeletionLedger(),
    several,
    undefined,
    'east',
  );
  const west = harness(
    [mkNode('c', false)],
    () => ({ exists: true, shutdown: false }),
    0,
    null,
    300_000,
    new MemoryDeletionLedger(),
    several,
    undefined,
    'west',
  );
  await east.c.tick();
  await west.c.tick();
  const rows = (text: string) => lifecycleSeries(text).filter((l) => !l.includes('_sum'));
  t.deepEqual(rows(await one.metrics()), [
    'ccm_node_lifecycle_deletion_record_failures_total 0',
    'ccm_node_lifecycle_deletions_held_back_total 0',
    'ccm_node_lifecycle_nodes_held_back 0',
    'ccm_node_lifecycle_not_ready_nodes 1',
    'ccm_node_lifecycle_pass_duration_seconds_count 1',
  ]);
  t.deepEqual(rows(await several.metrics()), [
    'ccm_node_lifecycle_deletion_record_failures_total{provider="east"} 0',
    'ccm_node_lifecycle_deletion_record_failures_total{provider="west"} 0',
    'ccm_node_lifecycle_deletions_held_back_total{provider="east"} 0',
    'ccm_node_lifecycle_deletions_held_back_total{provider="west"} 0',
    'ccm_node_lifecycle_nodes_held_back{provider="east"} 0',
    'ccm_node_lifecycle_nodes_held_back{provider="west"} 0',
    'ccm_node_lifecycle_not_ready_nodes{provider="east"} 2',
    'ccm_node_lifecycle_not_ready_nodes{provider="west"} 1',
    'ccm_node_lifecycle_pass_duration_seconds_count{provider="east"} 1',
    'ccm_node_lifecycle_pass_duration_seconds_count{provider="west"} 1',
  ]);
});
