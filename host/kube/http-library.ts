/**
 * The HTTP transport of the host's API requests: one request over
 * `node:http(s)` with the given agent (a pooled keep-alive agent,
 * connections.ts), the response read whole (bounded by
 * {@link MAX_RESPONSE_BYTES}). No compression is asked for, as a host sits
 * next to its API server and gzip would cost both sides CPU.
 *
 * Like Go's transport, a GET/HEAD/OPTIONS that fails because the server
 * closed the idle keep-alive connection it was sent on is sent once more on
 * another connection; other requests fail with the error.
 */
import http from 'node:http';
import https from 'node:https';

/** Largest response body accepted (a list of many thousand objects fits). */
export const MAX_RESPONSE_BYTES = 256 * 2 ** 20;
/** Methods safe to send again when their reused connection turned out closed (Go's isReplayable). */
const REPLAYABLE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** One HTTP request. */
export interface HttpRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  /** Text body (JSON), if any. */
  body?: string;
  agent?: http.Agent;
  signal?: AbortSignal;
}

/** A whole HTTP response. */
export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Sends `request` and reads the whole response; see the file comment for the one retry. */
export async function sendRequest(request: HttpRequest): Promise<HttpResponse> {
  try {
    return await exchange(request);
  } catch (err) {
    if (!(err instanceof StaleConnectionError) || !REPLAYABLE.has(request.method)) throw unwrap(err);
    return exchange(request).catch((e: unknown) => Promise.reject(unwrap(e)));
  }
}

/** A request that failed on a reused keep-alive connection before any response arrived. */
class StaleConnectionError extends Error {
  constructor(readonly original: Error) {
    super(original.message);
  }
}

const unwrap = (err: unknown): unknown => (err instanceof StaleConnectionError ? err.original : err);

/** Sends `request` once and reads the whole response. */
function exchange(request: HttpRequest): Promise<HttpResponse> {
  const { url, method } = request;
  const options: https.RequestOptions = { method, headers: request.headers, signal: request.signal };
  if (request.agent) options.agent = request.agent;
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy(
            new Error(`response to ${method} ${url.pathname} exceeds ${MAX_RESPONSE_BYTES} bytes; narrow the request (label selector, namespace)`),
          );
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
      res.on('close', () => {
        if (!res.complete) reject(new Error(`connection closed while reading the response to ${method} ${url.pathname}`));
      });
    });
    req.on('error', (err) => reject(req.reusedSocket && isReset(err) ? new StaleConnectionError(err) : err));
    req.end(request.body);
  });
}

function isReset(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}
