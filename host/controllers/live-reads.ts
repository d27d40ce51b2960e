/**
 * Counting live reads (ccm_live_reads_total, controller-metrics.ts): every
 * controller that checks a destructive decision against the API server
 * counts each such read here, by controller, resource and outcome.
 */
import type { Registry } from 'prom-client';
import { liveReadMetrics } from '../controller-metrics.js';
import { LiveReadOutcomes } from '../names.js';

/**
 * What a live read found, against what the cache said:
 * - `confirmed`: the object exists and agrees with the cache on the deciding fact;
 * - `changed`: it exists and does not (another uid, Ready again, still wanted, present where the cache had none);
 * - `gone`: it does not exist (404; for a decision taken on its absence, that confirms it);
 * - `error`: the read failed; nothing destructive was done.
 */
export type LiveReadOutcome = (typeof LiveReadOutcomes)[keyof typeof LiveReadOutcomes];

/** Counts one live read of `resource` by `controller`. */
export type LiveReadCount = (outcome: LiveReadOutcome) => void;

/** A function counting one live read of `resource` (plural, e.g. `nodes`) by `controller`; a no-op without a registry. */
export function liveReadCounter(controller: string, resource: string, registry?: Registry): LiveReadCount {
  if (!registry) return () => undefined;
  const { reads } = liveReadMetrics(registry);
  return (outcome) => reads.inc({ controller, resource, outcome });
}
