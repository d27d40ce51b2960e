/** Wires the cloud node lifecycle controller into the host (registry.ts). */
import type { ControllerFactory } from '../context.js';
import { NODE_DELETIONS_LEASE } from '../../names.js';
import { LeaseDeletionLedger } from './deletion-ledger.js';
import { NodeLifecycleController } from './lifecycle-controller.js';
import { ownershipOf } from '../../ownership/gate.js';

export const startNodeLifecycleController: ControllerFactory = (ctx) => {
  const instances = ctx.cloud.instances();
  if (!instances) return { skip: 'the cloud provider does not implement instances' };
  const le = ctx.config.leaderElection;
  // Kept beside the leader election's Lease, on this controller's own client (its identity under --use-service-account-credentials).
  const ledger = new LeaseDeletionLedger(
    ctx.clients.coordination,
    le.resourceNamespace,
    NODE_DELETIONS_LEASE,
    { lock: `${le.resourceNamespace}/${le.resourceName}`, nodeSelector: ctx.config.nodeSelector },
    ctx.config.nodeDeletionLimitWindowMs,
  );
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
    deletionLedger: ledger,
    ownership: ownershipOf(ctx),
  });
  return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
};
