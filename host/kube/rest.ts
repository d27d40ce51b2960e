/**
 * The API client under the typed facades (api.ts): JSON requests to API
 * paths, with no model deserialization. Objects come back as the API server
 * sent them (typed as client-node's V1* interfaces, which are type-only
 * imports): timestamps stay RFC 3339 strings, where client-node would have
 * made them Date objects.
 *
 * Every request first waits for a slot from the client's throttle (the
 * client-side QPS/burst limit, client-go's rest.Config QPS/Burst), carries the
 * credentials' TLS settings and headers and the User-Agent, goes over a
 * keep-alive connection of a {@link ConnectionPool}, and is measured in
 * client-go's `rest_client_*` metrics (rest-metrics.ts). Watches (watch.ts) take a
 * connection of the pool's watch agent and are neither limited nor counted
 * (client-go throttles them too; here the informer's reconnect backoff bounds
 * their rate).
 *
 * Every request is bounded by {@link REQUEST_TIMEOUT_MS} from the moment it is
 * sent (after the throttle's wait), so a request on a connection that died
 * silently (half-open, black-holed) fails with a {@link RequestTimeoutError}
 * instead of holding its caller (and any lock the caller holds) forever.
 * Watches are not bounded this way: the informer's liveness check is theirs.
 *
 * Write fencing: a client made with a {@link WriteFence} asks it about every
 * write (any method but GET/HEAD/OPTIONS) twice: before waiting for a slot,
 * and again at the last moment, once the connection is up and right before
 * the request's bytes are handed to it (http-library.ts). A refused write is
 * never sent and fails with {@link FencedWriteError}.
 */
import { inSpan, SpanKind, tracingStarted } from '../../sdk/tracing.js';
import type http from 'node:http';
import { sleep } from './backoff.js';
import type { ConnectionPool, Purpose } from './connections.js';
import type { Authenticator } from './credentials.js';
import { sendRequest, targetOf, type HttpTarget } from './http-library.js';
import { verbMetrics, type RestMetrics, type VerbMetrics } from './rest-metrics.js';

/**
 * Longest a request to the API server may take, in ms, from being sent until
 * its whole answer has arrived. kube-apiserver ends every non-long-running
 * request after its own `--request-timeout` (default 60 s) with a 504, so an
 * answer later than this would not come anyway: past it the connection is
 * taken for dead. client-go sets no default (rest.Config.Timeout 0) and relies
 * on callers' context deadlines and HTTP/2 pings; the host's HTTP/1.1
 * connections have no pings, hence this bound on every request.
 */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * A request that got no (whole) answer within its timeout: it was aborted and
 * its connection closed. The outcome of a write is unknown: the server may
 * have applied it.
 */
export class RequestTimeoutError extends Error {
  constructor(
    method: string,
    path: string,
    /** The bound that passed, in ms. */
    readonly timeoutMs: number,
  ) {
    super(`${method} ${path}: no answer within ${timeoutMs / 1000} s (request timeout); the connection was closed`);
    this.name = 'RequestTimeoutError';
  }
}

/** Something that hands out request slots: returns how long to wait (ms) for the reserved slot. */
export interface RequestThrottle {
  when(): number;
}

/** Query parameters; undefined values are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/** Options of one request. */
export interface RequestOptions {
  query?: Query;
  /** Sent as JSON. */
  body?: unknown;
  /** Content-Type of `body`; default application/json. */
  contentType?: string;
  /** Aborts the request. */
  signal?: AbortSignal;
  /**
   * The caller never reads a successful answer: it is read and measured but
   * not decoded, and the request resolves to undefined. An error answer is
   * still decoded into its {@link ApiError}. (Decoding a Node's JSON answer
   * costs about as much as writing the request: a tenth of a write's CPU.)
   */
  discardAnswer?: boolean;
}

/** An API server answer other than 2xx; `body` is the parsed Status (or the text, if not JSON). */
export class ApiError extends Error {
  constructor(
    /** HTTP status. */
    readonly code: number,
    readonly body: unknown,
    method: string,
    path: string,
  ) {
    const message = (body as { message?: unknown } | undefined)?.message;
    super(`${method} ${path}: HTTP ${code}${typeof message === 'string' ? `: ${message}` : ''}`);
    this.name = 'ApiError';
  }
}

/**
 * Asked right before a write leaves the process: a reason to refuse it, or
 * undefined to let it go. Synchronous and cheap (no I/O): it runs on every
 * write. The host's fence is the leader election's fresh-lease check.
 */
export type WriteFence = () => string | undefined;

