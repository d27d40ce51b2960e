/**
 * Structured logging for the host. Messages are constant text; everything that
 * varies goes into the fields object (`log.info({ node }, 'initialized node')`).
 * Logs are for operators; users get Kubernetes Events instead.
 */
import { pino, type Logger as PinoLogger, type LevelWithSilent } from 'pino';
import { redact } from './redact.js';

export type Logger = PinoLogger;

export type LogFormat = 'json' | 'text';

export interface LogOptions {
  /** klog-style verbosity: 0 = info, 1-3 = debug, >=4 = trace. */
  verbosity?: number;
  /** `text`: klog's text format, as upstream (the host's default, see config). `json` (this function's default): one JSON object per line. */
  format?: LogFormat;
  /** Overrides the level derived from verbosity (used by tests: 'silent'). */
  level?: LevelWithSilent;
  /** Where lines go; defaults to stderr so stdout stays free for tools. */
  destination?: NodeJS.WritableStream;
}

function levelForVerbosity(v: number): LevelWithSilent {
  if (v >= 4) return 'trace';
  if (v >= 1) return 'debug';
  return 'info';
}

const KLOG_SEVERITY: Record<string, string> = { trace: 'I', debug: 'I', info: 'I', warn: 'W', error: 'E', fatal: 'F' };

/** A value as klog's text format prints it: strings quoted, numbers and booleans bare, the rest as JSON. */
function klogValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(typeof v === 'string' ? v : (v ?? null)) ?? 'null';
}

/** `MMDD hh:mm:ss` of the last second formatted, and that second (a line's stamp changes once a second). */
let stampSecond = -1;
let stampText = '';

