/** Wires the service (load balancer) controller into the host (registry.ts). */
import type { ControllerFactory } from '../context.js';
import { ServiceController } from './service-controller.js';
import { SERVICES } from './services-informer.js';

export const startServiceController: ControllerFactory = (ctx) => {
  const lbs = ctx.cloud.loadBalancers();
  if (!lbs) return { skip: 'the cloud provider does not support external load balancers' };
  const controller = new ServiceController({
    core: ctx.clients.core,
    services: ctx.informers.for(SERVICES),
    nodes: ctx.informers.nodes(),
    // The host's one provider, by the name in its providerIDs (recorded on the
    // classed Services it serves); its classes from GetPluginCapabilities.
    providers: [{ name: ctx.cloud.info().providerName, lbs }],
    clusterName: ctx.config.clusterName,
    clusterUid: ctx.supervisor.clusterUid,
    recorder: ctx.recorder,
    log: ctx.log,
    registry: ctx.registry,
    workers: ctx.config.concurrentServiceSyncs,
    resyncPeriodMs: ctx.config.lbResyncPeriodMs,
    orphanSweep: { ...ctx.config.lbOrphanSweep, namespace: ctx.config.watchNamespace },
    nodesScoped: ctx.config.nodeSelector !== '',
  });
  // After a plugin restart, re-ensure its Services at once rather than at the next resync.
  ctx.supervisor.on('ready', () => controller.resyncAll(ctx.cloud.info().providerName));
  return { run: (signal) => controller.run(signal) };
};
