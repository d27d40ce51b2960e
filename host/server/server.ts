/**
 * The health and metrics server on `--bind-address:--secure-port`, shaped
 * like kube's (k8s.io/apiserver/pkg/server/healthz):
 *
 *   GET /healthz              200 "ok", or 500 with one `[+]name ok` /
 *                             `[-]name failed: reason` line per check;
 *                             `?verbose` lists the checks on success too,
 *                             `?exclude=name` (repeatable) skips checks
 *   GET /healthz/<name>       one check: 200 "ok" or 500 "internal server error: reason"
 *   GET /livez[/<name>]       the same as /healthz (kube's liveness endpoint)
 *   GET /readyz[/<name>]      the same, over the readiness checks (upstream CCM has
 *                             no /readyz); a check is added for both endpoints
 *                             unless it names one
 *   GET /metrics              the Prometheus registry
 *   anything else             404 (405 for other methods on these paths)
 *
 * HTTPS only, as upstream, every request first through the guard
 * (guard.ts: delegated authentication and authorization; by default
 * /healthz, /readyz and /livez are open to anyone, /metrics needs `get` on
 * that path). The certificate is --tls-cert-file's or self-signed
 * (serving-cert.ts).
 */
import type http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext, type SecureContext, type SecureVersion } from 'node:tls';
import type { Registry } from 'prom-client';
import { errorMessage, type Logger } from '../log.js';
import { runChecks, type CheckResult, type HealthCheck } from './checks.js';
import type { RequestGuard } from './guard.js';
import { pickSni, type SniCert } from './sni.js';
import { flagzResponse, statuszResponse } from './zpages.js';

export type { HealthCheck } from './checks.js';

/** Default time a check may take before it counts as failed. */
const DEFAULT_CHECK_TIMEOUT_MS = 5_000;

/** Inputs of startHealthServer. */
export interface HealthServerOptions {
  /** IP address to listen on, e.g. `0.0.0.0`, `127.0.0.1` or `::`. */
  bindAddress: string;
  /** Port; 0 picks a free one (see HealthServer.port). */
  port: number;
  /** Serving certificate and TLS settings. */
  tls: ServingTls;
  /** Authenticates and authorizes every request before it is served. */
  guard: RequestGuard;
  /** Served on /metrics. */
  registry: Registry;
  log: Logger;
  /** How long one check may take. Default DEFAULT_CHECK_TIMEOUT_MS. */
  checkTimeoutMs?: number;
  /** What /statusz and /flagz show (zpages.ts); without it they are 404. */
  zpages?: {
    component: string;
    startTime: Date;
    binaryVersion: string;
    emulationVersion: string;
    flags: Readonly<Record<string, string>>;
  };
}

/** PEM certificate (chain) and key, and the TLS settings of --tls-min-version and --tls-cipher-suites. */
export interface ServingTls {
  cert: string;
  key: string;
  minVersion?: SecureVersion;
  /** OpenSSL cipher list. */
  ciphers?: string;
  /** OpenSSL key exchange group list (`--tls-curve-preferences`). */
  ecdhCurve?: string;
  /** Certificates chosen by the client's server name (`--webhook-tls-sni-cert-key`); others get cert/key. */
  sni?: readonly SniCert[];
}

/** A running health server. */
export interface HealthServer {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  /**
   * Adds a named check run on every /healthz and /readyz request: it passes
   * unless it throws, rejects or outlives the timeout. Names are unique and
   * use [a-z0-9._-]; adding one twice throws.
   */
  addCheck(name: string, fn: HealthCheck, only?: CheckEndpoint): void;
  /** Stops listening and drops open connections. Safe to call twice. */
  close(): Promise<void>;
}

const CHECK_NAME = /^[a-zA-Z0-9._-]+$/;

/** The secure port's top-level paths, as /statusz lists them. */
const SERVED_PATHS = ['/flagz', '/healthz', '/livez', '/metrics', '/readyz', '/statusz'];

/** The endpoint a check is limited to (liveness: healthz; readiness: readyz). */
export type CheckEndpoint = 'healthz' | 'readyz';

