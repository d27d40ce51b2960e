/** host/util/progress.ts: the controllers' "making progress" readiness check, on a scripted clock. */
import test from 'ava';
import { Progress } from '../../../host/util/progress.js';

test('Progress: healthy before the first mark, then while the last mark is within the tolerance', (t) => {
  let now = 1_000;
  const p = new Progress(100, () => now);
  const rows: [string, () => void, boolean][] = [
    ['never marked', () => undefined, true],
    ['marked now', () => p.mark(), true],
    ['99 ms later', () => (now += 99), true],
    ['100 ms later', () => (now += 1), false],
    ['marked again', () => p.mark(), true],
  ];
  for (const [what, step, want] of rows) {
    step();
    t.is(p.healthy(), want, what);
  }
});
