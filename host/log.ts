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

/**
 * One pino record as a klog text line, the upstream CCM's default format:
 * `I1125 05:56:11.123456    4242 service-controller:0] "msg" key="value" n=3`.
 * The header's `file:line` is the logger's component and line 0 (Node.js has
 * no cheap caller lookup), so parsers of klog headers accept the lines.
 */
export function klogLine(obj: Record<string, unknown>, pid = process.pid): string {
  const { time, level, msg, component, ...rest } = obj;
  const d = new Date(typeof time === 'number' ? time : Date.now());
  const two = (n: number) => String(n).padStart(2, '0');
  const stamp = `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}.${String(d.getUTCMilliseconds() * 1000).padStart(6, '0')}`;
  const fields = Object.entries(rest)
    .map(([k, v]) => ` ${k}=${klogValue(v)}`)
    .join('');
  const source = typeof component === 'string' && component ? component : 'main';
  return `${KLOG_SEVERITY[String(level)] ?? 'I'}${stamp} ${String(pid).padStart(7)} ${source}:0] ${JSON.stringify(String(msg ?? ''))}${fields}\n`;
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
          dest.write(klogLine(JSON.parse(line) as Record<string, unknown>));
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
