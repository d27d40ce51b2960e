/**
 * Shared prom-client plumbing for the kube package: several objects (one work
 * queue per controller, one client set per process) publish into the same
 * metric families, distinguished by labels.
 */
import type { Metric, Registry } from 'prom-client';

/**
 * Returns the metric called `name` already registered on `registry` if it is
 * an instance of `type`; otherwise calls `create`, which must construct the
 * metric with `registers: [registry]`. Lets independent objects share one
 * family (e.g. `workqueue_depth{name=...}` for every queue). Throws (from
 * prom-client) if `name` is registered with a different metric type.
 */
export function registeredMetric<M extends Metric>(registry: Registry, name: string, type: abstract new (...args: never[]) => M, create: () => M): M {
  const existing = registry.getSingleMetric(name);
  return existing instanceof type ? existing : create();
}
