/**
 * Operator-side route changes for the `localcloud route add|delete` CLI: a
 * route someone made by hand in the cloud console, e.g. to check that the
 * route controller removes strays inside the cluster CIDR and keeps others.
 */
import { parseCidr } from './ip.js';
import { DEFAULT_CLUSTER_NAME, routeName } from './names.js';
import { nowIso } from './context.js';
import type { RouteRecord, StateStore } from './state.js';

/** Adds a route to `targetNode` for `cidr` in `clusterName`; fails when the destination is taken. */
export async function addRoute(store: StateStore, clusterName: string, targetNode: string, cidrText: string): Promise<RouteRecord> {
  const cidr = parseCidr(cidrText);
  if (!cidr) throw new Error(`${JSON.stringify(cidrText)} is not a CIDR`);
  if (!targetNode) throw new Error('--node is required');
  const cluster = clusterName || DEFAULT_CLUSTER_NAME;
  return store.update((draft) => {
    const taken = draft.routes.find((r) => r.clusterName === cluster && r.destinationCidr === cidr.text);
    if (taken) throw new Error(`route ${taken.name} already sends ${cidr.text} to node ${taken.targetNode}`);
    const r: RouteRecord = {
      name: routeName(cluster, targetNode, cidr.text),
      clusterName: cluster,
      targetNode,
      destinationCidr: cidr.text,
      targetNodeAddresses: [],
      createdAt: nowIso(),
    };
    draft.routes.push(r);
    return r;
  });
}

/** Deletes the routes of `clusterName` named `ref` or with destination `ref`; returns how many. */
export async function deleteRoutes(store: StateStore, clusterName: string, ref: string): Promise<number> {
  const cidr = parseCidr(ref);
  const cluster = clusterName || DEFAULT_CLUSTER_NAME;
  return store.update((draft) => {
    const before = draft.routes.length;
    draft.routes = draft.routes.filter(
      (r) => !(r.clusterName === cluster && (r.name === ref || (cidr !== undefined && r.destinationCidr === cidr.text))),
    );
    return before - draft.routes.length;
  });
}
