/**
 * The bench's latency percentiles (test/bench/latency.ts): nearest-rank, as
 * ClusterLoader2 reports them (the smallest value with at least p % of the
 * samples at or below it), over samples in any order.
 */
import test from 'ava';
import { summarize } from '../../bench/latency.js';

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

const CASES: { name: string; ms: number[]; p50: number; p90: number; p99: number; max: number }[] = [
  { name: 'one sample is every percentile', ms: [7], p50: 7, p90: 7, p99: 7, max: 7 },
  { name: 'two samples: p50 is the lower', ms: [20, 10], p50: 10, p90: 20, p99: 20, max: 20 },
  { name: '1..10 in order', ms: range(10), p50: 5, p90: 9, p99: 10, max: 10 },
  { name: '1..100 reversed', ms: range(100).reverse(), p50: 50, p90: 90, p99: 99, max: 100 },
  { name: '1..1000', ms: range(1000), p50: 500, p90: 900, p99: 990, max: 1000 },
  { name: 'one slow outlier in 100 shows at p99 only', ms: [...Array<number>(99).fill(1), 5000], p50: 1, p90: 1, p99: 1, max: 5000 },
  { name: 'two slow outliers in 100 reach p99', ms: [...Array<number>(98).fill(1), 5000, 6000], p50: 1, p90: 1, p99: 5000, max: 6000 },
];

for (const c of CASES) {
  test(`summarize: ${c.name}`, (t) => {
    const s = summarize(c.ms);
    t.deepEqual(
      { count: s.count, p50: s.p50Ms, p90: s.p90Ms, p99: s.p99Ms, max: s.maxMs },
      { count: c.ms.length, p50: c.p50, p90: c.p90, p99: c.p99, max: c.max },
    );
  });
}

test('summarize: no samples gives NaN, not 0', (t) => {
  const s = summarize([]);
  t.is(s.count, 0);
  t.true([s.p50Ms, s.p90Ms, s.p99Ms, s.maxMs].every(Number.isNaN));
});

test('summarize does not reorder its input', (t) => {
  const ms = [3, 1, 2];
  summarize(ms);
  t.deepEqual(ms, [3, 1, 2]);
});
