/** Wires the service (load balancer) controller into the host (registry.ts). */
import { shardView } from '../../kube/shard-view.js';
import { HostStartError } from '../../errors.js';
import { lbClassProblems } from '../../lb-classes.js';
import type { ProviderRegistry } from '../../providers.js';
import type { ControllerFactory, ControllerPreflight } from '../context.js';
import { ServiceController, type LbProvider } from './service-controller.js';
import { SERVICES } from './services-informer.js';

/**
 * The host's load-balancer providers: every provider of the registry whose
 * cloud has load balancers (SERVICE_LOAD_BALANCERS), in configuration order,
 * each under its name in the host (--cloud-provider, or the file's `name`).
 * That name is what a classed Service records as the maker of its load
 * balancer (lb-owner.ts): chosen by the operator, unique in the host, and
 * unchanged across plugin restarts and upgrades (a provider's declared
 * providerName is none of these for sure). The classes are the providers'
 * declarations (GetPluginCapabilities), read by the resolver once.
 */
export function lbProviders(providers: ProviderRegistry): LbProvider[] {
  return providers.list().flatMap((p) => {
    const lbs = p.cloud.loadBalancers();
    return lbs ? [{ name: p.name, lbs }] : [];
  });
}

/**
 * Refuses the start when the load-balancer providers' class declarations
 * conflict (lbClassProblems: a class declared by two providers, two
 * providers serving Services without a class, ...), with every problem on
 * one line. No load-balancer provider at all is not a problem here: the
 * controller is then skipped.
 */
export const servicePreflight: ControllerPreflight = (_config, providers) => {
  const problems = lbClassProblems(lbProviders(providers).map((p) => ({ name: p.name, classes: p.lbs.classes ?? { classes: [], unclassed: true } })));
  if (problems.length > 0) throw new HostStartError(`the load-balancer providers' class declarations conflict: ${problems.join('; ')}`);
};

export const startServiceController: ControllerFactory = (ctx) => {
  const providers = lbProviders(ctx.providers);
  if (providers.length === 0) {
    const several = ctx.providers.list().length > 1;
    return {
      skip: several
        ? 'no cloud provider of this host supports external load balancers'
        : 'the cloud provider does not support external load balancers',
    };
  }
  servicePreflight(ctx.config, ctx.providers);
  const controller = new ServiceController({
    core: ctx.clients.core,
    // With --shard-count, this shard's Services; every Node (any Node may back any load balancer), and every
    // Service for the orphan sweep, which runs on shard 0 only (a cluster-wide singleton).
    services: shardView(ctx.informers.for(SERVICES), ctx.config.shard),
    allServices: ctx.informers.for(SERVICES),
    nodes: ctx.informers.nodes(),
    // Every provider with load balancers, each serving the classes it declares (GetPluginCapabilities).
    providers,
    clusterName: ctx.config.clusterName,
    clusterUid: ctx.supervisor.clusterUid,
    recorder: ctx.recorder,
    log: ctx.log,
    registry: ctx.registry,
    workers: ctx.config.concurrentServiceSyncs,
    resyncPeriodMs: ctx.config.lbResyncPeriodMs,
    orphanSweep: {
      ...ctx.config.lbOrphanSweep,
      periodMs: ctx.config.shard.index === 0 ? ctx.config.lbOrphanSweep.periodMs : 0,
      namespace: ctx.config.watchNamespace,
    },
    nodesScoped: ctx.config.nodeSelector !== '',
  });
  return {
    run: async (signal) => {
      // After a provider's plugin restarts, re-ensure its Services at once rather than at the next resync
      // (only while this controller runs: a later leadership term adds its own).
      const listeners = providers.map((p) => {
        const supervisor = ctx.providers.get(p.name)!.supervisor;
        const onReady = () => controller.resyncAll(p.name);
        supervisor.on('ready', onReady);
        return () => supervisor.off('ready', onReady);
      });
      try {
        await controller.run(signal);
      } finally {
        for (const off of listeners) off();
      }
    },
  };
};
