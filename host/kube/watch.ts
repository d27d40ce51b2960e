/**
 * A raw watch: `GET <path>?watch=true` whose answer is a stream of JSON
 * lines, one `{type, object}` event each (ADDED, MODIFIED, DELETED, BOOKMARK,
 * ERROR with a Status object). Objects are handed over as parsed JSON, with
 * no model deserialization. A line longer than {@link MAX_WATCH_LINE_BYTES}
 * ends the watch with an error.
 */
import http from 'node:http';
import https from 'node:https';
import { ApiError, type Query, type RestClient } from './rest.js';

/** Longest watch event accepted (one object; Kubernetes limits objects to ~1.5 MB in etcd). */
export const MAX_WATCH_LINE_BYTES = 16 * 2 ** 20;
/** Largest error answer read when a watch is refused. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

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
          pending.push(chunk.subarray(start, nl));
          const line = Buffer.concat(pending).toString('utf8');
          pending = [];
          pendingBytes = 0;
          start = nl + 1;
          if (line.trim() === '') continue;
          let event: { type?: unknown; object?: unknown };
          try {
            event = JSON.parse(line) as typeof event;
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
