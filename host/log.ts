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
  /** `json` (default): one JSON object per line. `text`: `time level msg k=v ...`. */
  format?: LogFormat;
  /** Overrides the level derived from verbosity (used by tests: 'silent'). */
  level?: LevelWithSilent;
  /** Where lines go; defaults to stderr so stdout stays free for tools. */
  destination?: NodeJS.WritableStream;
}

export function levelForVerbosity(v: number): LevelWithSilent {
  if (v >= 4) return 'trace';
  if (v >= 1) return 'debug';
  return 'info';
}

function textLine(obj: Record<string, unknown>): string {
  const { time, level, msg, ...rest } = obj;
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`)
    .join(' ');
  const t = new Date(typeof time === 'number' ? time : Date.now()).toISOString();
  return `${t} ${String(level).toUpperCase().padEnd(5)} ${String(msg ?? '')}${fields ? ' ' + fields : ''}\n`;
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
          dest.write(textLine(JSON.parse(line) as Record<string, unknown>));
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
