/**
 * The HTTP transport of the host's API requests: client-node's `HttpLibrary`
 * contract over `node:http(s)` with the request's agent (a pooled keep-alive
 * agent, connections.ts).
 *
 * It replaces client-node's default (node-fetch 2), whose check for
 * truncated chunked responses misfires on keep-alive connections: when a
 * request waiting for a free connection takes over the socket before the
 * previous response has emitted 'close', that response fails with a false
 * "Premature close" (node-fetch/node-fetch#1767). Responses are read whole
 * (bounded by {@link MAX_RESPONSE_BYTES}); no compression is asked for, as a
 * host sits next to its API server and gzip would cost both sides CPU.
 *
 * Like Go's transport, a GET/HEAD/OPTIONS that fails because the server
 * closed the idle keep-alive connection it was sent on is sent once more on
 * another connection; other requests fail with the error.
 */
import http from 'node:http';
import https from 'node:https';
import { ResponseContext, SelfDecodingBody, type PromiseHttpLibrary, type RequestContext } from '@kubernetes/client-node';

/** Largest response body accepted (a list of many thousand objects fits). */
export const MAX_RESPONSE_BYTES = 256 * 2 ** 20;
/** Methods safe to send again when their reused connection turned out closed (Go's isReplayable). */
const REPLAYABLE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** client-node `PromiseHttpLibrary` over node:http(s); wrap with `wrapHttpLibrary`. */
export class NodeHttpLibrary implements PromiseHttpLibrary {
  async send(request: RequestContext): Promise<ResponseContext> {
    try {
      return await exchange(request);
    } catch (err) {
      if (!(err instanceof StaleConnectionError) || !REPLAYABLE.has(request.getHttpMethod())) throw unwrap(err);
      return exchange(request).catch((e: unknown) => Promise.reject(unwrap(e)));
    }
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
function exchange(request: RequestContext): Promise<ResponseContext> {
  const url = new URL(request.getUrl());
  const body = request.getBody();
  if (body !== undefined && typeof body !== 'string') {
    return Promise.reject(new Error(`unsupported request body (${body.constructor.name}) for ${request.getHttpMethod()} ${url.pathname}: only text bodies are sent`));
  }
  const agent = request.getAgent();
  const options: https.RequestOptions = { method: request.getHttpMethod(), headers: request.getHeaders(), signal: request.getSignal() };
  if (agent) options.agent = agent;
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy(new Error(`response to ${request.getHttpMethod()} ${url.pathname} exceeds ${MAX_RESPONSE_BYTES} bytes; narrow the request (label selector, namespace)`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve(new ResponseContext(res.statusCode ?? 0, flatHeaders(res.headers), new SelfDecodingBody(Promise.resolve(Buffer.concat(chunks))))));
      res.on('error', reject);
      res.on('close', () => {
        if (!res.complete) reject(new Error(`connection closed while reading the response to ${request.getHttpMethod()} ${url.pathname}`));
      });
    });
    req.on('error', (err) => reject(req.reusedSocket && isReset(err) ? new StaleConnectionError(err) : err));
    req.end(body);
  });
}

function isReset(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

/** Header values as one string each (repeated headers joined with ", ", as fetch does). */
function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
