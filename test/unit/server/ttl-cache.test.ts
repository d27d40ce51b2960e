/** TtlCache: entries expire, a TTL of 0 keeps nothing, and the oldest entry goes when it is full. */
import test from 'ava';
import { TtlCache } from '../../../host/server/ttl-cache.js';

test('an entry is served until its TTL passes', (t) => {
  let now = 0;
  const c = new TtlCache<string>(10, () => now);
  c.set('a', 'x', 100);
  now = 99;
  t.is(c.get('a'), 'x');
  now = 100;
  t.is(c.get('a'), undefined);
  t.is(c.size, 0);
});

test('a TTL of 0 keeps nothing', (t) => {
  const c = new TtlCache<string>(10);
  c.set('a', 'x', 0);
  t.is(c.get('a'), undefined);
});

test('at most maxEntries are kept: the oldest goes first', (t) => {
  const c = new TtlCache<number>(3);
  for (let i = 0; i < 1000; i++) c.set(`k${i}`, i, 60_000);
  t.is(c.size, 3);
  t.is(c.get('k996'), undefined);
  t.deepEqual(
    ['k997', 'k998', 'k999'].map((k) => c.get(k)),
    [997, 998, 999],
  );
});
