/**
 * The live check before a route is deleted (issue 29, item 5 and finding 5):
 * the plan (plan.ts) proposes deletions from the Node cache, which is scoped
 * by --node-selector and may be behind; a deletion happens only when a live
 * GET of the route's target Node confirms the deciding fact.
 *
 * Verdicts, pure (the caller does the GET, once per target node):
 * - GET → 404: the Node is gone → delete;
 * - GET failed otherwise: nothing is known → keep (retried next reconcile);
 * - the Node exists but the cache does not hold it (or holds another uid):
 *   it is outside --node-selector (another host's shard, a mistyped
 *   selector, a relabelled node) or the cache is behind → keep;
 * - the Node is ours and the cloud marks the route a blackhole (its instance
 *   is gone) → delete, as upstream (recreated if still wanted);
 * - the Node is ours and its live pod CIDRs still contain the destination →
 *   keep (the cache is behind);
 * - otherwise its pod CIDRs really changed → delete.
 * A route without a target node has nothing to confirm: deleted only when
 * the cloud marks it a blackhole.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { CloudRoute } from '../../cloud-routes.js';
import { parseCidr } from '../../util/cidr.js';
import { podCidrsOf } from '../node-ref.js';

/** What a live GET of the target Node returned. */
export type LiveNode = { state: 'gone' } | { state: 'exists'; node: V1Node } | { state: 'error'; error: string };

export type KeepWhy = 'node_exists' | 'cache_behind' | 'read_failed' | 'no_target';

export type Verdict = { delete: true; why: 'node_gone' | 'blackhole' | 'pod_cidr_changed' } | { delete: false; why: KeepWhy };

const canonical = (text: string) => parseCidr(text)?.text ?? text;

/** Whether the plan's proposal to delete `route` stands; `cached` = the Node the cache holds under the route's target name. */
export function confirmRouteDeletion(route: CloudRoute, cached: V1Node | undefined, live: LiveNode | undefined): Verdict {
  if (!route.targetNode || !live) return route.blackhole ? { delete: true, why: 'blackhole' } : { delete: false, why: 'no_target' };
  if (live.state === 'gone') return { delete: true, why: 'node_gone' };
  if (live.state === 'error') return { delete: false, why: 'read_failed' };
  if (!cached || cached.metadata?.uid !== live.node.metadata?.uid) return { delete: false, why: 'node_exists' };
  if (route.blackhole) return { delete: true, why: 'blackhole' };
  const dest = canonical(route.destinationCidr);
  if (podCidrsOf(live.node).some((c) => canonical(c) === dest)) return { delete: false, why: 'cache_behind' };
  return { delete: true, why: 'pod_cidr_changed' };
}
