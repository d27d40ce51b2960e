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
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/** Largest response body accepted (a list of many thousand objects fits). */
export const MAX_RESPONSE_BYTES = 256 * 2 ** 20;
/** Methods safe to send again when their reused connection turned out closed (Go's isReplayable). */
const REPLAYABLE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Where a request goes, as node:http takes it: what rest.ts computes once per
 * client and per request path, instead of a URL object that node:http would
 * take apart again on every request.
 */
export interface HttpTarget {
  /** `https:` or `http:`. */
  protocol: string;
  /** Without IPv6 brackets. */
  hostname: string;
  /** Undefined: the protocol's default. */
  port?: number;
  /** Path and query, already encoded. */
  path: string;
}

/** `url` as an {@link HttpTarget}. */
export function targetOf(url: URL): HttpTarget {
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { protocol: url.protocol, hostname, port: url.port ? Number(url.port) : undefined, path: url.pathname + url.search };
}

/** One HTTP request. */
export interface HttpRequest {
  method: string;
  url: URL | HttpTarget;
  headers: Record<string, string>;
  /** Text body (JSON), if any. */
  body?: string;
  agent?: http.Agent;
  /** The caller's abort: the request fails with Node's AbortError (its cause the signal's reason). */
  signal?: AbortSignal;
  /**
   * Bound of the whole request in ms, from now until the whole answer has
   * arrived (the one replay included): past it the request is destroyed and
   * fails with `timeoutError()` (default: an Error saying so). One timer per
   * request, released when it settles; no AbortController per request.
   */
  timeoutMs?: number;
  timeoutError?: () => Error;
  /**
   * Asked once the request has its connection (connected, TLS handshake
   * done), right before its bytes are written: an error refuses the request
   * (it fails with that error, nothing of it is sent). Write fencing
   * (rest.ts): this is the last moment a write can still be held back.
   */
  beforeSend?: () => Error | undefined;
}

/** A whole HTTP response. */
export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Sends `request` and reads the whole response; see the file comment for the one retry. */
export async function sendRequest(request: HttpRequest): Promise<HttpResponse> {
  const deadline = request.timeoutMs === undefined ? undefined : performance.now() + request.timeoutMs;
  try {
    return await exchange(request, deadline);
  } catch (err) {
    if (!(err instanceof StaleConnectionError) || !REPLAYABLE.has(request.method)) throw unwrap(err);
    return exchange(request, deadline).catch((e: unknown) => Promise.reject(unwrap(e)));
  }
}

/** A request that failed on a reused keep-alive connection before any response arrived. */
class StaleConnectionError extends Error {
  constructor(readonly original: Error) {
    super(original.message);
  }
}

const unwrap = (err: unknown): unknown => (err instanceof StaleConnectionError ? err.original : err);

/** Sends `request` once and reads the whole response; past `deadline` (performance.now() ms) it fails with the request's timeout error. */
function exchange(request: HttpRequest, deadline: number | undefined): Promise<HttpResponse> {
  const { method } = request;
  const target = request.url instanceof URL ? targetOf(request.url) : request.url;
  const url = { pathname: target.path.split('?', 1)[0]! };
  const options: https.RequestOptions = {
    method,
    protocol: target.protocol,
    hostname: target.hostname,
    port: target.port,
    path: target.path,
    headers: request.headers,
  };
  if (request.signal) options.signal = request.signal;
  if (request.agent) options.agent = request.agent;
  return new Promise((settle, fail) => {
    let timer: NodeJS.Timeout | undefined;
    const resolve = (r: HttpResponse): void => {
      clearTimeout(timer);
      settle(r);
    };
    const reject = (err: unknown): void => {
      clearTimeout(timer);
      fail(err);
    };
    const req = (target.protocol === 'https:' ? https : http).request(options, (res) => {
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
    if (deadline !== undefined) {
      timer = setTimeout(
        () => {
          // Rejected first: the errors destroying the request and its answer cause come after and change nothing.
          const err = request.timeoutError?.() ?? new Error(`${method} ${url.pathname}: no answer within ${request.timeoutMs} ms`);
          reject(err);
          req.destroy(err);
        },
        Math.max(0, deadline - performance.now()),
      );
    }
    const beforeSend = request.beforeSend;
    if (!beforeSend) {
      req.end(request.body);
      return;
    }
    // Nothing is written before end() (no flushHeaders), so holding it back until
    // the connection is ready holds back the whole request.
    req.once('socket', (socket) =>
      whenConnected(socket, () => {
        const refused = beforeSend();
        if (refused) req.destroy(refused);
        else req.end(request.body);
      }),
    );
  });
}

/**
 * Runs `ready` once `socket` can carry bytes to the server: at once for a
 * connected socket (a reused keep-alive one, or one handed over from the
 * agent's queue), else after its TCP connect and, for TLS, its handshake.
 * A socket that fails to connect never runs it (the request's 'error' ends it).
 */
function whenConnected(socket: Socket, ready: () => void): void {
  if (socket instanceof TLSSocket) {
    // No public flag says "handshake done" on a client TLSSocket; Node sets this one right before 'secureConnect'.
    if ((socket as TLSSocket & { _secureEstablished?: boolean })._secureEstablished) ready();
    else socket.once('secureConnect', ready);
  } else if (socket.connecting) socket.once('connect', ready);
  else ready();
}

function isReset(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}
