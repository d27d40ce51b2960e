/**
 * Forwards a plugin's stderr into the host log, one record per line. JSON
 * lines (the SDK's format) keep their level, message and fields; plain lines
 * get a level from a `[DEBUG]`/`[WARN]`/... prefix, or `info`. Once a line
 * looks like a crash (`panic:`, `Error:` at the start, an uncaught exception),
 * the rest of the output is logged at error level so the cause is visible.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Logger } from '../log.js';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
const LEVELS = new Set<Level>(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);
const PINO_NUMERIC: Record<number, Level> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
const MAX_LINE_CHARS = 16 * 1024;

/** Parses one stderr line into a level, message and fields. */
export function parseStderrLine(line: string, crashed: boolean): { level: Level; msg: string; fields: Record<string, unknown> } {
  const text = line.length > MAX_LINE_CHARS ? line.slice(0, MAX_LINE_CHARS) + '…' : line;
  if (text.startsWith('{')) {
    try {
      const obj = JSON.parse(text) as Record<string, unknown>;
      if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
        const { level, msg, message, time, timestamp, pid, hostname, ...fields } = obj;
        void time; void timestamp; void pid; void hostname;
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

/** Reads `stream` until it ends, logging every line through `log` (which carries plugin name and pid). */
export function forwardStderr(stream: Readable, log: Logger): Promise<void> {
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  let crashed = false;
  rl.on('line', (line) => {
    if (line.length === 0) return;
    if (!crashed && CRASH_START.test(line)) crashed = true;
    const { level, msg, fields } = parseStderrLine(line, crashed);
    log[level]({ ...fields, source: 'plugin-stderr' }, msg);
  });
  return new Promise((resolve) => rl.once('close', () => resolve()));
}
