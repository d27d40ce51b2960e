/**
 * Wires the volume controllers into the host (registry.ts). They share one
 * provisioner name: --volume-provisioner-name, else the plugin's name.
 */
import type { Volumes } from '../../cloud-volumes.js';
import { driverNameProblem } from '../../config/volumes.js';
import type { ControllerContext, ControllerFactory } from '../context.js';
import { VolumeAttacher } from './attacher.js';
import { VolumeProvisioner } from './provisioner.js';
import { PvLabeler } from './labeler.js';
import { VolumeResizer, type ClaimControllerOptions } from './resizer.js';
import { webhookCert } from './webhook-cert.js';
import { loadSniCerts } from '../../server/sni.js';
import { PvLabelWebhook } from './webhook.js';
import { DelegatedGuard } from '../../server/guard.js';
import { PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES, VOLUME_ATTACHMENTS } from './resources.js';

/** The provisioner name of this host, or a reason it has none. */
function provisionerName(ctx: ControllerContext): { name: string } | { skip: string } {
  const name = ctx.config.volumes.provisionerName || ctx.cloud.info().name;
  const problem = driverNameProblem(name);
  if (problem) return { skip: `no usable provisioner name (${problem}); pass --volume-provisioner-name` };
  return { name };
}

function volumesAndName(ctx: ControllerContext) {
  const volumes = ctx.cloud.volumes();
  if (!volumes) return { skip: 'the cloud provider does not implement volumes' };
  const named = provisionerName(ctx);
  if ('skip' in named) return named;
  return { volumes, driver: named.name };
}

/** The options the provisioner and the resizer share. */
function claimControllerOptions(ctx: ControllerContext, v: { volumes: Volumes; driver: string }): ClaimControllerOptions {
  return {
    driver: v.driver,
    volumes: v.volumes,
    core: ctx.clients.core,
    claims: ctx.informers.for(PERSISTENT_VOLUME_CLAIMS),
    pvs: ctx.informers.for(PERSISTENT_VOLUMES),
    classes: ctx.informers.for(STORAGE_CLASSES),
    recorder: ctx.recorder,
    log: ctx.log.child({ driver: v.driver }),
    registry: ctx.registry,
    workers: ctx.config.volumes.concurrentSyncs,
  };
}

export const startVolumeProvisioner: ControllerFactory = (ctx) => {
  const v = volumesAndName(ctx);
  if ('skip' in v) return v;
  const c = new VolumeProvisioner({
    ...claimControllerOptions(ctx, v),
    attachments: ctx.informers.for(VOLUME_ATTACHMENTS),
    nodes: ctx.informers.nodes(),
  });
  // After a plugin restart, learn the outcome of interrupted creates now, not at their backoff.
  ctx.supervisor.on('ready', () => c.requeueInFlight());
  return { run: (signal) => c.run(signal) };
};

export const startVolumeAttacher: ControllerFactory = (ctx) => {
  const v = volumesAndName(ctx);
  if ('skip' in v) return v;
  const c = new VolumeAttacher({
    driver: v.driver,
    volumes: v.volumes,
    clients: ctx.clients,
    attachments: ctx.informers.for(VOLUME_ATTACHMENTS),
    pvs: ctx.informers.for(PERSISTENT_VOLUMES),
    nodes: ctx.informers.nodes(),
    nodesSharded: ctx.config.nodeSelector !== '',
    log: ctx.log.child({ driver: v.driver }),
    registry: ctx.registry,
    workers: ctx.config.volumes.concurrentSyncs,
    reconcilePeriodMs: ctx.config.volumes.attachReconcilePeriodMs,
  });
  return { run: (signal) => c.run(signal), healthy: () => c.healthy() };
};

export const startVolumeResizer: ControllerFactory = (ctx) => {
  const v = volumesAndName(ctx);
  if ('skip' in v) return v;
  const c = new VolumeResizer(claimControllerOptions(ctx, v));
  return { run: (signal) => c.run(signal) };
};

/** The labeller, with the webhook server when --webhook-secure-port is not 0 (the certificate is loaded or made when it starts). */
export const startPvLabelController: ControllerFactory = (ctx) => {
  const v = volumesAndName(ctx);
  if ('skip' in v) return v;
  const cfg = ctx.config.volumes;
  const log = ctx.log.child({ driver: v.driver });
  const pvs = ctx.informers.for(PERSISTENT_VOLUMES);
  return {
    run: async (signal) => {
      let webhook: PvLabelWebhook | undefined;
      if (cfg.webhookPort > 0) {
        const cert = await webhookCert({ tls: cfg.webhookTls, certDir: cfg.webhookCertDir });
        log.info({ certificate: cert.source }, 'PersistentVolume label webhook certificate');
        const guard = new DelegatedGuard({ auth: await ctx.requestAuth(), anonymous: false, log });
        webhook = new PvLabelWebhook({
          driver: v.driver,
          volumes: v.volumes,
          cert: cert.cert,
          key: cert.key,
          tls: {
            minVersion: cfg.webhookTlsMinVersion,
            ciphers: cfg.webhookTlsCiphers,
            ecdhCurve: cfg.webhookTlsCurves,
            sni: await loadSniCerts(cfg.webhookSniCerts),
          },
          bindAddress: cfg.webhookBindAddress,
          port: cfg.webhookPort,
          guard,
          log,
        });
      }
      const c = new PvLabeler({
        driver: v.driver,
        volumes: v.volumes,
        core: ctx.clients.core,
        pvs,
        webhook,
        log,
        registry: ctx.registry,
        workers: cfg.concurrentSyncs,
      });
      await c.run(signal);
    },
  };
};
