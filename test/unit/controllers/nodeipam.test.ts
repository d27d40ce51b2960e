/**
 * The node IPAM controller's sync with fakes (issue 29, findings 5 and 6):
 * a range is released only when the Node is really gone (live GET: 404) or
 * the write definitely failed (4xx); after a write whose outcome is unknown
 * the range stays reserved, and the retry re-reads the Node and writes the
 * same range again, never a second one.
 */
import test from 'ava';
import { Writable } from 'node:stream';
import type { V1Node } from '@kubernetes/client-node';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { ApiError } from '../../../host/kube/rest.js';
import { createLogger } from '../../../host/log.js';
import { parseCidr, type Cidr } from '../../../host/util/cidr.js';
import { IpamController, isDefiniteFailure } from '../../../host/controllers/nodeipam/ipam-controller.js';

const silent = createLogger({ verbosity: 0, destination: new Writable({ write: (_c, _e, cb) => cb() }) });

const mk = (name: string, podCIDRs: string[] = [], uid = `uid-${name}`): V1Node => ({ metadata: { name, uid }, spec: { podCIDRs } });

/** A fake API server: `server` is the truth, `cache` what the informer shows; `onPatch` decides each patch's fate. */
function harness(onPatch: (name: string, n: number) => 'ok' | 'lost' | 'refused' | 'reset') {
  const server = new Map<string, V1Node>();
  const cache = new Map<string, V1Node>();
  const patches: string[] = [];
  const core = {
    readNode: async ({ name }: { name: string }) => {
      const n = server.get(name);
      if (!n) throw new ApiError(404, {}, 'GET', name);
      return structuredClone(n);
    },
    patchNode: async ({ name, body }: { name: string; body: { spec: { podCIDRs: string[] } } }) => {
      const fate = onPatch(name, patches.length);
      patches.push(`${name} ${body.spec.podCIDRs.join(',')}`);
      if (fate === 'refused') throw new ApiError(422, { message: 'invalid' }, 'PATCH', name);
      if (fate === 'reset') throw new Error('socket hang up');
      server.get(name)!.spec = { podCIDRs: body.spec.podCIDRs };
      if (fate === 'lost') throw new Error('socket hang up'); // applied, answer lost
      return server.get(name)!;
    },
  } as unknown as CoreV1Api;
  const c = new IpamController({
    core,
    nodes: { get: (n: string) => cache.get(n), list: () => [...cache.values()], addEventHandler: () => undefined } as unknown as Informer<V1Node>,
    recorder: { event: () => undefined } as unknown as EventRecorder,
    log: silent,
    clusterCidrs: [parseCidr('10.0.0.0/23')!] as Cidr[],
    maskSizes: [24],
  });
  const add = (n: V1Node) => {
    server.set(n.metadata!.name!, structuredClone(n));
    cache.set(n.metadata!.name!, structuredClone(n));
  };
  /** The informer catches up with the server. */
  const catchUp = (name: string) => cache.set(name, structuredClone(server.get(name)!));
  return { c, server, cache, patches, add, catchUp };
}

test('definite failures are 4xx except 408; everything else is unknown', (t) => {
  const rows: [unknown, boolean][] = [
    [new ApiError(422, {}, 'PATCH', 'x'), true],
    [new ApiError(409, {}, 'PATCH', 'x'), true],
    [new ApiError(404, {}, 'PATCH', 'x'), true],
    [new ApiError(429, {}, 'PATCH', 'x'), true],
    [new ApiError(408, {}, 'PATCH', 'x'), false],
    [new ApiError(500, {}, 'PATCH', 'x'), false],
    [new ApiError(504, {}, 'PATCH', 'x'), false],
    [new Error('socket hang up'), false],
  ];
  for (const [err, definite] of rows) t.is(isDefiniteFailure(err), definite, String(err));
});

test('a lost answer after the write was applied: the range stays reserved, no other node gets it', async (t) => {
  const h = harness((name, n) => (name === 'a' && n === 0 ? 'lost' : 'ok'));
  for (const n of ['a', 'b', 'c']) h.add(mk(n));
  await t.throwsAsync(h.c.sync('a'));
  // The informer has not shown a's update yet; b gets the other range, c none (two in all).
  await h.c.sync('b');
  await h.c.sync('c');
  await h.c.sync('a'); // re-reads a: the write was applied, nothing more is written
  t.deepEqual(h.patches, ['a 10.0.0.0/24', 'b 10.0.1.0/24']);
  t.deepEqual(h.server.get('c')!.spec!.podCIDRs, []);
  t.deepEqual(h.server.get('a')!.spec!.podCIDRs, ['10.0.0.0/24']);
  t.deepEqual(h.c.allocator.holding('a')?.cidrs, ['10.0.0.0/24']);
});

test('no answer and not applied: the retry writes the same range again', async (t) => {
  const h = harness((name, n) => (n === 0 ? 'reset' : 'ok'));
  h.add(mk('a'));
  await t.throwsAsync(h.c.sync('a'));
  await h.c.sync('a');
  t.deepEqual(h.patches, ['a 10.0.0.0/24', 'a 10.0.0.0/24']);
});

test('a definite refusal (422) releases the range', async (t) => {
  const h = harness((name, n) => (n === 0 ? 'refused' : 'ok'));
  h.add(mk('a'));
  await t.throwsAsync(h.c.sync('a'));
  t.is(h.c.allocator.holding('a'), undefined);
});

test('a node that left the cache but exists (relabelled out of --node-selector) keeps its range; gone (404) releases it', async (t) => {
  const h = harness(() => 'ok');
  h.add(mk('a'));
  await h.c.sync('a');
  h.catchUp('a');
  h.cache.delete('a'); // DELETED from the scoped watch
  await h.c.sync('a');
  t.deepEqual(h.c.allocator.holding('a')?.cidrs, ['10.0.0.0/24']);
  h.add(mk('b'));
  h.add(mk('c'));
  await h.c.sync('b');
  await h.c.sync('c'); // both ranges are taken: no range for c
  t.deepEqual(h.server.get('c')!.spec!.podCIDRs, []);
  h.server.delete('a');
  await h.c.sync('a');
  t.is(h.c.allocator.holding('a'), undefined);
});
