/**
 * The provider's standard streams in exec mode. Stdout carries exactly one
 * line, the handshake; everything else (logs, console output, stray writes by
 * libraries) goes to stderr, which the host reads as log lines.
 *
 * Writes to stderr are synchronous and never throw: once the host is gone the
 * pipe answers EPIPE, and a provider must still be able to shut down quietly.
 */
import { writeSync } from 'node:fs';
import { Console } from 'node:console';
import { Writable } from 'node:stream';
import { MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE } from './protocol.js';

const STDOUT_FD = 1;
const STDERR_FD = 2;
/** A pipe that stays full this many times in a row (1 ms apart) is given up on (EAGAIN). */
const MAX_EAGAIN_RETRIES = 1000;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));

function sleepSync(ms: number): void {
  Atomics.wait(sleepCell, 0, 0, ms);
}

/**
 * Writes all of `buf` to `fd` synchronously, looping over partial writes and
 * retrying (boundedly) while a non-blocking pipe is full. Throws the first
 * other error.
 */
function writeAllSync(fd: number, buf: Buffer): void {
  let retries = 0;
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
      retries = 0;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || retries++ >= MAX_EAGAIN_RETRIES) throw err;
      sleepSync(1);
    }
  }
}

/**
 * Writes `text` to fd 2 synchronously. Never throws: errors (EPIPE after the
 * host died, EBADF) drop the rest of the text.
 */
export function writeStderrSync(text: string | Uint8Array): void {
  try {
    writeAllSync(STDERR_FD, typeof text === 'string' ? Buffer.from(text, 'utf8') : Buffer.from(text.buffer, text.byteOffset, text.byteLength));
  } catch {
    // Nobody is listening any more; there is nowhere left to report this.
  }
}

/** A Writable over writeStderrSync (for Console and pino). */
export function createStderrStream(): Writable {
  return new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, callback) {
      writeStderrSync(chunk);
      callback();
    },
  });
}

let guarded = false;

/**
 * Makes stdout unusable for anything but the handshake: every `console`
 * method and `process.stdout.write` go to stderr from now on. Idempotent.
 * The handshake itself is written with `writeHandshakeLine`, which bypasses
 * the stream.
 */
export function guardStdout(): void {
  if (guarded) return;
  guarded = true;
  const toStderr = new Console({ stdout: createStderrStream(), stderr: createStderrStream() });
  const target = console as unknown as Record<string, unknown>;
  const source = toStderr as unknown as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    const fn = source[key];
    if (typeof fn === 'function') target[key] = fn.bind(toStderr);
  }
  const write = (chunk: string | Uint8Array, encoding?: unknown, callback?: unknown): boolean => {
    writeStderrSync(typeof chunk === 'string' && typeof encoding === 'string' ? Buffer.from(chunk, encoding as BufferEncoding) : chunk);
    const cb = typeof encoding === 'function' ? encoding : callback;
    if (typeof cb === 'function') process.nextTick(cb as () => void);
    return true;
  };
  process.stdout.write = write as typeof process.stdout.write;
}

/** Writes the handshake line (plus newline) straight to fd 1, synchronously. */
export function writeHandshakeLine(line: string): void {
  writeAllSync(STDOUT_FD, Buffer.from(line + '\n', 'utf8'));
}

// Exec mode is known from the environment before any provider code runs. ESM
// evaluates this module (imported by log.ts and serve.ts) before the body of
// the provider module importing them, so console output at the provider's top
// level cannot reach stdout either.
if (process.env[MAGIC_COOKIE_KEY] === MAGIC_COOKIE_VALUE) guardStdout();
