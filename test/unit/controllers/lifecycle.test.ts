/**
 * The lifecycle pass with fakes (no API server): one status lookup per pass
 * for all NotReady nodes, errors never delete, the grace period needs two
 * consecutive "gone" answers, each node at most once per pass.
 */
import test from 'ava';
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import type { Instances, NodeRef, StatusResult } from '../../../host/cloud.js';
import { CloudCallError } from '../../../host/errors.js';
import { NodeLifecycleController } from '../../../host/controllers/lifecycle/lifecycle-controller.js';
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

function harness(nodes: V1Node[], answer: (n: NodeRef) => Omit<StatusResult, 'nodeName'>, graceMs = 0) {
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
    recorder: { event: (_o: unknown, _t: string, reason: string) => events.push(reason) } as unknown as EventRecorder,
    log: silent,
    periodMs: 1000,
    deletionGraceMs: graceMs,
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
