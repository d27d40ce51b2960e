/** Wires the cloud node controller into the host (registry.ts). */
import type { ControllerFactory } from '../context.js';
import { CloudNodeController } from './node-controller.js';
import { ownershipOf } from '../../ownership/gate.js';

export const startCloudNodeController: ControllerFactory = (ctx) => {
  const instances = ctx.cloud.instances();
  if (!instances) return { skip: 'the cloud provider does not implement instances' };
  const controller = new CloudNodeController({
    core: ctx.clients.core,
    nodes: ctx.informers.nodes(),
    instances,
    providerName: ctx.cloud.info().providerName,
    recorder: ctx.recorder,
    log: ctx.log,
    registry: ctx.registry,
    metrics: {
      taintRemovalDelay: ctx.metrics.taintRemovalDelay,
      initialSyncDelay: ctx.metrics.initialNodeSyncDelay,
      initDuration: ctx.metrics.nodeInitializationDuration,
    },
    workers: ctx.config.concurrentNodeSyncs,
    statusUpdateFrequencyMs: ctx.config.nodeStatusUpdateFrequencyMs,
    statusUpdateConcurrency: ctx.config.concurrentNodeStatusUpdates,
    ownership: ownershipOf(ctx),
  });
  // After a plugin outage, retry waiting nodes at once instead of at their backoff.
  ctx.supervisor.on('ready', () => controller.requeueTainted());
  return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
};
