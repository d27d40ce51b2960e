import test from 'ava';
import { Registry, type Metric } from 'prom-client';
import { silentLogger } from '../../../host/log.js';
import { ItemExponentialRateLimiter, type RateLimiter } from '../../../host/kube/ratelimiter.js';
import { MAX_RETRY_AFTER_MS, MIN_RETRY_AFTER_MS, WorkQueue, runWorkers, type GetResult } from '../../../host/kube/workqueue.js';

/** Resolves after pending timers/IO callbacks of this turn have run. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Polls `pred` every few ms until it holds; fails the wait after `timeoutMs`. */
async function until(pred: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Takes every queued item right now (each get resolves synchronously when the queue is non-empty). */
async function drainNow(q: WorkQueue): Promise<string[]> {
  const out: string[] = [];
  while (q.len() > 0) {
    const r = await q.get();
    if (r.shutdown) break;
    out.push(r.item);
  }
  return out;
}

/** Whether `p` has settled, without waiting for it. */
async function settled<T>(p: Promise<T>): Promise<boolean> {
  const marker = Symbol('pending');
  return (await Promise.race([p, tick().then(() => marker)])) !== marker;
}

const dedupeTable: { name: string; adds: string[]; want: string[] }[] = [
  { name: 'distinct items keep FIFO order', adds: ['a', 'b', 'c'], want: ['a', 'b', 'c'] },
  { name: 'repeats are dropped, first position kept', adds: ['a', 'b', 'a', 'c', 'b', 'a'], want: ['a', 'b', 'c'] },
  { name: 'single item added many times', adds: ['x', 'x', 'x', 'x'], want: ['x'] },
  { name: 'empty', adds: [], want: [] },
];
for (const { name, adds, want } of dedupeTable) {
  test(`dedupe: ${name}`, async (t) => {
    const q = new WorkQueue();
    for (const a of adds) q.add(a);
    t.is(q.len(), want.length);
    t.deepEqual(await drainNow(q), want);
  });
}

test('an in-flight item is not handed to a second worker until done', async (t) => {
  const q = new WorkQueue();
  q.add('a');
  const first = await q.get();
  t.deepEqual(first, { item: 'a', shutdown: false });
  q.add('a');
  t.is(q.len(), 0, 're-added in-flight item is not queued');
  const second = q.get();
  t.false(await settled(second), 'second worker waits');
  q.done('a');
  t.deepEqual(await second, { item: 'a', shutdown: false });
});

const requeueTable: { name: string; readds: number; want: number }[] = [
  { name: 'not re-added: not requeued', readds: 0, want: 0 },
  { name: 're-added once: requeued once', readds: 1, want: 1 },
  { name: 're-added five times: requeued once', readds: 5, want: 1 },
];
for (const { name, readds, want } of requeueTable) {
  test(`re-add while processing: ${name}`, async (t) => {
    const q = new WorkQueue();
    q.add('a');
    await q.get();
    for (let i = 0; i < readds; i++) q.add('a');
    q.done('a');
    t.is(q.len(), want);
    const again = await drainNow(q);
    t.deepEqual(again, want ? ['a'] : []);
    for (const item of again) q.done(item);
    t.is(q.len(), 0, 'processed once more, then gone');
  });
}

test('done for an item that is not in flight is a no-op', (t) => {
  const q = new WorkQueue();
  q.add('a');
  q.done('a');
  q.done('zzz');
  t.is(q.len(), 1);
});

test('peek lists waiting items in hand-out order, without in-flight or delayed ones', async (t) => {
  const q = new WorkQueue();
  for (const i of ['a', 'b', 'c', 'd']) q.add(i);
  q.addAfter('later', 60_000);
  const first = await q.get();
  t.is(first.shutdown ? undefined : first.item, 'a');
  q.add('a');
  t.deepEqual(q.peek(10), ['b', 'c', 'd']);
  t.deepEqual(q.peek(2), ['b', 'c']);
  q.done('a');
  t.deepEqual(q.peek(10), ['b', 'c', 'd', 'a']);
  q.shutDown();
});

test('waiting gets are served in order', async (t) => {
  const q = new WorkQueue();
  const g1 = q.get();
  const g2 = q.get();
  q.add('a');
  q.add('b');
  t.deepEqual(await g1, { item: 'a', shutdown: false });
  t.deepEqual(await g2, { item: 'b', shutdown: false });
});

/** A rate limiter that records the delays it hands out. */
function recording<T>(inner: RateLimiter<T>): RateLimiter<T> & { delays: number[]; items: T[] } {
  const delays: number[] = [];
  const items: T[] = [];
  return {
    delays,
    items,
    when: (item) => {
      const d = inner.when(item);
      delays.push(d);
      items.push(item);
      return d;
    },
    forget: (item) => inner.forget(item),
    numRequeues: (item) => inner.numRequeues(item),
  };
}

test('addRateLimited: delays 5 ms doubling to the cap', async (t) => {
  const limiter = recording(new ItemExponentialRateLimiter<string>(5, 40));
  const q = new WorkQueue({ rateLimiter: limiter });
  for (let i = 0; i < 6; i++) {
    q.addRateLimited('a');
    const r = await q.get();
    t.deepEqual(r, { item: 'a', shutdown: false });
    q.done('a');
  }
  t.deepEqual(limiter.delays, [5, 10, 20, 40, 40, 40]);
  t.is(q.numRequeues('a'), 6);
});

test('addRateLimited: the item arrives only after its delay', async (t) => {
  const q = new WorkQueue({ rateLimiter: new ItemExponentialRateLimiter<string>(40, 1000) });
  const start = performance.now();
  q.addRateLimited('a');
  t.is(q.len(), 0);
  await q.get();
  t.true(performance.now() - start >= 38);
});

test('forget resets the backoff', async (t) => {
  const limiter = recording(new ItemExponentialRateLimiter<string>(5, 1000));
  const q = new WorkQueue({ rateLimiter: limiter });
  for (let i = 0; i < 3; i++) {
    q.addRateLimited('a');
    await q.get();
    q.done('a');
  }
  t.is(q.numRequeues('a'), 3);
  q.forget('a');
  t.is(q.numRequeues('a'), 0);
  q.addRateLimited('a');
  await q.get();
  t.deepEqual(limiter.delays, [5, 10, 20, 5]);
});

test('addAfter: items come out in ready-time order', async (t) => {
  const q = new WorkQueue();
  // One instant for all five calls: a busy machine can pause between two calls for longer than the
  // delays differ, which would change the ready times themselves, not the order the queue keeps.
  const t0 = performance.now();
  const now = Object.getOwnPropertyDescriptor(performance, 'now');
  Object.defineProperty(performance, 'now', { configurable: true, value: () => t0 });
  try {
    q.addAfter('a', 60);
    q.addAfter('b', 20);
    q.addAfter('c', 40);
    q.addAfter('d', 0);
    q.add('e');
  } finally {
    if (now) Object.defineProperty(performance, 'now', now);
    else delete (performance as { now?: unknown }).now;
  }
  const got: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await q.get();
    if (!r.shutdown) {
      got.push(r.item);
      q.done(r.item);
    }
  }
  t.deepEqual(got, ['d', 'e', 'b', 'c', 'a']);
});

