/**
 * Fault-injection knobs for tests and benchmarks: added latency, a random
 * error rate, a token-bucket rate limit, and a switch that fails every call.
 *
 * Each knob is read from the environment when the provider starts and can be
 * overridden at runtime in the `knobs` section of the state document
 * (`localcloud knobs set key=value`), which the provider notices on its next
 * call without restarting. Precedence: state document, then the options
 * given to createLocalCloud, then the environment, then the default.
 */
import {
  Code,
  ImplementedElsewhereError,
  NotFoundError,
  NotImplementedError,
  ProviderError,
  RateLimitedError,
  UnavailableError,
} from '../../sdk/errors.js';
import type { CallContext } from '../../sdk/provider.js';
import type { KnobSettings, StateStore } from './state.js';

/** Effective knob values. */
export interface Knobs {
  /** Added to every cloud call, in milliseconds. */
  latencyMs: number;
  /** Uniform random extra latency in [0, latencyJitterMs), in milliseconds. */
  latencyJitterMs: number;
  /** Fraction (0..1) of calls that fail with UNAVAILABLE. */
  errorRate: number;
  /** Calls per second allowed by the token bucket; 0 = unlimited. */
  rateLimitQps: number;
  /** Bucket size (calls allowed at once); 0 = max(1, rateLimitQps). */
  rateLimitBurst: number;
  /** Every call fails with UNAVAILABLE (simulated outage). */
  failAll: boolean;
  /**
   * Added after a call has done its work, before it answers, in
   * milliseconds: a call cancelled or timed out (or a provider killed) in
   * that window has changed the cloud without saying so, like a real cloud
   * API whose reply was lost.
   */
  replyLatencyMs: number;
  /**
   * Comma-separated method names (`EnsureLoadBalancer`, `createVolume`, or
   * `loadBalancers.ensureLoadBalancer`; case-insensitive): a call of one of
   * them waits before doing anything until the knob no longer names it (or
   * the call is cancelled). Tests use it to act while a call is in flight.
   */
  hold: string;
  /**
   * Errors given to calls about named objects, rules separated by commas:
   * `method@object=ERROR`, where `method` is as in `hold`, `object` the name
   * of the Service (its name, not namespace/name), Node or route target the
   * call is about, and ERROR one of NOT_FOUND, UNIMPLEMENTED,
   * IMPLEMENTED_ELSEWHERE, UNAVAILABLE or RETRY:<ms> (RESOURCE_EXHAUSTED with
   * a RetryInfo of <ms>). A single call about that object fails with it; a
   * batch call (`services` or `nodes`) answers that object's entry with it
   * and does the rest; ReconcileRoutes (routes.ts) leaves a named target
   * node's routes as they are, answering each change it would have made to
   * them as a failed entry. Tests use it to give one object a provider error while
   * every other call goes through (test/integration/parity).
   */
  fail: string;
  /**
   * Load balancers the account may hold; 0 = no quota. An ensure that would
   * create one more answers "not now" (DeferredError, protocol 1.1: reason
   * QuotaExhausted, retry after `lbQuotaRetryMs`); existing ones still
   * converge. Raise or unset it at runtime to lift the quota.
   */
  lbQuota: number;
  /** The earliest retry a quota deferral asks for, in milliseconds. */
  lbQuotaRetryMs: number;
  /**
   * Other spellings for IPs the cloud answers, rules `IP=SPELLING`
   * separated by commas: every `address` (node addresses) or `ip` (load
   * balancer ingress) field of an answer equal to IP is answered as SPELLING
   * instead (`fd00::5=FD00:0:0::5`, `10.0.0.5=010.000.000.005`), as a real
   * cloud API may spell them. Tests of the host's canonical forms use it
   * (KEP-4858); the state keeps the canonical IP.
   */
  respell: string;
}

/** The knob names. */
export type KnobName = keyof Knobs;

/** Values when nothing is set: no faults. */
const DEFAULT_KNOBS: Readonly<Knobs> = {
  latencyMs: 0,
  latencyJitterMs: 0,
  errorRate: 0,
  rateLimitQps: 0,
  rateLimitBurst: 0,
  failAll: false,
  replyLatencyMs: 0,
  hold: '',
  fail: '',
  lbQuota: 0,
  lbQuotaRetryMs: 30_000,
  respell: '',
};