/**
 * Starts the server and resolves once it listens; rejects (with a message
 * naming the flags to change) when the TLS files cannot be read or the
 * address cannot be bound. A `ping` check that always passes is built in, as
 * in kube.
 */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const log = opts.log.child({ component: 'health-server' });
  const timeoutMs = opts.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS;
  const checks = new Map<string, HealthCheck>([['ping', () => {}]]);
  const limitedTo = new Map<string, CheckEndpoint>();
  const checksOf = (root: string) => new Map([...checks].filter(([n]) => (limitedTo.get(n) ?? root) === root));

  const handler: http.RequestListener = (req, res) => {
    guarded(req, res).catch((err: unknown) => {
      log.error({ err: errorMessage(err), path: req.url }, 'health server request failed');
      if (!res.headersSent) send(res, 500, `internal server error: ${errorMessage(err)}\n`);
      else res.destroy();
    });
  };

  async function guarded(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (await opts.guard.admit(req, res)) await handle(req, res);
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://health.invalid');
    const [, root, name, ...rest] = url.pathname.split('/');
    const zpage = (root === 'statusz' || root === 'flagz') && name === undefined && opts.zpages !== undefined;
    const known =
      root === 'healthz' || root === 'livez' || root === 'readyz' ? rest.length === 0 : (root === 'metrics' && name === undefined) || zpage;
    if (!known) return send(res, 404, '404 page not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(res, 405, 'method not allowed\n');
    }
    if (zpage) {
      const z = opts.zpages!;
      const accept = req.headers.accept;
      const r =
        root === 'statusz'
          ? statuszResponse(accept, {
              component: z.component,
              startTime: z.startTime,
              binaryVersion: z.binaryVersion,
              emulationVersion: z.emulationVersion,
              runtimeVersion: `node ${process.version}`,
              paths: SERVED_PATHS,
            })
          : flagzResponse(accept, z.component, z.flags);
      for (const [k, v] of Object.entries(r.headers ?? {})) res.setHeader(k, v);
      return send(res, r.status, r.body, r.contentType);
    }
    if (root === 'metrics') {
      const body = await opts.registry.metrics();
      return send(res, 200, body, opts.registry.contentType);
    }
    if (name !== undefined && name !== '') return handleOne(res, root!, safeDecode(name));
    return handleAll(res, root!, url.searchParams);
  }

  async function handleOne(res: http.ServerResponse, root: string, name: string): Promise<void> {
    const fn = checksOf(endpointOf(root)).get(name);
    if (fn === undefined) return send(res, 404, `404 page not found: no check named ${JSON.stringify(name)}\n`);
    const [result] = await runChecks([[name, fn]], timeoutMs);
    if (result!.error === undefined) return send(res, 200, 'ok');
    log.warn({ check: name, reason: result!.error }, 'health check failed');
    return send(res, 500, `internal server error: ${result!.error}\n`);
  }

  async function handleAll(res: http.ServerResponse, root: string, params: URLSearchParams): Promise<void> {
    const excluded = new Set(params.getAll('exclude'));
    const these = checksOf(endpointOf(root));
    const selected = [...these].filter(([n]) => !excluded.has(n));
    const results = await runChecks(selected, timeoutMs);
    const failed = results.filter((r) => r.error !== undefined);
    const lines = [...results.map(statusLine), ...[...excluded].filter((n) => these.has(n)).map((n) => `[+]${n} excluded: ok`)];
    if (failed.length > 0) {
      log.warn({ endpoint: root, failed: Object.fromEntries(failed.map((r) => [r.name, r.error])) }, 'health checks failed');
      return send(res, 500, `${lines.join('\n')}\n${root} check failed\n`);
    }
    if (params.has('verbose')) return send(res, 200, `${lines.join('\n')}\n${root} check passed\n`);
    return send(res, 200, 'ok');
  }

  const server = createHttpsServer(opts.tls, opts.guard, handler);
  await listen(server, opts.bindAddress, opts.port);
  const port = (server.address() as AddressInfo).port;
  log.info(
    { address: opts.bindAddress, port, clientCertificates: opts.guard.requestsClientCerts },
    opts.zpages ? 'serving /healthz, /readyz, /metrics, /statusz and /flagz over HTTPS' : 'serving /healthz, /readyz and /metrics over HTTPS',
  );

  let closing: Promise<void> | undefined;
  return {
    port,
    addCheck(name, fn, only) {
      if (!CHECK_NAME.test(name)) throw new Error(`health check name ${JSON.stringify(name)} is invalid: use letters, digits, ".", "_" and "-"`);
      if (checks.has(name)) throw new Error(`health check ${JSON.stringify(name)} is already registered: use a different name`);
      checks.set(name, fn);
      if (only) limitedTo.set(name, only);
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** /livez serves the liveness (healthz) checks. */
function endpointOf(root: string): CheckEndpoint {
  return root === 'readyz' ? 'readyz' : 'healthz';
}

function statusLine(r: CheckResult): string {
  return r.error === undefined ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.error}`;
}

function send(res: http.ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Client certificates are asked for (when the guard may trust some) but not
 * required, and checked by the guard, as upstream: a request may
 * authenticate with a token instead, or be anonymous.
 */
function tlsContextOptions(tls: ServingTls, guard: RequestGuard, cert: { cert: string; key: string } = tls): https.ServerOptions {
  return {
    cert: cert.cert,
    key: cert.key,
    minVersion: tls.minVersion,
    ciphers: tls.ciphers,
    ...(tls.ecdhCurve ? { ecdhCurve: tls.ecdhCurve } : {}),
    ...(guard.requestsClientCerts ? { ca: [...guard.clientCaPems] } : {}),
  };
}

/**
 * An HTTPS server whose trusted client CAs follow the guard's (a rotated CA
 * applies to new connections). With `tls.sni`, a client asking for a name
 * one of those certificates answers for gets it (same TLS settings), others
 * get `tls.cert`.
 */
export function createGuardedHttpsServer(tls: ServingTls, guard: RequestGuard, handler: http.RequestListener): https.Server {
  const client = guard.requestsClientCerts ? { requestCert: true, rejectUnauthorized: false } : {};
  const sni = tls.sni ?? [];
  // Built now, so a bad SNI certificate fails the start rather than a handshake; rebuilt when the trusted client CAs change.
  let contexts = sni.map((c) => createSecureContext(tlsContextOptions(tls, guard, c)));
  const SNICallback =
    sni.length === 0
      ? undefined
      : (servername: string, cb: (err: Error | null, ctx?: SecureContext) => void) => {
          const i = pickSni(servername, sni);
          cb(null, i === undefined ? undefined : contexts[i]);
        };
  const server = https.createServer({ ...tlsContextOptions(tls, guard), ...client, ...(SNICallback ? { SNICallback } : {}) }, handler);
  const unsubscribe = guard.onTrustChange(() => {
    server.setSecureContext(tlsContextOptions(tls, guard));
    contexts = sni.map((c) => createSecureContext(tlsContextOptions(tls, guard, c)));
  });
  server.on('close', unsubscribe);
  return server;
}

function createHttpsServer(tls: ServingTls, guard: RequestGuard, handler: http.RequestListener): https.Server {
  try {
    return createGuardedHttpsServer(tls, guard, handler);
  } catch (err) {
    throw new Error(
      `cannot serve HTTPS on --secure-port: ${errorMessage(err)}: check --tls-cert-file and --tls-private-key-file (a PEM certificate and its matching key), --tls-min-version, --tls-cipher-suites and --tls-curve-preferences`,
      { cause: err },
    );
  }
}

function listen(server: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const hint = err.code === 'EADDRINUSE' ? 'stop the other process or choose another --secure-port' : 'check --bind-address and --secure-port';
      reject(new Error(`cannot serve /healthz and /metrics on ${host}:${port}: ${err.message}: ${hint}`, { cause: err }));
    };
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
