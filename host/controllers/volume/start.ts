/**
 * Wires the volume controllers into the host (registry.ts).
 *
 * Volumes by StorageClass provisioner (issue 31 item 4): every provider
 * whose cloud has volumes serves the provisioner (CSI driver) names it
 * declares (host/volume-provisioners.ts; none declared: one name,
 * --volume-provisioner-name or else the plugin's name, as before). Each
 * controller runs one instance per (provider, name), with that provider's
 * volumes, its own work queue, rate limiter and workers, acting only on the
 * claims, PersistentVolumes and VolumeAttachments of its name; an object of
 * a name nobody serves is never touched. A provider that is down or hangs
 * stalls only its own instances. With one volume provider serving one name
 * this is exactly the single controller of before (same queue series and
 * log fields); with more, each queue keeps its name and carries `provider`
 * (several providers) and `provisioner` labels, as the Nodes and service
 * queues do.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { Volumes } from '../../cloud-volumes.js';
import { driverNameProblem } from '../../config/volumes.js';
import { HostStartError } from '../../errors.js';
import type { HostConfig } from '../../config/config.js';
import type { Logger } from '../../log.js';
import { resolveNodeOwner } from '../../ownership/nodes.js';
import type { Provider, ProviderRegistry } from '../../providers.js';
import { servedProvisioners, volumeProvisionerProblems } from '../../volume-provisioners.js';
import type { ControllerContext, ControllerFactory, ControllerPreflight, RunnableController } from '../context.js';
import { joinControllers } from '../per-provider.js';
import { VolumeAttacher } from './attacher.js';
import { VolumeProvisioner } from './provisioner.js';
import { PvLabeler } from './labeler.js';
import { VolumeResizer, type ClaimControllerOptions } from './resizer.js';
import { PV_LABEL_WEBHOOK_PATH, pvLabelHandler } from './webhook.js';
import type { VolumeQueueLabels } from './retry.js';
import { PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, VOLUME_ATTACHMENTS } from './resources.js';

/** A volume provider of the host and the provisioner names it serves. */
export interface VolumeProvider {
  provider: Provider;
  volumes: Volumes;
  provisioners: string[];
}

/**
 * The host's volume providers, and those left out with the reason (a
 * provider whose own name cannot be a provisioner name).
 * --volume-provisioner-name applies only when one provider serves volumes
 * (volumePreflight refuses it with more).
 */
export function volumeProviders(
  config: HostConfig,
  providers: ProviderRegistry,
): { served: VolumeProvider[]; skipped: { provider: Provider; reason: string }[] } {
  const served: VolumeProvider[] = [];
  const skipped: { provider: Provider; reason: string }[] = [];
  const withVolumes = providers.list().filter((p) => p.cloud.volumes());
  const override = withVolumes.length === 1 ? config.volumes.provisionerName : '';
  for (const provider of withVolumes) {
    const volumes = provider.cloud.volumes()!;
    const declared = provider.capabilities().volumeProvisioners;
    const fallback = provider.cloud.info().name;
    const problem = override === '' && declared.length === 0 ? driverNameProblem(fallback) : undefined;
    if (problem) skipped.push({ provider, reason: `no usable provisioner name (${problem}); pass --volume-provisioner-name` });
    else served.push({ provider, volumes, provisioners: servedProvisioners(declared, override, fallback) });
  }
  return { served, skipped };
}

/**
 * Refuses the start when the volume providers' provisioner names conflict
 * (a name two providers serve, an invalid or repeated declaration), or when
 * --volume-provisioner-name is given with two or more volume providers
 * (which one it names would be a guess): every problem on one line, as the
 * load-balancer class check does.
 */
export const volumePreflight: ControllerPreflight = (config, providers) => {
  const { served, skipped } = volumeProviders(config, providers);
  const problems: string[] = [];
  const count = served.length + skipped.length;
  if (config.volumes.provisionerName !== '' && count > 1)
    problems.push(
      `--volume-provisioner-name replaces one provider's provisioner names, and ${count} providers serve volumes: remove the flag and let each declare volume_provisioners (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)`,
    );
  problems.push(...volumeProvisionerProblems(served.map((v) => ({ name: v.provider.name, provisioners: v.provisioners }))));
  if (problems.length > 0) throw new HostStartError(`the volume providers' provisioner names conflict: ${problems.join('; ')}`);
};

/** One (provider, provisioner name) instance as a volume controller sees it. */
interface VolumeView {
  provider: Provider;
  volumes: Volumes;
  driver: string;
  log: Logger;
  /** The work-queue metric labels (none with one instance, so the metrics stay as before). */
  queueLabels: VolumeQueueLabels;
  /** Whether the host has several volume instances. */
  several: boolean;
}

/**
 * One volume controller instance per (provider, provisioner name) of the
 * served providers, with the labels of its work-queue metrics: `provider`
 * when the host has several providers (as the Nodes and service queues),
 * `provisioner` when there is more than one instance; neither with one, so
 * a host serving one name keeps its series exactly as before.
 */
export function volumeInstances(
  served: VolumeProvider[],
  severalProviders: boolean,
): (VolumeProvider & { driver: string; queueLabels: VolumeQueueLabels })[] {
  const pairs = served.flatMap((v) => v.provisioners.map((driver) => ({ ...v, driver })));
  const many = pairs.length > 1;
  return pairs.map((p) => ({
    ...p,
    queueLabels: { ...(severalProviders ? { provider: p.provider.name } : {}), ...(many ? { provisioner: p.driver } : {}) },
  }));
}

/**
 * Runs `make` once per (volume provider, provisioner name) and returns one
 * controller running them all (joinControllers); skipped when no provider
 * has volumes.
 */
