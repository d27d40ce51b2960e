/**
 * The state log: `<state>/state.jsonl`, the local cloud's state as a
 * snapshot followed by the changes made since, one JSON line per update.
 *
 *   line 1   header   {"localcloudStateLog":1,"generation":G,"id":"…","snapshotBytes":B,"base":{"id":"…","size":S}}
 *   line 2   snapshot the whole state document (see LocalCloudState), B bytes with its newline
 *   line 3+  update   {"changes":[{"kind":"loadBalancers","key":"lb-…","value":{…}},{"kind":"routes","key":"…"},…]}
 *            (a change without a value deletes the record; see state-changes.ts)
 *
 * The bytes of one file never change once written: writers (holding the
 * state lock) only append whole lines, each update in one write. A last line
 * without its newline is the torn end of a writer killed mid-append: readers
 * ignore it, and the next writer compacts instead of appending. It does not
 * truncate in place, so a reader can never read a mix of old and new bytes.
 *
 * Compaction writes the current state as generation G+1 to a temporary file
 * and renames it over state.jsonl (atomic). It runs when the updates outgrow
 * the snapshot (and COMPACT_MIN_BYTES), so its cost per update is amortized
 * O(update size). `base` names the file (by its random `id`) and the length
 * the new snapshot continues: a reader that had read exactly that far keeps
 * its state and skips the snapshot instead of parsing it. Stray temporary
 * files of compactions killed midway are removed by the next compaction.
 *
 * Readers keep the file open: an open file's inode is never reused, so a
 * different inode at the path means a new generation, and the same inode with
 * the same size means nothing changed (one stat per read).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fdatasyncSync, fstatSync, openSync, readdirSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { freeze } from 'immer';
import writeFileAtomic from 'write-file-atomic';
import { applyChanges, indexRecords, parseChanges, type Change, type Indexed, type Records } from './state-changes.js';
import { parseState, type LocalCloudState } from './state.js';

/** Format version in the header this build reads and writes. */
const LOG_FORMAT = 1;
/** Updates are compacted into a new snapshot once they exceed the snapshot's size and this many bytes. */
export const COMPACT_MIN_BYTES = 1 << 20;
/** Longest header line read, in bytes. */
const MAX_HEADER_BYTES = 4096;
const NEWLINE = 0x0a;

interface Header {
  generation: number;
  /** Random, names this file (generation numbers restart when the file is removed). */
  id: string;
  snapshotBytes: number;
  base?: { id: string; size: number };
}

/** Options of {@link StateLog}. */
export interface StateLogOptions {
  /** fsync every append and compaction. */
  fsync: boolean;
  /** See {@link COMPACT_MIN_BYTES}. */
  compactMinBytes: number;
}

/** One state log file, read incrementally; `V` is the view type built from each state. */
export class StateLog<V extends Indexed> {
  private fd?: number;
  private ino = -1;
  private generation = 0;
  private id = '';
  /** End of the snapshot line. */
  private snapshotEnd = 0;
  /** End of the last complete line read. */
  private offset = 0;
  /** Bytes of the file looked at; beyond `offset` they are a torn line. */
  private seen = 0;
  private current?: V;

  constructor(
    readonly path: string,
    private readonly opts: StateLogOptions,
    private readonly makeView: (x: { state: LocalCloudState; records: Records }) => V,
  ) {}

  /** Whether the log file exists (as of the last refresh). */
  get exists(): boolean {
    return this.fd !== undefined;
  }

  /** Whether the file ended in a torn line at the last refresh. */
  get torn(): boolean {
    return this.seen > this.offset;
  }

