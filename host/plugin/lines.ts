/**
 * Splits a plugin's output stream (stdout or stderr) into lines in constant
 * memory: whatever the plugin writes, at most `maxBytes` of a line are kept;
 * the rest of an overlong line is counted and dropped until its newline.
 * (node:readline keeps a whole line in one string: ~600 MiB without a
 * newline ended the host with "RangeError: Invalid string length".)
 */
import type { Readable } from 'node:stream';

/** Longest line kept from a plugin's stdout or stderr, in bytes; the rest is cut (docs/protocol.md). */
export const MAX_PLUGIN_LINE_BYTES = 16 * 1024;

/** One line without its `\n` (and `\r`); `cutBytes` > 0 when that much of it was dropped. */
export type LineHandler = (line: string, cutBytes: number) => void;

const NL = 0x0a;
const CR = 0x0d;

/**
 * Calls `onLine` for every line of `stream` (the last one even without a
 * newline) and resolves when the stream ends or is destroyed. Invalid UTF-8
 * and a character split by the cut become U+FFFD.
 */
export function readBoundedLines(stream: Readable, onLine: LineHandler, maxBytes = MAX_PLUGIN_LINE_BYTES): Promise<void> {
  const kept = Buffer.alloc(maxBytes);
  let keptBytes = 0;
  let cutBytes = 0;
  const emit = () => {
    let end = keptBytes;
    if (cutBytes === 0 && end > 0 && kept[end - 1] === CR) end--;
    const line = kept.toString('utf8', 0, end);
    const cut = cutBytes;
    keptBytes = 0;
    cutBytes = 0;
    onLine(line, cut);
  };
  const take = (chunk: Buffer, start: number, end: number) => {
    const room = Math.min(maxBytes - keptBytes, end - start);
    chunk.copy(kept, keptBytes, start, start + room);
    keptBytes += room;
    cutBytes += end - start - room;
  };
  stream.on('data', (chunk: Buffer | string) => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (let nl = buf.indexOf(NL, start); nl !== -1; nl = buf.indexOf(NL, start)) {
      take(buf, start, nl);
      emit();
      start = nl + 1;
    }
    if (start < buf.length) take(buf, start, buf.length);
  });
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      if (keptBytes > 0 || cutBytes > 0) emit();
      resolve();
    };
    stream.once('end', finish);
    stream.once('close', finish);
    stream.once('error', finish);
  });
}
