/**
 * The volume attacher (external-attacher semantics): VolumeAttachments whose
 * `spec.attacher` is our name — created by kube-controller-manager's
 * attach/detach controller for Pods on nodes — are published to the node's
 * instance (ControllerPublishVolume to its providerID) and marked attached;
 * deleted ones are unpublished and released.
 *
 * Order of an attach: finalizer + node-id annotation (so a detach can always
 * find the instance, even after the Node object is gone), then the cloud
 * call, then status. A detach unpublishes from the annotated instance (an
 * instance that no longer exists counts as detached), clears the status and
 * removes the finalizer. Every `--volume-attach-reconcile-period` the
 * attachments marked attached are compared with ListVolumes; one the cloud
 * does not show is marked detached, which makes the next sync publish again.
 *
 * The finalizer alone is not trusted (kube-apiserver can delete an object
 * whose finalizer was added after the DELETE read it, kubernetes#77988; or
 * someone removes it by hand): what this host published, or is publishing, is
 * remembered by name and uid, and an attachment found gone (from the cache,
 * or a 404 on the status write right after the publish) is unpublished.
 *
 * The drift repair runs outside the work queue, so every VolumeAttachment
 * name has a lock that sync() and the repair both take: a repair re-reads
 * the VolumeAttachment live under it and publishes only when the fresh
 * object still wants that volume on that node (same uid, not being deleted,
 * attached, our finalizer, same node id); a detach waiting for the lock then
 * undoes the re-publish, which is recorded like any publish of this host.
 */
