/**
 * Counting the volume controllers' live reads (ccm_live_reads_total, see
 * controller-metrics.ts): one counter per controller and resource.
 */
import type { Registry } from 'prom-client';
import { liveReadMetrics } from '../../controller-metrics.js';

/** `confirmed`: the destructive action went ahead; `refused`: the fresh object said otherwise (or was gone). */
export type LiveReadOutcome = 'confirmed' | 'refused';

/** A function counting one live read of `resource` by `controller`; a no-op without a registry. */
export function liveReadCounter(controller: string, resource: string, registry?: Registry): (outcome: LiveReadOutcome) => void {
  if (!registry) return () => undefined;
  const { reads } = liveReadMetrics(registry);
  return (outcome) => reads.inc({ controller, resource, outcome });
}
