/**
 * The Routes capability (host/cloud-routes.ts) over the plugin's
 * RoutesService. Requests are built and every answer validated here
 * (validate-routes.ts), so controllers only ever see well-formed routes.
 */
import { Capability } from '../../proto/gen/ccm/provider/v1/identity.js';
import type { NodeAddress as PbNodeAddress } from '../../proto/gen/ccm/provider/v1/common.js';
import type { ListRoutesResponse, ReconcileRoutesResponse, Route as PbRoute } from '../../proto/gen/ccm/provider/v1/routes.js';
import { fromStatus } from '../../sdk/errors.js';
import type { NodeAddress } from '../cloud.js';
import type { CloudRoute, DesiredRoute, RouteReconcileResult, Routes } from '../cloud-routes.js';
import { InvalidCloudResponseError } from '../errors.js';
import { decodedToCloudError } from './connection.js';
import { FROM_PB_ADDR, TO_PB_ADDR, type GrpcCloud } from './grpc-cloud.js';
import { routeProblems } from './validate-routes.js';
import { quote } from './validate.js';

/** Routes asked for per ListRoutes page (providers may return fewer). */
const ROUTE_PAGE_SIZE = 1000;
/** Bound on pages per listing: a provider that never ends its listing is an invalid answer. */
const MAX_ROUTE_PAGES = 10_000;

function toPbRoute(r: DesiredRoute | CloudRoute): PbRoute {
  return {
    name: 'name' in r ? r.name : '',
    targetNode: r.targetNode,
    targetNodeAddresses: r.targetNodeAddresses.map((a) => ({ type: TO_PB_ADDR[a.type], address: a.address })),
    destinationCidr: r.destinationCidr,
    blackhole: 'blackhole' in r ? r.blackhole : false,
  };
}

/** Validates and converts one route of an answer; throws InvalidCloudResponseError. */
function fromPbRoute(pb: PbRoute | undefined, method: string, where: string): CloudRoute {
  if (!pb) throw new InvalidCloudResponseError(method, [`${where}: route is missing`]);
  const checked = routeProblems(pb, FROM_PB_ADDR);
  if ('problems' in checked)
    throw new InvalidCloudResponseError(
      method,
      checked.problems.map((p) => `${where}: ${p}`),
    );
  const addresses: NodeAddress[] = pb.targetNodeAddresses.map((a: PbNodeAddress) => ({ type: FROM_PB_ADDR.get(a.type)!, address: a.address }));
  return { name: pb.name, targetNode: pb.targetNode, targetNodeAddresses: addresses, destinationCidr: checked.cidr, blackhole: pb.blackhole };
}

export class GrpcRoutes implements Routes {
  constructor(private readonly cloud: GrpcCloud) {}

  get batched(): boolean {
    return this.cloud.hasCapability(Capability.CAPABILITY_ROUTES_RECONCILE);
  }

  private call<Res>(method: string, request: object, mutating: boolean): Promise<Res> {
    const conn = this.cloud.supervisor.connection();
    const t = this.cloud.timeouts;
    return conn.unary<object, Res>(conn.routes, method, request, mutating ? t.mutateMs : t.readMs);
  }

  async listRoutes(clusterName: string): Promise<CloudRoute[]> {
    const out: CloudRoute[] = [];
    const seenTokens = new Set<string>();
    let pageToken = '';
    for (let page = 0; ; page++) {
      if (page >= MAX_ROUTE_PAGES) throw new InvalidCloudResponseError('ListRoutes', [`more than ${MAX_ROUTE_PAGES} pages`]);
      const r = await this.call<ListRoutesResponse>(
        'ListRoutes',
        { meta: { clusterName, clusterUid: this.cloud.supervisor.clusterUid, operationId: '', attempt: 1 }, pageSize: ROUTE_PAGE_SIZE, pageToken },
        false,
      );
      r.routes.forEach((pb, i) => out.push(fromPbRoute(pb, 'ListRoutes', `page ${page} route ${i}`)));
      if (!r.nextPageToken) return out;
      if (seenTokens.has(r.nextPageToken))
        throw new InvalidCloudResponseError('ListRoutes', ['the next page token repeats an earlier one (the listing would never end)']);
      seenTokens.add(r.nextPageToken);
      pageToken = r.nextPageToken;
    }
  }

  async createRoute(clusterName: string, nameHint: string, route: DesiredRoute): Promise<CloudRoute> {
    const r = await this.call<{ route?: PbRoute }>(
      'CreateRoute',
      {
        meta: {
          clusterName,
          clusterUid: this.cloud.supervisor.clusterUid,
          operationId: `route-${route.targetNode}-${route.destinationCidr}`,
          attempt: 1,
        },
        nameHint,
        route: toPbRoute(route),
      },
      true,
    );
    const created = fromPbRoute(r.route, 'CreateRoute', 'route');
    if (created.destinationCidr !== route.destinationCidr || created.targetNode !== route.targetNode) {
      throw new InvalidCloudResponseError('CreateRoute', [
        `asked for ${route.destinationCidr} → ${route.targetNode}, got ${quote(created.destinationCidr)} → ${quote(created.targetNode)}`,
      ]);
    }
    return created;
  }

  async deleteRoute(clusterName: string, route: CloudRoute): Promise<void> {
    await this.call(
      'DeleteRoute',
      {
        meta: {
          clusterName,
          clusterUid: this.cloud.supervisor.clusterUid,
          operationId: `route-delete-${route.name || route.destinationCidr}`,
          attempt: 1,
        },
        route: toPbRoute(route),
      },
      true,
    );
  }

  async reconcileRoutes(clusterName: string, desired: DesiredRoute[], clusterCidrs: readonly string[]): Promise<RouteReconcileResult> {
    const r = await this.call<ReconcileRoutesResponse>(
      'ReconcileRoutes',
      {
        meta: { clusterName, clusterUid: this.cloud.supervisor.clusterUid, operationId: '', attempt: 1 },
        desired: desired.map(toPbRoute),
        clusterCidrs: [...clusterCidrs],
      },
      true,
    );
    const created = r.created.map((pb, i) => fromPbRoute(pb, 'ReconcileRoutes', `created ${i}`));
    const deleted = r.deleted.map((pb, i) => fromPbRoute(pb, 'ReconcileRoutes', `deleted ${i}`));
    const failed = r.failed.map((f, i) => {
      const route = fromPbRoute(f.route, 'ReconcileRoutes', `failed ${i}`);
      const error =
        f.error && f.error.code !== 0
          ? decodedToCloudError('ReconcileRoutes', fromStatus(f.error))
          : new InvalidCloudResponseError('ReconcileRoutes', [`failed ${i}: no error status`]);
      return {
        route: { targetNode: route.targetNode, targetNodeAddresses: route.targetNodeAddresses, destinationCidr: route.destinationCidr },
        error,
      };
    });
    return { created, deleted, failed };
  }
}
