/**
 * Storage quantities (resource.Quantity) ↔ bytes. Claims ask for sizes like
 * `1Gi`, `500M` or `1.5Gi`; the cloud speaks bytes. Fractions of a byte are
 * rounded up, as the API server does for storage requests.
 */

const SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  m: 1e-3,
};

const QUANTITY = /^\+?(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)|[eE]([+-]?\d+))?$/;

/** Bytes of a quantity, rounded up; undefined when it is not a valid non-negative quantity or not a safe integer. */
export function quantityToBytes(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return Number.isFinite(q) && q >= 0 ? Math.ceil(q) : undefined;
  const m = QUANTITY.exec(q.trim());
  if (!m) return undefined;
  const base = Number(m[1]);
  const mult = m[3] !== undefined ? 10 ** Number(m[3]) : SUFFIX[m[2] ?? '']!;
  const bytes = Math.ceil(base * mult);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** The shortest exact binary-suffixed form: 1073741824 → "1Gi", 1500 → "1500". */
export function bytesToQuantity(bytes: number): string {
  for (const s of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const) {
    const unit = SUFFIX[s]!;
    if (bytes >= unit && bytes % unit === 0) return `${bytes / unit}${s}`;
  }
  return String(bytes);
}
