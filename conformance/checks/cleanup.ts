/**
 * Removes everything the kit made (also after failures) and checks that no
 * cloud object is left behind: load balancers, routes, volumes, instances.
 */
import { Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import type { GetLoadBalancerResponse } from '../../proto/gen/ccm/provider/v1/load_balancers.js';
import type { ListVolumesEntry } from '../../proto/gen/ccm/provider/v1/volumes.js';
import type { Route } from '../../proto/gen/ccm/provider/v1/routes.js';
import { skip, type Check, type Kit } from '../kit.js';
import { instanceAbsent, listAll } from './common.js';

async function attempt(problems: string[], what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    problems.push(`${what}: ${(err as Error).message}`);
  }
}

/** Best-effort removal of everything in k.created; returns what failed. */
export async function removeAll(k: Kit): Promise<string[]> {
  const problems: string[] = [];
  if (!k.rpcValue) return problems;
  const c = k.rpc.conn;
  if (k.hooksValue) await attempt(problems, 'turning the throttle off', () => k.hooksValue!.setThrottle(false, 0));
  for (const svc of k.created.loadBalancers.values())
    await attempt(problems, `EnsureLoadBalancerDeleted ${svc.name}`, () =>
      k.rpc.call(c.loadBalancers, 'EnsureLoadBalancerDeleted', { meta: k.meta(), service: svc }),
    );
  for (const r of k.created.routes.values())
    await attempt(problems, `DeleteRoute ${r.destinationCidr}`, () => k.rpc.call(c.routes, 'DeleteRoute', { meta: k.meta(), route: r }));
  for (const id of k.created.volumes.keys()) {
    await attempt(problems, `ControllerUnpublishVolume ${id}`, () =>
      k.rpc.call(c.volumes, 'ControllerUnpublishVolume', { meta: k.meta(), volumeId: id, nodeId: '' }),
    );
    await attempt(problems, `DeleteVolume ${id}`, () => k.rpc.call(c.volumes, 'DeleteVolume', { meta: k.meta(), volumeId: id }));
  }
  for (const name of k.created.instances.keys())
    if (k.hooksValue) await attempt(problems, `deleting test instance ${name}`, () => k.hooksValue!.deleteInstance(name));
  return problems;
}

export const cleanupChecks: Check[] = [
  {
    id: 'cleanup/no-leftovers',
    title: 'after cleanup no load balancer, route, volume or test instance made by the kit is left',
    run: async (k) => {
      if (!k.rpcValue) skip('no connection to the provider');
      const problems = await removeAll(k);
      const left: string[] = [];
      const has = (s: Service) => k.capsValue?.services.includes(s) ?? false;
      if (has(Service.SERVICE_LOAD_BALANCERS)) {
        for (const svc of k.created.loadBalancers.values()) {
          const got = await k.rpc.call<GetLoadBalancerResponse>(k.rpc.conn.loadBalancers, 'GetLoadBalancer', { meta: k.meta(), service: svc });
          if (got.exists) left.push(`load balancer of ${svc.name}`);
        }
      }
      if (has(Service.SERVICE_ROUTES)) {
        const routes = (await listAll<Route>(k, k.rpc.conn.routes, 'ListRoutes', 'routes', 0)).items;
        left.push(...routes.map((r) => `route ${r.destinationCidr} → ${r.targetNode}`));
      }
      if (has(Service.SERVICE_VOLUMES)) {
        const vols = (await listAll<ListVolumesEntry>(k, k.rpc.conn.volumes, 'ListVolumes', 'entries', 0)).items;
        left.push(...vols.filter((e) => k.created.volumes.has(e.volume?.volumeId ?? '')).map((e) => `volume ${e.volume?.volumeId}`));
      }
      if (has(Service.SERVICE_INSTANCES)) {
        for (const [name, providerId] of k.created.instances)
          if (!(await instanceAbsent(k, k.nodeRef(name, providerId)))) left.push(`instance ${name}`);
      }
      if (left.length || problems.length)
        throw new Error([left.length ? `left behind: ${left.join(', ')}` : '', ...problems].filter(Boolean).join('; '));
    },
  },
];
