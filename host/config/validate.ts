/**
 * Collects validation problems while compiling options, so the operator sees
 * every mistake in one run. Each message is one line that names the flag and
 * says what a valid value looks like.
 */
import fs from 'node:fs';
import { errorMessage } from '../log.js';
import { parseGoBool, parseGoDuration, parseGoFloat, parseGoInt } from './values.js';

/** Bounds for numeric flags. */
export interface NumberRule {
  /** Smallest valid value. */
  min?: number;
  /** Valid values are greater than this. */
  above?: number;
  /** Largest valid value. */
  max?: number;
  /** Words for the rule in messages, e.g. "an integer greater than 0". */
  want: string;
}

/**
 * Error collector with typed readers. A reader that finds a problem records
 * it and returns a placeholder (NaN for numbers, so comparisons with it are
 * false and raise no second error), so compilation continues and later
 * checks still run; the result is discarded when `errors` is non-empty.
 */
export class Problems {
  readonly errors: string[] = [];

  add(message: string): void {
    this.errors.push(message);
  }

  /** `--flag=text` as a Go bool. */
  bool(flag: string, text: string): boolean {
    const v = parseGoBool(text);
    if (v === undefined) this.add(`--${flag}=${JSON.stringify(text)} is invalid: use --${flag}=true or --${flag}=false`);
    return v ?? false;
  }

  /** `--flag=text` as an integer within `rule`. */
  int(flag: string, text: string, rule: NumberRule): number {
    return this.checked(flag, text, parseGoInt(text), rule);
  }

  /** `--flag=text` as a decimal number within `rule`. */
  float(flag: string, text: string, rule: NumberRule): number {
    return this.checked(flag, text, parseGoFloat(text), rule);
  }

  /** `--flag=text` as a Go duration in milliseconds: >= 0, or > 0 with `positive`. */
  duration(flag: string, text: string, opts: { positive?: boolean } = {}): number {
    const ms = parseGoDuration(text);
    const want = opts.positive ? 'a duration greater than 0' : 'a duration of 0 or more';
    if (ms === undefined || ms < 0 || (opts.positive && ms === 0)) {
      this.add(`--${flag}=${JSON.stringify(text)} is invalid: want ${want} with a unit (ns, us, ms, s, m, h), e.g. 500ms, 10s, 5m or 1h30m`);
      return NaN;
    }
    return ms;
  }

  /** `--flag=text` that must be one of `choices`. */
  oneOf<T extends string>(flag: string, text: string, choices: readonly T[]): T {
    if ((choices as readonly string[]).includes(text)) return text as T;
    this.add(`--${flag}=${JSON.stringify(text)} is invalid: use one of ${choices.join(', ')}`);
    return choices[0]!;
  }

  /** Records "cannot read --flag FILE: reason" unless `file` is a readable regular file. */
  readableFile(flag: string, file: string): void {
    const reason = unreadableReason(file);
    if (reason) this.add(`cannot read --${flag} ${file}: ${reason}: pass the path of a readable file`);
  }

  private checked(flag: string, text: string, n: number | undefined, rule: NumberRule): number {
    const low = (rule.min !== undefined && n! < rule.min) || (rule.above !== undefined && n! <= rule.above);
    if (n === undefined || low || (rule.max !== undefined && n > rule.max)) {
      this.add(`--${flag}=${JSON.stringify(text)} is invalid: want ${rule.want}`);
      return NaN;
    }
    return n;
  }
}

/** Why `file` cannot be read as a regular file, in words; undefined if it can. */
function unreadableReason(file: string): string | undefined {
  try {
    if (!fs.statSync(file).isFile()) return 'not a regular file';
    fs.accessSync(file, fs.constants.R_OK);
    return undefined;
  } catch (err) {
    return fsErrorReason(err);
  }
}

/** True when nothing exists at `file` (it or a parent directory is missing); false for any other outcome, e.g. permission denied. */
export function isAbsent(file: string): boolean {
  try {
    fs.statSync(file);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** Short words for a file system error ("no such file", "permission denied"). */
export function fsErrorReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a parent of the path is not a directory';
    default:
      return errorMessage(err);
  }
}
