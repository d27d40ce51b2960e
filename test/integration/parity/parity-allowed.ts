/**
 * The allowed differences between upstream's cloud controllers and our host,
 * one row each of docs/upstream-parity.md (same ids, same order; a unit test
 * checks they agree, test/unit/parity). The differential suite fails on any
 * difference no row allows and on any row no difference needed. Values are
 * after normalization (test/helpers/parity.ts): `parity-<side>-…` names.
 */
import type { AllowedDifference } from '../../helpers/parity.js';

/** Upstream's value without the uninitialized node: a backend list (`name=ip, …`) or an UpdateLoadBalancerFailed message (`… new hosts [a b …] [node names limited, total number of nodes: N], error: …`). */
function withoutUninitialized(upstream: string | undefined): string | undefined {
  const node = 'parity-<side>-provided-hostname';
  if (upstream === undefined) return undefined;
  if (upstream.startsWith('Warning '))
    return upstream.replace(` ${node}`, '').replace(/total number of nodes: (\d+)/, (_, n: string) => `total number of nodes: ${Number(n) - 1}`);
  return upstream
    .split(', ')
    .filter((b) => !b.startsWith(`${node}=`))
    .join(', ');
}

/** The start of ours' FailedToSyncNode message, and the error of an instance metadata read during an outage (as regular expressions). */
const FAILED_INIT = 'Warning from cloud-node-controller: failed to initialize node: ';
const OUTAGE = 'GetInstancesMetadata: local cloud is down \\(failAll knob\\): instances\\.getInstancesMetadata';

/** A FailedToCreateRoute message of each side, up to its error (either side's error wording is its own). */
const OURS_ROUTE_FAILED = /^Warning from route_controller: Could not create route (\S+): .+$/;
const UPSTREAM_ROUTE_FAILED = /^Warning from route_controller: Could not create route <uid> (\S+) for node \S+ after \S+: .+$/;

/** The destination CIDRs a side's FailedToCreateRoute messages (joined by ` ¦ `) name, sorted and deduplicated. */
function failedRouteCidrs(value: string | undefined, re: RegExp): string | undefined {
  const cidrs = (value ?? '').split(' ¦ ').map((m) => re.exec(m)?.[1]);
  return cidrs.some((c) => c === undefined) ? undefined : [...new Set(cidrs)].sort().join(' ');
}

const allOf = (re: RegExp) => new RegExp(`^(${re.source.slice(1, -1)})( ¦ (${re.source.slice(1, -1)}))*$`);

export const ALLOWED: readonly AllowedDifference[] = [
  {
    // The node whose init failed (provided-node-ip the cloud does not report) is uninitialized: ours leaves it out,
    // of every load balancer made meanwhile and of the node list of a failed host update's event.
    id: 'uninitialized-not-backend',
    path: /^(cloud\/lb\/[^/]+\/backends|event\/Service\/[^/]+\/UpdateLoadBalancerFailed)$/,
    ours: /^(?!.*parity-<side>-provided-hostname\b)/,
    upstream: /parity-<side>-provided-hostname(=127\.0\.40\.5|[ \]])/,
    // Otherwise the same: ours is upstream's without that node.
    relation: (ours, upstream) => ours === withoutUninitialized(upstream),
  },
  {
    id: 'failed-to-sync-node-event',
    // The provided IP the cloud does not report, and the instance metadata read answered NotFound, Unimplemented,
    // RetryInfo or UNAVAILABLE (outage). The node whose init keeps failing is retried all along, so a retry may
    // also meet an outage scenario (whether one does is timing): that message may come besides its own.
    path: /^event\/Node\/parity-<side>-(provided-hostname|md-notfound|md-unimpl|md-retry|md-outage)\/FailedToSyncNode$/,
    ours: new RegExp(
      `^(${FAILED_INIT}${OUTAGE} ¦ )?${FAILED_INIT}(node IP 127\\.0\\.40\\.9 \\(from --node-ip\\) is not among the addresses the cloud reports for this node|GetInstancesMetadata: injected \\(fail knob\\): instances\\.getInstancesMetadata on parity-<side>-md-(notfound|unimpl|retry)|${OUTAGE})$`,
    ),
    upstream: null,
  },
  {
    // A route create answered with an error (UNAVAILABLE, RetryInfo, Unimplemented): the same Warning on the same Node,
    // for the same CIDRs; upstream's message also has the name hint (the Node's UID), the node's name and the time taken.
    id: 'failed-to-create-route-message',
    path: /^event\/Node\/[^/]+\/FailedToCreateRoute$/,
    ours: allOf(OURS_ROUTE_FAILED),
    upstream: allOf(UPSTREAM_ROUTE_FAILED),
    relation: (ours, upstream) => {
      const cidrs = failedRouteCidrs(ours, OURS_ROUTE_FAILED);
      return cidrs !== undefined && cidrs === failedRouteCidrs(upstream, UPSTREAM_ROUTE_FAILED);
    },
  },
  {
    id: 'batched-reads',
    path: /^cloud\/reads$/,
    ours: /^instance metadata, instance status, route list$/,
    upstream: /^instance metadata, instance status, load balancer status, route list$/,
  },
  {
    // ImplementedElsewhere: no load balancer was made; at deletion upstream's GetLoadBalancer finds none and calls nothing.
    id: 'delete-without-status-read',
    path: /^cloud\/calls\/elsewhere$/,
    ours: /^delete \(failed\), ensure \(failed\)$/,
    upstream: /^ensure \(failed\)$/,
  },
  {
    id: 'deleting-event-without-status-read',
    path: /^event\/Service\/elsewhere\/DeletingLoadBalancer$/,
    ours: /^Normal from service-controller: Deleting load balancer$/,
    upstream: null,
  },
  {
    id: 'lb-conditions',
    path: /^svc\/[^/]+\/conditions$/,
    ours: /LoadBalancer(Provisioning|Serving)/,
    upstream: /^\[\]$/,
    // Ours has only its two load-balancer conditions, each with a reason.
    relation: (ours) =>
      (JSON.parse(ours ?? '[]') as { type: string; reason?: string }[]).every(
        (c) => ['LoadBalancerProvisioning', 'LoadBalancerServing'].includes(c.type) && !!c.reason,
      ),
  },
];
