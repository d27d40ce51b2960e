/**
 * RoutesService of the local cloud: one route table per cluster name. A
 * route is unique per (cluster, destination CIDR); its name is derived from
 * the cluster, the name hint and the CIDR. A route is a blackhole while no
 * instance carries its target node's name (derived on every read, so it
 * heals when the instance comes back).
 */
import { AlreadyExistsError, InvalidArgumentError, toStatus } from '../../sdk/errors.js';
import type { RoutesProvider } from '../../sdk/provider.js';
import type { Route } from '../../proto/gen/ccm/provider/v1/routes.js';
import { clusterOf, nowIso, required, type CloudContext } from './context.js';
import { fromNodeAddresses, toNodeAddresses } from './instances.js';
import { cidrContains, parseCidr, type Cidr } from './ip.js';
import { routeName } from './names.js';
import { paginate } from './paging.js';
import type { RouteRecord, StateView } from './state.js';

/** A route as the protocol shows it. */
function toRoute(view: StateView, r: RouteRecord): Route {
  const inst = view.instanceByName(r.targetNode);
  return {
    name: r.name,
    targetNode: r.targetNode,
    targetNodeAddresses: toNodeAddresses(inst?.addresses ?? r.targetNodeAddresses),
    destinationCidr: r.destinationCidr,
    blackhole: inst === undefined,
  };
}

/** Canonical destination CIDR of a route; InvalidArgumentError when malformed. */
function destinationOf(route: Route): Cidr {
  const cidr = parseCidr(route.destinationCidr);
  if (!cidr) throw new InvalidArgumentError(`destination_cidr ${JSON.stringify(route.destinationCidr)} is not a CIDR`);
  return cidr;
}

function newRecord(clusterName: string, hint: string, route: Route, cidr: Cidr): RouteRecord {
  return {
    name: routeName(clusterName, hint || route.targetNode, cidr.text),
    clusterName,
    targetNode: route.targetNode,
    destinationCidr: cidr.text,
    targetNodeAddresses: fromNodeAddresses(route.targetNodeAddresses),
    createdAt: nowIso(),
  };
}

/**
 * The RoutesService of the local cloud: reads, single-route writes and the
 * batch reconcile, each a group of its own below.
 */
export function createRoutesService(c: CloudContext): RoutesProvider {
  return { ...routeReads(c), ...routeWrites(c), ...routeBatches(c) };
}

/** Read-only: the cluster's routes (paged). */
function routeReads(c: CloudContext): Pick<RoutesProvider, 'listRoutes'> {
  return {
    async listRoutes(req) {
      const cluster = clusterOf(c, req.meta);
      const view = c.store.view();
      const mine = view.state.routes.filter((r) => r.clusterName === cluster);
      const { page, nextPageToken } = paginate(mine, (r) => r.name, req, 'routes', cluster);
      return { routes: page.map((r) => toRoute(view, r)), nextPageToken };
    },
  };
}

/** One route: create, delete. */
function routeWrites(c: CloudContext): Pick<RoutesProvider, 'createRoute' | 'deleteRoute'> {
  return {
    async createRoute(req) {
      const cluster = clusterOf(c, req.meta);
      const route = required(req.route, 'route');
      required(route.targetNode, 'route.target_node');
      const cidr = destinationOf(route);
      const record = await c.store.update((draft) => {
        const existing = draft.routes.find((r) => r.clusterName === cluster && r.destinationCidr === cidr.text);
        if (existing) {
          if (existing.targetNode !== route.targetNode) {
            throw new AlreadyExistsError(`route ${existing.name} already sends ${cidr.text} to node ${existing.targetNode}`);
          }
          return existing;
        }
        const r = newRecord(cluster, req.nameHint, route, cidr);
        if (draft.routes.some((o) => o.clusterName === cluster && o.name === r.name)) throw new AlreadyExistsError(`route name ${r.name} is taken`);
        draft.routes.push(r);
        return r;
      });
      return { route: toRoute(c.store.view(), record) };
    },

    async deleteRoute(req) {
      const cluster = clusterOf(c, req.meta);
      const route = required(req.route, 'route');
      let match: (r: RouteRecord) => boolean;
      if (route.name) {
        match = (r) => r.name === route.name;
      } else {
        const cidr = destinationOf(route);
        match = (r) => r.destinationCidr === cidr.text && (!route.targetNode || r.targetNode === route.targetNode);
      }
      const found = (r: RouteRecord) => r.clusterName === cluster && match(r);
      if (!c.store.read().routes.some(found)) return {};
      await c.store.update((draft) => {
        draft.routes = draft.routes.filter((r) => !found(r));
      });
      return {};
    },
  };
}

