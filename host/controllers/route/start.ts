/**
 * Wires the route controller into the host (registry.ts). As upstream, it
 * runs only with --configure-cloud-routes=true and a provider that has
 * routes; then --cluster-cidr is required, and its absence stops the host at
 * start-up with one line (upstream exits fatally too).
 */
import { HostStartError } from '../../errors.js';
import type { ControllerFactory, ControllerPreflight } from '../context.js';
import { RouteController, parseClusterCidrs } from './route-controller.js';
import { ownershipOf } from '../../ownership/gate.js';

/** Runs before leader election, so a replica that could never lead usefully fails at start-up. */
export const routePreflight: ControllerPreflight = (config, cloud) => {
  if (!config.configureCloudRoutes || !cloud.routes()) return;
  if (parseClusterCidrs(config.clusterCidrs).length === 0) {
    throw new HostStartError(
      '--cluster-cidr is required by the route controller (the provider implements routes and --configure-cloud-routes=true): pass the pod network, e.g. --cluster-cidr=10.244.0.0/16, or set --configure-cloud-routes=false',
    );
  }
};

export const startRouteController: ControllerFactory = (ctx) => {
  if (!ctx.config.configureCloudRoutes) return { skip: '--configure-cloud-routes=false' };
  const routes = ctx.cloud.routes();
  if (!routes) return { skip: 'the cloud provider does not implement routes' };
  routePreflight(ctx.config, ctx.cloud);
  const clusterCidrs = parseClusterCidrs(ctx.config.clusterCidrs);
  const controller = new RouteController({
    core: ctx.clients.core,
    nodes: ctx.informers.nodes(),
    routes,
    recorder: ctx.recorder,
    log: ctx.log,
    registry: ctx.registry,
    clusterName: ctx.config.clusterName,
    clusterCidrs,
    periodMs: ctx.config.routeReconciliationPeriodMs,
    nodesScoped: ctx.config.nodeSelector !== '',
    ownership: ownershipOf(ctx),
  });
  return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
};
