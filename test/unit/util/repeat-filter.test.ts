/** host/util/repeat-filter.ts: which Warnings are let through, on a scripted clock. */
import test from 'ava';
import { RepeatFilter } from '../../../host/util/repeat-filter.js';

test('RepeatFilter: a new message passes, the same one again only after repeatMs, and at once after clear', (t) => {
  let now = 0;
  const f = new RepeatFilter(100, () => now);
  const rows: [string, () => boolean, boolean][] = [
    ['first report', () => f.admit('n1', 'a'), true],
    ['same message at once', () => f.admit('n1', 'a'), false],
    ['another key', () => f.admit('n2', 'a'), true],
    ['a different message', () => f.admit('n1', 'b'), true],
    ['99 ms later', () => ((now += 99), f.admit('n1', 'b')), false],
    ['100 ms later', () => ((now += 1), f.admit('n1', 'b')), true],
    ['after clear', () => (f.clear('n1'), f.admit('n1', 'b')), true],
  ];
  for (const [what, step, want] of rows) t.is(step(), want, what);
});

test('RepeatFilter: without repeatMs the same message never passes twice', (t) => {
  let now = 0;
  const f = new RepeatFilter(undefined, () => now);
  t.true(f.admit('n', 'm'));
  now = 1e12;
  t.false(f.admit('n', 'm'));
});
