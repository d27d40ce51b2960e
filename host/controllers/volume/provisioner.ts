/**
 * The volume provisioner (external-provisioner semantics, no upstream CCM
 * counterpart): claims of StorageClasses whose `provisioner` is our name get
 * a cloud volume (CreateVolume named `pvc-<claim uid>`) and a PV pre-bound
 * to them; released PVs with reclaim policy Delete lose their cloud volume,
 * then their finalizer, then the object.
 *
 * A CreateVolume that failed transiently (timeout, UNAVAILABLE, plugin
 * restart) may still be running in the cloud: the request is repeated, with
 * the same name, until a final answer, even when the claim has been deleted
 * meanwhile; a volume that then exists without a claim is deleted. Before
 * the first call the claim gets a finalizer and the request as an
 * annotation, removed once the PV exists (or the create failed for good), so
 * this holds across host restarts too (upstream keeps it in memory only). A
 * claim whose finalizer was removed by hand is still covered by the
 * in-memory record while this host runs.
 *
 * A CreateVolume that made a volume the host cannot use (an answer that fails
 * validation, e.g. a capacity above the claim's limit; or ALREADY_EXISTS: the
 * name is taken by a volume made with other parameters) is not "nothing
 * created": the finalizer, the request and the record stay, the volume is
 * deleted in the cloud when the answer named a usable id (external-
 * provisioner does this for a volume smaller than asked), and the create is
 * retried with a Warning. A volume that cannot be named to the cloud holds a
 * deleted claim until it can (Warning events say how to let it go).
 *
 * Deletions are confirmed with a live read, never decided from the cache:
 * the PV (phase, reclaim policy, driver, uid) right before DeleteVolume of a
 * released PV, and the PV's absence before deleting the volume of a claim
 * that went away during its create.
 */
import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass, V1VolumeAttachment } from '@kubernetes/client-node';
import type { CreateVolumeRequest } from '../../cloud-volumes.js';
import { CloudCallError, PluginUnavailableError, UnusableVolumeError } from '../../errors.js';
import { isConflict, isNotFound } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import { keyOf } from '../../kube/keys.js';
import { patchOptions } from '../../kube/patch.js';
import { runWorkers, WorkQueue } from '../../kube/workqueue.js';
import { volumeRateLimiter } from './retry.js';
import { errorMessage } from '../../log.js';
import { Annotations, Controllers, EventReasons, Finalizers, LiveReadOutcomes } from '../../names.js';
import { liveReadCounter, type LiveReadCount } from '../live-reads.js';
import { setFinalizer } from './finalizers.js';
import { BadClaimError, claimProvisioner, createRequestFor, persistentVolumeFor, volumeNameFor } from './pv-spec.js';
import type { ClaimControllerOptions } from './resizer.js';

/** Whether the claim carries our provisioning finalizer. */
function holdsClaim(claim: V1PersistentVolumeClaim): boolean {
  return (claim.metadata?.finalizers ?? []).includes(Finalizers.PROVISIONING_CLAIM);
}

/** The request persisted on the claim, if it is one (name = this claim's volume name). */
function persistedRequest(claim: V1PersistentVolumeClaim): CreateVolumeRequest | undefined {
  const text = claim.metadata?.annotations?.[Annotations.CREATE_REQUEST];
  if (!text) return undefined;
  try {
    const r = JSON.parse(text) as CreateVolumeRequest;
    const ok =
      r.name === volumeNameFor(claim) &&
      Number.isSafeInteger(r.requiredBytes) &&
      Number.isSafeInteger(r.limitBytes) &&
      typeof r.parameters === 'object' &&
      Array.isArray(r.requisite) &&
      Array.isArray(r.preferred);
    return ok ? r : undefined;
  } catch {
    return undefined;
  }
}

export interface ProvisionerOptions extends ClaimControllerOptions {
  attachments: Informer<V1VolumeAttachment>;
  nodes: Informer<V1Node>;
}