/** klog's `MMDD hh:mm:ss.uuuuuu` (UTC) of `time` (ms since the epoch). */
function klogStamp(time: number): string {
  const two = (n: number) => String(n).padStart(2, '0');
  if (Number.isSafeInteger(time) && time >= 0 && time <= 8.64e15) {
    const second = Math.floor(time / 1000);
    if (second !== stampSecond) {
      const d = new Date(second * 1000);
      stampText = `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
      stampSecond = second;
    }
    return `${stampText}.${String((time - second * 1000) * 1000).padStart(6, '0')}`;
  }
  const d = new Date(time);
  return `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}.${String(d.getUTCMilliseconds() * 1000).padStart(6, '0')}`;
}

/** A klog line's header and quoted message, from a record's level, time, component and message. */
function klogHead(level: unknown, time: unknown, component: unknown, quotedMsg: string, pid: number): string {
  const source = typeof component === 'string' && component ? component : 'main';
  return `${KLOG_SEVERITY[String(level)] ?? 'I'}${klogStamp(typeof time === 'number' ? time : Date.now())} ${String(pid).padStart(7)} ${source}:0] ${quotedMsg}`;
}

/**
 * One pino record as a klog text line, the upstream CCM's default format:
 * `I1125 05:56:11.123456    4242 service-controller:0] "msg" key="value" n=3`.
 * The header's `file:line` is the logger's component and line 0 (Node.js has
 * no cheap caller lookup), so parsers of klog headers accept the lines.
 */
export function klogLine(obj: Record<string, unknown>, pid = process.pid): string {
  const { time, level, msg, component, ...rest } = obj;
  let fields = '';
  for (const [k, v] of Object.entries(rest)) fields += ` ${k}=${klogValue(v)}`;
  return `${klogHead(level, time, component, JSON.stringify(String(msg ?? '')), pid)}${fields}\n`;
}

/** A JSON scalar as pino writes it: a number, `true`, `false` or `null` (anything else is not a flat record). */
const JSON_SCALAR = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
/**
 * Characters whose JSON text and value do not map one to one: control characters (pino escapes them; raw,
 * JSON.parse refuses them) and surrogates (JSON.stringify escapes a lone one, pino does not).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const UNCANONICAL = /[\u0000-\u001f\ud800-\udfff]/;

/** The value of a JSON scalar or string as {@link klogLineFromJson} scanned it. */
function scalarValue(raw: string): unknown {
  if (raw.charCodeAt(0) === 34) return raw.indexOf('\\') === -1 ? raw.slice(1, -1) : JSON.parse(raw);
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (raw === 'null') return null;
  return Number(raw);
}

/**
 * `klogLine(JSON.parse(line))` for the common shape of a pino line, without building an object: a flat
 * record (string, number, boolean and null values; no nested object or array, no repeated key, no key
 * starting with a digit, which JSON.parse would reorder) whose text has no control character or surrogate.
 * A string value is copied as it is (its JSON text is what klog prints), a number is printed as its value.
 * Returns undefined for any other line, which the caller parses.
 */
export function klogLineFromJson(line: string, pid = process.pid): string | undefined {
  const end = line.charCodeAt(line.length - 1) === 10 ? line.length - 1 : line.length;
  if (end < 2 || line.charCodeAt(0) !== 123 || line.charCodeAt(end - 1) !== 125) return undefined;
  if (UNCANONICAL.test(end === line.length ? line : line.slice(0, end))) return undefined;
  const keys: string[] = [];
  const raws: string[] = [];
  let pos = 1;
  if (end > 2) {
    for (;;) {
      if (line.charCodeAt(pos) !== 34) return undefined;
      const keyEnd = line.indexOf('"', pos + 1);
      if (keyEnd < 0) return undefined;
      const key = line.slice(pos + 1, keyEnd);
      const first = key.charCodeAt(0);
      if ((first >= 48 && first <= 57) || key.indexOf('\\') !== -1 || keys.includes(key)) return undefined;
      if (line.charCodeAt(keyEnd + 1) !== 58) return undefined;
      const start = keyEnd + 2;
      let next: number;
      if (line.charCodeAt(start) === 34) {
        let quote = start;
        for (;;) {
          quote = line.indexOf('"', quote + 1);
          if (quote < 0 || quote >= end) return undefined;
          let slashes = 0;
          while (line.charCodeAt(quote - 1 - slashes) === 92) slashes++;
          if (slashes % 2 === 0) break;
        }
        next = quote + 1;
      } else {
        JSON_SCALAR.lastIndex = start;
        const m = JSON_SCALAR.exec(line);
        if (!m) return undefined;
        next = start + m[0].length;
      }
      keys.push(key);
      raws.push(line.slice(start, next));
      const c = line.charCodeAt(next);
      if (c === 44) pos = next + 1;
      else if (c === 125 && next === end - 1) break;
      else return undefined;
    }
  }
  let level: unknown, time: unknown, component: unknown;
  let msgRaw: string | undefined;
  let fields = '';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const raw = raws[i]!;
    switch (key) {
      case 'level':
        level = scalarValue(raw);
        break;
      case 'time':
        time = scalarValue(raw);
        break;
      case 'component':
        component = scalarValue(raw);
        break;
      case 'msg':
        msgRaw = raw;
        break;
      default:
        // A string's JSON text without escapes is its klog text; an escaped one is printed as JSON.stringify does.
        fields += ` ${key}=${raw.charCodeAt(0) === 34 && raw.indexOf('\\') === -1 ? raw : klogValue(scalarValue(raw))}`;
    }
  }
  const quotedMsg =
    msgRaw !== undefined && msgRaw.charCodeAt(0) === 34 && msgRaw.indexOf('\\') === -1
      ? msgRaw
      : JSON.stringify(String((msgRaw === undefined ? undefined : scalarValue(msgRaw)) ?? ''));
  return `${klogHead(level, time, component, quotedMsg, pid)}${fields}\n`;
}

/** Creates the root logger; components derive theirs with `log.child({ component })`. */
export function createLogger(opts: LogOptions = {}): Logger {
  const level = opts.level ?? levelForVerbosity(opts.verbosity ?? 0);
  const dest = opts.destination ?? process.stderr;
  const base = {
    level,
    base: undefined,
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Every line, whatever logged it (plugin stderr included), loses known secrets.
    hooks: { streamWrite: redact },
  };
  if (opts.format === 'text') {
    const stream = {
      write(line: string) {
        try {
          dest.write(klogLineFromJson(line) ?? klogLine(JSON.parse(line) as Record<string, unknown>));
        } catch {
          dest.write(line);
        }
      },
    };
    return pino({ ...base, timestamp: pino.stdTimeFunctions.epochTime }, stream);
  }
  return pino(base, dest as pino.DestinationStream);
}

/** A logger that drops everything, for unit tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/**
 * Message of any thrown value, without assuming it is an Error, with known
 * secrets redacted: this is how error text reaches Events, API object
 * statuses (e.g. VolumeAttachment attachError), webhook answers and /healthz.
 */
export function errorMessage(err: unknown): string {
  return redact(err instanceof Error ? err.message : String(err));
}
