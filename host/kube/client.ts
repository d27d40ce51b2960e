/**
 * API server connection: kubeconfig loading with the CCM's flag semantics,
 * and API clients whose every request goes through a client-side QPS/burst
 * limiter (client-go's rest.Config QPS/Burst) and is counted in
 * `rest_client_requests_total`.
 *
 * client-node (1.x) builds requests in generated API classes from a
 * `Configuration` (createConfiguration: base server, auth methods,
 * middleware, httpApi). We install our own `httpApi` (throttling and
 * counting around http-library.ts) rather than a middleware: it sees request
 * and response together (for the metric), and unlike static middleware it cannot be
 * dropped by a per-call `{ middleware }` option (whose default merge strategy
 * is "replace"). Watches (client-node `Watch`) do not use `httpApi` and are
 * therefore neither limited nor counted (client-go throttles watch requests
 * too; here the informer's reconnect backoff bounds their rate). Requests go
 * over keep-alive connections from a {@link ConnectionPool} (connections.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  ServerConfiguration,
  createConfiguration,
  setHeaderMiddleware,
  wrapHttpLibrary,
  type ApiConstructor,
  type ApiType,
  type HttpLibrary,
  type RequestContext,
  type ResponseContext,
  type SecurityAuthentication,
} from '@kubernetes/client-node';
import { Counter, type Registry } from 'prom-client';
import { sleep } from './backoff.js';
import { ConnectionPool, pooledAuthentication } from './connections.js';
import { NodeHttpLibrary } from './http-library.js';
import { registeredMetric } from './metrics.js';
import { BucketRateLimiter } from './ratelimiter.js';

/** Default of `--kube-api-qps`: sustained API requests per second. */
export const DEFAULT_KUBE_API_QPS = 20;
/** Default of `--kube-api-burst`: API requests allowed in a burst. */
export const DEFAULT_KUBE_API_BURST = 30;
/** Service-account token file whose presence (with the service env vars) signals in-cluster. */
const IN_CLUSTER_TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Inputs of {@link loadKubeConfig}. */
export interface LoadKubeConfigOptions {
  /** `--kubeconfig`: path of a kubeconfig file. */
  kubeconfig?: string;
  /** `--master`: API server URL, overriding the server of the selected cluster. */
  master?: string;
  /** Prefix of the service-account files for in-cluster config. Default '' (tests inject). */
  inClusterPathPrefix?: string;
}

/**
 * Loads the API server connection settings, first match wins:
 * 1. `kubeconfig` (the `--kubeconfig` flag);
 * 2. the KUBECONFIG environment variable (path-list; files merged, first file's context wins);
 * 3. in-cluster service account (KUBERNETES_SERVICE_HOST/PORT set and the token file present);
 * 4. `master` alone: that URL with no credentials (as upstream BuildConfigFromFlags).
 * Unlike kubectl, ~/.kube/config is never read implicitly. `master`, when
 * given, replaces the server URL of the selected cluster (an `http:` URL
 * also sets skipTLSVerify, which client-node requires for plain HTTP). Throws if no source
 * applies (telling the operator to pass --kubeconfig), or if a file cannot be
 * read/parsed, or the config selects no cluster.
 */
export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfig {
  const env = process.env;
  const prefix = opts.inClusterPathPrefix ?? '';
  const kc = new KubeConfig();
  const envPaths = (env.KUBECONFIG ?? '').split(path.delimiter).filter((p) => p);
  if (opts.kubeconfig) {
    loadFile(kc, opts.kubeconfig, '--kubeconfig');
  } else if (envPaths.length > 0) {
    loadFile(kc, envPaths[0]!, 'KUBECONFIG');
    for (const extra of envPaths.slice(1)) {
      const more = new KubeConfig();
      loadFile(more, extra, 'KUBECONFIG');
      kc.mergeConfig(more, true);
    }
  } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && fs.existsSync(prefix + IN_CLUSTER_TOKEN_PATH)) {
    kc.loadFromCluster(prefix);
  } else if (opts.master) {
    kc.loadFromClusterAndUser({ name: 'master', server: opts.master, skipTLSVerify: isPlainHttp(opts.master) }, { name: 'anonymous' });
  } else {
    throw new Error(
      'no API server configuration: pass --kubeconfig (or set KUBECONFIG), or run in a cluster with a service account',
    );
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`kubeconfig selects no cluster (current context ${JSON.stringify(kc.getCurrentContext())})`);
  const master = opts.master;
  if (master && cluster.server !== master) {
    kc.clusters = kc.clusters.map((c) =>
      c === cluster ? { ...c, server: master, skipTLSVerify: c.skipTLSVerify || isPlainHttp(master) } : c,
    );
  }
  return kc;
}

/**
 * client-node (1.x) refuses `http:` servers unless the cluster says
 * skipTLSVerify (there is no TLS to verify); an explicit plain-HTTP --master
 * is taken as that consent, as upstream accepts such URLs.
 */
function isPlainHttp(url: string): boolean {
  return url.startsWith('http:');
}

