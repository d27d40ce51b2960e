import test from 'ava';
import fc from 'fast-check';
import { bytesToQuantity, quantityToBytes } from '../../../host/controllers/volume/quantity.js';

const cases: [string, number | undefined][] = [
  ['1Gi', 1024 ** 3],
  ['1536Mi', 1536 * 1024 ** 2],
  ['1.5Gi', 1.5 * 1024 ** 3],
  ['500M', 500e6],
  ['1k', 1000],
  ['1e3', 1000],
  ['100', 100],
  ['1500m', 2], // 1.5 bytes, rounded up
  ['+2Ki', 2048],
  ['', undefined],
  ['-1Gi', undefined],
  ['1GB', undefined],
  ['Gi', undefined],
  ['1e30', undefined],
];
for (const [q, want] of cases) {
  test(`quantityToBytes(${JSON.stringify(q)})`, (t) => t.is(quantityToBytes(q), want));
}

test('bytesToQuantity picks the largest exact binary suffix', (t) => {
  t.is(bytesToQuantity(1024 ** 3), '1Gi');
  t.is(bytesToQuantity(2 * 1024 ** 3), '2Gi');
  t.is(bytesToQuantity(1536 * 1024 ** 2), '1536Mi');
  t.is(bytesToQuantity(1000), '1000');
  t.is(bytesToQuantity(0), '0');
});

test('bytesToQuantity round-trips through quantityToBytes', (t) => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 50 }), (n) => quantityToBytes(bytesToQuantity(n)) === n));
  t.pass();
});
