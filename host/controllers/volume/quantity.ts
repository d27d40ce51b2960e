/**
 * Storage quantities (resource.Quantity) ↔ bytes. Claims ask for sizes like
 * `1Gi`, `500M` or `1.5Gi`; the cloud speaks bytes. Fractions of a byte are
 * rounded up, as the API server does for storage requests.
 */

/** Multiplier of each suffix as numerator / denominator, so decimals are computed exactly. */
const SUFFIX: Record<string, [bigint, bigint]> = {
  '': [1n, 1n],
  k: [10n ** 3n, 1n],
  M: [10n ** 6n, 1n],
  G: [10n ** 9n, 1n],
  T: [10n ** 12n, 1n],
  P: [10n ** 15n, 1n],
  E: [10n ** 18n, 1n],
  Ki: [2n ** 10n, 1n],
  Mi: [2n ** 20n, 1n],
  Gi: [2n ** 30n, 1n],
  Ti: [2n ** 40n, 1n],
  Pi: [2n ** 50n, 1n],
  Ei: [2n ** 60n, 1n],
  m: [1n, 10n ** 3n],
};

const QUANTITY = /^\+?(\d*)(?:\.(\d*))?(?:(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)|[eE]([+-]?\d+))?$/;
/** Longest quantity text parsed (the API server's canonical forms are far shorter). */
const MAX_QUANTITY_LENGTH = 100;
/** Beyond this exponent any non-zero value is out of range (or below one byte, hence one byte). */
const MAX_EXPONENT = 40;

/** Bytes of a quantity, rounded up; undefined when it is not a valid non-negative quantity or not a safe integer. */
export function quantityToBytes(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return Number.isFinite(q) && q >= 0 ? Math.ceil(q) : undefined;
  const text = q.trim();
  if (text.length > MAX_QUANTITY_LENGTH) return undefined;
  const m = QUANTITY.exec(text);
  if (!m || (m[1] === '' && !m[2])) return undefined;
  const [, whole = '', fraction = '', suffix, exponent] = m;
  // Exact rational arithmetic: digits × multiplier / 10^decimals (floats were off by a byte, e.g. 0.067G).
  const digits = BigInt(whole + fraction || '0');
  let [num, den] = SUFFIX[suffix ?? '']!;
  den *= 10n ** BigInt(fraction.length);
  if (exponent !== undefined) {
    const e = Number(exponent);
    if (digits === 0n) return 0;
    if (e > MAX_EXPONENT) return undefined;
    if (e < -MAX_EXPONENT) return 1;
    if (e >= 0) num *= 10n ** BigInt(e);
    else den *= 10n ** BigInt(-e);
  }
  const bytes = (digits * num + den - 1n) / den;
  return bytes <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(bytes) : undefined;
}

/** The shortest exact binary-suffixed form: 1073741824 → "1Gi", 1500 → "1500". */
export function bytesToQuantity(bytes: number): string {
  for (const s of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const) {
    const unit = Number(SUFFIX[s]![0]);
    if (bytes >= unit && bytes % unit === 0) return `${bytes / unit}${s}`;
  }
  return String(bytes);
}