/** The whole desired set in one call: missing routes created, extra ones deleted. */
function routeBatches(c: CloudContext): Pick<RoutesProvider, 'reconcileRoutes'> {
  return {
    async reconcileRoutes(req) {
      const cluster = clusterOf(c, req.meta);
      if (req.clusterCidrs.length === 0) throw new InvalidArgumentError('cluster_cidrs must not be empty');
      const clusterCidrs = req.clusterCidrs.map((text) => {
        const cidr = parseCidr(text);
        if (!cidr) throw new InvalidArgumentError(`cluster CIDR ${JSON.stringify(text)} is not a CIDR`);
        return cidr;
      });
      const managed = (cidr: Cidr) => clusterCidrs.some((outer) => cidrContains(outer, cidr));
      // The `fail` knob's error for a target node (test-only): its routes are neither created nor deleted,
      // each change answered with that error, as CreateRoute and DeleteRoute about that node would be.
      const faultOf = (targetNode: string) => c.faultFor?.('routes.reconcileRoutes', targetNode);
      const outcome = await c.store.update((draft) => {
        const failed: { route: Route; error: ReturnType<typeof toStatus> }[] = [];
        const desired = new Map<string, Route>();
        for (const route of req.desired) {
          try {
            required(route.targetNode, 'route.target_node');
            const cidr = destinationOf(route);
            if (!managed(cidr)) throw new InvalidArgumentError(`route ${cidr.text} is outside the cluster CIDRs ${req.clusterCidrs.join(',')}`);
            const dup = desired.get(cidr.text);
            if (dup && dup.targetNode !== route.targetNode) {
              throw new AlreadyExistsError(`${cidr.text} is desired for both node ${dup.targetNode} and node ${route.targetNode}`);
            }
            desired.set(cidr.text, route);
          } catch (err) {
            failed.push({ route, error: toStatus(err) });
          }
        }
        const deleted: RouteRecord[] = [];
        const kept = new Set<string>();
        draft.routes = draft.routes.filter((r) => {
          if (r.clusterName !== cluster) return true;
          const cidr = parseCidr(r.destinationCidr);
          if (!cidr || !managed(cidr)) return true;
          const want = desired.get(r.destinationCidr);
          if (want && want.targetNode === r.targetNode) {
            kept.add(r.destinationCidr);
            return true;
          }
          const fault = faultOf(r.targetNode);
          if (fault) {
            const inst = draft.instances.find((i) => i.name === r.targetNode);
            const route: Route = {
              name: r.name,
              targetNode: r.targetNode,
              targetNodeAddresses: toNodeAddresses(inst?.addresses ?? r.targetNodeAddresses),
              destinationCidr: r.destinationCidr,
              blackhole: inst === undefined,
            };
            failed.push({ route, error: toStatus(fault) });
            return true;
          }
          deleted.push(r);
          return false;
        });
        const created: RouteRecord[] = [];
        for (const [text, route] of desired) {
          if (kept.has(text)) continue;
          const fault = faultOf(route.targetNode);
          if (fault) {
            failed.push({ route, error: toStatus(fault) });
            continue;
          }
          const r = newRecord(cluster, route.targetNode, route, destinationOf(route));
          draft.routes.push(r);
          created.push(r);
        }
        return { created, deleted, failed };
      });
      const view = c.store.view();
      return {
        created: outcome.created.map((r) => toRoute(view, r)),
        deleted: outcome.deleted.map((r) => toRoute(view, r)),
        failed: outcome.failed,
      };
    },
  };
}