/** A CreateVolume whose outcome is not known yet. */
interface InFlight {
  uid: string;
  request: CreateVolumeRequest;
  attempts: number;
}

/** Whether an error means "the operation may still be in progress". */
function mayBeInProgress(err: unknown): boolean {
  if (err instanceof PluginUnavailableError) return true;
  return err instanceof CloudCallError && err.transient;
}

/**
 * What a failed CreateVolume says about the cloud:
 *  - `unknown`: it may still be in progress; repeat the identical request;
 *  - `exists`: a volume of that name exists but cannot be used (an invalid
 *    answer, or ALREADY_EXISTS); `volumeId` when DeleteVolume can name it;
 *  - `none`: final, nothing was created.
 */
type CreateFailure = { kind: 'unknown' } | { kind: 'exists'; volumeId?: string } | { kind: 'none' };

function createFailure(err: unknown): CreateFailure {
  if (mayBeInProgress(err)) return { kind: 'unknown' };
  if (err instanceof UnusableVolumeError) return { kind: 'exists', volumeId: err.volumeId };
  if (err instanceof CloudCallError && err.code === 'ALREADY_EXISTS') return { kind: 'exists' };
  return { kind: 'none' };
}

/** What a PV we provisioned asks of this controller, from its phase, reclaim policy and deletion state. */
type PvAction = 'none' | 'release-retained' | 'delete-volume';

function pvAction(pv: V1PersistentVolume, driver: string): PvAction {
  if (pv.spec?.csi?.driver !== driver || pv.metadata?.annotations?.[Annotations.PROVISIONED_BY] !== driver) return 'none';
  const deleting = !!pv.metadata?.deletionTimestamp;
  const phase = pv.status?.phase;
  const hasFinalizer = (pv.metadata?.finalizers ?? []).includes(Finalizers.PROVISIONER);
  // Retained: the cloud volume stays; only a deleted object is let go.
  if ((pv.spec?.persistentVolumeReclaimPolicy ?? 'Delete') !== 'Delete') return deleting && hasFinalizer ? 'release-retained' : 'none';
  if (!(phase === 'Released' || phase === 'Failed' || (deleting && phase !== 'Bound'))) return 'none';
  if (!deleting && !hasFinalizer && phase === 'Failed') return 'none';
  return 'delete-volume';
}

export class VolumeProvisioner {
  private readonly claimQueue: WorkQueue<string>;
  private readonly pvQueue: WorkQueue<string>;
  private readonly inFlight = new Map<string, InFlight>();
  /** Written into every PV's volumeAttributes, as external-provisioner does. */
  private readonly identity: string;
  /** Counts the PV reads that confirm a volume deletion. */
  private readonly liveRead: LiveReadCount;

  constructor(private readonly o: ProvisionerOptions) {
    this.identity = `${Date.now()}-${o.driver}`;
    this.liveRead = liveReadCounter(Controllers.VOLUME_PROVISIONER, 'persistentvolumes', o.registry);
    this.claimQueue = new WorkQueue<string>({
      name: 'volume-provisioner-claims',
      ...o.queueLabels,
      rateLimiter: volumeRateLimiter<string>(),
      registry: o.registry,
    });
    this.pvQueue = new WorkQueue<string>({
      name: 'volume-provisioner-pvs',
      ...o.queueLabels,
      rateLimiter: volumeRateLimiter<string>(),
      registry: o.registry,
    });
    const claimKey = (c: V1PersistentVolumeClaim) => this.claimQueue.add(keyOf(c));
    o.claims.addEventHandler({ onAdd: claimKey, onUpdate: (_o, c) => claimKey(c), onDelete: claimKey });
    const pvKey = (pv: V1PersistentVolume) => {
      if (pv.spec?.csi?.driver === o.driver) this.pvQueue.add(pv.metadata!.name!);
    };
    o.pvs.addEventHandler({
      onAdd: pvKey,
      onUpdate: (_o, pv) => pvKey(pv),
      // A PV deleted by hand before its claim was bound: the claim needs a new one.
      onDelete: (pv) => {
        const ref = pv.spec?.claimRef;
        if (pv.spec?.csi?.driver === o.driver && ref?.name) this.claimQueue.add(keyOf({ metadata: ref }));
      },
    });
    // A class created after its claims: look at the claims again.
    o.classes.addEventHandler({
      onAdd: (sc) => {
        if (sc.provisioner !== o.driver) return;
        for (const c of o.claims.list()) if (c.spec?.storageClassName === sc.metadata?.name) claimKey(c);
      },
    });
    // A VolumeAttachment gone may unblock a PV deletion.
    o.attachments.addEventHandler({
      onDelete: (va) => {
        const pv = va.spec?.source?.persistentVolumeName;
        if (pv) this.pvQueue.add(pv);
      },
    });
  }

