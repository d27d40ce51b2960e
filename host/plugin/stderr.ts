/**
 * Forwards a plugin's stderr into the host log, one record per line. JSON
 * lines (the SDK's format) keep their level, message and fields; plain lines
 * get a level from a `[DEBUG]`/`[WARN]`/... prefix, or `info`. Once a line
 * looks like a crash (`panic:`, `Error:` at the start, an uncaught exception),
 * the rest of the output is logged at error level so the cause is visible.
 */
import type { Readable } from 'node:stream';
import type { Logger } from '../log.js';
import { redactCut } from '../redact.js';
import { readBoundedLines } from './lines.js';
import type { OutputLimiter } from './output-limiter.js';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
const LEVELS = new Set<Level>(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
const PINO_NUMERIC: Record<number, Level> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Parses one stderr line (already bounded by readBoundedLines) into a level, message and fields. */
export function parseStderrLine(text: string, crashed: boolean): { level: Level; msg: string; fields: Record<string, unknown> } {
  if (text.startsWith('{')) {
    try {
      const obj = JSON.parse(text) as Record<string, unknown>;
      if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
        const { level, msg, message, time, timestamp, pid, hostname, ...fields } = obj;
        void time;
        void timestamp;
        void pid;
        void hostname;
        let lvl: Level = 'info';
        if (typeof level === 'string' && LEVELS.has(level.toLowerCase() as Level)) lvl = level.toLowerCase() as Level;
        else if (typeof level === 'number' && PINO_NUMERIC[level]) lvl = PINO_NUMERIC[level]!;
        return { level: lvl, msg: String(msg ?? message ?? ''), fields };
      }
    } catch {
      // Not JSON after all: treat as plain text below.
    }
  }
  const prefix = /^\[(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\]\s*/i.exec(text);
  if (prefix) {
    const p = prefix[1]!.toLowerCase();
    const level: Level = p === 'warning' ? 'warn' : (p as Level);
    return { level, msg: text.slice(prefix[0].length), fields: {} };
  }
  return { level: crashed ? 'error' : 'info', msg: text, fields: {} };
}

const CRASH_START = /^(panic:|fatal error:|Uncaught|Traceback \(most recent call last\))|^\S*Error: /;

/**
 * Reads `stream` until it ends, logging every line through `log` (which
 * carries plugin name and pid) as far as `limiter` admits it. A line cut at
 * the length limit is logged with `truncatedBytes` (and, being cut, is never
 * parsed as JSON).
 */
export function forwardStderr(stream: Readable, log: Logger, limiter: OutputLimiter): Promise<void> {
  let crashed = false;
  return readBoundedLines(stream, (line, cutBytes) => {
    if (line.length === 0 && cutBytes === 0) return;
    if (!crashed && CRASH_START.test(line)) crashed = true;
    if (!limiter.admit('stderr')) return;
    const { level, msg, fields } = cutBytes > 0 ? parseStderrLine(redactCut(line) + '…', crashed) : parseStderrLine(line, crashed);
    log[level]({ ...fields, ...(cutBytes > 0 ? { truncatedBytes: cutBytes } : {}), source: 'plugin-stderr' }, msg);
  });
}
