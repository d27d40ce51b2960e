/**
 * The persistentvolume-label-controller: serves the PV label webhook
 * (webhook.ts) and labels PVs of our driver that lack the cloud's topology
 * labels — PVs created before the webhook existed, while it was down, or
 * while the cloud did not answer. Labels are always added; node affinity
 * only when the PV has none (it is immutable once set), else a log line says
 * why it was left.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import type { Volumes } from '../../cloud-volumes.js';
import { CloudCallError } from '../../errors.js';
import type { Informer } from '../../kube/informer.js';
import { patchOptions } from '../../kube/patch.js';
import { runWorkers, WorkQueue } from '../../kube/workqueue.js';
import { volumeRateLimiter, type VolumeQueueLabels } from './retry.js';
import { errorMessage, type Logger } from '../../log.js';
import { Labels } from '../../names.js';
import { affinityWithLabels, missingLabels } from './pv-labels.js';

export interface LabelerOptions {
  driver: string;
  volumes: Volumes;
  core: CoreV1Api;
  pvs: Informer<V1PersistentVolume>;
  log: Logger;
  registry?: Registry;
  workers: number;
  /** The `provider`/`provisioner` labels of the work-queue metrics when the host runs several instances (start.ts); absent: none. */
  queueLabels?: VolumeQueueLabels;
}

/** Whether a PV of some driver lacks a topology label (cheap check before asking the cloud). */
function lacksTopology(pv: V1PersistentVolume): boolean {
  const l = pv.metadata?.labels ?? {};
  return !l[Labels.ZONE] || !l[Labels.REGION];
}

export class PvLabeler {
  private readonly queue: WorkQueue<string>;
  /** PVs already labelled as far as the cloud allows, by resourceVersion (so a PV whose cloud has no region is asked once per change). */
  private readonly done = new Map<string, string>();

  constructor(private readonly o: LabelerOptions) {
    this.queue = new WorkQueue<string>({
      name: 'persistentvolume-label',
      ...o.queueLabels,
      rateLimiter: volumeRateLimiter<string>(),
      registry: o.registry,
    });
    const add = (pv: V1PersistentVolume) => {
      if (pv.spec?.csi?.driver === o.driver && !pv.metadata?.deletionTimestamp && lacksTopology(pv)) this.queue.add(pv.metadata!.name!);
    };
    o.pvs.addEventHandler({ onAdd: add, onUpdate: (_o, pv) => add(pv), onDelete: (pv) => this.done.delete(pv.metadata!.name!) });
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info({ driver: this.o.driver }, 'Starting persistentvolume label controller');
    try {
      if (await this.o.pvs.waitForSync(signal)) {
        await runWorkers(this.queue, this.o.workers, (k) => this.sync(k), { log: this.o.log, signal });
      }
    } finally {
      this.o.log.info('Shutting down persistentvolume label controller');
    }
  }

  async sync(name: string): Promise<void> {
    const pv = this.o.pvs.get(name);
    if (!pv || pv.spec?.csi?.driver !== this.o.driver || pv.metadata?.deletionTimestamp) return;
    if (this.done.get(name) === pv.metadata?.resourceVersion) return;
    let labels: Record<string, string>;
    try {
      labels = await this.o.volumes.getVolumeLabels(pv.spec.csi.volumeHandle);
    } catch (err) {
      if (err instanceof CloudCallError && err.code === 'NOT_FOUND') {
        this.o.log.warn({ pv: name, volume: pv.spec.csi.volumeHandle }, 'not labelling PersistentVolume: the cloud has no such volume');
        this.done.set(name, pv.metadata?.resourceVersion ?? '');
        return;
      }
      throw err;
    }
    const missing = missingLabels(pv, labels);
    const affinity = pv.spec.nodeAffinity ? undefined : affinityWithLabels(undefined, labels);
    if (pv.spec.nodeAffinity && affinityWithLabels(pv.spec.nodeAffinity, labels)) {
      this.o.log.info({ pv: name }, 'PersistentVolume has node affinity without the cloud topology; node affinity is immutable, adding labels only');
    }
    if (Object.keys(missing).length === 0 && !affinity) {
      this.done.set(name, pv.metadata?.resourceVersion ?? '');
      return;
    }
    const patch: Record<string, unknown> = { metadata: { labels: missing } };
    if (affinity) patch.spec = { nodeAffinity: affinity };
    try {
      const updated = await this.o.core.patchPersistentVolume({ name, body: patch }, patchOptions('merge'));
      this.done.set(name, updated.metadata?.resourceVersion ?? '');
    } catch (err) {
      if (!affinity) throw err;
      // Some API servers refuse setting node affinity after creation: labels alone then.
      this.o.log.info({ pv: name, err: errorMessage(err) }, 'could not add node affinity to PersistentVolume; adding labels only');
      const updated = await this.o.core.patchPersistentVolume({ name, body: { metadata: { labels: missing } } }, patchOptions('merge'));
      this.done.set(name, updated.metadata?.resourceVersion ?? '');
    }
    this.o.log.info({ pv: name, labels: missing, nodeAffinity: !!affinity }, 'labelled PersistentVolume');
  }
}