/**
 * A write the {@link WriteFence} refused. It was NOT sent: the API server
 * never saw it, so nothing changed. Retryable like any transient error (the
 * replica that holds the lease again, or its successor, does the work); never
 * an answer about the object (not a NotFound, not a Conflict).
 */
export class FencedWriteError extends Error {
  override name = 'FencedWriteError';
  readonly transient = true;
  constructor(method: string, path: string, reason: string) {
    super(`${method} ${path} not sent: ${reason}`);
  }
}

/**
 * An API path a URL would leave as it is: printable ASCII without the
 * characters a URL path percent-encodes or splits on (space " # < > ? ` { } \)
 * and without dot segments.
 */
const PLAIN_PATH = /^\/[!$-;=@-[\]-_a-z|~]*$/;
const DOT_SEGMENT = /\/(?:\.|%2e)/i;

/** The URL of a request to API path `path` under the server URL `base`, with `query`'s defined, non-empty values. */
export function requestUrl(base: URL, path: string, query: Query | undefined): URL {
  const url = new URL(base.pathname.replace(/\/$/, '') + path, base);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  return url;
}

/**
 * Path and query (`path`) and path alone (`pathname`) of {@link requestUrl}'s
 * URL, built as strings when `path` is plain (every path the host builds),
 * with no URL object per request. `prefix` is `base`'s path without its
 * trailing slash.
 */
export function requestPath(base: URL, path: string, query: Query | undefined, prefix: string): { path: string; pathname: string } {
  if (!PLAIN_PATH.test(path) || DOT_SEGMENT.test(path)) {
    const url = requestUrl(base, path, query);
    return { path: url.pathname + url.search, pathname: url.pathname };
  }
  const pathname = prefix + path;
  let params: URLSearchParams | undefined;
  if (query)
    for (const k in query) {
      const v = query[k];
      if (v !== undefined && v !== '') (params ??= new URLSearchParams()).set(k, String(v));
    }
  return { path: params ? `${pathname}?${params.toString()}` : pathname, pathname };
}

/** Methods that change nothing; the fence lets them pass. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * `resource` or `resource/subresource` of an API path (`services/status` for
 * /api/v1/namespaces/ns/services/name/status): the write span's name, low in
 * cardinality (no namespace or object name).
 */
export function resourceOf(path: string): string {
  const m = /^\/(?:api\/v1|apis\/[^/]+\/[^/]+)(?:\/namespaces\/[^/]+)?\/([^/?]+)(?:\/[^/?]+\/([^/?]+))?/.exec(path);
  if (!m) return path.split('?')[0]!;
  return m[2] ? `${m[1]}/${m[2]}` : m[1]!;
}

/** Settings of a {@link RestClient}. */
export interface RestClientOptions {
  /** API server URL. */
  server: string;
  auth: Authenticator;
  connections: ConnectionPool;
  throttle: RequestThrottle;
  userAgent: string;
  metrics?: RestMetrics;
  /** Bound of each request in ms (> 0); default {@link REQUEST_TIMEOUT_MS}. Shorter in tests. */
  requestTimeoutMs?: number;
  /** Asked before every write; none: writes are not fenced (see the file comment). */
  fence?: WriteFence;
}

/** JSON over HTTP to one API server; see the file comment. */
export class RestClient {
  private readonly base: URL;
  /** The server URL's path without its trailing slash: every API path goes under it. */
  private readonly prefix: string;
  /** The server as node:http takes it (path filled in per request), computed once. */
  private readonly target: Omit<HttpTarget, 'path'>;
  /** `host:port` of the server: the `host` label of the client metrics. */
  private readonly host: string;
  /** The client metrics by verb, bound on first use. */
  private readonly verbs = new Map<string, VerbMetrics>();

  constructor(private readonly o: RestClientOptions) {
    this.base = new URL(o.server);
    this.prefix = this.base.pathname.replace(/\/$/, '');
    const { protocol, hostname, port } = targetOf(this.base);
    this.target = { protocol, hostname, port };
    this.host = this.base.host;
  }

  /** The API server URL. */
  get server(): string {
    return this.o.server;
  }

