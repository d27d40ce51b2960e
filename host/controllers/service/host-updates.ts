/**
 * Backend (host) updates for many load balancers in batch calls
 * (UpdateLoadBalancerHosts), chunked to a bound per call. A call that fails
 * as a whole fails each of its Services with the call's error (marked
 * `callFailed`, so each gets its event, and the caller can retry them
 * together), and neither drops the results of chunks already done nor stops
 * the chunks after it.
 */
import type { NodeRef } from '../../cloud.js';
import type { HostsUpdateResult, LoadBalancers, ServiceRef } from '../../cloud-load-balancers.js';
import { chunks } from '../../util/chunks.js';

/** A Service's outcome; `callFailed` when its error is that of a call that failed as a whole. */
export type ChunkedHostsResult = HostsUpdateResult & { callFailed?: true };

/**
 * One result per Service of `svcs`, in order. `observe` gets each call's
 * duration in seconds and how many Services it carried. Never rejects.
 */
export async function updateHostsInChunks(
  lbs: Pick<LoadBalancers, 'updateLoadBalancerHosts'>,
  clusterName: string,
  svcs: ServiceRef[],
  nodes: NodeRef[],
  chunkSize: number,
  observe?: (seconds: number, services: number) => void,
): Promise<ChunkedHostsResult[]> {
  const results: ChunkedHostsResult[] = [];
  for (const chunk of chunks(svcs, chunkSize)) {
    const started = performance.now();
    try {
      results.push(...(await lbs.updateLoadBalancerHosts(clusterName, chunk, nodes)));
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      results.push(...chunk.map((s) => ({ uid: s.uid, error, callFailed: true as const })));
    } finally {
      observe?.((performance.now() - started) / 1000, chunk.length);
    }
  }
  return results;
}
