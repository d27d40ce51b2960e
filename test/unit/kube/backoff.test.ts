import test from 'ava';
import { Backoff, sleep } from '../../../host/kube/backoff.js';

const steps = (b: Backoff, n: number): number[] => Array.from({ length: n }, () => b.next());

const table: { name: string; opts: ConstructorParameters<typeof Backoff>[0]; want: number[] }[] = [
  { name: 'doubles from initial to cap', opts: { initialMs: 100, maxMs: 1000 }, want: [100, 200, 400, 800, 1000, 1000] },
  { name: 'factor 3', opts: { initialMs: 10, maxMs: 500, factor: 3 }, want: [10, 30, 90, 270, 500, 500] },
  { name: 'factor 1 is constant', opts: { initialMs: 50, maxMs: 500, factor: 1 }, want: [50, 50, 50] },
  { name: 'initial equals max', opts: { initialMs: 7, maxMs: 7 }, want: [7, 7, 7] },
  {
    name: 'max jitter stretches by 1+jitter, clamped',
    opts: { initialMs: 100, maxMs: 1000, jitter: 1, random: () => 0.999999 },
    want: [199.9999, 399.9998, 799.9996, 1000, 1000],
  },
  { name: 'zero random means no jitter', opts: { initialMs: 100, maxMs: 1000, jitter: 1, random: () => 0 }, want: [100, 200, 400, 800, 1000] },
  { name: 'half jitter', opts: { initialMs: 100, maxMs: 10_000, jitter: 0.5, random: () => 0.5 }, want: [125, 250, 500, 1000] },
];

for (const { name, opts, want } of table) {
  test(`Backoff: ${name}`, (t) => {
    const got = steps(new Backoff(opts), want.length);
    t.deepEqual(
      got.map((x) => Math.round(x * 10_000) / 10_000),
      want,
    );
  });
}

test('Backoff: reset starts over', (t) => {
  const b = new Backoff({ initialMs: 5, maxMs: 100 });
  steps(b, 4);
  b.reset();
  t.deepEqual(steps(b, 3), [5, 10, 20]);
});

test('Backoff: jittered values stay within [base, min(max, base*(1+jitter))]', (t) => {
  const b = new Backoff({ initialMs: 800, maxMs: 30_000, jitter: 1 });
  let base = 800;
  for (let i = 0; i < 20; i++) {
    const v = b.next();
    t.true(v >= Math.min(base, 30_000) && v <= Math.min(30_000, base * 2), `step ${i}: ${v}`);
    base = Math.min(30_000, base * 2);
  }
});

const invalid: [string, ConstructorParameters<typeof Backoff>[0]][] = [
  ['initial 0', { initialMs: 0, maxMs: 10 }],
  ['max below initial', { initialMs: 10, maxMs: 5 }],
  ['factor below 1', { initialMs: 1, maxMs: 10, factor: 0.5 }],
  ['negative jitter', { initialMs: 1, maxMs: 10, jitter: -1 }],
  ['NaN initial', { initialMs: Number.NaN, maxMs: 10 }],
];
for (const [name, opts] of invalid) {
  test(`Backoff: rejects ${name}`, (t) => {
    t.throws(() => new Backoff(opts), { instanceOf: RangeError });
  });
}

test('sleep: resolves true after the delay', async (t) => {
  const start = performance.now();
  t.true(await sleep(20));
  t.true(performance.now() - start >= 19);
});

test('sleep: resolves false early on abort', async (t) => {
  const ac = new AbortController();
  const start = performance.now();
  setTimeout(() => ac.abort(), 10);
  t.false(await sleep(10_000, ac.signal));
  t.true(performance.now() - start < 1000);
});

test('sleep: already-aborted signal resolves false at once', async (t) => {
  t.false(await sleep(10_000, AbortSignal.abort()));
});