  /**
   * Sends `method path` and returns the parsed JSON answer. Throws
   * {@link ApiError} on a non-2xx status, {@link RequestTimeoutError} when no
   * whole answer arrived within the request timeout, and the abort reason
   * when `opts.signal` aborts; other errors are the transport's.
   */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    // Writes get a CLIENT span when tracing is on (a child of the reconcile's span); reads would only be noise.
    if (READ_METHODS.has(method) || !tracingStarted()) return this.send<T>(method, path, opts);
    const resource = resourceOf(path);
    return inSpan(
      `kube ${method} ${resource}`,
      { kind: SpanKind.CLIENT, attributes: { 'http.request.method': method, 'k8s.resource': resource, 'url.path': path.split('?')[0]! } },
      async (span) => {
        try {
          return await this.send<T>(method, path, opts);
        } catch (err) {
          if (err instanceof ApiError) span.setAttribute('http.response.status_code', err.code);
          throw err;
        }
      },
    );
  }

  /** {@link RestClient.request} without the span. */
  /** This client's metrics of `method`, bound once per verb; none without a registry. */
  private metricsOf(method: string): VerbMetrics | undefined {
    const m = this.o.metrics;
    if (!m) return undefined;
    let bound = this.verbs.get(method);
    if (!bound) this.verbs.set(method, (bound = verbMetrics(m, method, this.host)));
    return bound;
  }

  private async send<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const fence = this.o.fence && !READ_METHODS.has(method) ? this.o.fence : undefined;
    // Refused early too, so a fenced write takes no slot of the throttle.
    const refusedEarly = fence?.();
    if (refusedEarly !== undefined) throw new FencedWriteError(method, path, refusedEarly);
    const delayMs = this.o.throttle.when();
    if (delayMs > 0) await sleep(delayMs);
    const { target, pathname, headers, agent } = await this.prepareRequest(path, opts.query);
    headers.Accept = 'application/json';
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] = opts.contentType ?? 'application/json';
      // Explicit framing: Node sends a DELETE body without Content-Length or chunking, and the
      // API server then reads the body as the start of the connection's next request (HTTP 400).
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const m = this.metricsOf(method);
    m?.rateLimiter(delayMs > 0 ? delayMs / 1000 : 0);
    m?.requestSize(body === undefined ? 0 : Buffer.byteLength(body));
    const started = performance.now();
    const timeoutMs = this.o.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    let response;
    try {
      // The last check: after the throttle's wait and the credentials, once the connection is up.
      const beforeSend = fence
        ? () => {
            const refused = fence();
            return refused === undefined ? undefined : new FencedWriteError(method, path, refused);
          }
        : undefined;
      // The bound is one timer inside sendRequest, released when the request ends; the caller's signal goes to
      // node:http as it is (an AbortError with its reason), so no controller or listener per request.
      response = await sendRequest({
        method,
        url: target,
        headers,
        body,
        agent,
        signal: opts.signal,
        timeoutMs,
        timeoutError: () => new RequestTimeoutError(method, pathname, timeoutMs),
        beforeSend,
      });
    } catch (err) {
      m?.requests(err instanceof FencedWriteError ? '<fenced>' : '<error>');
      throw err;
    } finally {
      m?.duration((performance.now() - started) / 1000);
    }
    m?.requests(String(response.status));
    m?.responseSize(response.body.length);
    const ok = response.status >= 200 && response.status < 300;
    if (ok && opts.discardAnswer) return undefined as T;
    const text = response.body.toString('utf8');
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch (err) {
      if (ok) throw new Error(`${method} ${pathname}: the answer is not JSON: ${(err as Error).message}`, { cause: err });
    }
    if (!ok) throw new ApiError(response.status, parsed, method, pathname);
    return parsed as T;
  }

  /**
   * Target, path (without the query, for messages), headers and agent of a
   * request to `path` (an API path without a query; the query goes in
   * `query`). Equal to {@link RestClient.prepare}'s URL but built as a string,
   * with no URL object per request (node:http would take it apart again).
   */
  private async prepareRequest(
    path: string,
    query: Query | undefined,
  ): Promise<{ target: HttpTarget; pathname: string; headers: Record<string, string>; agent: http.Agent }> {
    const { path: full, pathname } = requestPath(this.base, path, query, this.prefix);
    const target = { ...this.target, path: full };
    const { tls, headers } = await this.o.auth.authenticate();
    headers['User-Agent'] = this.o.userAgent;
    return { target, pathname, headers, agent: this.o.connections.agentFor(target.protocol === 'https:', tls, 'request') };
  }

  /** URL, headers and agent of a request to `path` for `purpose`. */
  async prepare(path: string, query: Query | undefined, purpose: Purpose): Promise<{ url: URL; headers: Record<string, string>; agent: http.Agent }> {
    const url = requestUrl(this.base, path, query);
    const { tls, headers } = await this.o.auth.authenticate();
    headers['User-Agent'] = this.o.userAgent;
    return { url, headers, agent: this.o.connections.agentFor(url.protocol === 'https:', tls, purpose) };
  }
}
