/**
 * MetadataBatcher (host/controllers/node/metadata-batcher.ts) with a fake
 * Instances that records calls: concurrent lookups of a batched provider
 * become one batch call, per-item errors reach only their caller, a failed
 * batch rejects every caller, and non-batched providers are called per node;
 * a call also prefetches companions, each at most once per TTL, and a
 * prefetched answer serves one lookup within its TTL.
 */
import test from 'ava';
import type { InstanceMetadata, Instances, MetadataResult, NodeRef, StatusResult } from '../../../host/cloud.js';
import { MAX_BATCH_NODES } from '../../../host/cloud.js';
import { MetadataBatcher } from '../../../host/controllers/node/metadata-batcher.js';
import { InstanceNotFoundError, InvalidCloudResponseError } from '../../../host/errors.js';

const node = (name: string): NodeRef => ({ name, addresses: [], labels: {} });
const metaFor = (name: string): InstanceMetadata => ({
  providerId: `fake://${name}`,
  instanceType: 't',
  nodeAddresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
  zone: 'z',
  region: 'r',
  additionalLabels: {},
});

/** What the fake answers for one node; undefined = metadata from metaFor. */
type ItemBehaviour = Error | 'omit' | undefined;

/** A fake Instances recording every call. */
class FakeInstances implements Instances {
  readonly batchCalls: string[][] = [];
  readonly singleCalls: string[] = [];
  /** When set, the whole batch call rejects with it. */
  batchError?: Error;
  /** Makes batch answers shorter than the input (a broken implementation). */
  dropLastResult = false;
  /** Delay of each call, ms. */
  delayMs = 0;

  constructor(
    readonly batched: boolean,
    private readonly items: Record<string, ItemBehaviour> = {},
  ) {}

  private async pause(): Promise<void> {
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
  }

  async instanceMetadata(n: NodeRef): Promise<InstanceMetadata> {
    this.singleCalls.push(n.name);
    await this.pause();
    const b = this.items[n.name];
    if (b instanceof Error) throw b;
    return metaFor(n.name);
  }

  async instancesMetadata(nodes: NodeRef[]): Promise<MetadataResult[]> {
    this.batchCalls.push(nodes.map((n) => n.name));
    await this.pause();
    if (this.batchError) throw this.batchError;
    const out: MetadataResult[] = nodes.map((n) => {
      const b = this.items[n.name];
      if (b instanceof Error) return { nodeName: n.name, error: b };
      if (b === 'omit') return { nodeName: n.name };
      return { nodeName: n.name, metadata: metaFor(n.name) };
    });
    if (this.dropLastResult) out.pop();
    return out;
  }

  instanceExists(): Promise<boolean> {
    throw new Error('not used by the batcher');
  }
  instanceShutdown(): Promise<boolean> {
    throw new Error('not used by the batcher');
  }
  instancesStatus(): Promise<StatusResult[]> {
    throw new Error('not used by the batcher');
  }
}

type Outcome = { ok: true; providerId: string } | { ok: false; error: Error };

function settle(p: Promise<InstanceMetadata>): Promise<Outcome> {
  return p.then(
    (m) => ({ ok: true, providerId: m.providerId }),
    (error: Error) => ({ ok: false, error }),
  );
}

const notFound = new InstanceNotFoundError('GetInstancesMetadata', 'NOT_FOUND', 'no vm', 'INSTANCE_NOT_FOUND');
const invalid = new InvalidCloudResponseError('GetInstancesMetadata', ['InternalIP address: "1.2.3" is not a dotted-quad IPv4 address']);

interface Case {
  description: string;
  batched: boolean;
  items?: Record<string, ItemBehaviour>;
  configure?: (f: FakeInstances) => void;
  /** Node names looked up concurrently. */
  nodes: string[];
  batchCalls: string[][];
  singleCalls: string[];
  /** Per node: 'ok' or the error expected (same object), or a message pattern. */
  outcomes: Record<string, 'ok' | Error | RegExp>;
}

const boom = new Error('cloud API unreachable');

