/**
 * Every controller's own metrics, defined here (the host's are in
 * metrics.ts; the work queue's and the API client's in host/kube). Each
 * function is idempotent per registry: controllers sharing a registry share
 * the families. Upstream's names, help and buckets where upstream has the
 * metric (dashboards built for the upstream CCM work unchanged); `ccm_*` are
 * ours.
 */
import { Counter, Gauge, Histogram, type Metric, type Registry } from 'prom-client';
import { registeredMetric } from './kube/metrics.js';

/** A counter, gauge or histogram called `name` on `registry`, made once. */
function metric<M extends Metric>(registry: Registry, type: new (cfg: never) => M, cfg: { name: string; help: string } & Record<string, unknown>): M {
  return registeredMetric(registry, cfg.name, type, () => new type({ ...cfg, registers: [registry] } as never));
}

/**
 * The node lifecycle controller's (ours), as one controller instance
 * records them: with `provider` (the host runs several providers, one
 * instance each) every family has a `provider` label and these are that
 * provider's series; without, the families have no label at all (a
 * one-provider host's series, exactly as before). A host's instances all
 * pass a provider or none, so each family is made one way.
 */
export function lifecycleMetrics(registry: Registry, provider?: string) {
  const labelNames = provider === undefined ? [] : ['provider'];
  const labels = provider === undefined ? {} : { provider };
  const heldBackTotal = metric(registry, Counter<string>, {
    name: 'ccm_node_lifecycle_deletions_held_back_total',
    help: 'Deletions of Nodes whose instance is gone that the --node-deletion-limit brake held back, counted once per node and pass.',
    labelNames,
  });
  const heldBack = metric(registry, Gauge<string>, {
    name: 'ccm_node_lifecycle_nodes_held_back',
    help: 'Nodes whose deletion the --node-deletion-limit brake held back in the last pass.',
    labelNames,
  });
  const passDuration = metric(registry, Histogram<string>, {
    name: 'ccm_node_lifecycle_pass_duration_seconds',
    help: 'Duration of one node lifecycle pass (status lookup and API writes).',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    labelNames,
  });
  const ledgerFailures = metric(registry, Counter<string>, {
    name: 'ccm_node_lifecycle_deletion_record_failures_total',
    help: 'Passes that deleted no Node because the --node-deletion-limit record (a Lease) could not be read or written.',
    labelNames,
  });
  const notReady = metric(registry, Gauge<string>, {
    name: 'ccm_node_lifecycle_not_ready_nodes',
    help: 'NotReady nodes the last node lifecycle pass looked up in the cloud.',
    labelNames,
  });
  // The provider's counters exist from the start, at 0, as an unlabelled counter does.
  heldBackTotal.inc(labels, 0);
  ledgerFailures.inc(labels, 0);
  return {
    heldBackTotal: { inc: (n: number) => heldBackTotal.inc(labels, n) },
    heldBack: { set: (n: number) => heldBack.set(labels, n) },
    passDuration: { observe: (seconds: number) => passDuration.observe(labels, seconds) },
    ledgerFailures: { inc: () => ledgerFailures.inc(labels) },
    notReady: { set: (n: number) => notReady.set(labels, n) },
  };
}
export type LifecycleMetrics = ReturnType<typeof lifecycleMetrics>;

/** Node ownership (ours; host/ownership/gate.ts), shared by the controllers that act on Nodes. */
export function ownershipMetrics(registry: Registry) {
  return {
    conflicts: metric(registry, Gauge<'controller'>, {
      name: 'ccm_node_ownership_conflicts',
      help: 'Nodes that two or more providers claim (providerID prefix or node selector), which the controller leaves alone, by controller.',
      labelNames: ['controller'],
    }),
  };
}

/** The route controller's (upstream's name). */
export function routeMetrics(registry: Registry) {
  return {
    syncs: metric(registry, Counter<'outcome' | 'trigger'>, {
      name: 'route_controller_route_sync_total',
      help: 'Route reconciles (upstream v1.37 metric), by trigger (periodic: --route-reconciliation-period; node_change: a Node added, deleted or with new pod CIDRs or addresses) and outcome (error: the reconcile failed or a route could not be created; changed: a route was created or deleted; else noop).',
      labelNames: ['outcome', 'trigger'],
    }),
    keptRoutes: metric(registry, Counter<'why'>, {
      name: 'ccm_route_deletions_refused_total',
      help: 'Route deletions the cache proposed and the live read refused (ours), by why (node_exists, cache_behind, read_failed, no_target).',
      labelNames: ['why'],
    }),
  };
}

/** The orphaned load balancer sweep's (ours). */
export function orphanSweepMetrics(registry: Registry) {
  return {
    found: metric(registry, Counter<'outcome'>, {
      name: 'ccm_orphan_load_balancers_total',
      help: 'Orphaned load balancers found by the sweep, by outcome (deleted, dry_run, failed; foreign: tagged with another cluster UID, untagged: with none, each counted once and never deleted).',
      labelNames: ['outcome'],
    }),
  };
}

/**
 * Live reads (ours; issue 29: the cache never decides a destructive action
 * alone): a request to the API server, not the informer cache, made right
 * before a destructive decision to check the fact that decided it. One
 * counter for every controller, so the cost is one query (the bench reports
 * it beside the writes). Counted through liveReadCounter (live-reads.ts).
 */
export function liveReadMetrics(registry: Registry) {
  return {
    reads: metric(registry, Counter<'controller' | 'resource' | 'outcome'>, {
      name: 'ccm_live_reads_total',
      help: 'Reads from the API server (not the cache) checking the fact behind a destructive decision, by controller, resource (plural, e.g. nodes) and outcome (confirmed: the live object agrees with the cache; changed: it does not; gone: it does not exist; error: the read failed and nothing was done).',
      labelNames: ['controller', 'resource', 'outcome'],
    }),
  };
}

/**
 * Deferrals (ours; protocol 1.1): the provider answered "not now" (DEFERRED)
 * with its own reason, by controller and that reason. The reason set is the
 * provider's (CamelCase words; invalid ones count as Unspecified), small by
 * the protocol's advice.
 */
export function deferralMetrics(registry: Registry) {
  return {
    deferred: metric(registry, Counter<'controller' | 'reason'>, {
      name: 'ccm_cloud_deferred_total',
      help: 'Cloud calls the provider answered with "not now" (DEFERRED, protocol 1.1), retried after its delay without a Warning event, by controller and the provider\'s reason.',
      labelNames: ['controller', 'reason'],
    }),
  };
}

/** Upstream's service controller metrics (k8s.io/cloud-provider controllers/service/metrics.go). */

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
  return {
    nodeSyncLatency: metric(registry, Histogram, {
      name: 'service_controller_nodesync_latency_seconds',
      help: 'A metric measuring the latency for nodesync which updates loadbalancer hosts on cluster node updates.',
      buckets: LATENCY_BUCKETS,
    }),
    updateHostLatency: metric(registry, Histogram, {
      name: 'service_controller_update_loadbalancer_host_latency_seconds',
      help: 'A metric measuring the latency for updating each load balancer hosts.',
      buckets: LATENCY_BUCKETS,
    }),
    loadBalancerSyncs: metric(registry, Counter, {
      name: 'service_controller_loadbalancer_sync_total',
      help: 'A metric counting the amount of times any load balancer has been configured, as an effect of service/node changes on the cluster',
    }),
    nodeSyncErrors: metric(registry, Counter, {
      name: 'service_controller_nodesync_error_total',
      help: 'A metric counting the amount of times any load balancer has been configured and errored, as an effect of node changes on the cluster',
    }),
  };
}
