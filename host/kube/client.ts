/**
 * API clients whose every request goes through a client-side QPS/burst
 * limiter (client-go's rest.Config QPS/Burst), is measured in client-go's
 * `rest_client_*` metrics (rest-metrics.ts) and goes over keep-alive connections of a
 * {@link ConnectionPool} (rest.ts). They are the host's own lean client, not
 * `@kubernetes/client-node`: importing that costs ~70 MB of RSS, and its
 * model deserialization CPU on every object. client-node stays the source of
 * the object types (type-only imports, free at run time).
 */
import type { Registry } from 'prom-client';
import { CoordinationV1Api, CoreV1Api, StorageV1Api } from './api.js';
import { ConnectionPool } from './connections.js';
import { KubeCredentials, type Authenticator } from './credentials.js';
import type { KubeConfigData } from './kubeconfig.js';
import { BucketRateLimiter } from './ratelimiter.js';
import { ApiError, RestClient, type WriteFence } from './rest.js';
import { restMetrics } from './rest-metrics.js';
import { DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS } from '../config/options.js';

/** Options of {@link makeClients}. */
export interface MakeClientsOptions {
  /** `--kube-api-qps`, > 0. Default {@link DEFAULT_KUBE_API_QPS}. */
  qps?: number;
  /** `--kube-api-burst`, >= 1. Default {@link DEFAULT_KUBE_API_BURST}. */
  burst?: number;
  /** User-Agent header of every request, e.g. `cloud-controller-manager/v0.1.0`. */
  userAgent: string;
  /** Where to publish the `rest_client_*` metrics (rest-metrics.ts); not measured when absent. */
  registry?: Registry;
  /** Authenticates requests instead of `kc`'s current user (per-controller tokens). */
  auth?: Authenticator;
  /** Keep-alive connections to share with other clients of the process; default a pool of these clients' own. */
  connections?: ConnectionPool;
  /** Bound of each (non-watch) request in ms; default REQUEST_TIMEOUT_MS (rest.ts). Shorter in tests. */
  requestTimeoutMs?: number;
  /** Asked before every write of these clients (rest.ts, write fencing); none: writes are not fenced. */
  fence?: WriteFence;
}

/** API clients sharing one limiter, one metric and one connection configuration. */
export interface KubeClients {
  core: CoreV1Api;
  coordination: CoordinationV1Api;
  storage: StorageV1Api;
  /** The client under them, for other paths and for watches (watch.ts). */
  rest: RestClient;
  /** The connections their requests go over (watches of the same identity may use it too). */
  connections: ConnectionPool;
}

/**
 * Creates API clients for `kc`'s current cluster and user. All requests made
 * through them (from any of the clients) share one token bucket of `qps`
 * requests per second and `burst` size, carry `userAgent`, go over
 * keep-alive connections of `connections`, and are measured in the
 * `rest_client_*` metrics when `registry` is given. Throws if `kc`
 * selects no cluster or the limits are out of range.
 */
export function makeClients(kc: KubeConfigData, opts: MakeClientsOptions): KubeClients {
  const credentials = new KubeCredentials(kc);
  const limiter = new BucketRateLimiter(opts.qps ?? DEFAULT_KUBE_API_QPS, opts.burst ?? DEFAULT_KUBE_API_BURST);
  const metrics = opts.registry ? restMetrics(opts.registry) : undefined;
  const connections = opts.connections ?? new ConnectionPool();
  const rest = new RestClient({
    server: credentials.server,
    auth: opts.auth ?? credentials,
    connections,
    throttle: limiter,
    userAgent: opts.userAgent,
    metrics,
    requestTimeoutMs: opts.requestTimeoutMs,
    fence: opts.fence,
  });
  return { core: new CoreV1Api(rest), coordination: new CoordinationV1Api(rest), storage: new StorageV1Api(rest), rest, connections };
}

/** Whether `err` is an API error with HTTP status `code`. */
function hasStatus(err: unknown, code: number): boolean {
  return err instanceof ApiError && err.code === code;
}

/** Whether `err` is a 409 Conflict from the API server (stale resourceVersion, or already exists on create). */
export function isConflict(err: unknown): boolean {
  return hasStatus(err, 409);
}

/** Whether `err` is a 403 Forbidden from the API server. */
export function isForbidden(err: unknown): boolean {
  return hasStatus(err, 403);
}

/** Whether `err` is a 422 Unprocessable Entity (e.g. a JSON patch whose `test` op failed: the object changed). */
export function isUnprocessable(err: unknown): boolean {
  return hasStatus(err, 422);
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
  if (!(err instanceof ApiError) || err.code !== 422) return false;
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