  /** Retries every create whose outcome is unknown at once, e.g. when the plugin is ready again after a restart. */
  requeueInFlight(): void {
    for (const key of this.inFlight.keys()) this.claimQueue.add(key);
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info({ driver: this.o.driver, workers: this.o.workers }, 'Starting volume provisioner');
    for (const i of [this.o.claims, this.o.pvs, this.o.classes, this.o.attachments]) if (!(await i.waitForSync(signal))) return;
    await Promise.all([
      runWorkers(this.claimQueue, this.o.workers, (k) => this.syncClaim(k), { log: this.o.log, signal }),
      runWorkers(this.pvQueue, this.o.workers, (k) => this.syncVolume(k), { log: this.o.log, signal }),
    ]);
    this.o.log.info('Shutting down volume provisioner');
  }

  /** Level-triggered: provision the claim if it is ours and has no volume yet; finish orphaned creates. */
  async syncClaim(key: string): Promise<void> {
    const claim = this.o.claims.get(key);
    const pending = this.inFlight.get(key);
    if (pending && (!claim || claim.metadata?.uid !== pending.uid)) {
      await this.finishOrphan(key, pending);
      if (!claim) return;
    }
    if (!claim) return;
    if (claim.metadata?.deletionTimestamp) {
      if (holdsClaim(claim)) await this.finishDeletedClaim(key, claim);
      return;
    }
    if (!(await this.wantsVolume(claim))) {
      if (pending && this.o.pvs.get(pending.request.name)) this.inFlight.delete(key);
      // The PV exists (or the claim is bound): a finalizer left by an interrupted sync goes.
      if (holdsClaim(claim) && (claim.spec?.volumeName || this.o.pvs.get(volumeNameFor(claim)))) await this.releaseClaim(claim, true);
      return;
    }
    const sc = this.o.classes.get(claim.spec!.storageClassName!)!;
    const selected = claim.metadata?.annotations?.[Annotations.SELECTED_NODE];
    let request: CreateVolumeRequest;
    try {
      const node = selected ? await this.node(selected) : undefined;
      request = createRequestFor(claim, sc, node);
    } catch (err) {
      this.provisioningFailed(claim, sc, err);
      throw err;
    }
    // Never change an in-progress request (remembered here or persisted on the claim by an earlier attempt): the cloud may be acting on it.
    const known = this.inFlight.get(key);
    const entry: InFlight = known ?? { uid: claim.metadata!.uid!, request: persistedRequest(claim) ?? request, attempts: 0 };
    if (!known) this.o.recorder.event(claim, 'Normal', EventReasons.PROVISIONING, `External provisioner is provisioning volume for claim "${key}"`);
    if (!holdsClaim(claim) || !claim.metadata?.annotations?.[Annotations.CREATE_REQUEST]) {
      // Strategic merge: finalizers merge as a set, so this needs no resourceVersion (the binder annotates claims at the same time).
      const held = await this.patchClaim(claim, {
        finalizers: [Finalizers.PROVISIONING_CLAIM],
        annotations: { [Annotations.CREATE_REQUEST]: JSON.stringify(entry.request) },
      });
      // Claim gone. A create an earlier attempt asked for (known) stays recorded: its volume is deleted once the deletion is seen (finishOrphan).
      if (!held) return;
    }
    // Recorded from here on, before the cloud is asked: a deletion seen while the call runs finds the record.
    this.inFlight.set(key, entry);
    entry.attempts++;
    let volume;
    try {
      volume = await this.o.volumes.createVolume(entry.request, entry.attempts);
    } catch (err) {
      const failure = createFailure(err);
      if (failure.kind === 'none') {
        // Final: nothing was created.
        this.inFlight.delete(key);
        await this.releaseClaim(claim, true);
      }
      if (failure.kind !== 'exists') {
        this.provisioningFailed(claim, sc, err);
        throw err;
      }
      // A volume exists that cannot back a PV: finalizer, request and record stay (the claim's deletion must find it).
      let fate: string;
      try {
        fate = await this.discardUnusable(key, entry.request.name, failure.volumeId);
      } catch (deleteErr) {
        fate = `deleting it failed (retried): ${errorMessage(deleteErr)}`;
      }
      this.provisioningFailed(claim, sc, err, `; ${fate}`);
      throw err;
    }
    const pv = persistentVolumeFor(claim, sc, volume, this.o.driver, this.identity);
    try {
      await this.o.core.createPersistentVolume({ body: pv });
    } catch (err) {
      if (!isConflict(err)) {
        this.o.recorder.event(
          claim,
          'Warning',
          EventReasons.PROVISIONING_FAILED,
          `created volume ${volume.volumeId} but not its PersistentVolume: ${errorMessage(err)}`,
        );
        throw err; // CreateVolume is repeated (same name → same volume), then the PV.
      }
    }
    this.inFlight.delete(key);
    await this.releaseClaim(claim, true);
    this.o.log.info({ claim: key, pv: pv.metadata!.name, volume: volume.volumeId, bytes: volume.capacityBytes }, 'provisioned volume');
    this.o.recorder.event(claim, 'Normal', EventReasons.PROVISIONING_SUCCEEDED, `Successfully provisioned volume ${pv.metadata!.name}`);
  }

