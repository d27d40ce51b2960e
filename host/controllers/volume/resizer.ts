/**
 * The volume resizer (external-resizer semantics): a bound claim of our
 * driver whose requested size exceeds its PV's capacity is grown in the
 * cloud (ControllerExpandVolume), then the PV's capacity and the claim's
 * status are updated: `allocatedResources`, `allocatedResourceStatuses`
 * (ControllerResizeInProgress → NodeResizePending when the file system must
 * be grown by the kubelet, with the FileSystemResizePending condition; else
 * finished and `status.capacity` set).
 *
 * A class without `allowVolumeExpansion` gets a Warning event and nothing
 * else (the API server's PersistentVolumeClaimResize admission plugin
 * normally refuses such edits; this covers classes changed afterwards and
 * clusters without the plugin). A request below what was already allocated
 * (possible while a node expansion is pending) is a shrink: refused with a
 * Warning event.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition, V1StorageClass } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import type { Volumes } from '../../cloud-volumes.js';
import { CloudCallError } from '../../errors.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { keyOf } from '../../kube/keys.js';
import { patchOptions } from '../../kube/patch.js';
import { runWorkers, WorkQueue } from '../../kube/workqueue.js';
import { volumeRateLimiter, type VolumeQueueLabels } from './retry.js';
import { errorMessage, type Logger } from '../../log.js';
import { EventReasons } from '../../names.js';
import { bytesToQuantity, quantityToBytes } from './quantity.js';

/** Values of status.allocatedResourceStatuses (core/v1 ClaimResourceStatus). */
const ResizeStatus = {
  CONTROLLER_IN_PROGRESS: 'ControllerResizeInProgress',
  CONTROLLER_INFEASIBLE: 'ControllerResizeInfeasible',
  NODE_PENDING: 'NodeResizePending',
} as const;

/** gRPC codes that mean "this size can never be reached"; the user must change the request. */
const INFEASIBLE_CODES = new Set(['INVALID_ARGUMENT', 'OUT_OF_RANGE', 'NOT_FOUND']);

/** What the claim-driven volume controllers (resizer, provisioner) are built from. */
export interface ClaimControllerOptions {
  driver: string;
  volumes: Volumes;
  core: CoreV1Api;
  claims: Informer<V1PersistentVolumeClaim>;
  pvs: Informer<V1PersistentVolume>;
  classes: Informer<V1StorageClass>;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  workers: number;
  /** The `provider`/`provisioner` labels of the work-queue metrics when the host runs several instances (start.ts); absent: none. */
  queueLabels?: VolumeQueueLabels;
}

export type ResizerOptions = ClaimControllerOptions;

const claimKey = (c: V1PersistentVolumeClaim) => keyOf(c);

/** The claim's conditions without `types`, plus `add` (lastTransitionTime kept when already present). */
function withConditions(claim: V1PersistentVolumeClaim, drop: string[], add?: string): V1PersistentVolumeClaimCondition[] {
  const current = claim.status?.conditions ?? [];
  const kept = current.filter((c) => !drop.includes(c.type) || c.type === add);
  if (add && !kept.some((c) => c.type === add)) kept.push({ type: add, status: 'True', lastTransitionTime: new Date() });
  return kept;
}

export class VolumeResizer {
  private readonly queue: WorkQueue<string>;

