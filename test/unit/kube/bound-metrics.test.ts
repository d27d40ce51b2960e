/**
 * Bound metric series (host/kube/metrics.ts boundObserve, boundInc): a histogram or counter series bound
 * to one label set records what prom-client's observe/inc would (the exposition is identical, through
 * resets, removals, bucket bounds, values above every bucket and refused values), and the API client
 * records its per-request metrics through them, so prom-client's own observe (which validates and
 * hashes the labels) runs once per series, not once per request.
 */
import test from 'ava';
import { Counter, Histogram, Registry } from 'prom-client';
import { makeClients } from '../../../host/kube/client.js';
import { boundInc, boundObserve } from '../../../host/kube/metrics.js';
import { restMetrics } from '../../../host/kube/rest-metrics.js';
import { WorkQueue } from '../../../host/kube/workqueue.js';
import { startCaptureServer } from './capture-server.js';

const BUCKETS = [0.005, 0.025, 0.1, 1, 60];

function pair() {
  const plain = new Registry();
  const bound = new Registry();
  const make = (registry: Registry) => ({
    h: new Histogram({ name: 'h_seconds', help: 'h', buckets: BUCKETS, labelNames: ['verb', 'host'] as const, registers: [registry] }),
    c: new Counter({ name: 'c_total', help: 'c', labelNames: ['code', 'method'] as const, registers: [registry] }),
  });
  return { plain, bound, p: make(plain), b: make(bound) };
}

/** Steps applied to both sides: an observation, a reset, or a removed series. */
type Step = number | 'reset' | 'remove';

const TABLE: { name: string; steps: Step[] }[] = [
  { name: 'values inside, on and above the bounds', steps: [0, 1e-9, 0.005, 0.0051, 0.025, 0.5, 1, 60, 61, 1e9, 0.1] },
  { name: 'a reset drops the series; the next value starts it again', steps: [0.01, 2, 'reset', 0.3, 0.3, 70] },
  { name: 'a removed series starts again', steps: [0.01, 'remove', 0.02, 0.5] },
  { name: 'negative values count in the first bucket, as prom-client', steps: [-1, -0.5, 0.2] },
];

for (const { name, steps } of TABLE) {
  test(`boundObserve/boundInc: the exposition equals prom-client's: ${name}`, async (t) => {
    const { plain, bound, p, b } = pair();
    const labels = { verb: 'GET', host: 'api:6443' };
    const other = { verb: 'PATCH', host: 'api:6443' };
    const observe = boundObserve(b.h, labels);
    const inc = boundInc(b.c, { code: '200', method: 'GET' });
    for (const s of steps) {
      if (s === 'reset') {
        p.h.reset();
        b.h.reset();
        p.c.reset();
        b.c.reset();
      } else if (s === 'remove') {
        p.h.remove(labels);
        b.h.remove(labels);
        p.c.remove({ code: '200', method: 'GET' });
        b.c.remove({ code: '200', method: 'GET' });
      } else {
        p.h.observe(labels, s);
        observe(s);
        // Another series of the same histogram, through prom-client on both sides.
        p.h.observe(other, s);
        b.h.observe(other, s);
        p.c.inc({ code: '200', method: 'GET' });
        inc();
      }
    }
    t.is(await bound.metrics(), await plain.metrics());
  });
}

test('boundObserve: a value prom-client refuses is refused the same way, and nothing is recorded', async (t) => {
  const { plain, bound, p, b } = pair();
  const labels = { verb: 'GET', host: 'h' };
  const observe = boundObserve(b.h, labels);
  for (const v of [0.1, NaN, Infinity]) {
    let plainErr: unknown;
    try {
      p.h.observe(labels, v);
    } catch (e) {
      plainErr = e;
    }
    if (plainErr === undefined) observe(v);
    else t.throws(() => observe(v), { instanceOf: TypeError, message: (plainErr as Error).message });
  }
  t.is(await bound.metrics(), await plain.metrics());
});

test('the API client observes through bound series: prom-client runs once per series, not once per request', async (t) => {
  const server = await startCaptureServer(() => ({ status: 200, body: { kind: 'Node', apiVersion: 'v1', metadata: { name: 'n1' } } }));
  t.teardown(() => server.close());
  const registry = new Registry();
  const m = restMetrics(registry);
  // prom-client's own entry points on these instances (the clients share them through the registry).
  const calls: Record<string, number> = {};
  for (const [name, metric] of Object.entries(m)) {
    calls[name] = 0;
    const target = metric as unknown as Record<string, (...args: unknown[]) => unknown>;
    const key = name === 'requests' ? 'inc' : 'observe';
    const original = target[key]!.bind(metric);
    target[key] = (...args: unknown[]) => {
      calls[name]!++;
      return original(...args);
    };
  }
  const clients = makeClients(server.kubeConfig('tok'), { qps: 1000, burst: 1000, userAgent: 'ccm-test', registry });
  const REQUESTS = 5;
  for (let i = 0; i < REQUESTS; i++) await clients.core.readNode({ name: 'n1' });
  t.deepEqual(calls, { requests: 1, duration: 1, rateLimiter: 1, requestSize: 1, responseSize: 1 });
  // ... and every request is recorded.
  const count = async (name: string) =>
    (await (registry.getSingleMetric(name) as Histogram).get()).values.find((v) => v.metricName === `${name}_count`)?.value;
  for (const name of [
    'rest_client_request_duration_seconds',
    'rest_client_rate_limiter_duration_seconds',
    'rest_client_request_size_bytes',
    'rest_client_response_size_bytes',
  ]) {
    t.is(await count(name), REQUESTS, name);
  }
  const requests = (await (registry.getSingleMetric('rest_client_requests_total') as Counter).get()).values;
  t.deepEqual(
    requests.map((v) => [v.labels.code, v.labels.method, v.value]),
    [['200', 'GET', REQUESTS]],
  );
});

test('a work queue records its per-item metrics through bound series: prom-client runs once per series', async (t) => {
  const registry = new Registry();
  const q = new WorkQueue<string>({ name: 'nodes', registry });
  const calls: Record<string, number> = {};
  for (const [name, key] of [
    ['workqueue_queue_duration_seconds', 'observe'],
    ['workqueue_work_duration_seconds', 'observe'],
    ['workqueue_adds_total', 'inc'],
  ] as const) {
    calls[name] = 0;
    const target = registry.getSingleMetric(name) as unknown as Record<string, (...args: unknown[]) => unknown>;
    const original = target[key]!.bind(target);
    target[key] = (...args: unknown[]) => {
      calls[name]!++;
      return original(...args);
    };
  }
  const ITEMS = 5;
  for (let i = 0; i < ITEMS; i++) {
    q.add(`n${i}`);
    const got = await q.get();
    if (!got.shutdown) q.done(got.item);
  }
  t.deepEqual(calls, { workqueue_queue_duration_seconds: 1, workqueue_work_duration_seconds: 1, workqueue_adds_total: 1 });
  const text = await registry.metrics();
  t.regex(text, new RegExp(`^workqueue_queue_duration_seconds_count\\{name="nodes"\\} ${ITEMS}$`, 'm'));
  t.regex(text, new RegExp(`^workqueue_work_duration_seconds_count\\{name="nodes"\\} ${ITEMS}$`, 'm'));
  t.regex(text, new RegExp(`^workqueue_adds_total\\{name="nodes"\\} ${ITEMS}$`, 'm'));
});
