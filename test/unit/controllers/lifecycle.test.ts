/**
 * The lifecycle pass with fakes (no API server): one status lookup per pass
 * for all NotReady nodes, errors never delete, the grace period needs two
 * consecutive "gone" answers, each node at most once per pass, and the
 * mass-deletion brake (--node-deletion-limit) with its window arithmetic.
 */
import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { Instances, NodeRef, StatusResult } from '../../../host/cloud.js';
import { CloudCallError } from '../../../host/errors.js';
import { NodeLifecycleController } from '../../../host/controllers/lifecycle/lifecycle-controller.js';
import { DeletionBrake, parseDeletionLimit, type DeletionLimit } from '../../../host/controllers/lifecycle/deletion-brake.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { createLogger } from '../../../host/log.js';
import { Writable } from 'node:stream';

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

function harness(
  nodes: V1Node[],
  answer: (n: NodeRef) => Omit<StatusResult, 'nodeName'>,
  graceMs = 0,
  limit: DeletionLimit | null = null,
  windowMs = 300_000,
) {
  const calls: string[][] = [];
  const deleted: string[] = [];
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
    async deleteNode(req: { name: string }) {
      deleted.push(req.name);
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
    now: () => now,
  });
  return { c, calls, deleted, patched, events, advance: (ms: number) => (now += ms) };
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
    ['0%', { percent: 0 }],
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
    [{ percent: 0 }, 1000, 5],
    [null, 1000, Infinity],
  ];
  for (const [limit, nodes, want] of rows) t.is(new DeletionBrake(limit, 60_000).bound(nodes), want, `${JSON.stringify(limit)} of ${nodes}`);
});

test('DeletionBrake window: deletions count for exactly one window, then free their slot', (t) => {
  let now = 0;
  const b = new DeletionBrake({ count: 2 }, 60_000, () => now);
  t.is(b.allowance(10), 2);
  b.record();
  now = 10_000;
  b.record();
  t.is(b.allowance(10), 0);
  now = 59_999;
  t.is(b.allowance(10), 0, 'the first deletion is still inside the window');
  now = 60_000;
  t.is(b.allowance(10), 1, 'the first deletion left the window');
  now = 70_000;
  t.is(b.allowance(10), 2);
});

test('DeletionBrake percentage: Nodes deleted inside the window still count, so 10 % of 200 allows 20, not 19', (t) => {
  let now = 0;
  const b = new DeletionBrake({ percent: 10 }, 60_000, () => now);
  for (let deleted = 0; deleted < 19; deleted++) {
    t.is(b.allowance(200 - deleted), 20 - deleted, `after ${deleted} deletions`);
    b.record();
  }
  t.is(b.allowance(181), 1, 'the 20th of 200');
  b.record();
  t.is(b.allowance(180), 0);
  now = 60_000;
  t.is(b.allowance(180), 18, 'a new window: 10 % of the 180 left');
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