/** Environment variable of each knob. */
export const KNOB_ENV: Readonly<Record<KnobName, string>> = {
  latencyMs: 'LOCALCLOUD_LATENCY_MS',
  latencyJitterMs: 'LOCALCLOUD_LATENCY_JITTER_MS',
  errorRate: 'LOCALCLOUD_ERROR_RATE',
  rateLimitQps: 'LOCALCLOUD_RATE_LIMIT_QPS',
  rateLimitBurst: 'LOCALCLOUD_RATE_LIMIT_BURST',
  failAll: 'LOCALCLOUD_FAIL_ALL',
  replyLatencyMs: 'LOCALCLOUD_REPLY_LATENCY_MS',
  hold: 'LOCALCLOUD_HOLD',
  fail: 'LOCALCLOUD_FAIL',
  lbQuota: 'LOCALCLOUD_LB_QUOTA',
  lbQuotaRetryMs: 'LOCALCLOUD_LB_QUOTA_RETRY_MS',
  respell: 'LOCALCLOUD_RESPELL',
};

/** Longest accepted `hold` value, in characters. */
const MAX_HOLD_LENGTH = 1024;
/** How often a held call re-reads the knobs, in milliseconds. */
const HOLD_POLL_MS = 50;

/** Largest accepted latency knob, in milliseconds (10 minutes). */
const MAX_LATENCY_MS = 600_000;

/** Every knob name. */
export const KNOB_NAMES = Object.keys(DEFAULT_KNOBS) as KnobName[];

/**
 * The knob a user-facing name refers to: `latencyMs`, `latency-ms`,
 * `latency_ms` and `LOCALCLOUD_LATENCY_MS` all name the same knob.
 */
export function knobName(name: string): KnobName | undefined {
  const flat = name
    .trim()
    .toLowerCase()
    .replace(/^localcloud_/, '')
    .replace(/[-_]/g, '');
  return KNOB_NAMES.find((k) => k.toLowerCase() === flat);
}

/** Parses a knob value given as text; throws a one-line error when invalid. */
export function parseKnobValue(name: KnobName, text: string): number | boolean | string {
  const t = text.trim();
  if (name === 'hold' || name === 'fail' || name === 'respell') {
    const problem = checkKnob(name, t);
    if (problem) throw new RangeError(problem);
    return t;
  }
  if (name === 'failAll') {
    if (/^(1|true|yes|on)$/i.test(t)) return true;
    if (/^(0|false|no|off|)$/i.test(t)) return false;
    throw new RangeError(`knob ${name} must be true or false, got ${JSON.stringify(text)}`);
  }
  const n = t === '' ? NaN : Number(t);
  const problem = checkKnob(name, n);
  if (problem) throw new RangeError(`${problem}, got ${JSON.stringify(text)}`);
  return n;
}

/** Why `value` is not valid for `name`, or undefined when it is. */
function checkKnob(name: KnobName, value: unknown): string | undefined {
  if (name === 'failAll') return typeof value === 'boolean' ? undefined : `knob ${name} must be true or false`;
  if (name === 'hold')
    return typeof value === 'string' && value.length <= MAX_HOLD_LENGTH
      ? undefined
      : `knob ${name} must be method names separated by commas, at most ${MAX_HOLD_LENGTH} characters`;
  if (name === 'fail') {
    if (typeof value !== 'string' || value.length > MAX_HOLD_LENGTH)
      return `knob ${name} must be rules separated by commas, at most ${MAX_HOLD_LENGTH} characters`;
    const bad = parseFailRules(value).find((r) => typeof r === 'string');
    return bad === undefined ? undefined : `knob ${name}: ${bad}`;
  }
  if (name === 'respell') {
    if (typeof value !== 'string' || value.length > MAX_HOLD_LENGTH)
      return `knob ${name} must be IP=SPELLING rules separated by commas, at most ${MAX_HOLD_LENGTH} characters`;
    const bad = parseRespellRules(value).find((r) => typeof r === 'string');
    return bad === undefined ? undefined : `knob ${name}: ${bad}`;
  }
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return `knob ${name} must be a number >= 0`;
  if (name === 'errorRate' && value > 1) return `knob ${name} must be between 0 and 1`;
  if (name === 'lbQuota' && !Number.isInteger(value)) return `knob ${name} must be a whole number`;
  if ((name === 'latencyMs' || name === 'latencyJitterMs' || name === 'replyLatencyMs' || name === 'lbQuotaRetryMs') && value > MAX_LATENCY_MS)
    return `knob ${name} must be <= ${MAX_LATENCY_MS} ms`;
  return undefined;
}

/** Knob settings from the environment; throws on the first invalid value. */
export function knobsFromEnv(env: NodeJS.ProcessEnv = process.env): KnobSettings {
  const out: Record<string, number | boolean | string> = {};
  for (const name of KNOB_NAMES) {
    const raw = env[KNOB_ENV[name]];
    if (raw === undefined || raw.trim() === '') continue;
    try {
      out[name] = parseKnobValue(name, raw);
    } catch (err) {
      throw new RangeError(`${KNOB_ENV[name]}: ${(err as Error).message}`, { cause: err });
    }
  }
  return out as KnobSettings;
}

