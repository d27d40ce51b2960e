/** Wires the service (load balancer) controller into the host (registry.ts). */
import { shardView } from '../../kube/shard-view.js';
import { HostStartError } from '../../errors.js';
import { errorMessage } from '../../log.js';
import { lbClassProblems } from '../../lb-classes.js';
import type { ProviderRegistry } from '../../providers.js';
import type { ControllerFactory, ControllerPreflight } from '../context.js';
import { ServiceController, type LbProvider } from './service-controller.js';
import { SERVICES } from './services-informer.js';
import { SERVICE_VALIDATION_WEBHOOK_PATH, serviceValidationHandler } from './admission.js';
import { ENDPOINT_SLICES } from './pod-backends.js';

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
  // Pod-IP backends (protocol 1.1): EndpointSlices are watched only when a provider takes them.
  const podProviders = providers.filter((p) => p.lbs.podBackends).map((p) => p.name);
  if (podProviders.length > 0) ctx.log.info({ providers: podProviders }, 'pod-IP backends on: watching EndpointSlices');
  else ctx.log.info('pod-IP backends off: no provider declares CAPABILITY_LOAD_BALANCER_POD_BACKENDS; EndpointSlices not watched');
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
    // With several providers, each gets as backends only the Nodes it owns and those nobody owns.
    nodeOwnership: ctx.nodeOwnership,
    endpointSlices: podProviders.length > 0 ? ctx.informers.for(ENDPOINT_SLICES) : undefined,
  });
  /**
   * The Service validation webhook, while this controller runs: the same
   * check, by the same provider choice. A webhook that cannot be served
   * (e.g. the port is taken) leaves the controller running (its check before
   * ensure still holds), with an error line and /readyz failing with the
   * reason, as the PV label webhook's does: with failurePolicy Fail the API
   * server then refuses LoadBalancer Service writes.
   */
  let webhookProblem: string | undefined;
  const serveValidation = async (): Promise<(() => Promise<void>) | undefined> => {
    webhookProblem = undefined;
    try {
      return await ctx.webhooks.serve(
        SERVICE_VALIDATION_WEBHOOK_PATH,
        serviceValidationHandler({
          providers: providers.map((p) => ({
            name: p.name,
            lbs: p.lbs,
            classes: p.lbs.classes ?? { classes: [], unclassed: true },
            ready: () => ctx.providers.get(p.name)?.supervisor.state === 'ready',
          })),
          failurePolicy: ctx.config.serviceValidationFailurePolicy,
          log: ctx.log,
        }),
      );
    } catch (err) {
      ctx.log.error({ err: errorMessage(err) }, 'the Service validation webhook is not served; annotations are checked before ensure only');
      webhookProblem = `the Service validation webhook is not served (${errorMessage(err)}); annotations are checked before ensure only`;
      return undefined;
    }
  };
  return {
    run: async (signal) => {
      // After a provider's plugin restarts, re-ensure its Services at once rather than at the next resync
      // (only while this controller runs: a later leadership term adds its own).
      const listeners = providers.map((p) => {
        const supervisor = ctx.providers.get(p.name)!.supervisor;
        const onReady = () => {
          controller.resyncAll(p.name);
          // Its Node declarations may differ now, and with them every provider's backends.
          controller.nodeOwnershipMayHaveChanged();
        };
        supervisor.on('ready', onReady);
        return () => supervisor.off('ready', onReady);
      });
      const stopServing = ctx.webhooks.enabled ? await serveValidation() : undefined;
      try {
        await controller.run(signal);
      } finally {
        for (const off of listeners) off();
        await stopServing?.();
        webhookProblem = undefined;
      }
    },
    problem: () => webhookProblem,
  };
};