const rescheduleTable: { name: string; first: number; second: number; arrivesBy: number; notBefore: number }[] = [
  { name: 'an earlier time replaces a later one', first: 3000, second: 20, notBefore: 18, arrivesBy: 2000 },
  { name: 'a later time is ignored', first: 20, second: 3000, notBefore: 18, arrivesBy: 2000 },
];
for (const { name, first, second, arrivesBy, notBefore } of rescheduleTable) {
  test(`addAfter twice: ${name}`, async (t) => {
    const q = new WorkQueue();
    const start = performance.now();
    q.addAfter('a', first);
    q.addAfter('a', second);
    const r = await q.get();
    const elapsed = performance.now() - start;
    t.deepEqual(r, { item: 'a', shutdown: false });
    t.true(elapsed >= notBefore && elapsed < arrivesBy, `arrived after ${elapsed} ms`);
    q.done('a');
    await new Promise((resolve) => setTimeout(resolve, Math.max(first, second) + 50));
    t.is(q.len(), 0, 'delivered once only');
    q.shutDown();
  });
}

test('addAfter of a queued item still dedupes when it fires', async (t) => {
  const q = new WorkQueue();
  q.add('a');
  q.addAfter('a', 5);
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.is(q.len(), 1);
});

test('shutDown releases waiting gets and ignores new adds', async (t) => {
  const q = new WorkQueue();
  const waiting = [q.get(), q.get()];
  q.shutDown();
  t.deepEqual(await Promise.all(waiting), [{ shutdown: true }, { shutdown: true }]);
  q.add('a');
  q.addAfter('b', 1);
  q.addRateLimited('c');
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.is(q.len(), 0);
  t.deepEqual(await q.get(), { shutdown: true });
  t.true(q.isShuttingDown());
});