/**
 * Merges layers of settings, later layers winning; invalid values in a layer
 * (e.g. a hand-edited state file) are skipped.
 */
export function mergeKnobs(...layers: (KnobSettings | undefined)[]): Knobs {
  const out: Knobs = { ...DEFAULT_KNOBS };
  for (const layer of layers) {
    if (!layer) continue;
    for (const name of KNOB_NAMES) {
      const v = (layer as Record<string, unknown>)[name];
      if (v !== undefined && checkKnob(name, v) === undefined) (out as unknown as Record<string, unknown>)[name] = v;
    }
  }
  return out;
}

/**
 * Changes the runtime knob overrides in a state directory: `set` entries are
 * validated and written, `unset` names removed (the provider falls back to
 * its environment). A running provider sees the change on its next call.
 * Returns the overrides now stored.
 */
export async function updateKnobs(store: StateStore, set: KnobSettings, unset: readonly KnobName[] = []): Promise<KnobSettings> {
  for (const [name, value] of Object.entries(set)) {
    const knob = knobName(name);
    if (knob !== name) throw new RangeError(`unknown knob ${JSON.stringify(name)}; knobs are ${KNOB_NAMES.join(', ')}`);
    const problem = checkKnob(knob, value);
    if (problem) throw new RangeError(`${problem}, got ${JSON.stringify(value)}`);
  }
  return store.update((draft) => {
    const next: Record<string, unknown> = { ...draft.knobs, ...set };
    for (const name of unset) delete next[name];
    draft.knobs = next as KnobSettings;
    return draft.knobs;
  });
}

/** A token bucket; time in milliseconds. */
class TokenBucket {
  private tokens: number;
  private last: number;

  /** `qps` > 0 tokens per second, holding at most `burst` >= 1. */
  constructor(
    readonly qps: number,
    readonly burst: number,
    now: number,
  ) {
    if (!(qps > 0)) throw new RangeError(`qps must be > 0, got ${qps}`);
    if (!(burst >= 1)) throw new RangeError(`burst must be >= 1, got ${burst}`);
    this.tokens = burst;
    this.last = now;
  }

  /** Takes a token: 0 when granted, else how long until one is available, in ms (>= 1). */
  take(now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.last) * this.qps) / 1000);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.qps));
  }
}

/** Options of {@link FaultInjector}. */
export interface FaultInjectorOptions {
  /** Source of randomness in [0, 1) (tests make it deterministic). */
  random?: () => number;
  /** Clock in ms. */
  now?: () => number;
}

/**
 * Applies the knobs to one call, in this order: latency (an abortable
 * sleep), failAll, the rate limit, the error rate. Throws the error the call
 * should fail with, or resolves when the call may proceed.
 */
export class FaultInjector {
  private readonly random: () => number;
  private readonly now: () => number;
  private bucket?: TokenBucket;

  constructor(opts: FaultInjectorOptions = {}) {
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Waits while the knobs `current()` returns name `method` in `hold`
   * (rejects with {@link abortError} when the call is aborted meanwhile).
   * `method` is `service.method`, e.g. `loadBalancers.ensureLoadBalancer`.
   * `onHeld(true)` is called when the call starts waiting, `onHeld(false)`
   * when it stops (so tests can see that a call is held).
   */
  async hold(current: () => Knobs, ctx: CallContext, method: string, onHeld?: (held: boolean) => void): Promise<void> {
    if (!holds(current().hold, method)) return;
    onHeld?.(true);
    try {
      while (holds(current().hold, method)) await sleep(HOLD_POLL_MS, ctx);
    } finally {
      onHeld?.(false);
    }
  }

  /** Runs before the body of the cloud call `method`. */
  async before(knobs: Knobs, ctx: CallContext, method: string): Promise<void> {
    throwIfAborted(ctx);
    const latency = knobs.latencyMs + (knobs.latencyJitterMs > 0 ? this.random() * knobs.latencyJitterMs : 0);
    if (latency > 0) await sleep(latency, ctx);
    if (knobs.failAll) throw new UnavailableError(`local cloud is down (failAll knob): ${method}`);
    const waitMs = this.takeToken(knobs);
    if (waitMs > 0) throw new RateLimitedError(`local cloud rate limit of ${knobs.rateLimitQps} calls/s exceeded: ${method}`, waitMs);
    if (knobs.errorRate > 0 && this.random() < knobs.errorRate) {
      throw new UnavailableError(`injected failure (errorRate ${knobs.errorRate}): ${method}`);
    }
  }

  /** Runs after the body of a call that succeeded: the reply latency (an abortable sleep). */
  async after(knobs: Knobs, ctx: CallContext): Promise<void> {
    if (knobs.replyLatencyMs > 0) await sleep(knobs.replyLatencyMs, ctx);
  }

  private takeToken(knobs: Knobs): number {
    if (!(knobs.rateLimitQps > 0)) {
      this.bucket = undefined;
      return 0;
    }
    const burst = knobs.rateLimitBurst >= 1 ? knobs.rateLimitBurst : Math.max(1, knobs.rateLimitQps);
    if (!this.bucket || this.bucket.qps !== knobs.rateLimitQps || this.bucket.burst !== burst) {
      this.bucket = new TokenBucket(knobs.rateLimitQps, burst, this.now());
    }
    return this.bucket.take(this.now());
  }
}

/** Whether the `hold` knob value names `method` (`service.method`), by full name or method name alone. */
function holds(hold: string, method: string): boolean {
  if (!hold) return false;
  const full = method.toLowerCase();
  const short = full.slice(full.indexOf('.') + 1);
  return hold.split(',').some((h) => {
    const want = h.trim().toLowerCase();
    return want !== '' && (want === full || want === short);
  });
}

/** One rule of the `fail` knob. */
interface FailRule {
  method: string;
  object: string;
  error: string;
}

const FAIL_RULE = /^([A-Za-z.]+)@([^=\s]+)=(NOT_FOUND|UNIMPLEMENTED|IMPLEMENTED_ELSEWHERE|UNAVAILABLE|RETRY:\d+)$/;

/** The rules of a `fail` knob value; a string in place of a rule that does not parse (why). */
function parseFailRules(value: string): (FailRule | string)[] {
  return value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '')
    .map((r) => {
      const m = FAIL_RULE.exec(r);
      if (!m)
        return `${JSON.stringify(r)} is not METHOD@OBJECT=ERROR (ERROR: NOT_FOUND, UNIMPLEMENTED, IMPLEMENTED_ELSEWHERE, UNAVAILABLE, RETRY:<ms>)`;
      return { method: m[1]!, object: m[2]!, error: m[3]! };
    });
}

