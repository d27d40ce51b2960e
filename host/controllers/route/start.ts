/**
 * Wires the route controller into the host (registry.ts). As upstream, it
 * runs only with --configure-cloud-routes=true and a provider that has
 * routes; then --cluster-cidr is required, and its absence stops the host at
 * start-up with one line (upstream exits fatally too).
 *
 * Several providers (issue 31 item 4): a cluster has one route provider. It
 * is the one provider that implements routes, or the one marked
 * `routes: true` in --providers-config; two that implement routes and none
 * marked stop the host at start-up with one line. The route provider routes
 * only the Nodes it owns (host/ownership), never another provider's: a route
 * sends a pod CIDR to an instance of the route provider's network, and
 * another cloud's Node is no instance there (its pods need that cloud's
 * routes or an overlay), so a route for it would be wrong or refused, and
 * deleting "unknown" routes must not depend on Nodes the provider cannot see.
 */
import { HostStartError } from '../../errors.js';
import type { HostConfig } from '../../config/config.js';
import type { Provider, ProviderRegistry } from '../../providers.js';
import type { ControllerFactory, ControllerPreflight } from '../context.js';
import { RouteController, parseClusterCidrs } from './route-controller.js';
import { ownershipOf } from '../../ownership/gate.js';

/**
 * The cluster's route provider, or undefined when none implements routes.
 * Throws HostStartError (one line) for two providers with routes and none
 * marked, or a marked provider without routes.
 */
export function routeProvider(providers: ProviderRegistry): Provider | undefined {
  const list = providers.list();
  const marked = list.find((p) => p.config.routes);
  if (marked) {
    if (!marked.cloud.routes()) {
      throw new HostStartError(
        `provider ${marked.name} of --providers-config is marked "routes: true" but does not implement routes: mark the provider that does, or set --configure-cloud-routes=false`,
      );
    }
    return marked;
  }
  const routing = list.filter((p) => p.cloud.routes());
  if (routing.length > 1) {
    throw new HostStartError(
      `providers ${routing.map((p) => p.name).join(' and ')} of --providers-config both implement routes, and a cluster has one route provider: mark one "routes: true" in the file, or set --configure-cloud-routes=false`,
    );
  }
  return routing[0];
}

/** Runs before leader election, so a replica that could never lead usefully fails at start-up. */
export const routePreflight: ControllerPreflight = (config: HostConfig, providers: ProviderRegistry) => {
  if (!config.configureCloudRoutes || !routeProvider(providers)) return;
  if (parseClusterCidrs(config.clusterCidrs).length === 0) {
    throw new HostStartError(
      '--cluster-cidr is required by the route controller (the provider implements routes and --configure-cloud-routes=true): pass the pod network, e.g. --cluster-cidr=10.244.0.0/16, or set --configure-cloud-routes=false',
    );
  }
};

export const startRouteController: ControllerFactory = (ctx) => {
  if (!ctx.config.configureCloudRoutes) return { skip: '--configure-cloud-routes=false' };
  const provider = routeProvider(ctx.providers);
  const routes = provider?.cloud.routes();
  if (!provider || !routes) return { skip: 'the cloud provider does not implement routes' };
  routePreflight(ctx.config, ctx.providers);
  const clusterCidrs = parseClusterCidrs(ctx.config.clusterCidrs);
  const several = ctx.providers.list().length > 1;
  const controller = new RouteController({
    core: ctx.clients.core,
    nodes: ctx.informers.nodes(),
    routes,
    recorder: ctx.recorder,
    log: several ? ctx.log.child({ provider: provider.name }) : ctx.log,
    registry: ctx.registry,
    clusterName: ctx.config.clusterName,
    clusterCidrs,
    periodMs: ctx.config.routeReconciliationPeriodMs,
    nodesScoped: ctx.config.nodeSelector !== '',
    ownership: several ? { provider: () => provider.name, declarations: () => ctx.nodeOwnership.declarations() } : ownershipOf(ctx),
  });
  return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
};
