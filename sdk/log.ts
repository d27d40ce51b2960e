/**
 * Structured logs for providers. One JSON object per line on stderr:
 *   {"level":"info","time":"2025-01-01T00:00:00.000Z","name":"local","msg":"instance created","node":"n1"}
 * The host reads these lines and re-emits them in its own log, so keep `msg`
 * constant text and put everything that varies into the fields object:
 *   log.info({ node }, 'instance created')
 * Never log to stdout: in exec mode it carries the handshake only.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';
import { ENV_LOG_LEVEL } from './protocol.js';
import { createStderrStream } from './stdio.js';

export type { Logger };

const LEVELS: readonly LevelWithSilent[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Options of createProviderLogger. */
export interface ProviderLoggerOptions {
  /** Overrides CCM_PLUGIN_LOG_LEVEL (tests use 'silent'). */
  level?: LevelWithSilent;
  /** Where lines go; defaults to a synchronous, EPIPE-proof stderr writer. */
  destination?: NodeJS.WritableStream;
}

/**
 * The level the host asked for in CCM_PLUGIN_LOG_LEVEL; `info` when unset or
 * not a pino level name.
 */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LevelWithSilent {
  const v = env[ENV_LOG_LEVEL]?.trim().toLowerCase();
  return LEVELS.includes(v as LevelWithSilent) ? (v as LevelWithSilent) : 'info';
}

/**
 * Creates a logger writing JSON lines (`level` as a label, `time` as ISO-8601,
 * `name`, `msg`, then the fields) synchronously to stderr, so nothing is lost
 * when the process exits right after logging.
 */
export function createProviderLogger(name: string, opts: ProviderLoggerOptions = {}): Logger {
  return pino(
    {
      name,
      level: opts.level ?? logLevelFromEnv(),
      base: undefined,
      formatters: { level: (label: string) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    (opts.destination ?? createStderrStream()) as pino.DestinationStream,
  );
}
