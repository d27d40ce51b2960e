/** RoutesService checks, all in the kit's own cluster name (RequestMeta.cluster_name). */
import { Capability, Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import type { CreateRouteResponse, ReconcileRoutesResponse, Route } from '../../proto/gen/ccm/provider/v1/routes.js';
import { expect, skip, type Check, type Kit } from '../kit.js';
import { Code } from '../rpc.js';
import { expectCode, listAll } from './common.js';

/** The cluster CIDR the kit's routes live in. */
const CLUSTER_CIDR = '10.252.0.0/16';

function route(k: Kit, n: number, target?: string): Route {
  return {
    name: '',
    targetNode: target ?? k.testNode?.name ?? `${k.prefix}-node-a`,
    targetNodeAddresses: [],
    destinationCidr: `10.252.${n}.0/24`,
    blackhole: false,
  };
}

async function listed(k: Kit): Promise<Route[]> {
  return (await listAll<Route>(k, k.rpc.conn.routes, 'ListRoutes', 'routes', 0)).items;
}

export const routeChecks: Check[] = [
  {
    id: 'routes/create-twice',
    title: 'CreateRoute twice with the same route succeeds both times, and ListRoutes shows it once',
    run: async (k) => {
      k.needService(Service.SERVICE_ROUTES);
      const r = route(k, 1);
      const req = { meta: k.meta('route-1'), nameHint: `${k.prefix}-r1`, route: r };
      const a = await k.rpc.call<CreateRouteResponse>(k.rpc.conn.routes, 'CreateRoute', req);
      k.created.routes.set(r.destinationCidr, a.route ?? r);
      const b = await k.rpc.call<CreateRouteResponse>(k.rpc.conn.routes, 'CreateRoute', { ...req, meta: { ...req.meta, attempt: 2 } });
      expect(
        a.route?.destinationCidr === r.destinationCidr && a.route.targetNode === r.targetNode,
        `created route ${JSON.stringify(a.route)} is not the one asked for`,
      );
      expect(b.route?.name === a.route?.name, `the second CreateRoute answered route ${b.route?.name}, the first ${a.route?.name}`);
      const mine = (await listed(k)).filter((x) => x.destinationCidr === r.destinationCidr);
      expect(mine.length === 1, `ListRoutes shows the route ${mine.length} times`);
    },
  },
  {
    id: 'routes/conflict',
    title: 'another target node for an existing destination answers ALREADY_EXISTS',
    run: async (k) => {
      if (!k.created.routes.has(route(k, 1).destinationCidr)) skip('needs the route of routes/create-twice');
      await expectCode(
        k,
        k.rpc.conn.routes,
        'CreateRoute',
        { meta: k.meta(), nameHint: `${k.prefix}-r1x`, route: route(k, 1, `${k.prefix}-other-node`) },
        Code.ALREADY_EXISTS,
      );
    },
  },
  {
    id: 'routes/paging',
    title: 'ListRoutes with page_size 1 visits every route exactly once',
    run: async (k) => {
      k.needService(Service.SERVICE_ROUTES);
      for (const n of [2, 3]) {
        const r = route(k, n);
        const res = await k.rpc.call<CreateRouteResponse>(k.rpc.conn.routes, 'CreateRoute', {
          meta: k.meta(),
          nameHint: `${k.prefix}-r${n}`,
          route: r,
        });
        k.created.routes.set(r.destinationCidr, res.route ?? r);
      }
      const { items, pages } = await listAll<Route>(k, k.rpc.conn.routes, 'ListRoutes', 'routes', 1);
      const dests = items.map((r) => r.destinationCidr);
      expect(new Set(dests).size === dests.length, `a route appears twice across pages: ${dests.join(', ')}`);
      for (const d of k.created.routes.keys()) expect(dests.includes(d), `route ${d} is missing from the paged list`);
      expect(pages >= k.created.routes.size, `${pages} pages for ${k.created.routes.size} routes at page_size 1`);
    },
  },
  {
    id: 'routes/invalid-page-token',
    title: 'ListRoutes with an invalid page_token answers ABORTED',
    run: async (k) => {
      k.needService(Service.SERVICE_ROUTES);
      await expectCode(k, k.rpc.conn.routes, 'ListRoutes', { meta: k.meta(), pageSize: 1, pageToken: 'not-a-token!' }, Code.ABORTED);
    },
  },
  {
    id: 'routes/delete-twice',
    title: 'DeleteRoute twice succeeds both times; deleting a never-created route succeeds',
    run: async (k) => {
      k.needService(Service.SERVICE_ROUTES);
      const r = k.created.routes.get(route(k, 3).destinationCidr) ?? skip('needs the routes of routes/paging');
      await k.rpc.call(k.rpc.conn.routes, 'DeleteRoute', { meta: k.meta(), route: r });
      await k.rpc.call(k.rpc.conn.routes, 'DeleteRoute', { meta: k.meta(), route: r });
      k.created.routes.delete(r.destinationCidr);
      expect(!(await listed(k)).some((x) => x.destinationCidr === r.destinationCidr), 'the deleted route is still listed');
      await k.rpc.call(k.rpc.conn.routes, 'DeleteRoute', { meta: k.meta(), route: { ...route(k, 99), name: `${k.prefix}-never` } });
    },
  },
  {
    id: 'routes/reconcile',
    title: 'ReconcileRoutes converges on the desired routes and a second identical call changes nothing',
    run: async (k) => {
      k.needCapability(Capability.CAPABILITY_ROUTES_RECONCILE);
      const desired = [route(k, 1), route(k, 4)];
      const req = { meta: k.meta(), desired, clusterCidrs: [CLUSTER_CIDR] };
      const a = await k.rpc.call<ReconcileRoutesResponse>(k.rpc.conn.routes, 'ReconcileRoutes', req);
      for (const r of a.created) k.created.routes.set(r.destinationCidr, r);
      for (const r of a.deleted) k.created.routes.delete(r.destinationCidr);
      expect(a.failed.length === 0, `failures: ${a.failed.map((f) => `${f.route?.destinationCidr}: ${f.error?.message}`).join('; ')}`);
      const dests = (await listed(k)).map((r) => r.destinationCidr).sort();
      expect(
        JSON.stringify(dests) === JSON.stringify(desired.map((r) => r.destinationCidr).sort()),
        `after ReconcileRoutes the routes are ${dests.join(', ')}`,
      );
      const b = await k.rpc.call<ReconcileRoutesResponse>(k.rpc.conn.routes, 'ReconcileRoutes', req);
      expect(
        b.created.length === 0 && b.deleted.length === 0 && b.failed.length === 0,
        `the second call changed something: ${JSON.stringify({ created: b.created.length, deleted: b.deleted.length, failed: b.failed.length })}`,
      );
    },
  },
];
