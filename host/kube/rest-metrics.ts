/**
 * The API client's metrics, named and labelled as client-go's
 * (k8s.io/component-base/metrics/prometheus/restclient), so dashboards built
 * for the upstream CCM read them unchanged. `verb` and `method` are the HTTP
 * method, `host` the API server's host:port. Watches are not measured (see
 * rest.ts).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { boundInc, boundObserve, registeredMetric, type BoundInc, type BoundObserve } from './metrics.js';

/** client-go's latency buckets (seconds). */
const LATENCY_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
/** client-go's size buckets (bytes). */
const SIZE_BUCKETS = [64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216];

/** What one client records per request. */
export interface RestMetrics {
  /** `rest_client_requests_total{code, method, host}`; code is the HTTP status or `<error>` when no answer came. */
  requests: Counter<'code' | 'method' | 'host'>;
  /** `rest_client_request_duration_seconds{verb, host}`: from sending to the whole answer, the throttle wait excluded. */
  duration: Histogram<'verb' | 'host'>;
  /** `rest_client_rate_limiter_duration_seconds{verb, host}`: time spent waiting for the client-side QPS/burst limit. */
  rateLimiter: Histogram<'verb' | 'host'>;
  /** `rest_client_request_size_bytes{verb, host}`. */
  requestSize: Histogram<'verb' | 'host'>;
  /** `rest_client_response_size_bytes{verb, host}`. */
  responseSize: Histogram<'verb' | 'host'>;
}

function histogram(registry: Registry, name: string, help: string, buckets: number[]): Histogram<'verb' | 'host'> {
  return registeredMetric(
    registry,
    name,
    Histogram<'verb' | 'host'>,
    () => new Histogram({ name, help, buckets, labelNames: ['verb', 'host'] as const, registers: [registry] }),
  );
}

/** The API client metrics on `registry`; every client of the process shares the families. */
export function restMetrics(registry: Registry): RestMetrics {
  return {
    requests: registeredMetric(
      registry,
      'rest_client_requests_total',
      Counter<'code' | 'method' | 'host'>,
      () =>
        new Counter({
          name: 'rest_client_requests_total',
          help: 'Number of HTTP requests, partitioned by status code, method, and host.',
          labelNames: ['code', 'method', 'host'] as const,
          registers: [registry],
        }),
    ),
    duration: histogram(
      registry,
      'rest_client_request_duration_seconds',
      'Request latency in seconds. Broken down by verb, and host.',
      LATENCY_BUCKETS,
    ),
    rateLimiter: histogram(
      registry,
      'rest_client_rate_limiter_duration_seconds',
      'Client side rate limiter latency in seconds. Broken down by verb, and host.',
      LATENCY_BUCKETS,
    ),
    requestSize: histogram(registry, 'rest_client_request_size_bytes', 'Request size in bytes. Broken down by verb and host.', SIZE_BUCKETS),
    responseSize: histogram(registry, 'rest_client_response_size_bytes', 'Response size in bytes. Broken down by verb and host.', SIZE_BUCKETS),
  };
}

/**
 * A client's metrics for one verb (HTTP method) on its host, each series bound once
 * (metrics.ts boundObserve): what a request records without prom-client hashing its labels four times.
 */
export interface VerbMetrics {
  rateLimiter: BoundObserve;
  requestSize: BoundObserve;
  duration: BoundObserve;
  responseSize: BoundObserve;
  /** Adds 1 to `rest_client_requests_total{code, method, host}`. */
  requests(code: string): void;
}

/** {@link VerbMetrics} of `verb` on `host`; a client keeps one per verb. */
export function verbMetrics(m: RestMetrics, verb: string, host: string): VerbMetrics {
  const labels = { verb, host };
  const byCode = new Map<string, BoundInc>();
  return {
    rateLimiter: boundObserve(m.rateLimiter, labels),
    requestSize: boundObserve(m.requestSize, labels),
    duration: boundObserve(m.duration, labels),
    responseSize: boundObserve(m.responseSize, labels),
    requests(code) {
      let inc = byCode.get(code);
      if (!inc) byCode.set(code, (inc = boundInc(m.requests, { code, method: verb, host })));
      inc();
    },
  };
}