test('shutDown still hands out already-queued items, then shutdown', async (t) => {
  const q = new WorkQueue();
  q.add('a');
  q.add('b');
  q.shutDown();
  const got: GetResult<string>[] = [await q.get(), await q.get(), await q.get()];
  t.deepEqual(got, [{ item: 'a', shutdown: false }, { item: 'b', shutdown: false }, { shutdown: true }]);
});

test('shutDown drops delayed items', async (t) => {
  const q = new WorkQueue();
  q.addAfter('a', 10);
  q.shutDown();
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.is(q.len(), 0);
});

test('shutDownWithDrain waits for in-flight items to be done', async (t) => {
  const q = new WorkQueue();
  q.add('a');
  q.add('b');
  await q.get();
  await q.get();
  const drained = q.shutDownWithDrain();
  t.false(await settled(drained));
  q.done('a');
  t.false(await settled(drained));
  q.done('b');
  t.true(await settled(drained));
});

test('shutDownWithDrain with nothing in flight resolves at once', async (t) => {
  const q = new WorkQueue();
  t.true(await settled(q.shutDownWithDrain()));
});

async function metricValues(m: Metric | undefined): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  if (!m) return out;
  for (const v of (await m.get()).values) {
    out[`${(v as { metricName?: string }).metricName ?? ''}${JSON.stringify(v.labels)}`] = v.value;
  }
  return out;
}

test('metrics: depth, adds, durations and retries per queue name', async (t) => {
  const registry = new Registry();
  const q = new WorkQueue({ name: 'nodes', registry });
  const other = new WorkQueue({ name: 'services', registry });
  q.add('a');
  q.add('a');
  q.add('b');
  other.add('x');
  const depth = await metricValues(registry.getSingleMetric('workqueue_depth'));
  t.is(depth['{"name":"nodes"}'], 2);
  t.is(depth['{"name":"services"}'], 1);
  await q.get();
  q.add('a'); // dirty while in flight: counts as an add and in depth, as upstream
  q.done('a');
  q.addAfter('c', 0);
  const adds = await metricValues(registry.getSingleMetric('workqueue_adds_total'));
  t.is(adds['{"name":"nodes"}'], 4);
  t.is((await metricValues(registry.getSingleMetric('workqueue_depth')))['{"name":"nodes"}'], 3);
  t.is((await metricValues(registry.getSingleMetric('workqueue_retries_total')))['{"name":"nodes"}'], 1);
  const queued = await metricValues(registry.getSingleMetric('workqueue_queue_duration_seconds'));
  t.is(queued['workqueue_queue_duration_seconds_count{"name":"nodes"}'], 1);
  const work = await metricValues(registry.getSingleMetric('workqueue_work_duration_seconds'));
  t.is(work['workqueue_work_duration_seconds_count{"name":"nodes"}'], 1);
});