  constructor(private readonly o: ResizerOptions) {
    this.queue = new WorkQueue<string>({
      name: 'volume-resizer',
      ...o.queueLabels,
      rateLimiter: volumeRateLimiter<string>(),
      registry: o.registry,
    });
    const add = (c: V1PersistentVolumeClaim) => this.queue.add(claimKey(c));
    o.claims.addEventHandler({ onAdd: add, onUpdate: (_o, c) => add(c) });
    o.pvs.addEventHandler({
      onUpdate: (_o, pv) => {
        const ref = pv.spec?.claimRef;
        if (pv.spec?.csi?.driver === o.driver && ref?.name && ref.namespace) this.queue.add(`${ref.namespace}/${ref.name}`);
      },
    });
    o.classes.addEventHandler({
      onUpdate: (_o, sc) => {
        for (const c of o.claims.list()) if (c.spec?.storageClassName === sc.metadata?.name) add(c);
      },
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info({ driver: this.o.driver, workers: this.o.workers }, 'Starting volume resizer');
    for (const i of [this.o.claims, this.o.pvs, this.o.classes]) if (!(await i.waitForSync(signal))) return;
    await runWorkers(this.queue, this.o.workers, (k) => this.sync(k), { log: this.o.log, signal });
    this.o.log.info('Shutting down volume resizer');
  }

  async sync(key: string): Promise<void> {
    const claim = this.o.claims.get(key);
    if (!claim || claim.status?.phase !== 'Bound' || !claim.spec?.volumeName) return;
    const pv = this.o.pvs.get(claim.spec.volumeName);
    if (!pv || pv.spec?.csi?.driver !== this.o.driver) return;
    const requestText = claim.spec.resources?.requests?.storage;
    const requested = quantityToBytes(requestText);
    const pvBytes = quantityToBytes(pv.spec.capacity?.storage);
    if (requested === undefined || pvBytes === undefined) return;
    const allocated = quantityToBytes(claim.status?.allocatedResources?.storage);
    const state = claim.status?.allocatedResourceStatuses?.storage;
    if (requested < pvBytes) {
      if (allocated !== undefined && requested < allocated) {
        this.o.recorder.event(
          claim,
          'Warning',
          EventReasons.VOLUME_RESIZE_FAILED,
          `shrinking volume ${pv.metadata!.name} from ${bytesToQuantity(pvBytes)} to ${requestText} is not supported; set the request back to at least ${bytesToQuantity(pvBytes)}`,
        );
      }
      return;
    }
    // Equal sizes need work only to finish an expansion whose outcome was not recorded.
    if (requested === pvBytes && state !== ResizeStatus.CONTROLLER_IN_PROGRESS) return;
    const className = claim.spec.storageClassName ?? '';
    const sc = this.o.classes.get(className);
    if (!sc?.allowVolumeExpansion) {
      this.o.recorder.event(
        claim,
        'Warning',
        EventReasons.VOLUME_RESIZE_FAILED,
        `StorageClass ${JSON.stringify(className)} does not allow volume expansion (allowVolumeExpansion is not true); the volume stays ${bytesToQuantity(pvBytes)}`,
      );
      return;
    }
    await this.expand(claim, pv, requested, requestText!);
  }

  private async expand(claim: V1PersistentVolumeClaim, pv: V1PersistentVolume, requested: number, requestText: string): Promise<void> {
    const pvName = pv.metadata!.name!;
    const { name, namespace } = claim.metadata as { name: string; namespace: string };
    const current = await this.patchClaimStatus(name, namespace, {
      allocatedResources: { storage: requestText },
      allocatedResourceStatuses: { storage: ResizeStatus.CONTROLLER_IN_PROGRESS },
      conditions: withConditions(claim, ['Resizing', 'FileSystemResizePending', 'ControllerResizeError'], 'Resizing'),
    });
    this.o.recorder.event(claim, 'Normal', EventReasons.RESIZING, `External resizer is resizing volume ${pvName}`);
    let result;
    try {
      result = await this.o.volumes.expandVolume(pv.spec!.csi!.volumeHandle, requested);
    } catch (err) {
      const message = `resize volume ${pvName} to ${requestText} failed: ${errorMessage(err)}`;
      this.o.recorder.event(claim, 'Warning', EventReasons.VOLUME_RESIZE_FAILED, message);
      if (err instanceof CloudCallError && INFEASIBLE_CODES.has(err.code)) {
        // Final: wait for the user to change the request (an update requeues the claim).
        await this.patchClaimStatus(name, namespace, {
          allocatedResourceStatuses: { storage: ResizeStatus.CONTROLLER_INFEASIBLE },
          conditions: withConditions(current, ['Resizing']),
        });
        return;
      }
      throw err;
    }
    const capacity = bytesToQuantity(result.capacityBytes);
    await this.o.core.patchPersistentVolume({ name: pvName, body: { spec: { capacity: { storage: capacity } } } }, patchOptions('merge'));
    if (result.nodeExpansionRequired) {
      await this.patchClaimStatus(name, namespace, {
        allocatedResourceStatuses: { storage: ResizeStatus.NODE_PENDING },
        conditions: withConditions(current, ['Resizing'], 'FileSystemResizePending'),
      });
      this.o.recorder.event(claim, 'Normal', EventReasons.FILE_SYSTEM_RESIZE_REQUIRED, `Require file system resize of volume on node`);
    } else {
      await this.patchClaimStatus(name, namespace, {
        capacity: { storage: capacity },
        allocatedResourceStatuses: null,
        conditions: withConditions(current, ['Resizing', 'FileSystemResizePending']),
      });
      this.o.recorder.event(claim, 'Normal', EventReasons.VOLUME_RESIZE_SUCCESSFUL, `Resize volume succeeded`);
    }
    this.o.log.info({ claim: `${namespace}/${name}`, pv: pvName, capacity, nodeExpansionRequired: result.nodeExpansionRequired }, 'expanded volume');
  }

  private patchClaimStatus(name: string, namespace: string, status: Record<string, unknown>): Promise<V1PersistentVolumeClaim> {
    return this.o.core.patchNamespacedPersistentVolumeClaimStatus({ name, namespace, body: { status } }, patchOptions('merge'));
  }
}
