/**
 * Wires the cloud node controller into the host (registry.ts): one instance
 * per provider (per-provider.ts), each initializing only the Nodes its
 * provider owns, with that provider's Cloud.
 */
import type { ControllerFactory } from '../context.js';
import { CloudNodeController } from './node-controller.js';
import { perProvider } from '../per-provider.js';
import { shardView } from '../../kube/shard-view.js';

export const startCloudNodeController: ControllerFactory = (ctx) =>
  perProvider(ctx, ({ provider, log, ownership, several }) => {
    const instances = provider.cloud.instances();
    if (!instances) return { skip: 'the cloud provider does not implement instances' };
    const controller = new CloudNodeController({
      core: ctx.clients.core,
      nodes: shardView(ctx.informers.nodes(), ctx.config.shard),
      instances,
      providerName: provider.cloud.info().providerName,
      recorder: ctx.recorder,
      log,
      registry: ctx.registry,
      metrics: {
        taintRemovalDelay: ctx.metrics.taintRemovalDelay,
        initialSyncDelay: ctx.metrics.initialNodeSyncDelay,
        initDuration: ctx.metrics.nodeInitializationDuration,
      },
      workers: ctx.config.concurrentNodeSyncs,
      statusUpdateFrequencyMs: ctx.config.nodeStatusUpdateFrequencyMs,
      statusUpdateConcurrency: ctx.config.concurrentNodeStatusUpdates,
      ownership,
      ...(several ? { metricsProvider: provider.name } : {}),
    });
    // After this provider's outage, retry its waiting nodes at once instead of at their backoff.
    provider.supervisor.on('ready', () => controller.requeueTainted());
    return { run: (signal) => controller.run(signal), healthy: () => controller.healthy() };
  });
