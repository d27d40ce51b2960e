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
  ['0.067G', 67_000_000], // was 67000001 (float arithmetic)
  ['0.001G', 1_000_000],
  ['1.1Gi', 1_181_116_007], // 1.1 × 2^30 = 1181116006.4, rounded up
  ['0.1', 1],
  ['0.0m', 0],
  ['1.5e3', 1500],
  ['15e-1', 2],
  ['1e-400', 1],
  ['0e999', 0],
  ['1e999', undefined],
  ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ['9007199254740992', undefined],
  ['1'.repeat(200), undefined],
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

const SUFFIXES: [string, bigint][] = [
  ['', 1n],
  ['k', 10n ** 3n],
  ['M', 10n ** 6n],
  ['G', 10n ** 9n],
  ['T', 10n ** 12n],
  ['Ki', 2n ** 10n],
  ['Mi', 2n ** 20n],
  ['Gi', 2n ** 30n],
  ['Ti', 2n ** 40n],
];

test('decimal quantities are exact: digits × suffix / 10^decimals, rounded up', (t) => {
  const arb = fc.record({
    digits: fc.bigInt({ min: 0n, max: 10n ** 12n }),
    decimals: fc.integer({ min: 0, max: 9 }),
    suffix: fc.constantFrom(...SUFFIXES),
  });
  fc.assert(
    fc.property(arb, ({ digits, decimals, suffix: [s, mult] }) => {
      const text = digits.toString().padStart(decimals + 1, '0');
      const q = decimals === 0 ? `${text}${s}` : `${text.slice(0, -decimals)}.${text.slice(-decimals)}${s}`;
      const scale = 10n ** BigInt(decimals);
      const exact = (digits * mult + scale - 1n) / scale;
      const want = exact <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(exact) : undefined;
      return quantityToBytes(q) === want;
    }),
    { numRuns: 5000 },
  );
  t.pass();
});

test('every three-decimal G value from 0.001G to 99.999G is exact', (t) => {
  const wrong: string[] = [];
  for (let n = 1; n < 100_000; n++) {
    const q = `${Math.floor(n / 1000)}.${String(n % 1000).padStart(3, '0')}G`;
    if (quantityToBytes(q) !== n * 1_000_000) wrong.push(q);
  }
  t.deepEqual(wrong.slice(0, 5), [], `${wrong.length} of 99,999 off`);
});
