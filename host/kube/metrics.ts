/**
 * Shared prom-client plumbing for the kube package: several objects (one work
 * queue per controller, one client set per process) publish into the same
 * metric families, distinguished by labels.
 */
import type { Counter, Histogram, LabelValues, Metric, Registry } from 'prom-client';

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

/** Records one observation into a histogram's series for one label set. */
export type BoundObserve = (value: number) => void;
/** Adds 1 to a counter's series for one label set. */
export type BoundInc = () => void;

/** The parts of prom-client's (15.x) Histogram a bound observer writes to; checked at bind time. */
interface HistogramInternals {
  hashMap: Record<string, { sum: number; count: number; bucketValues: Record<string, number> } | undefined>;
  upperBounds: readonly number[];
  sortedLabelNames: readonly string[];
  enableExemplars: boolean;
}

/** The parts of prom-client's (15.x) Counter a bound increment writes to. */
interface CounterInternals {
  hashMap: Record<string, { value: number } | undefined>;
  sortedLabelNames: readonly string[];
  enableExemplars?: boolean;
}

/** prom-client's key of a label set in a metric's hashMap (util.js hashObject with the metric's sorted label names). */
function seriesKey(sortedLabelNames: readonly string[], labels: Record<string, string | number>): string {
  let key = '';
  for (const name of sortedLabelNames) if (labels[name] !== undefined) key += `${name}:${labels[name]},`;
  return key;
}

/**
 * `histogram.observe(labels, value)` for a fixed label set, at a fraction of its cost: prom-client's observe
 * validates and hashes the labels and turns the bucket bound into a property name on every call (2–3 % of
 * the host's CPU at one observation per API request, four per request). The first observation (and any
 * after `reset()`/`remove()` dropped the series, or of a value prom-client refuses) goes through
 * prom-client itself, which creates the series; later ones add to that series directly, as prom-client
 * would (sum, count, the first bucket whose bound is ≥ the value). The exposition is prom-client's own.
 * If the histogram is not shaped as expected (another prom-client, exemplars on), every call goes through
 * prom-client.
 */
export function boundObserve<L extends string>(histogram: Histogram<L>, labels: LabelValues<L>): BoundObserve {
  const slow: BoundObserve = (value) => histogram.observe(labels, value);
  const h = histogram as unknown as Partial<HistogramInternals>;
  if (typeof h.hashMap !== 'object' || !Array.isArray(h.upperBounds) || !Array.isArray(h.sortedLabelNames) || h.enableExemplars !== false) {
    return slow;
  }
  const internals = h as HistogramInternals;
  const key = seriesKey(internals.sortedLabelNames, labels as Record<string, string | number>);
  const bounds = [...internals.upperBounds];
  const names = bounds.map(String);
  let series = internals.hashMap[key];
  return (value) => {
    const s = series;
    if (s === undefined || internals.hashMap[key] !== s || !Number.isFinite(value)) {
      slow(value);
      series = internals.hashMap[key];
      return;
    }
    s.sum += value;
    s.count += 1;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        s.bucketValues[names[i]!]! += 1;
        return;
      }
    }
  };
}

/** `counter.inc(labels)` for a fixed label set, without hashing the labels each time (see {@link boundObserve}). */
export function boundInc<L extends string>(counter: Counter<L>, labels: LabelValues<L>): BoundInc {
  const slow: BoundInc = () => counter.inc(labels);
  const c = counter as unknown as Partial<CounterInternals>;
  if (typeof c.hashMap !== 'object' || !Array.isArray(c.sortedLabelNames) || c.enableExemplars) return slow;
  const internals = c as CounterInternals;
  const key = seriesKey(internals.sortedLabelNames, labels as Record<string, string | number>);
  let series = internals.hashMap[key];
  return () => {
    const s = series;
    if (s === undefined || internals.hashMap[key] !== s) {
      slow();
      series = internals.hashMap[key];
      return;
    }
    s.value += 1;
  };
}
