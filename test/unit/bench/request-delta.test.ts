import test from 'ava';
import { requestDelta } from '../../bench/ccm-sides.js';

const m = (o: Record<string, number>) => new Map(Object.entries(o));

test('requestDelta lists the requests made between two counts, per minute when asked', (t) => {
  const cases: { name: string; before: Record<string, number>; after: Record<string, number>; minutes?: number; want: string }[] = [
    { name: 'nothing new', before: { 'LIST services': 3 }, after: { 'LIST services': 3 }, want: 'none' },
    { name: 'a new key counts from 0', before: {}, after: { 'PATCH nodes/status': 4 }, want: 'PATCH nodes/status 4.0' },
    {
      name: 'unchanged keys left out, per minute',
      before: { 'GET services': 10, 'POST events': 2 },
      after: { 'GET services': 10, 'POST events': 8 },
      minutes: 2,
      want: 'POST events 3.0',
    },
  ];
  for (const c of cases) t.is(requestDelta(m(c.before), m(c.after), c.minutes), c.want, c.name);
});
