/** Wires the cloud node lifecycle controller into the host (registry.ts). */
import type { ControllerFactory } from '../context.js';
import { NodeLifecycleController } from './lifecycle-controller.js';

export const startNodeLifecycleController: ControllerFactory = (ctx) => {
  const instances = ctx.cloud.instances();
  if (!instances) return { skip: 'the cloud provider does not implement instances' };
  const controller = new NodeLifecycleController({
    core: ctx.clients.core,
    nodes: ctx.informers.nodes(),
    instances,
    providerName: () => ctx.cloud.info().providerName,
    recorder: ctx.recorder,
    log: ctx.log,
    registry: ctx.registry,
    periodMs: ctx.config.nodeMonitorPeriodMs,
    deletionGraceMs: ctx.config.nodeDeletionGracePeriodMs,
    deletionLimit: ctx.config.nodeDeletionLimit,
    deletionLimitWindowMs: ctx.config.nodeDeletionLimitWindowMs,
  });
  return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
};