  /** Whether the claim is ours and still needs a volume. */
  private async wantsVolume(claim: V1PersistentVolumeClaim): Promise<boolean> {
    if (claim.spec?.volumeName || claim.metadata?.deletionTimestamp) return false;
    const annotated = claimProvisioner(claim);
    if (annotated !== undefined && annotated !== this.o.driver) return false;
    const className = claim.spec?.storageClassName;
    if (!className) return false;
    const sc = this.o.classes.get(className);
    if (!sc) {
      if (annotated !== this.o.driver) return false;
      const message = `StorageClass ${JSON.stringify(className)} not found; create it or fix the claim's storageClassName`;
      this.o.recorder.event(claim, 'Warning', EventReasons.PROVISIONING_FAILED, message);
      throw new Error(message);
    }
    if (sc.provisioner !== this.o.driver) return false;
    if (this.o.pvs.get(volumeNameFor(claim))) return false; // provisioned; the binder binds it
    if (sc.volumeBindingMode === 'WaitForFirstConsumer' && !claim.metadata?.annotations?.[Annotations.SELECTED_NODE]) return false;
    return true;
  }

  private async node(name: string): Promise<V1Node> {
    const cached = this.o.nodes.get(name);
    if (cached) return cached;
    try {
      return await this.o.core.readNode({ name });
    } catch (err) {
      if (isNotFound(err)) throw new BadClaimError(`selected node ${name} does not exist`);
      throw err;
    }
  }

  /** The Warning a failed provisioning attempt leaves on the claim (upstream's reason and wording, plus what became of a made volume). */
  private provisioningFailed(claim: V1PersistentVolumeClaim, sc: V1StorageClass, err: unknown, fate = ''): void {
    this.o.recorder.event(
      claim,
      'Warning',
      EventReasons.PROVISIONING_FAILED,
      `failed to provision volume with StorageClass ${JSON.stringify(sc.metadata?.name)}: ${errorMessage(err)}${fate}`,
    );
  }

