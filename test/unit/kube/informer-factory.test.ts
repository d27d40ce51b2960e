/** The informer resync period drawn from --min-resync-period (host/kube/informer-factory.ts), as upstream's ResyncPeriod. */
import test from 'ava';
import { resyncPeriodMs } from '../../../host/kube/informer-factory.js';

const HOUR = 3_600_000;
const cases: { description: string; minMs: number; random: number; want: number }[] = [
  { description: 'random 0: the minimum', minMs: 12 * HOUR, random: 0, want: 12 * HOUR },
  { description: 'random 0.5: 1.5 × the minimum', minMs: 12 * HOUR, random: 0.5, want: 18 * HOUR },
  { description: 'random just below 1: just below twice the minimum', minMs: 1000, random: 0.9999, want: 1999 },
  { description: 'no minimum: no resync', minMs: 0, random: 0.5, want: 0 },
];
for (const c of cases) {
  test(`resyncPeriodMs: ${c.description}`, (t) => {
    t.is(
      resyncPeriodMs(c.minMs, () => c.random),
      c.want,
    );
  });
}

test('resyncPeriodMs: always within [min, 2 × min)', (t) => {
  for (let i = 0; i < 1000; i++) {
    const p = resyncPeriodMs(12 * HOUR);
    t.true(p >= 12 * HOUR && p < 24 * HOUR, String(p));
  }
});