const cases: Case[] = [
  {
    description: 'concurrent lookups are coalesced into one batch call, in call order',
    batched: true,
    nodes: ['a', 'b', 'c', 'd'],
    batchCalls: [['a', 'b', 'c', 'd']],
    singleCalls: [],
    outcomes: { a: 'ok', b: 'ok', c: 'ok', d: 'ok' },
  },
  {
    description: 'a single lookup is a batch of one',
    batched: true,
    nodes: ['solo'],
    batchCalls: [['solo']],
    singleCalls: [],
    outcomes: { solo: 'ok' },
  },
  {
    description: 'per-item errors reach only their caller',
    batched: true,
    items: { b: notFound, d: invalid },
    nodes: ['a', 'b', 'c', 'd'],
    batchCalls: [['a', 'b', 'c', 'd']],
    singleCalls: [],
    outcomes: { a: 'ok', b: notFound, c: 'ok', d: invalid },
  },
  {
    description: 'a result with neither metadata nor error rejects its caller only',
    batched: true,
    items: { b: 'omit' },
    nodes: ['a', 'b'],
    batchCalls: [['a', 'b']],
    singleCalls: [],
    outcomes: { a: 'ok', b: /no result for node/ },
  },
  {
    description: 'a batch answer missing the last result rejects that caller only',
    batched: true,
    configure: (f) => (f.dropLastResult = true),
    nodes: ['a', 'b', 'c'],
    batchCalls: [['a', 'b', 'c']],
    singleCalls: [],
    outcomes: { a: 'ok', b: 'ok', c: /no result for node/ },
  },
  {
    description: 'a whole-batch failure rejects every caller with that error',
    batched: true,
    configure: (f) => (f.batchError = boom),
    nodes: ['a', 'b', 'c'],
    batchCalls: [['a', 'b', 'c']],
    singleCalls: [],
    outcomes: { a: boom, b: boom, c: boom },
  },
  {
    description: 'non-batched provider: instanceMetadata per node, no batch call',
    batched: false,
    nodes: ['a', 'b', 'c'],
    batchCalls: [],
    singleCalls: ['a', 'b', 'c'],
    outcomes: { a: 'ok', b: 'ok', c: 'ok' },
  },
  {
    description: 'non-batched provider: an error reaches only its caller',
    batched: false,
    items: { b: notFound },
    nodes: ['a', 'b', 'c'],
    batchCalls: [],
    singleCalls: ['a', 'b', 'c'],
    outcomes: { a: 'ok', b: notFound, c: 'ok' },
  },
];

for (const c of cases) {
  test(c.description, async (t) => {
    const fake = new FakeInstances(c.batched, c.items);
    c.configure?.(fake);
    const batcher = new MetadataBatcher(fake, { maxWaitMs: 5 });
    const results = await Promise.all(c.nodes.map((n) => settle(batcher.get(node(n)))));
    t.deepEqual(fake.batchCalls, c.batchCalls);
    t.deepEqual(fake.singleCalls, c.singleCalls);
    c.nodes.forEach((name, i) => {
      const want = c.outcomes[name]!;
      const got = results[i]!;
      if (want === 'ok') {
        t.deepEqual(got, { ok: true, providerId: `fake://${name}` }, name);
      } else if (want instanceof RegExp) {
        t.false(got.ok, name);
        if (!got.ok) t.regex(got.error.message, want);
      } else {
        t.false(got.ok, name);
        if (!got.ok) t.is(got.error, want, `${name} gets exactly its own error`);
      }
    });
  });
}

test('lookups in separate windows are separate batches', async (t) => {
  const fake = new FakeInstances(true);
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 5 });
  const first = Promise.all([batcher.get(node('a')), batcher.get(node('b'))]);
  await first;
  await Promise.all([batcher.get(node('c'))]);
  t.deepEqual(fake.batchCalls, [['a', 'b'], ['c']]);
});

test('lookups made while a batch is in flight go into the next batch', async (t) => {
  const fake = new FakeInstances(true);
  fake.delayMs = 50;
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 2 });
  const a = batcher.get(node('a'));
  await new Promise((r) => setTimeout(r, 20)); // the first batch is now in flight
  const b = batcher.get(node('b'));
  const c = batcher.get(node('c'));
  const got = await Promise.all([a, b, c]);
  t.deepEqual(
    got.map((m) => m.providerId),
    ['fake://a', 'fake://b', 'fake://c'],
  );
  t.deepEqual(fake.batchCalls, [['a'], ['b', 'c']]);
});