import { type V1Node, type V1PersistentVolume, type V1VolumeAttachment } from '@kubernetes/client-node';
import { type StorageV1Api, type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import type { Volumes } from '../../cloud-volumes.js';
import { InstanceNotFoundError } from '../../errors.js';
import type { KubeClients } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import { isNotFound } from '../../kube/client.js';
import { sanitizeMessage } from '../../kube/message-text.js';
import { patchOptions } from '../../kube/patch.js';
import { runWorkers, WorkQueue } from '../../kube/workqueue.js';
import { volumeRateLimiter, type VolumeQueueLabels } from './retry.js';
import { errorMessage, type Logger } from '../../log.js';
import { every } from '../../util/every.js';
import { Progress } from '../../util/progress.js';
import { Annotations, Controllers, Finalizers, LiveReadOutcomes, VOLUME_HANDLE_ANNOTATION } from '../../names.js';
import { KeyedMutex } from '../../util/keyed-mutex.js';
import { liveReadCounter, type LiveReadCount } from '../live-reads.js';
import { setFinalizer } from './finalizers.js';

export interface AttacherOptions {
  driver: string;
  volumes: Volumes;
  clients: KubeClients;
  attachments: Informer<V1VolumeAttachment>;
  pvs: Informer<V1PersistentVolume>;
  nodes: Informer<V1Node>;
  /** True when --node-selector limits the Nodes informer: VolumeAttachments for other nodes belong to another host. */
  nodesSharded: boolean;
  /**
   * With several providers: why a Node is not this provider's (its
   * VolumeAttachments get an attach error and no cloud call), or undefined
   * when it is. Absent with one provider: every Node, as before.
   */
  foreignNode?: (node: V1Node) => string | undefined;
  /** The `provider`/`provisioner` labels of the work-queue metrics when the host runs several instances (start.ts); absent: none. */
  queueLabels?: VolumeQueueLabels;
  log: Logger;
  registry?: Registry;
  workers: number;
  reconcilePeriodMs: number;
}

export class VolumeAttacher {
  private readonly queue: WorkQueue<string>;
  private readonly storage: StorageV1Api;
  private readonly core: CoreV1Api;
  private readonly finalizer: string;
  /** The drift check loop: stuck, it fails readiness after three periods and a minute. */
  private readonly progress: Progress;
  /** Attachments published (or being published) by this host, by VolumeAttachment name. */
  private readonly published = new Map<string, { uid: string; handle: string; nodeId: string }>();
  /** Per VolumeAttachment name: sync() and the drift repair never overlap (the queue alone only serializes sync). */
  private readonly lock = new KeyedMutex<string>();
  /** Counts the VolumeAttachment reads that confirm a repair. */
  private readonly liveRead: LiveReadCount;

  constructor(private readonly o: AttacherOptions) {
    this.progress = new Progress(3 * o.reconcilePeriodMs + 60_000);
    this.queue = new WorkQueue<string>({
      name: 'volume-attacher',
      ...o.queueLabels,
      rateLimiter: volumeRateLimiter<string>(),
      registry: o.registry,
    });
    this.storage = o.clients.storage;
    this.core = o.clients.core;
    this.finalizer = Finalizers.attacher(o.driver);
    this.liveRead = liveReadCounter(Controllers.VOLUME_ATTACHER, 'volumeattachments', o.registry);
    const add = (va: V1VolumeAttachment) => {
      if (va.spec?.attacher === o.driver) this.queue.add(va.metadata!.name!);
    };
    o.attachments.addEventHandler({ onAdd: add, onUpdate: (_o, va) => add(va), onDelete: add });
    // A node that gets its providerID (or appears) unblocks waiting attachments.
    o.nodes.addEventHandler({
      onUpdate: (old, n) => {
        if (old.spec?.providerID !== n.spec?.providerID) this.requeueNode(n.metadata!.name!);
      },
      onAdd: (n) => this.requeueNode(n.metadata!.name!),
    });
  }

  private requeueNode(node: string): void {
    for (const va of this.o.attachments.list())
      if (va.spec?.attacher === this.o.driver && va.spec.nodeName === node) this.queue.add(va.metadata!.name!);
  }

  healthy(): boolean {
    return this.progress.healthy();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info({ driver: this.o.driver, workers: this.o.workers }, 'Starting volume attacher');
    for (const i of [this.o.attachments, this.o.pvs, this.o.nodes]) if (!(await i.waitForSync(signal))) return;
    this.progress.mark();
    const loop = this.reconcileLoop(signal);
    await runWorkers(this.queue, this.o.workers, (k) => this.sync(k), { log: this.o.log, signal });
    await loop;
    this.o.log.info('Shutting down volume attacher');
  }

  async sync(name: string): Promise<void> {
    return this.lock.run(name, () => this.syncLocked(name));
  }

  private async syncLocked(name: string): Promise<void> {
    const va = this.o.attachments.get(name);
    const rec = this.published.get(name);
    if (rec && rec.uid !== va?.metadata?.uid) await this.unpublishGone(name, rec);
    if (!va || va.spec?.attacher !== this.o.driver) return;
    if (va.metadata?.deletionTimestamp) return this.detach(va);
    if (va.status?.attached) return;
    return this.attach(va);
  }

  private volumeHandle(va: V1VolumeAttachment): string | undefined {
    const pvName = va.spec?.source?.persistentVolumeName;
    const pv = pvName ? this.o.pvs.get(pvName) : undefined;
    return (
      pv?.spec?.csi?.volumeHandle ?? va.spec?.source?.inlineVolumeSpec?.csi?.volumeHandle ?? va.metadata?.annotations?.[VOLUME_HANDLE_ANNOTATION]
    );
  }

  private async attach(va: V1VolumeAttachment): Promise<void> {
    const name = va.metadata!.name!;
    const nodeName = va.spec!.nodeName;
    const node = this.o.nodes.get(nodeName);
    if (!node && this.o.nodesSharded) return; // another host's node
    try {
      if (!node) throw new Error(`node ${nodeName} not found`);
      const foreign = this.o.foreignNode?.(node);
      if (foreign) throw new Error(foreign);
      const providerId = node.spec?.providerID;
      if (!providerId) throw new Error(`node ${nodeName} has no providerID yet (not initialized by the cloud node controller)`);
      const pvName = va.spec!.source?.persistentVolumeName;
      const pv = pvName ? this.o.pvs.get(pvName) : undefined;
      const csi = pv?.spec?.csi ?? va.spec!.source?.inlineVolumeSpec?.csi;
      if (!csi) throw new Error(`PersistentVolume ${pvName ?? '(inline)'} not found or has no csi source`);
      if (csi.driver !== this.o.driver) throw new Error(`volume is of driver ${csi.driver}, not ${this.o.driver}`);
      if (pv?.metadata?.deletionTimestamp) throw new Error(`PersistentVolume ${pvName} is being deleted`);
      const updated = await setFinalizer(
        {
          read: () => this.storage.readVolumeAttachment({ name }),
          patch: (metadata) => this.storage.patchVolumeAttachment({ name, body: { metadata } }, patchOptions('merge')),
        },
        va,
        this.finalizer,
        true,
        { annotations: { [Annotations.VA_NODE_ID]: providerId, [VOLUME_HANDLE_ANNOTATION]: csi.volumeHandle } },
      );
      if (!updated || updated.metadata?.deletionTimestamp) return;
      const rec = { uid: va.metadata!.uid!, handle: csi.volumeHandle, nodeId: providerId };
      this.published.set(name, rec);
      const metadata = await this.o.volumes.controllerPublish(csi.volumeHandle, providerId, !!csi.readOnly, csi.volumeAttributes ?? {});
      try {
        await this.patchStatus(name, { attached: true, attachmentMetadata: metadata, attachError: null });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        return await this.unpublishGone(name, rec);
      }
      this.o.log.info({ attachment: name, volume: csi.volumeHandle, node: nodeName }, 'attached volume');
    } catch (err) {
      const message = sanitizeMessage(errorMessage(err));
      await this.patchStatus(name, { attached: false, attachError: { time: new Date().toISOString(), message } }).catch(() => undefined);
      throw err;
    }
  }

  private async detach(va: V1VolumeAttachment): Promise<void> {
    const name = va.metadata!.name!;
    if (!(va.metadata?.finalizers ?? []).includes(this.finalizer)) return;
    const nodeId = va.metadata?.annotations?.[Annotations.VA_NODE_ID] ?? this.o.nodes.get(va.spec!.nodeName)?.spec?.providerID;
    const handle = this.volumeHandle(va);
    // Without an annotation the volume was never published (the annotation comes first).
    if (nodeId && handle) {
      try {
        await this.o.volumes.controllerUnpublish(handle, nodeId);
      } catch (err) {
        // The instance is gone, so the volume is not attached to it.
        if (!(err instanceof InstanceNotFoundError)) {
          await this.patchStatus(name, { detachError: { time: new Date().toISOString(), message: sanitizeMessage(errorMessage(err)) } }).catch(
            () => undefined,
          );
          throw err;
        }
      }
    }
    await this.patchStatus(name, { attached: false, attachmentMetadata: null, detachError: null }).catch((err) => {
      this.o.log.debug({ attachment: name, err: errorMessage(err) }, 'could not clear attachment status');
    });
    await setFinalizer(
      {
        read: () => this.storage.readVolumeAttachment({ name }),
        patch: (metadata) => this.storage.patchVolumeAttachment({ name, body: { metadata } }, patchOptions('merge')),
      },
      va,
      this.finalizer,
      false,
    );
    this.published.delete(name);
    this.o.log.info({ attachment: name, volume: handle, node: va.spec?.nodeName }, 'detached volume');
  }

  /** Unpublishes an attachment whose VolumeAttachment is gone (or replaced); forgets it once the cloud agrees. */
  private async unpublishGone(name: string, rec: { uid: string; handle: string; nodeId: string }): Promise<void> {
    this.o.log.info(
      { attachment: name, uid: rec.uid, volume: rec.handle, nodeId: rec.nodeId },
      'VolumeAttachment gone while published; unpublishing the volume',
    );
    try {
      await this.o.volumes.controllerUnpublish(rec.handle, rec.nodeId);
    } catch (err) {
      if (!(err instanceof InstanceNotFoundError)) throw err;
    }
    if (this.published.get(name) === rec) this.published.delete(name);
  }

  private async patchStatus(name: string, status: Record<string, unknown>): Promise<void> {
    await this.storage.patchVolumeAttachmentStatus({ name, body: { status } }, patchOptions('merge'));
  }

  private reconcileLoop(signal: AbortSignal): Promise<void> {
    return every(
      this.o.reconcilePeriodMs,
      signal,
      async () => {
        try {
          await this.reconcile();
        } catch (err) {
          this.o.log.warn({ err: errorMessage(err) }, 'attachment reconciliation failed');
        }
        this.progress.mark();
      },
      { delayFirst: true },
    );
  }

  /**
   * One drift check: attachments marked attached that the cloud does not show
   * are published again on the spot. Only a failed re-publish marks the
   * attachment detached (the normal attach path then retries with backoff);
   * an instance that no longer exists leaves the status alone, so
   * kube-controller-manager still detaches (deletes) the attachment, which
   * then counts as detached (an attached=false would stop it from ever
   * detaching, and the re-publish could never succeed).
   */
  async reconcile(): Promise<number> {
    if (!this.o.volumes.listsPublishedNodes) return 0;
    const mine = this.o.attachments
      .list()
      .filter((va) => va.spec?.attacher === this.o.driver && va.status?.attached && !va.metadata?.deletionTimestamp);
    if (mine.length === 0) return 0;
    const published = new Map<string, Set<string>>();
    for (const e of await this.o.volumes.listVolumes()) published.set(e.volume.volumeId, new Set(e.publishedNodeIds));
    let repaired = 0;
    for (const va of mine) {
      const handle = this.volumeHandle(va);
      const nodeId = va.metadata?.annotations?.[Annotations.VA_NODE_ID];
      if (!handle || !nodeId || published.get(handle)?.has(nodeId)) continue;
      const name = va.metadata!.name!;
      try {
        if (await this.lock.run(name, () => this.repair(va, handle, nodeId))) repaired++;
      } catch (err) {
        this.o.log.warn({ attachment: name, err: errorMessage(err) }, 'could not check a lost attachment; next period');
      }
    }
    return repaired;
  }

  /**
   * Publishes again an attachment the cloud lost (caller holds its lock).
   * `seen` is the cache's copy from before ListVolumes, which may have taken
   * seconds: the VolumeAttachment is read live first and the publish happens
   * only when it still asks for it. Returns whether it published.
   */
  private async repair(seen: V1VolumeAttachment, handle: string, nodeId: string): Promise<boolean> {
    const name = seen.metadata!.name!;
    let va: V1VolumeAttachment | undefined;
    try {
      va = await this.storage.readVolumeAttachment({ name });
    } catch (err) {
      if (!isNotFound(err)) {
        this.liveRead(LiveReadOutcomes.ERROR);
        throw err;
      }
    }
    const still =
      va &&
      va.metadata?.uid === seen.metadata?.uid &&
      !va.metadata?.deletionTimestamp &&
      va.status?.attached === true &&
      (va.metadata?.finalizers ?? []).includes(this.finalizer) &&
      va.spec?.nodeName === seen.spec?.nodeName &&
      va.metadata?.annotations?.[Annotations.VA_NODE_ID] === nodeId;
    this.liveRead(!va ? LiveReadOutcomes.GONE : still ? LiveReadOutcomes.CONFIRMED : LiveReadOutcomes.CHANGED);
    if (!va || !still) {
      this.o.log.info(
        { attachment: name, volume: handle, nodeId },
        'lost attachment changed or went away meanwhile (read live); not attaching it again',
      );
      return false;
    }
    this.o.log.warn({ attachment: name, volume: handle, node: va.spec?.nodeName }, 'volume is not attached in the cloud; attaching it again');
    const pvName = va.spec?.source?.persistentVolumeName;
    const csi = (pvName ? this.o.pvs.get(pvName)?.spec?.csi : undefined) ?? va.spec?.source?.inlineVolumeSpec?.csi;
    // Recorded before the call, as attach() does: a VolumeAttachment that vanishes from here on is unpublished.
    this.published.set(name, { uid: va.metadata!.uid!, handle, nodeId });
    try {
      await this.o.volumes.controllerPublish(handle, nodeId, !!csi?.readOnly, csi?.volumeAttributes ?? {});
      return true;
    } catch (err) {
      if (err instanceof InstanceNotFoundError) {
        this.o.log.info({ attachment: name, volume: handle, nodeId }, 'instance of a lost attachment no longer exists; left to the detach');
        return false;
      }
      this.o.log.warn({ attachment: name, err: errorMessage(err) }, 'could not attach a lost attachment again; retried through the attach path');
      await this.patchStatus(name, { attached: false }).catch((e) =>
        this.o.log.warn({ attachment: name, err: errorMessage(e) }, 'could not mark attachment for repair'),
      );
      return false;
    }
  }
}