test('metrics: a queue of one provider among several has a provider label on every family; others are exactly upstream series', async (t) => {
  const registry = new Registry();
  const east = new WorkQueue({ name: 'Nodes', provider: 'east', registry });
  const west = new WorkQueue({ name: 'Nodes', provider: 'west', registry });
  const plain = new WorkQueue({ name: 'node', registry });
  east.add('a');
  east.add('b');
  west.add('c');
  plain.add('x');
  await east.get();
  const text = await registry.metrics();
  const rows = (family: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${family}{`))
      .sort();
  t.deepEqual(rows('workqueue_depth'), [
    'workqueue_depth{name="Nodes",provider="east"} 1',
    'workqueue_depth{name="Nodes",provider="west"} 1',
    'workqueue_depth{name="node"} 1',
  ]);
  t.deepEqual(rows('workqueue_adds_total'), [
    'workqueue_adds_total{name="Nodes",provider="east"} 2',
    'workqueue_adds_total{name="Nodes",provider="west"} 1',
    'workqueue_adds_total{name="node"} 1',
  ]);
  t.deepEqual(
    rows('workqueue_longest_running_processor_seconds').map((l) => l.replace(/ .*/, '')),
    [
      'workqueue_longest_running_processor_seconds{name="Nodes",provider="east"}',
      'workqueue_longest_running_processor_seconds{name="Nodes",provider="west"}',
      'workqueue_longest_running_processor_seconds{name="node"}',
    ],
  );
  t.deepEqual(
    rows('workqueue_queue_duration_seconds_count'),
    [
      'workqueue_queue_duration_seconds_count{name="Nodes",provider="east"} 1',
      'workqueue_queue_duration_seconds_count{name="Nodes",provider="west"} 0',
      'workqueue_queue_duration_seconds_count{name="node"} 0',
    ].filter((l) => !l.endsWith(' 0')),
  );
});

test('metrics: volume queues of several providers and provisioners keep their name, told apart by provider and provisioner labels', async (t) => {
  const registry = new Registry();
  const queues = [
    new WorkQueue({ name: 'volume-attacher', provider: 'east', provisioner: 'east.example.com', registry }),
    new WorkQueue({ name: 'volume-attacher', provider: 'west', provisioner: 'west.example.com', registry }),
    new WorkQueue({ name: 'volume-attacher', provisioner: 'b.example.com', registry }),
    new WorkQueue({ name: 'Nodes', provider: 'east', registry }),
    new WorkQueue({ name: 'node', registry }),
  ];
  for (const q of queues) q.add('a');
  const text = await registry.metrics();
  t.deepEqual(
    text
      .split('\n')
      .filter((l) => l.startsWith('workqueue_adds_total{'))
      .sort(),
    [
      'workqueue_adds_total{name="Nodes",provider="east"} 1',
      'workqueue_adds_total{name="node"} 1',
      'workqueue_adds_total{name="volume-attacher",provider="east",provisioner="east.example.com"} 1',
      'workqueue_adds_total{name="volume-attacher",provider="west",provisioner="west.example.com"} 1',
      'workqueue_adds_total{name="volume-attacher",provisioner="b.example.com"} 1',
    ],
  );
});

test('metrics: unfinished work and longest running processor, per queue, computed when scraped', async (t) => {
  const registry = new Registry();
  const q = new WorkQueue({ name: 'nodes', registry });
  new WorkQueue({ name: 'idle', registry });
  const read = async (name: string) => metricValues(registry.getSingleMetric(name));
  t.is((await read('workqueue_unfinished_work_seconds'))['{"name":"nodes"}'], 0);
  q.add('a');
  q.add('b');
  await q.get();
  await new Promise((r) => setTimeout(r, 20));
  await q.get();
  // Longest first: the later scrape's total then covers at least the earlier scrape's oldest item.
  const longest = (await read('workqueue_longest_running_processor_seconds'))['{"name":"nodes"}']!;
  const unfinished = (await read('workqueue_unfinished_work_seconds'))['{"name":"nodes"}']!;
  t.true(longest > 0, `longest ${longest}`);
  // Two items in flight: together at least as long as the oldest alone.
  t.true(unfinished >= longest, `unfinished ${unfinished} < longest ${longest}`);
  t.is((await read('workqueue_longest_running_processor_seconds'))['{"name":"idle"}'], 0);
  q.done('a');
  q.done('b');
  t.is((await read('workqueue_unfinished_work_seconds'))['{"name":"nodes"}'], 0);
  t.is((await read('workqueue_longest_running_processor_seconds'))['{"name":"nodes"}'], 0);
});

test('runWorkers: success forgets, errors requeue rate-limited, RetryError requeues after its delay (at least 1 s)', async (t) => {
  const limiter = recording(new ItemExponentialRateLimiter<string>(1, 100));
  const q = new WorkQueue({ rateLimiter: limiter });
  const seen: string[] = [];
  let failuresLeft = 2;
  const ac = new AbortController();
  const run = runWorkers(
    q,
    2,
    async (item) => {
      seen.push(item);
      if (item === 'flaky' && failuresLeft-- > 0) throw new Error('boom');
      if (item === 'later' && !seen.includes('later-retried')) {
        seen.push('later-retried');
        throw Object.assign(new Error('not yet'), { retryAfterMs: 15 });
      }
      if (item === 'done') ac.abort();
    },
    { log: silentLogger(), signal: ac.signal },
  );
  q.add('ok');
  q.add('flaky');
  q.add('later');
  const count = (item: string): number => seen.filter((s) => s === item).length;
  await until(() => count('flaky') === 3 && count('later') === 2 && q.len() === 0);
  t.is(count('flaky'), 3, 'two failures, then success');
  t.deepEqual(limiter.items.filter((i) => i === 'flaky').length, 2, 'every plain error goes through the rate limiter');
  t.deepEqual(limiter.items.filter((i) => i === 'later').length, 1, 'a RetryError too: its delay is the floor');
  t.is(q.numRequeues('flaky'), 0, 'forgotten after success');
  t.is(count('later'), 2, 'one RetryError, then success');
  q.add('done');
  await run;
  t.true(q.isShuttingDown(), 'abort shuts the queue down');
});

test('runWorkers: at most one worker per item, all workers used', async (t) => {
  const q = new WorkQueue();
  const active = new Set<string>();
  let concurrent = 0;
  let maxConcurrent = 0;
  const run = runWorkers(
    q,
    3,
    async (item) => {
      t.false(active.has(item), `${item} processed twice at once`);
      active.add(item);
      maxConcurrent = Math.max(maxConcurrent, ++concurrent);
      await new Promise((resolve) => setTimeout(resolve, 5));
      active.delete(item);
      concurrent--;
    },
    { log: silentLogger() },
  );
  for (let round = 0; round < 5; round++) {
    for (const k of ['a', 'b', 'c', 'a', 'b']) q.add(k);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  await until(() => q.len() === 0 && concurrent === 0);
  t.is(maxConcurrent, 3);
  await q.shutDownWithDrain();
  await run;
});

/** A queue that records addAfter delays instead of waiting them out. */
class DelayRecordingQueue extends WorkQueue<string> {
  readonly delays: number[] = [];
  override addAfter(_item: string, delayMs: number): void {
    this.delays.push(delayMs);
  }
}

/** The requeue delays runWorkers chooses when the handler fails with `errors`, one after the other. */
async function requeueDelays(errors: unknown[], rateLimiter: RateLimiter<string>): Promise<number[]> {
  const q = new DelayRecordingQueue({ rateLimiter });
  const ac = new AbortController();
  let next = 0;
  const run = runWorkers(q, 1, () => Promise.reject(errors[next++]), { log: silentLogger(), signal: ac.signal });
  for (let n = 1; n <= errors.length; n++) {
    q.add('item');
    await until(() => q.delays.length === n);
  }
  ac.abort();
  await run;
  return q.delays;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const retry = (retryAfterMs: number) => Object.assign(new Error('throttled'), { retryAfterMs });

const retryCases: { description: string; errors: unknown[]; limiter?: RateLimiter<string>; want: number[] }[] = [
  { description: 'a delay within the range is kept', errors: [retry(5000)], want: [5000] },
  { description: 'zero is raised to the minimum', errors: [retry(0)], want: [MIN_RETRY_AFTER_MS] },
  { description: 'a few ms are raised to the minimum', errors: [retry(15)], want: [MIN_RETRY_AFTER_MS] },
  { description: '30 days (beyond setTimeout) are cut to the maximum', errors: [retry(30 * DAY_MS)], want: [MAX_RETRY_AFTER_MS] },
  { description: 'Infinity is cut to the maximum', errors: [retry(Infinity)], want: [MAX_RETRY_AFTER_MS] },
  { description: 'NaN is an ordinary error (rate limited)', errors: [retry(NaN)], want: [5] },
  { description: 'a negative delay is an ordinary error', errors: [retry(-1)], want: [5] },
  {
    description: 'the rate limiter is the floor',
    errors: [retry(2000)],
    limiter: new ItemExponentialRateLimiter<string>(10_000, 100_000),
    want: [10_000],
  },
  {
    description: 'repeated zero delays back off with the rate limiter',
    errors: [retry(0), retry(0), retry(0), retry(0), retry(0)],
    limiter: new ItemExponentialRateLimiter<string>(500, 1_000_000),
    want: [1000, 1000, 2000, 4000, 8000],
  },
];

for (const c of retryCases) {
  test(`runWorkers RetryError delay: ${c.description}`, async (t) => {
    t.deepEqual(await requeueDelays(c.errors, c.limiter ?? new ItemExponentialRateLimiter<string>(5, 1000)), c.want);
  });
}

test('addAfter beyond the setTimeout range (24.8 days) waits instead of firing at once', async (t) => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));
  const q = new WorkQueue<string>();
  q.add('now');
  q.addAfter('later', 30 * DAY_MS);
  await new Promise((r) => setTimeout(r, 100));
  t.deepEqual(await drainNow(q), ['now'], 'the delayed item is still waiting');
  t.deepEqual(warnings, []);
  q.shutDown();
});