/**
 * The error the `fail` knob gives a call of `method` (`service.method`) about
 * `object`, or undefined.
 */
export function failFor(fail: string, method: string, object: string | undefined): ProviderError | undefined {
  if (!fail || object === undefined) return undefined;
  const rule = parseFailRules(fail).find((r): r is FailRule => typeof r !== 'string' && r.object === object && holds(r.method, method));
  if (!rule) return undefined;
  const what = `injected (fail knob): ${method} on ${object}`;
  if (rule.error === 'NOT_FOUND') return new NotFoundError(what);
  if (rule.error === 'UNIMPLEMENTED') return new NotImplementedError(what);
  if (rule.error === 'IMPLEMENTED_ELSEWHERE') return new ImplementedElsewhereError();
  if (rule.error === 'UNAVAILABLE') return new UnavailableError(what);
  return new RateLimitedError(what, Number(rule.error.slice('RETRY:'.length)));
}

/** The error for a call whose signal fired: DEADLINE_EXCEEDED past the deadline, else CANCELLED. */
function abortError(ctx: CallContext): ProviderError {
  if (ctx.deadlineMs !== undefined && Date.now() >= ctx.deadlineMs) return new ProviderError(Code.DEADLINE_EXCEEDED, 'deadline exceeded');
  return new ProviderError(Code.CANCELLED, 'call cancelled');
}

/** Throws {@link abortError} when the call's signal has fired. */
function throwIfAborted(ctx: CallContext): void {
  if (ctx.signal.aborted) throw abortError(ctx);
}

/** Sleeps `ms`, or rejects with {@link abortError} as soon as the call is aborted. */
function sleep(ms: number, ctx: CallContext): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (ctx.signal.aborted) return reject(abortError(ctx));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(ctx));
    };
    const timer = setTimeout(() => {
      ctx.signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** `IP=SPELLING` rules of the respell knob, or a one-line problem per bad rule. */
function parseRespellRules(value: string): ([string, string] | string)[] {
  return value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '')
    .map((r) => {
      const eq = r.indexOf('=');
      if (eq <= 0 || eq === r.length - 1) return `rule ${JSON.stringify(r)} is not IP=SPELLING`;
      return [r.slice(0, eq), r.slice(eq + 1)];
    });
}

/**
 * `answer` with every `address` or `ip` string field that a respell rule
 * names replaced by its spelling (the respell knob); `answer` itself is not
 * changed. Answers without such a field come back as they are.
 */
export function respellAnswer<T>(respell: string, answer: T): T {
  if (respell === '') return answer;
  const rules = new Map(parseRespellRules(respell).filter((r): r is [string, string] => typeof r !== 'string'));
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    // Plain objects only: a Buffer or a Map in an answer goes back as it is.
    if (v === null || typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return v;
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, (k === 'address' || k === 'ip') && typeof x === 'string' ? (rules.get(x) ?? x) : walk(x)]),
    );
  };
  return walk(answer) as T;
}