  /**
   * A volume CreateVolume made but the host cannot use, while its claim
   * lives: deleted in the cloud when its id is known (external-provisioner's
   * cleanup of a volume it cannot use), else kept (nothing can name it).
   * Either way the create is retried. Returns what happened, for the event.
   */
  private async discardUnusable(key: string, name: string, volumeId: string | undefined): Promise<string> {
    if (!volumeId)
      return `volume ${name} exists in the cloud and cannot be deleted by the host; the claim keeps its finalizer ${Finalizers.PROVISIONING_CLAIM}`;
    // A PV of an earlier, usable answer that the cache has not seen yet keeps its volume.
    const live = await this.livePv(name);
    this.liveRead(live ? LiveReadOutcomes.CHANGED : LiveReadOutcomes.GONE);
    if (live) return `PersistentVolume ${name} records the volume ${volumeId}; kept`;
    await this.o.volumes.deleteVolume(volumeId);
    this.o.log.info({ claim: key, volume: volumeId }, 'deleted a volume the host cannot use; retrying the create');
    return `the volume ${volumeId} was deleted; retrying`;
  }

  /** Strategic-merge-patches the claim's metadata; undefined when the claim is gone. */
  private async patchClaim(claim: V1PersistentVolumeClaim, metadata: Record<string, unknown>): Promise<V1PersistentVolumeClaim | undefined> {
    const { name, namespace } = claim.metadata as { name: string; namespace: string };
    try {
      return await this.o.core.patchNamespacedPersistentVolumeClaim({ name, namespace, body: { metadata } }, patchOptions('strategic'));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Removes the provisioning finalizer and the persisted request (other
   * finalizers untouched). `known` = this sync added them, so the cached
   * claim cannot tell.
   */
  private async releaseClaim(claim: V1PersistentVolumeClaim, known = false): Promise<void> {
    if (!known && !holdsClaim(claim) && !claim.metadata?.annotations?.[Annotations.CREATE_REQUEST]) return;
    await this.patchClaim(claim, {
      '$deleteFromPrimitiveList/finalizers': [Finalizers.PROVISIONING_CLAIM],
      annotations: { [Annotations.CREATE_REQUEST]: null },
    });
  }

  /**
   * A claim deleted while its create had no final answer (our finalizer holds
   * it): repeat the persisted request until it has one, delete a volume no PV
   * records, then let the claim go. A volume the host cannot name to the
   * cloud keeps the claim (Warning).
   */
  private async finishDeletedClaim(key: string, claim: V1PersistentVolumeClaim): Promise<void> {
    const request = this.inFlight.get(key)?.request ?? persistedRequest(claim);
    if (request) {
      try {
        await this.undoCreate(key, request);
      } catch (err) {
        if (!mayBeInProgress(err))
          this.o.recorder.event(
            claim,
            'Warning',
            EventReasons.PROVISIONING_FAILED,
            `claim deleted, but its volume ${request.name} cannot be deleted (${errorMessage(err)}); ` +
              `delete it in the cloud, then remove the finalizer ${Finalizers.PROVISIONING_CLAIM}`,
          );
        throw err;
      }
    }
    this.inFlight.delete(key);
    await this.releaseClaim(claim);
  }

  /** The claim of an in-flight create is gone: learn the outcome, and delete a volume nobody wants. */
  private async finishOrphan(key: string, pending: InFlight): Promise<void> {
    pending.attempts++;
    await this.undoCreate(key, pending.request, pending.attempts);
    this.inFlight.delete(key);
  }

  /**
   * Repeats the create of a claim that is gone or going, and deletes the
   * volume it made unless a PV records it (confirmed with a live read: a PV
   * the cache has not seen yet must keep its volume). Resolves when no volume
   * of that name is left to this claim; rejects (retry) while the outcome is
   * unknown, or when a volume exists that cannot be named to the cloud.
   */
  private async undoCreate(key: string, request: CreateVolumeRequest, attempt?: number): Promise<void> {
    let volumeId: string | undefined;
    try {
      volumeId = (await this.o.volumes.createVolume(request, attempt)).volumeId;
    } catch (err) {
      const failure = createFailure(err);
      if (failure.kind === 'unknown') throw err; // still unknown: ask again
      if (failure.kind === 'none') {
        this.o.log.info({ claim: key, name: request.name, err: errorMessage(err) }, 'create for a deleted claim ended without a volume');
        return;
      }
      if (!failure.volumeId) throw err; // a volume exists and nothing can name it: kept, retried
      volumeId = failure.volumeId;
    }
    // A PV records the volume: its reclaim policy decides. The cache may stop the deletion, never start it.
    if (this.o.pvs.get(request.name)) return;
    const live = await this.livePv(request.name);
    this.liveRead(live ? LiveReadOutcomes.CHANGED : LiveReadOutcomes.GONE);
    if (live) return;
    await this.o.volumes.deleteVolume(volumeId);
    this.o.log.info({ claim: key, volume: volumeId }, 'deleted volume whose claim was deleted while it was created');
  }

  /** The PV as the API server has it now (a live GET), or undefined when there is none. */
  private async livePv(name: string): Promise<V1PersistentVolume | undefined> {
    try {
      return await this.o.core.readPersistentVolume({ name });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      this.liveRead(LiveReadOutcomes.ERROR);
      throw err;
    }
  }

  /**
   * Level-triggered: delete the cloud volume of a released PV with reclaim
   * policy Delete, then the PV. The cache only suggests the deletion: the PV
   * is read live right before DeleteVolume and must still ask for it (same
   * uid and volume handle, released, policy Delete, ours).
   */
  async syncVolume(name: string): Promise<void> {
    const cached = this.o.pvs.get(name);
    if (!cached) return;
    const action = pvAction(cached, this.o.driver);
    if (action === 'none') return;
    if (action === 'release-retained') return this.removeFinalizer(cached);
    const attached = this.o.attachments.list().filter((va) => va.spec?.source?.persistentVolumeName === name);
    if (attached.length > 0)
      throw new Error(`PersistentVolume ${name} is still used by VolumeAttachment ${attached[0]!.metadata?.name}; deleting its volume later`);
    const handle = cached.spec!.csi!.volumeHandle;
    const pv = await this.livePv(name);
    if (
      !pv ||
      pv.metadata?.uid !== cached.metadata?.uid ||
      pv.spec?.csi?.volumeHandle !== handle ||
      pvAction(pv, this.o.driver) !== 'delete-volume'
    ) {
      // The cache was behind: the informer brings what changed, and the next sync decides on it.
      this.liveRead(pv ? LiveReadOutcomes.CHANGED : LiveReadOutcomes.GONE);
      this.o.log.info(
        { pv: name, volume: handle, phase: pv?.status?.phase, policy: pv?.spec?.persistentVolumeReclaimPolicy, gone: !pv },
        'PersistentVolume read live no longer asks for its volume to be deleted; keeping the volume',
      );
      return;
    }
    this.liveRead(LiveReadOutcomes.CONFIRMED);
    try {
      await this.o.volumes.deleteVolume(handle);
    } catch (err) {
      this.o.recorder.event(pv, 'Warning', EventReasons.VOLUME_FAILED_DELETE, `failed to delete volume ${handle}: ${errorMessage(err)}`);
      throw err;
    }
    this.o.log.info({ pv: name, volume: handle }, 'deleted volume');
    if (!pv.metadata?.deletionTimestamp) {
      try {
        await this.o.core.deletePersistentVolume({ name, body: { preconditions: { uid: pv.metadata!.uid! } } });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    await this.removeFinalizer(pv);
  }

  private async removeFinalizer(pv: V1PersistentVolume): Promise<void> {
    const name = pv.metadata!.name!;
    await setFinalizer(
      {
        read: () => this.o.core.readPersistentVolume({ name }),
        patch: (metadata) => this.o.core.patchPersistentVolume({ name, body: { metadata } }, patchOptions('merge')),
      },
      pv,
      Finalizers.PROVISIONER,
      false,
    );
  }
}
