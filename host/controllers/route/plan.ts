/**
 * The route controller's decisions, as a pure function of the nodes, the
 * cloud's routes (when listed) and the cluster CIDRs: which routes must
 * exist, which to create and delete, and which nodes have problems.
 *
 * Rules (upstream route_controller.go unless noted):
 * - every pod CIDR of a node (spec.podCIDRs, else spec.podCIDR) gets a route
 *   to that node; routes are matched by (target node, destination CIDR);
 * - a route is the controller's to delete only when its first or last
 *   address lies inside a cluster CIDR; such a route is deleted when it is a
 *   blackhole or no node claims it;
 * - not upstream: a pod CIDR outside the cluster CIDRs gets no route (it
 *   could never be cleaned up) and a problem; pod CIDRs of different nodes
 *   that overlap are resolved deterministically: a claim whose route already
 *   exists wins, then the older node, then the smaller name; the others get
 *   a problem and no route, so an existing route is never lost to a
 *   conflicting write by someone else.
 */
import type { NodeAddress } from '../../cloud.js';
import type { CloudRoute, DesiredRoute } from '../../cloud-routes.js';
import { cidrContains, cidrHasAddress, cidrOverlaps, lastAddress, makeCidr, parseCidr, type Cidr } from '../../util/cidr.js';

export interface PlanNode {
  name: string;
  /** Creation time in ms (older wins a conflict). */
  createdMs: number;
  /** Pod CIDRs as written on the Node. */
  podCidrs: string[];
  addresses: NodeAddress[];
}

export interface NodeProblem {
  /** Event reason. */
  reason: 'conflict' | 'outside' | 'invalid';
  message: string;
}

export interface RoutePlan {
  /** Routes that should exist, by node (nodes with at least one pod CIDR have an entry, maybe empty). */
  desired: Map<string, DesiredRoute[]>;
  /** Desired routes that do not exist yet (all of them when routes were not listed). */
  toCreate: DesiredRoute[];
  /** Existing routes the controller is responsible for and that must go. */
  toDelete: CloudRoute[];
  /** Pod CIDRs that get no route, by node. */
  problems: Map<string, NodeProblem[]>;
}

interface Claim {
  node: PlanNode;
  cidr: Cidr;
  exists: boolean;
}

const key = (node: string, cidr: string) => `${node}\u0000${cidr}`;

/** Whether the controller manages a route to `dest` (upstream: first or last address inside a cluster CIDR). */
function isResponsible(dest: Cidr, clusterCidrs: readonly Cidr[]): boolean {
  const last = lastAddress(dest);
  return clusterCidrs.some((c) => cidrHasAddress(c, dest.family, dest.network) || cidrHasAddress(c, dest.family, last));
}

/** `existing` undefined = routes not listed (batch mode without conflicts). */
export function planRoutes(nodes: readonly PlanNode[], existing: readonly CloudRoute[] | undefined, clusterCidrs: readonly Cidr[]): RoutePlan {
  const problems = new Map<string, NodeProblem[]>();
  const problem = (node: string, p: NodeProblem) => problems.set(node, [...(problems.get(node) ?? []), p]);
  const live = new Set<string>();
  for (const r of existing ?? []) if (!r.blackhole) live.add(key(r.targetNode, r.destinationCidr));

  const claims: Claim[] = [];
  const desired = new Map<string, DesiredRoute[]>();
  for (const node of nodes) {
    if (node.podCidrs.length === 0) continue;
    desired.set(node.name, []);
    const seen = new Set<string>();
    for (const text of node.podCidrs) {
      const cidr = parseCidr(text);
      if (!cidr) {
        problem(node.name, { reason: 'invalid', message: `pod CIDR ${JSON.stringify(text)} of node ${node.name} is not a CIDR` });
        continue;
      }
      if (seen.has(cidr.text)) continue;
      seen.add(cidr.text);
      if (!clusterCidrs.some((c) => cidrContains(c, cidr))) {
        problem(node.name, {
          reason: 'outside',
          message: `pod CIDR ${cidr.text} of node ${node.name} is not inside --cluster-cidr ${clusterCidrs.map((c) => c.text).join(',')}; no route is created for it`,
        });
        continue;
      }
      claims.push({ node, cidr, exists: live.has(key(node.name, cidr.text)) });
    }
  }

  // Overlapping CIDRs share their network masked to the shortest prefix in
  // play, so bucketing by it keeps the overlap check linear in practice.
  const minPrefix = { 4: 128, 6: 128 } as Record<4 | 6, number>;
  for (const c of claims) minPrefix[c.cidr.family] = Math.min(minPrefix[c.cidr.family], c.cidr.prefix);
  const bucketOf = (c: Cidr) => `${c.family}:${makeCidr(c.family, c.network, minPrefix[c.family]).text}`;
  claims.sort(
    (a, b) =>
      Number(b.exists) - Number(a.exists) ||
      a.node.createdMs - b.node.createdMs ||
      (a.node.name < b.node.name ? -1 : a.node.name > b.node.name ? 1 : 0),
  );
  const accepted = new Map<string, Claim[]>();
  const wanted = new Set<string>();
  const toCreate: DesiredRoute[] = [];
  for (const claim of claims) {
    const bucket = accepted.get(bucketOf(claim.cidr)) ?? [];
    const clash = bucket.find((o) => cidrOverlaps(o.cidr, claim.cidr));
    if (clash) {
      problem(claim.node.name, {
        reason: 'conflict',
        message: `pod CIDR ${claim.cidr.text} of node ${claim.node.name} overlaps pod CIDR ${clash.cidr.text} of node ${clash.node.name}; only node ${clash.node.name} gets a route`,
      });
      continue;
    }
    bucket.push(claim);
    accepted.set(bucketOf(claim.cidr), bucket);
    const route: DesiredRoute = { targetNode: claim.node.name, targetNodeAddresses: claim.node.addresses, destinationCidr: claim.cidr.text };
    desired.get(claim.node.name)!.push(route);
    wanted.add(key(claim.node.name, claim.cidr.text));
    if (!claim.exists) toCreate.push(route);
  }

  const toDelete: CloudRoute[] = [];
  for (const r of existing ?? []) {
    const dest = parseCidr(r.destinationCidr);
    if (!dest || !isResponsible(dest, clusterCidrs)) continue;
    if (r.blackhole || !wanted.has(key(r.targetNode, r.destinationCidr))) toDelete.push(r);
  }
  return { desired, toCreate, toDelete, problems };
}
