/**
 * A raw watch: `GET <path>?watch=true` whose answer is a stream of JSON
 * lines, one `{type, object}` event each (ADDED, MODIFIED, DELETED, BOOKMARK,
 * ERROR with a Status object). Objects are handed over as parsed JSON, with
 * no model deserialization. A line longer than {@link MAX_WATCH_LINE_BYTES}
 * ends the watch with an error. With `skipManagedFields` (for a cache that
 * drops them anyway), an object's `metadata.managedFields` is cut from the
 * text before it is parsed, so the objects arrive without that key.
 */
import http from 'node:http';
import https from 'node:https';
import { ApiError, type Query, type RestClient } from './rest.js';

/** Longest watch event accepted (one object; Kubernetes limits objects to ~1.5 MB in etcd). */
export const MAX_WATCH_LINE_BYTES = 16 * 2 ** 20;
/** Largest error answer read when a watch is refused. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

const MANAGED_FIELDS = '"managedFields":[';
const METADATA = '"metadata":{';

/**
 * `line` (one watch event) without its object's `metadata.managedFields`, or `line` itself when that cannot
 * be cut for certain. The object's metadata is the first `"metadata":{` in the line (the event's `type`
 * comes before it, and a key cannot occur inside a string, whose quotes are escaped); one pass over it, strings
 * skipped whole, finds `"managedFields":[` as a member of metadata itself (not deeper) and cuts it only if
 * its array is metadata's last member, as the API server writes ObjectMeta (Go field order, managedFields
 * last). Any other shape (e.g. the sorted keys of a custom resource) is left whole. Only text is cut: the
 * rest is still parsed by JSON.parse, which refuses anything broken.
 */
export function withoutManagedFields(line: string): string {
  const meta = line.indexOf(METADATA);
  if (meta <= 0) return line;
  const before = line.charCodeAt(meta - 1);
  if (before !== 44 && before !== 123) return line;
  const open = meta + METADATA.length - 1;
  /** Nesting below metadata's own members (metadata's `{` makes it 1). */
  let depth = 0;
  /** Where the cut starts: the `,` before the key, or just after metadata's `{` when it is the first member. */
  let cutFrom = -1;
  for (let i = open; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 34) {
      // A string: to its closing quote (one not escaped by an odd run of backslashes).
      for (;;) {
        i = line.indexOf('"', i + 1);
        if (i < 0) return line;
        let slashes = 0;
        while (line.charCodeAt(i - 1 - slashes) === 92) slashes++;
        if (slashes % 2 === 0) break;
      }
    } else if (c === 123 || c === 91) {
      depth++;
      if (depth === 1 && cutFrom < 0 && line.startsWith(MANAGED_FIELDS, i + 1)) {
        cutFrom = i + 1;
        i += MANAGED_FIELDS.length - 1; // onto the array's `[`, counted next
      }
    } else if (c === 125 || c === 93) {
      depth--;
      if (depth === 1 && cutFrom >= 0) {
        // The array closed: cut only if metadata closes right after it.
        return line.charCodeAt(i + 1) === 125 ? line.slice(0, cutFrom) + line.slice(i + 1) : line;
      }
      if (depth <= 0) return line; // metadata closed without managedFields
    } else if (c === 44 && depth === 1 && cutFrom < 0 && line.startsWith(MANAGED_FIELDS, i + 1)) {
      cutFrom = i;
      i += MANAGED_FIELDS.length - 1; // onto the array's `[`, counted next
    }
  }
  return line;
}

/** Options of {@link watch}. */
export interface WatchOptions {
  /** Cut each object's `metadata.managedFields` before parsing (see {@link withoutManagedFields}): for caches that drop them. */
  skipManagedFields?: boolean;
}

/**
 * Watches `path` with `query` (resourceVersion, selectors, timeoutSeconds,
 * allowWatchBookmarks) until the server ends the stream (resolves), it fails
 * (rejects; a refused watch rejects with an {@link ApiError} carrying the HTTP
 * status, e.g. 410 Gone), or `signal` aborts (resolves). `onEvent` runs
 * synchronously for each event.
 */
export async function watch(
  rest: RestClient,
  path: string,
  query: Query,
  onEvent: (type: string, object: unknown) => void,
  signal: AbortSignal,
  opts: WatchOptions = {},
): Promise<void> {
  const { url, headers, agent } = await rest.prepare(path, { ...query, watch: true }, 'watch');
  headers.Accept = 'application/json';
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      req.destroy();
      resolve();
    };
    // Rejects first, then drops the connection without an error event (none would be listened to once the response arrived).
    let failed = false;
    const fail = (err: Error): void => {
      failed = true;
      reject(err);
      req.destroy();
    };
    const req = (url.protocol === 'https:' ? https : http).request(url, { method: 'GET', headers, agent }, (res) => {
      if (res.statusCode !== 200) {
        readError(res).then((body) => reject(new ApiError(res.statusCode ?? 0, body, 'WATCH', url.pathname)), reject);
        return;
      }
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      res.on('data', (chunk: Buffer) => {
        if (failed) return;
        let start = 0;
        for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
          // A line within one chunk (the usual case) is decoded in place, without a copy.
          let line: string;
          if (pending.length === 0) line = chunk.toString('utf8', start, nl);
          else {
            pending.push(chunk.subarray(start, nl));
            line = Buffer.concat(pending).toString('utf8');
            pending = [];
          }
          pendingBytes = 0;
          start = nl + 1;
          if (line.trim() === '') continue;
          let event: { type?: unknown; object?: unknown };
          try {
            event = parseEvent(line, opts.skipManagedFields === true) as typeof event;
          } catch (err) {
            fail(new Error(`watch ${url.pathname}: an event is not JSON: ${(err as Error).message}`));
            return;
          }
          if (signal.aborted || failed) return;
          onEvent(String(event.type), event.object);
        }
        pendingBytes += chunk.length - start;
        if (pendingBytes > MAX_WATCH_LINE_BYTES) {
          fail(new Error(`watch ${url.pathname}: an event exceeds ${MAX_WATCH_LINE_BYTES} bytes`));
          return;
        }
        if (start < chunk.length) pending.push(chunk.subarray(start));
      });
      res.on('end', () => resolve());
      res.on('error', reject);
      res.on('close', () => {
        if (!res.complete && !signal.aborted) reject(new Error(`watch ${url.pathname}: connection closed mid-stream`));
      });
    });
    req.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
    req.on('close', () => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    req.end();
  });
}

/** One event line as JSON; with `skipManagedFields`, parsed without them when they can be cut (the whole line otherwise). */
function parseEvent(line: string, skipManagedFields: boolean): unknown {
  if (skipManagedFields) {
    const cut = withoutManagedFields(line);
    if (cut !== line) {
      try {
        return JSON.parse(cut);
      } catch {
        // Not the shape withoutManagedFields expects after all: the whole line decides.
      }
    }
  }
  return JSON.parse(line);
}

/** The (bounded) answer of a refused watch: parsed Status, or its text. */
function readError(res: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_ERROR_BODY_BYTES) chunks.push(c);
    });
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(JSON.parse(text));
      } catch {
        resolve(text);
      }
    });
    res.on('error', () => resolve(undefined));
  });
}
