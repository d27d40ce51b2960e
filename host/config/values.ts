/**
 * Parsers for flag values with Go's spelling (strconv.ParseBool, ParseInt,
 * ParseFloat and time.ParseDuration), so operators can copy flags from an
 * upstream cloud-controller-manager manifest unchanged. Each returns
 * `undefined` for text it does not accept; callers turn that into a message
 * naming the flag.
 */

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Go's strconv.ParseBool: 1, t, T, TRUE, true, True and their false twins. */
export function parseGoBool(text: string): boolean | undefined {
  if (TRUE_WORDS.has(text)) return true;
  if (FALSE_WORDS.has(text)) return false;
  return undefined;
}

/** A base-10 integer that is exactly representable (no exponent, no fraction). */
export function parseGoInt(text: string): number | undefined {
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A finite decimal number such as `20`, `0.5` or `1e2`. */
export function parseGoFloat(text: string): number | undefined {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

/** Milliseconds per unit of time.ParseDuration. */
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

const DURATION = /^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const DURATION_PART = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;

/**
 * Go's time.ParseDuration, in milliseconds: `500ms`, `10s`, `5m`, `1h30m`,
 * `1.5h`, `-2s`; `0` needs no unit. The result may be fractional below 1 ms.
 */
export function parseGoDuration(text: string): number | undefined {
  if (/^[-+]?0$/.test(text)) return 0;
  if (!DURATION.test(text)) return undefined;
  let ms = 0;
  for (const [, num, unit] of text.matchAll(DURATION_PART)) ms += Number(num) * UNIT_MS[unit!]!;
  return text.startsWith('-') ? -ms : ms;
}

/** Formats milliseconds the way Go prints a time.Duration: `1h30m0s`, `10s`, `500ms`, `0s`. */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1_000) return `${sign}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = `${Number((rest / 1_000).toFixed(3))}s`;
  if (h > 0) return `${sign}${h}h${m}m${s}`;
  if (m > 0) return `${sign}${m}m${s}`;
  return `${sign}${s}`;
}
