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

/** Node names listed in an UpdateLoadBalancerFailed message at most (upstream's maxNodeNamesToLog). */
const MAX_NODE_NAMES_IN_EVENT = 20;

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

/**
 * The message of a Warning `UpdateLoadBalancerFailed`, as upstream's
 * (`Error updating load balancer with new hosts %v [node names limited,
 * total number of nodes: %d], error: %v`): the names of the first
 * MAX_NODE_NAMES_IN_EVENT nodes, sorted, then `<k more>` for the rest.
 */
export function hostsUpdateFailedMessage(nodeNames: readonly string[], error: string): string {
  const names = [...new Set(nodeNames.slice(0, MAX_NODE_NAMES_IN_EVENT))].sort();
  if (nodeNames.length > MAX_NODE_NAMES_IN_EVENT) names.push(`<${nodeNames.length - MAX_NODE_NAMES_IN_EVENT} more>`);
  return `Error updating load balancer with new hosts [${names.join(' ')}] [node names limited, total number of nodes: ${nodeNames.length}], error: ${error}`;
}