  /** The state in the file (the same object while it is unchanged), or undefined when there is no file. */
  refresh(): V | undefined {
    let size: number;
    let ino: number;
    try {
      ({ size, ino } = statSync(this.path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.close();
      return undefined;
    }
    if (this.fd !== undefined && ino === this.ino) {
      if (size !== this.seen) this.readTail(size);
      return this.current;
    }
    return this.openGeneration();
  }

  /**
   * Records one update that turned the refreshed state into `next`: appends
   * `line` (the update's changes) or, when there is no file yet or it ends in
   * a torn line, writes `next` as a new generation. Compacts when due. The
   * caller holds the state lock.
   */
  commit(next: V, line: string): void {
    if (this.fd === undefined || this.torn) {
      this.compact(next, undefined);
      return;
    }
    const bytes = Buffer.from(line + '\n');
    const fd = openSync(this.path, 'a');
    try {
      writeAll(fd, bytes);
      if (this.opts.fsync) fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.offset += bytes.length;
    this.seen = this.offset;
    this.current = next;
    const updates = this.offset - this.snapshotEnd;
    if (updates > Math.max(this.snapshotEnd, this.opts.compactMinBytes)) this.compact(next, { id: this.id, size: this.offset });
  }

  private compact(next: V, base: Header['base']): void {
    const snapshot = JSON.stringify(next.state) + '\n';
    const header: Header & { localcloudStateLog: number } = {
      localcloudStateLog: LOG_FORMAT,
      generation: this.generation + 1,
      id: randomBytes(8).toString('hex'),
      snapshotBytes: Buffer.byteLength(snapshot),
    };
    if (base) header.base = base;
    const text = JSON.stringify(header) + '\n' + snapshot;
    // Synchronous: faster than the async variant, and the lock makes this section exclusive anyway.
    writeFileAtomic.sync(this.path, text, { fsync: this.opts.fsync, mode: 0o644 });
    this.removeStrayTemporaries();
    const fd = openSync(this.path, 'r');
    this.close();
    this.fd = fd;
    this.ino = fstatSync(fd).ino;
    this.generation = header.generation;
    this.id = header.id;
    this.offset = this.seen = this.snapshotEnd = Buffer.byteLength(text);
    this.current = next;
  }

  /**
   * Removes temporary files of compactions killed before their rename
   * (write-file-atomic names them `state.jsonl.<hash>`); the caller holds the
   * lock, so no compaction is under way.
   */
  private removeStrayTemporaries(): void {
    const dir = dirname(this.path);
    const prefix = basename(this.path) + '.';
    for (const name of readdirSync(dir)) if (name.startsWith(prefix)) rmSync(join(dir, name), { force: true });
  }

  private close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    this.current = undefined;
  }

  /** Switches to the generation now at the path. */
  private openGeneration(): V | undefined {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      this.close();
      return undefined;
    }
    try {
      const { ino, size } = fstatSync(fd);
      const { header, bytes } = readHeader(fd, this.path);
      const snapshotEnd = bytes + header.snapshotBytes;
      if (snapshotEnd > size) throw new Error(`state log ${this.path} has a truncated snapshot; move it away to start from an empty state`);
      let kept: V | undefined;
      if (this.fd !== undefined && header.base?.id === this.id) {
        // Finish the old generation: whatever was appended before the compaction.
        this.readTail(fstatSync(this.fd).size);
        if (header.base.size === this.offset) kept = this.current;
      }
      const view = kept ?? this.makeView(loadSnapshot(fd, bytes, header.snapshotBytes, this.path));
      this.close();
      this.fd = fd;
      this.ino = ino;
      this.generation = header.generation;
      this.id = header.id;
      this.offset = this.seen = this.snapshotEnd = snapshotEnd;
      this.current = view;
      this.readTail(size);
      return this.current;
    } catch (err) {
      if (this.fd !== fd) closeSync(fd);
      throw err;
    }
  }

  /** Applies the complete lines between `offset` and `size`. */
  private readTail(size: number): void {
    const start = this.offset;
    if (size <= start || this.fd === undefined || !this.current) {
      this.seen = Math.max(size, start);
      return;
    }
    const buf = Buffer.allocUnsafe(size - start);
    const n = readAll(this.fd, buf, start);
    const changes: Change[] = [];
    let pos = 0;
    for (let nl = buf.indexOf(NEWLINE); nl >= 0 && nl < n; nl = buf.indexOf(NEWLINE, pos)) {
      changes.push(...parseChanges(buf.toString('utf8', pos, nl), `${this.path}: the update at byte ${start + pos}`));
      pos = nl + 1;
    }
    if (changes.length) this.current = this.makeView(applyChanges(this.current, changes));
    this.offset = start + pos;
    this.seen = start + n;
  }
}

/** Reads and checks the header line. */
function readHeader(fd: number, path: string): { header: Header; bytes: number } {
  const buf = Buffer.alloc(MAX_HEADER_BYTES);
  const n = readSync(fd, buf, 0, buf.length, 0);
  const nl = buf.subarray(0, n).indexOf(NEWLINE);
  if (nl < 0) throw new Error(`state log ${path} has no header line; move it away to start from an empty state`);
  let h: Partial<Header & { localcloudStateLog: unknown }>;
  try {
    h = JSON.parse(buf.toString('utf8', 0, nl)) as typeof h;
  } catch (err) {
    throw new Error(`state log ${path} has a malformed header (${(err as Error).message}); move it away to start from an empty state`, {
      cause: err,
    });
  }
  if (h.localcloudStateLog !== LOG_FORMAT) {
    throw new Error(`state log ${path} has format ${JSON.stringify(h.localcloudStateLog)}; this build reads format ${LOG_FORMAT}`);
  }
  const count = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  const token = (v: unknown) => typeof v === 'string' && /^[0-9a-f]{16}$/.test(v);
  if (!count(h.generation) || !token(h.id) || !count(h.snapshotBytes) || (h.base !== undefined && !(token(h.base.id) && count(h.base.size)))) {
    throw new Error(`state log ${path} has a malformed header; move it away to start from an empty state`);
  }
  return { header: h as Header, bytes: nl + 1 };
}

/** Reads, parses, freezes and indexes the snapshot line. */
function loadSnapshot(fd: number, at: number, length: number, path: string): { state: LocalCloudState; records: Records } {
  const buf = Buffer.allocUnsafe(length);
  if (readAll(fd, buf, at) !== length || buf[length - 1] !== NEWLINE)
    throw new Error(`state log ${path} has a truncated snapshot; move it away to start from an empty state`);
  const state = freeze(parseState(buf.toString('utf8', 0, length - 1), path), true);
  return { state, records: indexRecords(state, path) };
}

function readAll(fd: number, buf: Buffer, position: number): number {
  let n = 0;
  while (n < buf.length) {
    const got = readSync(fd, buf, n, buf.length - n, position + n);
    if (got === 0) break;
    n += got;
  }
  return n;
}

function writeAll(fd: number, buf: Buffer): void {
  for (let n = 0; n < buf.length;) n += writeSync(fd, buf, n, buf.length - n);
}