function perProvisioner(ctx: ControllerContext, make: (v: VolumeView) => RunnableController): RunnableController | { skip: string } {
  const several = ctx.providers.list().length > 1;
  const { served, skipped } = volumeProviders(ctx.config, ctx.providers);
  for (const s of skipped) {
    if (several)
      ctx.log
        .child({ provider: s.provider.name })
        .warn({ reason: s.reason }, 'not running the controller for this provider (its volumes are left alone)');
  }
  if (served.length === 0) {
    if (skipped.length > 0) return { skip: several ? `provider ${skipped[0]!.provider.name}: ${skipped[0]!.reason}` : skipped[0]!.reason };
    return { skip: several ? 'no cloud provider of this host implements volumes' : 'the cloud provider does not implement volumes' };
  }
  volumePreflight(ctx.config, ctx.providers);
  const made = volumeInstances(served, several).map(({ provider, volumes, driver, queueLabels }) =>
    make({
      provider,
      volumes,
      driver,
      log: ctx.log.child(several ? { provider: provider.name, driver } : { driver }),
      queueLabels,
      several,
    }),
  );
  return joinControllers(made);
}

/** The options the provisioner and the resizer share. */
function claimControllerOptions(ctx: ControllerContext, v: VolumeView): ClaimControllerOptions {
  return {
    driver: v.driver,
    volumes: v.volumes,
    core: ctx.clients.core,
    claims: ctx.informers.for(PERSISTENT_VOLUME_CLAIMS),
    pvs: ctx.informers.for(PERSISTENT_VOLUMES),
    classes: ctx.informers.for(STORAGE_CLASSES),
    recorder: ctx.recorder,
    log: v.log,
    registry: ctx.registry,
    workers: ctx.config.volumes.concurrentSyncs,
    queueLabels: v.queueLabels,
  };
}

export const startVolumeProvisioner: ControllerFactory = (ctx) =>
  perProvisioner(ctx, (v) => {
    const c = new VolumeProvisioner({
      ...claimControllerOptions(ctx, v),
      attachments: ctx.informers.for(VOLUME_ATTACHMENTS),
      nodes: ctx.informers.nodes(),
    });
    // After this provider's plugin restarts, learn the outcome of interrupted creates now, not at their backoff.
    v.provider.supervisor.on('ready', () => c.requeueInFlight());
    return { run: (signal) => c.run(signal) };
  });

export const startVolumeAttacher: ControllerFactory = (ctx) =>
  perProvisioner(ctx, (v) => {
    // With several providers a volume attaches only to its own provider's Nodes: another cloud's instance is none of its cloud's.
    const foreignNode = v.several
      ? (node: V1Node) => {
          const owner = resolveNodeOwner(node, ctx.nodeOwnership.declarations());
          if (owner.kind === 'owned' && owner.provider === v.provider.name) return undefined;
          const whose =
            owner.kind === 'owned'
              ? `provider ${owner.provider}'s`
              : owner.kind === 'conflict'
                ? 'claimed by several providers'
                : 'owned by no provider';
          return `node ${node.metadata?.name} is ${whose}, and volumes of ${v.driver} (provider ${v.provider.name}) attach only to provider ${v.provider.name}'s Nodes`;
        }
      : undefined;
    const c = new VolumeAttacher({
      driver: v.driver,
      volumes: v.volumes,
      clients: ctx.clients,
      attachments: ctx.informers.for(VOLUME_ATTACHMENTS),
      pvs: ctx.informers.for(PERSISTENT_VOLUMES),
      nodes: ctx.informers.nodes(),
      nodesSharded: ctx.config.nodeSelector !== '',
      foreignNode,
      log: v.log,
      registry: ctx.registry,
      workers: ctx.config.volumes.concurrentSyncs,
      reconcilePeriodMs: ctx.config.volumes.attachReconcilePeriodMs,
      queueLabels: v.queueLabels,
    });
    return { run: (signal) => c.run(signal), healthy: () => c.healthy() };
  });

export const startVolumeResizer: ControllerFactory = (ctx) =>
  perProvisioner(ctx, (v) => {
    const c = new VolumeResizer(claimControllerOptions(ctx, v));
    return { run: (signal) => c.run(signal) };
  });

/**
 * The labeller, one instance per provisioner name, with the webhook server
 * when --webhook-secure-port is not 0: one server for the host, asking for
 * each PV the provider that serves its driver (the certificate is loaded or
 * made when it starts).
 */
export const startPvLabelController: ControllerFactory = (ctx) => {
  const cfg = ctx.config.volumes;
  const byDriver = new Map<string, Volumes>();
  const labelers = perProvisioner(ctx, (v) => {
    byDriver.set(v.driver, v.volumes);
    const c = new PvLabeler({
      driver: v.driver,
      volumes: v.volumes,
      core: ctx.clients.core,
      pvs: ctx.informers.for(PERSISTENT_VOLUMES),
      log: v.log,
      registry: ctx.registry,
      workers: cfg.concurrentSyncs,
      queueLabels: v.queueLabels,
    });
    return { run: (signal) => c.run(signal) };
  });
  if ('skip' in labelers) return labelers;
  // One driver: its name in the webhook's log lines, as before; several: each PV's line names its PV.
  const log = byDriver.size === 1 ? ctx.log.child({ driver: [...byDriver.keys()][0] }) : ctx.log;
  return {
    run: async (signal) => {
      const stopServing = ctx.webhooks.enabled
        ? await ctx.webhooks.serve(
            PV_LABEL_WEBHOOK_PATH,
            pvLabelHandler((driver) => byDriver.get(driver), log),
          )
        : undefined;
      try {
        await labelers.run(signal);
      } finally {
        await stopServing?.();
      }
    },
    healthy: labelers.healthy,
  };
};
