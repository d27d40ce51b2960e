/**
 * Upstream's service controller metrics (k8s.io/cloud-provider
 * controllers/service/metrics.go), same names, help and buckets, so
 * dashboards built for the upstream CCM work unchanged.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { registeredMetric } from '../../kube/metrics.js';

/** Upstream's buckets for both latencies: 1 s to 16384 s, doubling. */
const LATENCY_BUCKETS = Array.from({ length: 15 }, (_, i) => 2 ** i);

export interface ServiceMetrics {
  /** One observation per node sync (a pass over every load balancer after a node-set change). */
  readonly nodeSyncLatency: Histogram;
  /** One observation per load balancer whose hosts were updated (a batch call's duration counts for each of its load balancers). */
  readonly updateHostLatency: Histogram;
  /** Load balancers whose hosts were updated, as upstream counts them. */
  readonly loadBalancerSyncs: Counter;
  /** Host updates of one load balancer that failed. */
  readonly nodeSyncErrors: Counter;
}

/** The metrics on `registry` (shared by every service controller using it). */
export function serviceMetrics(registry: Registry): ServiceMetrics {
  const registers = [registry];
  return {
    nodeSyncLatency: registeredMetric(
      registry,
      'service_controller_nodesync_latency_seconds',
      Histogram,
      () =>
        new Histogram({
          name: 'service_controller_nodesync_latency_seconds',
          help: 'A metric measuring the latency for nodesync which updates loadbalancer hosts on cluster node updates.',
          buckets: LATENCY_BUCKETS,
          registers,
        }),
    ),
    updateHostLatency: registeredMetric(
      registry,
      'service_controller_update_loadbalancer_host_latency_seconds',
      Histogram,
      () =>
        new Histogram({
          name: 'service_controller_update_loadbalancer_host_latency_seconds',
          help: 'A metric measuring the latency for updating each load balancer hosts.',
          buckets: LATENCY_BUCKETS,
          registers,
        }),
    ),
    loadBalancerSyncs: registeredMetric(
      registry,
      'service_controller_loadbalancer_sync_total',
      Counter,
      () =>
        new Counter({
          name: 'service_controller_loadbalancer_sync_total',
          help: 'A metric counting the amount of times any load balancer has been configured, as an effect of service/node changes on the cluster',
          registers,
        }),
    ),
    nodeSyncErrors: registeredMetric(
      registry,
      'service_controller_nodesync_error_total',
      Counter,
      () =>
        new Counter({
          name: 'service_controller_nodesync_error_total',
          help: 'A metric counting the amount of times any load balancer has been configured and errored, as an effect of node changes on the cluster',
          registers,
        }),
    ),
  };
}
