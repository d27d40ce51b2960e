/**
 * The counts of an ava run, read from its output for the runner's closing
 * `tests: N passed, N failed` line (test/run-tests.ts).
 *
 * Only whole lines count: ava's summary lines (`3 tests failed`, `1 hook
 * failed`, `2 tests remained pending after a timeout`, ...), one line per test
 * file that crashed or did not exit, and, when ava prints no passed count
 * (it does not once something failed), the ticks of passed tests. A test
 * title or log line that merely contains such words is not a summary line.
 * Each stream is decoded on its own (StringDecoder), so a character split
 * between two chunks, or stdout and stderr interleaving, cannot garble a line.
 */
import { StringDecoder } from 'node:string_decoder';

// eslint-disable-next-line no-control-regex -- ANSI colour codes start with ESC
const ANSI = /\u001b\[[0-9;]*m/g;

export interface AvaCounts {
  passed: number;
  failed: number;
  skipped: number;
}

/** ava's summary lines that count as failures, each with its number first. */
const FAILURE_LINES = [
  /^(\d+) tests? failed$/,
  /^(\d+) hooks? failed$/,
  /^(\d+) known failures?$/,
  /^(\d+) uncaught exceptions?$/,
  /^(\d+) unhandled rejections?$/,
  /^(\d+) tests? remained pending after a timeout$/,
];
/** A test file that crashed or would not exit: one failure each. */
const FILE_FAILURE_LINES = [/^✘ \S.* exited due to an error:$/, /^✘ \S.* exited with a non-zero exit code: \S+$/, /^Failed to exit when running \S/];

/** Counts of one run, from its stdout and stderr (either may hold the report). */
export function summarize(...streams: string[]): AvaCounts {
  const lines = streams.flatMap((s) => s.replace(ANSI, '').split(/\r?\n/)).map((l) => l.trim());
  const number = (re: RegExp) => lines.reduce((n, l) => n + Number(re.exec(l)?.[1] ?? 0), 0);
  const passedLine = number(/^(\d+) tests? passed$/);
  const ticks = lines.filter((l) => l.startsWith('✔')).length;
  const failed = FAILURE_LINES.reduce((n, re) => n + number(re), 0) + lines.filter((l) => FILE_FAILURE_LINES.some((re) => re.test(l))).length;
  return { passed: Math.max(passedLine, ticks), failed, skipped: number(/^(\d+) tests? skipped$/) };
}

/** Collects one child stream's text, decoding UTF-8 across chunk boundaries. */
export class StreamText {
  private readonly decoder = new StringDecoder('utf8');
  private text = '';

  /** Adds a chunk as it came from the stream. */
  push(chunk: Buffer): void {
    this.text += this.decoder.write(chunk);
  }

  /** Everything so far, including a partial character left at the end. */
  value(): string {
    return this.text + this.decoder.end();
  }
}