test(`${MAX_BATCH_NODES} pending lookups flush at once, the rest go into the next batch`, async (t) => {
  const fake = new FakeInstances(true);
  // A long wait: only the size limit can trigger the first flush quickly.
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 60_000 });
  const names = Array.from({ length: MAX_BATCH_NODES + 3 }, (_, i) => `n${i}`);
  const pending = names.map((n) => batcher.get(node(n)));
  const firstBatch = Promise.all(pending.slice(0, MAX_BATCH_NODES));
  const got = await firstBatch;
  t.is(got.length, MAX_BATCH_NODES);
  t.is(fake.batchCalls.length, 1);
  t.deepEqual(fake.batchCalls[0], names.slice(0, MAX_BATCH_NODES));
  // The 3 stragglers wait for their timer; flush them by filling up a batch.
  const filler = Array.from({ length: MAX_BATCH_NODES - 3 }, (_, i) => batcher.get(node(`f${i}`)));
  await Promise.all([...pending.slice(MAX_BATCH_NODES), ...filler]);
  t.is(fake.batchCalls.length, 2);
  t.deepEqual(fake.batchCalls[1]!.slice(0, 3), names.slice(MAX_BATCH_NODES));
});

test('a batch failure does not poison the next batch', async (t) => {
  const fake = new FakeInstances(true);
  fake.batchError = boom;
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 2 });
  await t.throwsAsync(batcher.get(node('a')), { is: boom });
  fake.batchError = undefined;
  const m = await batcher.get(node('a'));
  t.is(m.providerId, 'fake://a');
  t.deepEqual(fake.batchCalls, [['a'], ['a']]);
});

test('a lookup prefetches the companions; their lookups then need no call, once, within the TTL', async (t) => {
  const fake = new FakeInstances(true, { bad: boom });
  let now = 0;
  const companions = ['a', 'b', 'c', 'bad'].map(node);
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 1, companions: () => companions, prefetchTtlMs: 1000, now: () => now });
  t.is((await batcher.get(node('a'))).providerId, 'fake://a');
  t.deepEqual(fake.batchCalls, [['a', 'b', 'c', 'bad']], 'one call for the lookup and its companions');
  t.is((await batcher.get(node('b'))).providerId, 'fake://b');
  t.is(fake.batchCalls.length, 1, 'a prefetched answer needs no call');
  // A failed companion is not kept, and not asked for again within the TTL.
  await t.throwsAsync(batcher.get(node('bad')), { is: boom });
  t.deepEqual(fake.batchCalls[1], ['bad']);
  // Used once: b again is a call (with no companions: all were asked for within the TTL).
  await batcher.get(node('b'));
  t.deepEqual(fake.batchCalls[2], ['b']);
  // Past the TTL a prefetched answer is not used, and companions are asked for again.
  now = 5000;
  await batcher.get(node('c'));
  t.deepEqual(fake.batchCalls[3], ['c', 'a', 'b', 'bad']);
});

test('companions fill a call up to the batch limit only', async (t) => {
  const fake = new FakeInstances(true);
  const many = Array.from({ length: MAX_BATCH_NODES + 50 }, (_, i) => node(`m${i}`));
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 1, companions: () => many });
  await batcher.get(node('x'));
  t.is(fake.batchCalls[0]!.length, MAX_BATCH_NODES);
  t.is(fake.batchCalls[0]![0], 'x');
});

test('a prefetched answer serves only the Node it was asked for: a Node re-registered under the same name (new uid) gets a fresh lookup', async (t) => {
  // The cloud's answer changes when the name moves to another instance.
  let instance = 'old';
  const fake = new FakeInstances(true);
  fake.instancesMetadata = async (nodes: NodeRef[]) => {
    fake.batchCalls.push(nodes.map((n) => `${n.name}/${n.uid}`));
    return nodes.map((n) => ({ nodeName: n.name, metadata: { ...metaFor(n.name), providerId: `fake://${instance}-${n.name}` } }));
  };
  const withUid = (name: string, uid: string): NodeRef => ({ ...node(name), uid });
  let companions = [withUid('web', 'uid-1')];
  const batcher = new MetadataBatcher(fake, { maxWaitMs: 1, companions: () => companions, prefetchTtlMs: 30_000, now: () => 0 });
  await batcher.get(withUid('other', 'uid-9'));
  t.deepEqual(fake.batchCalls, [['other/uid-9', 'web/uid-1']], 'web (uid-1) prefetched with the old instance');
  // Node web deleted and registered again by another instance within the TTL.
  instance = 'new';
  companions = [withUid('web', 'uid-2')];
  const got = await batcher.get(withUid('web', 'uid-2'));
  t.is(got.providerId, 'fake://new-web', "the new Node gets its own instance's providerID, not the prefetched one");
  t.deepEqual(fake.batchCalls[1], ['web/uid-2']);
});
