/**
 * Wires the cloud node lifecycle controller into the host (registry.ts): one
 * instance per provider (per-provider.ts), each with its own passes, batch
 * status lookups and deletion brake, judging only the Nodes its provider owns.
 */
import type { ControllerFactory } from '../context.js';
import { NODE_DELETIONS_LEASE } from '../../names.js';
import { LeaseDeletionLedger } from './deletion-ledger.js';
import { NodeLifecycleController } from './lifecycle-controller.js';
import { perProvider } from '../per-provider.js';
import { shardView } from '../../kube/shard-view.js';
import { unshardedLeaseName } from '../../config/config.js';

export const startNodeLifecycleController: ControllerFactory = (ctx) =>
  perProvider(ctx, ({ provider, log, ownership, several }) => {
    const instances = provider.cloud.instances();
    if (!instances) return { skip: 'the cloud provider does not implement instances' };
    const le = ctx.config.leaderElection;
    // Kept beside the leader election's Lease, on this controller's own client (its identity under --use-service-account-credentials).
    // With several providers each has its own count (the brake applies per provider), one annotation each on the same Lease.
    // With --shard-count every shard keys it by the unsharded lock name: one count for the cluster, as with one replica.
    const ledger = new LeaseDeletionLedger(
      ctx.clients.coordination,
      le.resourceNamespace,
      NODE_DELETIONS_LEASE,
      {
        lock: `${le.resourceNamespace}/${unshardedLeaseName(ctx.config)}`,
        nodeSelector: ctx.config.nodeSelector,
        ...(several ? { provider: provider.name } : {}),
      },
      ctx.config.nodeDeletionLimitWindowMs,
    );
    const controller = new NodeLifecycleController({
      core: ctx.clients.core,
      nodes: shardView(ctx.informers.nodes(), ctx.config.shard),
      // A percentage limit is of every shard's Nodes: the brake is one for the cluster.
      clusterNodes: ctx.informers.nodes(),
      instances,
      providerName: () => provider.cloud.info().providerName,
      recorder: ctx.recorder,
      log,
      registry: ctx.registry,
      periodMs: ctx.config.nodeMonitorPeriodMs,
      deletionGraceMs: ctx.config.nodeDeletionGracePeriodMs,
      deletionLimit: ctx.config.nodeDeletionLimit,
      deletionLimitWindowMs: ctx.config.nodeDeletionLimitWindowMs,
      deletionLedger: ledger,
      ownership,
      ...(several ? { metricsProvider: provider.name } : {}),
    });
    return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
  });
