/**
 * The Volumes capability: cloud block volumes as the volume controllers see
 * them (host/controllers/volume/). Semantics follow the CSI Controller
 * service, as proto/ccm/provider/v1/volumes.proto documents; every answer has
 * been validated (host/plugin/validate-volumes.ts) before it is returned.
 *
 * Errors (host/errors.ts) and what they mean here:
 *  - CloudCallError with `transient` true (UNAVAILABLE, DEADLINE_EXCEEDED, ...)
 *    or PluginUnavailableError: the operation MAY still be in progress; repeat
 *    the identical request until a final answer (never give up on a create,
 *    or a half-created volume leaks).
 *  - RetryAfterError: repeat after `retryAfterMs` (clamped by runWorkers).
 *  - CloudCallError with code INVALID_ARGUMENT / ALREADY_EXISTS /
 *    FAILED_PRECONDITION / NOT_FOUND / OUT_OF_RANGE: final for this request;
 *    tell the user and retry slowly (they may fix the object).
 *  - InstanceNotFoundError (publish): the node's instance does not exist.
 *  - InvalidCloudResponseError: the provider answered something invalid;
 *    nothing was written to Kubernetes. From createVolume it is always
 *    UnusableVolumeError: the volume exists in the cloud (its id, when
 *    usable, in `volumeId`), so it must be deleted or kept track of.
 */

/** Topology segments of one placement, e.g. { 'topology.kubernetes.io/zone': 'a' }. */
export type TopologySegments = Record<string, string>;

/** A cloud volume (validated). */
export interface CloudVolume {
  /** Cloud id; becomes the PV's spec.csi.volumeHandle. */
  volumeId: string;
  /** Actual size in bytes (> 0). */
  capacityBytes: number;
  /** Opaque context stored on the PV (spec.csi.volumeAttributes). */
  volumeContext: Record<string, string>;
  /** Where the volume is reachable from; becomes the PV's node affinity. Empty = everywhere. */
  accessibleTopology: TopologySegments[];
}

export interface CreateVolumeRequest {
  /** Idempotency key and cloud name, e.g. `pvc-<claim uid>`. */
  name: string;
  /** Minimum size in bytes (> 0). */
  requiredBytes: number;
  /** Maximum size in bytes; 0 = no limit. */
  limitBytes: number;
  /** StorageClass parameters (reserved `csi.storage.k8s.io/` keys removed). */
  parameters: Record<string, string>;
  /** The volume must be reachable from one of these (may be empty). */
  requisite: TopologySegments[];
  /** Preferred placements, most preferred first (may be empty). */
  preferred: TopologySegments[];
}

/** One ListVolumes entry. */
export interface ListedVolume {
  volume: CloudVolume;
  /** providerIDs of the instances the volume is attached to. */
  publishedNodeIds: string[];
}

export interface ExpandResult {
  /** Size after expansion, in bytes (>= the request). */
  capacityBytes: number;
  /** The file system on the node must be grown too (kubelet's job). */
  nodeExpansionRequired: boolean;
}

/** Cloud volumes. Every mutating call is idempotent. */
export interface Volumes {
  /** Creates the volume named `req.name`, or returns the existing one with that name. */
  createVolume(req: CreateVolumeRequest, attempt?: number): Promise<CloudVolume>;
  /** Deletes a volume; absent is success. Still attached: FAILED_PRECONDITION (reason IN_USE). */
  deleteVolume(volumeId: string): Promise<void>;
  /**
   * Attaches a volume to the instance `nodeId` (a providerID); already
   * attached there is success. Returns the publish context (the
   * VolumeAttachment's status.attachmentMetadata).
   */
  controllerPublish(volumeId: string, nodeId: string, readonly: boolean, volumeContext: Record<string, string>): Promise<Record<string, string>>;
  /** Detaches; not attached, volume absent or instance absent are all success. */
  controllerUnpublish(volumeId: string, nodeId: string): Promise<void>;
  /** Grows a volume to at least `requiredBytes`. Shrinking: INVALID_ARGUMENT. */
  expandVolume(volumeId: string, requiredBytes: number): Promise<ExpandResult>;
  /** Every volume with its attachments (all pages). */
  listVolumes(): Promise<ListedVolume[]>;
  /** Whether listVolumes reports attachments (drift repair needs it). */
  readonly listsPublishedNodes: boolean;
  /** Topology labels for a PV backed by this volume (zone, region). */
  getVolumeLabels(volumeId: string): Promise<Record<string, string>>;
}