function loadFile(kc: KubeConfig, file: string, source: string): void {
  try {
    kc.loadFromFile(file);
  } catch (err) {
    throw new Error(`cannot load kubeconfig ${file} from ${source}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Something that hands out request slots: returns how long to wait (ms) for the reserved slot. */
export interface RequestThrottle {
  when(): number;
}

/**
 * Wraps an `HttpLibrary` so each request first waits for a slot from
 * `throttle`, then is sent and counted in `requests` (labels: `code` = HTTP
 * status or `<error>` when no response arrived, `method`, `host`).
 */
export function throttledHttpLibrary(
  inner: HttpLibrary,
  throttle: RequestThrottle,
  requests?: Counter<'code' | 'method' | 'host'>,
): HttpLibrary {
  return wrapHttpLibrary({
    async send(request: RequestContext): Promise<ResponseContext> {
      const delayMs = throttle.when();
      if (delayMs > 0) await sleep(delayMs);
      const labels = { method: request.getHttpMethod(), host: new URL(request.getUrl()).host };
      try {
        const response = await inner.send(request).toPromise();
        requests?.inc({ ...labels, code: String(response.httpStatusCode) });
        return response;
      } catch (err) {
        requests?.inc({ ...labels, code: '<error>' });
        throw err;
      }
    },
  });
}

/** Options of {@link makeClients}. */
export interface MakeClientsOptions {
  /** `--kube-api-qps`, > 0. Default {@link DEFAULT_KUBE_API_QPS}. */
  qps?: number;
  /** `--kube-api-burst`, >= 1. Default {@link DEFAULT_KUBE_API_BURST}. */
  burst?: number;
  /** User-Agent header of every request, e.g. `cloud-controller-manager/v0.1.0`. */
  userAgent: string;
  /** Where to publish `rest_client_requests_total`; not counted when absent. */
  registry?: Registry;
  /** Authenticates requests instead of `kc`'s user (per-controller tokens); TLS settings still come from it. */
  auth?: SecurityAuthentication;
  /** Keep-alive connections to share with other clients of the process; default a pool of these clients' own. */
  connections?: ConnectionPool;
}

/** API clients sharing one limiter, one metric and one connection configuration. */
export interface KubeClients {
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  /** The connections their requests go over (watches of the same identity may use it too). */
  connections: ConnectionPool;
  /** Builds any other generated API class (e.g. `DiscoveryV1Api`) on the same limited configuration. */
  make<T extends ApiType>(api: ApiConstructor<T>): T;
}

/**
 * Creates API clients for `kc`'s current cluster and user. All requests made
 * through them (from any of the clients) share one token bucket of `qps`
 * requests per second and `burst` size, carry `userAgent`, go over
 * keep-alive connections of `connections`, and are counted in
 * `rest_client_requests_total` when `registry` is given. Throws if `kc`
 * selects no cluster or the limits are out of range.
 */
export function makeClients(kc: KubeConfig, opts: MakeClientsOptions): KubeClients {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig selects no cluster');
  const limiter = new BucketRateLimiter(opts.qps ?? DEFAULT_KUBE_API_QPS, opts.burst ?? DEFAULT_KUBE_API_BURST);
  const registry = opts.registry;
  const requests = registry
    ? registeredMetric(registry, 'rest_client_requests_total', Counter<'code' | 'method' | 'host'>, () =>
        new Counter({
          name: 'rest_client_requests_total',
          help: 'Number of HTTP requests, partitioned by status code, method, and host.',
          labelNames: ['code', 'method', 'host'] as const,
          registers: [registry],
        }),
      )
    : undefined;
  const connections = opts.connections ?? new ConnectionPool();
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: pooledAuthentication(opts.auth ?? kc, connections) },
    middleware: [setHeaderMiddleware('User-Agent', opts.userAgent)],
    httpApi: throttledHttpLibrary(wrapHttpLibrary(new NodeHttpLibrary()), limiter, requests),
  });
  const make = <T extends ApiType>(api: ApiConstructor<T>): T => new api(configuration);
  return { core: make(CoreV1Api), coordination: make(CoordinationV1Api), connections, make };
}

/** Whether `err` is a client-node API error with HTTP status `code`. */
function hasStatus(err: unknown, code: number): boolean {
  return err instanceof ApiException && err.code === code;
}

/** Whether `err` is a 409 Conflict from the API server (stale resourceVersion, or already exists on create). */
export function isConflict(err: unknown): boolean {
  return hasStatus(err, 409);
}

/** Whether `err` is a 404 Not Found from the API server. */
export function isNotFound(err: unknown): boolean {
  return hasStatus(err, 404);
}

/**
 * Whether a write guarded by the object's uid (`metadata.uid` in the patch
 * body) failed because that object is gone: 404, or 422 Invalid with the
 * cause `metadata.uid` (the name now belongs to another object, and the API
 * server refuses to change a uid).
 */
export function isGoneOrReplaced(err: unknown): boolean {
  if (isNotFound(err)) return true;
  if (!(err instanceof ApiException) || err.code !== 422) return false;
  let body: unknown = err.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return false;
    }
  }
  const causes = (body as { details?: { causes?: { field?: string }[] } } | undefined)?.details?.causes ?? [];
  return causes.some((c) => c.field === 'metadata.uid');
}
