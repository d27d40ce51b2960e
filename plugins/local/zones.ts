/**
 * ZonesService and ClustersService of the local cloud (legacy lookups kept
 * for parity with the upstream interface).
 */
import type { ClustersProvider, ZonesProvider } from '../../sdk/provider.js';
import { clusterOf, required, type CloudContext } from './context.js';
import { instanceByNodeName, instanceByProviderId } from './instances.js';

/** The ZonesService implementation. */
export function createZonesService(c: CloudContext): ZonesProvider {
  return {
    async getZone() {
      // The provider "runs" in the cloud's default zone.
      return { zone: { failureDomain: c.settings.zone, region: c.settings.region } };
    },

    async getZoneByProviderId(req) {
      const inst = instanceByProviderId(c.store.view(), required(req.providerId, 'provider_id'));
      return { zone: { failureDomain: inst.zone, region: inst.region } };
    },

    async getZoneByNodeName(req) {
      const inst = instanceByNodeName(c.store.view(), req.nodeName);
      return { zone: { failureDomain: inst.zone, region: inst.region } };
    },
  };
}

/** The ClustersService implementation. */
export function createClustersService(c: CloudContext): ClustersProvider {
  return {
    async listClusters(req) {
      const state = c.store.read();
      const names = new Set<string>([clusterOf(c, req.meta)]);
      for (const lb of state.loadBalancers) names.add(lb.clusterName);
      for (const r of state.routes) names.add(r.clusterName);
      return { clusters: [...names].sort() };
    },

    async master(req) {
      required(req.clusterName, 'cluster_name');
      return { address: c.settings.masterAddress };
    },

    async scrubDns(req) {
      // The local cloud supports any DNS settings.
      return { nameservers: [...req.nameservers], searches: [...req.searches] };
    },
  };
}
