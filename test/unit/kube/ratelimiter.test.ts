import test from 'ava';
import {
  BucketRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
  type RateLimiter,
} from '../../../host/kube/ratelimiter.js';

test('ItemExponentialRateLimiter: 5 ms doubling to the cap, per item', (t) => {
  const r = new ItemExponentialRateLimiter<string>(5, 1000);
  const got = Array.from({ length: 10 }, () => r.when('a'));
  t.deepEqual(got, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
  t.is(r.numRequeues('a'), 10);
  t.is(r.when('b'), 5, 'items are independent');
  t.is(r.numRequeues('b'), 1);
});

test('ItemExponentialRateLimiter: forget resets one item only', (t) => {
  const r = new ItemExponentialRateLimiter<string>(1, 100);
  r.when('a');
  r.when('a');
  r.when('b');
  r.forget('a');
  t.is(r.numRequeues('a'), 0);
  t.is(r.when('a'), 1);
  t.is(r.numRequeues('b'), 1);
  t.is(r.when('b'), 2);
});

test('ItemExponentialRateLimiter: huge exponents stay at the cap', (t) => {
  const r = new ItemExponentialRateLimiter<string>(5, 1_000_000);
  let last = 0;
  for (let i = 0; i < 2000; i++) last = r.when('x');
  t.is(last, 1_000_000);
});

const bucketTable: { name: string; qps: number; burst: number; calls: { at: number; want: number }[] }[] = [
  {
    name: 'burst is free, then 1/qps apart',
    qps: 10,
    burst: 3,
    calls: [
      { at: 0, want: 0 },
      { at: 0, want: 0 },
      { at: 0, want: 0 },
      { at: 0, want: 100 },
      { at: 0, want: 200 },
    ],
  },
  {
    name: 'tokens refill over time, capped at burst',
    qps: 10,
    burst: 2,
    calls: [
      { at: 0, want: 0 },
      { at: 0, want: 0 },
      { at: 10_000, want: 0 },
      { at: 10_000, want: 0 },
      { at: 10_000, want: 100 },
    ],
  },
  {
    name: 'debt is repaid by elapsed time',
    qps: 1,
    burst: 1,
    calls: [
      { at: 0, want: 0 },
      { at: 0, want: 1000 },
      { at: 500, want: 1500 },
      { at: 3000, want: 0 },
    ],
  },
  {
    name: 'fractional refill',
    qps: 4,
    burst: 1,
    calls: [
      { at: 0, want: 0 },
      { at: 125, want: 125 },
      { at: 250, want: 250 },
    ],
  },
];

for (const { name, qps, burst, calls } of bucketTable) {
  test(`BucketRateLimiter: ${name}`, (t) => {
    let now = 0;
    const r = new BucketRateLimiter(qps, burst, { now: () => now });
    const got = calls.map(({ at }) => {
      now = at;
      return Math.round(r.when() * 1000) / 1000;
    });
    t.deepEqual(
      got,
      calls.map((c) => c.want),
    );
    t.is(r.numRequeues(), 0);
  });
}

test('BucketRateLimiter: rejects bad limits', (t) => {
  t.throws(() => new BucketRateLimiter(0, 1), { instanceOf: RangeError });
  t.throws(() => new BucketRateLimiter(1, 0), { instanceOf: RangeError });
});

/** setRate in place: each step either reserves (`want`: its wait in ms) or changes the rate at `at`. */
const setRateTable: { name: string; qps: number; burst: number; steps: ({ at: number; want: number } | { at: number; rate: [number, number] })[] }[] =
  [
    {
      name: 'a lower rate: tokens earned at the old rate, capped at the new burst',
      qps: 10,
      burst: 10,
      steps: [
        { at: 0, rate: [2, 2] },
        { at: 0, want: 0 },
        { at: 0, want: 0 },
        { at: 0, want: 500 },
      ],
    },
    {
      name: 'a higher burst adds no tokens; they are earned at the new rate',
      qps: 1,
      burst: 1,
      steps: [
        { at: 0, want: 0 },
        { at: 0, rate: [4, 4] },
        { at: 0, want: 250 },
        { at: 1000, want: 0 },
        { at: 1000, want: 0 },
      ],
    },
    {
      name: 'the time before the change counts at the old rate',
      qps: 1,
      burst: 5,
      steps: [
        { at: 0, want: 0 },
        { at: 0, want: 0 },
        { at: 0, want: 0 },
        { at: 0, want: 0 },
        { at: 0, want: 0 },
        // 1 s at 1/s: one token back, then 10/s.
        { at: 1000, rate: [10, 5] },
        { at: 1000, want: 0 },
        { at: 1000, want: 100 },
      ],
    },
    {
      name: 'a debt is kept and repaid at the new rate',
      qps: 1,
      burst: 1,
      steps: [
        { at: 0, want: 0 },
        { at: 0, want: 1000 },
        { at: 0, rate: [2, 1] },
        // One token owed (the second call's), so the next waits for two at 2/s.
        { at: 0, want: 1000 },
      ],
    },
  ];

for (const { name, qps, burst, steps } of setRateTable) {
  test(`BucketRateLimiter.setRate: ${name}`, (t) => {
    let now = 0;
    const r = new BucketRateLimiter(qps, burst, { now: () => now });
    const got = steps.map((s) => {
      now = s.at;
      if ('rate' in s) return r.setRate(...s.rate);
      return Math.round(r.when() * 1000) / 1000;
    });
    t.deepEqual(
      got,
      steps.map((s) => ('want' in s ? s.want : undefined)),
    );
  });
}

test('BucketRateLimiter.setRate: rejects what is not a rate (0 is "no limit" elsewhere, never "held")', (t) => {
  const r = new BucketRateLimiter(1, 1);
  t.throws(() => r.setRate(0, 1), { instanceOf: RangeError });
  t.throws(() => r.setRate(1, 0), { instanceOf: RangeError });
});

test('MaxOfRateLimiter: longest delay, largest count, forget in all', (t) => {
  const calls: string[] = [];
  const fixed = (ms: number, n: number): RateLimiter<string> => ({
    when: (item) => {
      calls.push(`${ms}:${item}`);
      return ms;
    },
    forget: (item) => calls.push(`forget${ms}:${item}`),
    numRequeues: () => n,
  });
  const r = new MaxOfRateLimiter(fixed(3, 1), fixed(7, 4), fixed(5, 2));
  t.is(r.when('a'), 7);
  t.is(r.numRequeues('a'), 4);
  r.forget('a');
  t.deepEqual(calls, ['3:a', '7:a', '5:a', 'forget3:a', 'forget7:a', 'forget5:a']);
  t.throws(() => new MaxOfRateLimiter<string>(), { instanceOf: RangeError });
});

test('defaultControllerRateLimiter: per-item 5 ms doubling; bucket of 100 then 10 qps', (t) => {
  const r = defaultControllerRateLimiter<string>();
  t.deepEqual([r.when('a'), r.when('a'), r.when('a')], [5, 10, 20]);
  t.is(r.numRequeues('a'), 3);
  r.forget('a');
  t.is(r.when('a'), 5);
  // 4 tokens used so far; use up the rest of the burst of 100 with fresh items.
  for (let i = 0; i < 96; i++) r.when(`item-${i}`);
  const d = r.when('fresh');
  t.true(d > 0 && d <= 100, `101st request waits up to 100 ms at 10 qps (less as time passes), got ${d}`);
});

test('defaultControllerRateLimiter: caps per-item delay at 1000 s', (t) => {
  const r = defaultControllerRateLimiter<string>();
  let last = 0;
  for (let i = 0; i < 30; i++) last = r.when('a');
  t.is(last, 1_000_000);
});
