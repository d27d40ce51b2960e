/**
 * Pure helpers of the provisioner: what to ask the cloud for a claim
 * (size, parameters, topology) and the PersistentVolume that records the
 * answer. No I/O here, so the rules are unit-tested directly.
 */
import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass, V1VolumeNodeAffinity } from '@kubernetes/client-node';
import type { CloudVolume, CreateVolumeRequest, TopologySegments } from '../../cloud-volumes.js';
import { Annotations, Finalizers, Labels, PROVISIONER_IDENTITY_ATTRIBUTE } from '../../names.js';
import { bytesToQuantity, quantityToBytes } from './quantity.js';

/** StorageClass parameters with this prefix are for the provisioner, not the cloud (external-provisioner). */
const RESERVED_PARAMETER_PREFIX = 'csi.storage.k8s.io/';
/** StorageClass parameter naming the PV's file system type. */
const FSTYPE_PARAMETER = 'csi.storage.k8s.io/fstype';
/** Topology keys read from the selected node (no CSINode registration is needed for these). */
const TOPOLOGY_KEYS = [Labels.ZONE, Labels.REGION] as const;

/** The cloud volume's name and the PV's name for a claim: `pvc-<uid>` (the idempotency key). */
export function volumeNameFor(claim: V1PersistentVolumeClaim): string {
  return `pvc-${claim.metadata!.uid}`;
}

/** Thrown for a claim or class the provisioner cannot act on; the message is for the user. */
export class BadClaimError extends Error {
  override name = 'BadClaimError';
}

/** Every combination of an allowedTopologies term's values, e.g. zone∈{a,b} → [{zone:a},{zone:b}]. */
export function topologiesFromClass(sc: V1StorageClass): TopologySegments[] {
  const out: TopologySegments[] = [];
  for (const term of sc.allowedTopologies ?? []) {
    let combos: TopologySegments[] = [{}];
    for (const e of term.matchLabelExpressions ?? []) {
      combos = combos.flatMap((c) => e.values.map((v) => ({ ...c, [e.key]: v })));
    }
    out.push(...combos.filter((c) => Object.keys(c).length > 0));
  }
  return out;
}

/** The topology segments of a node (its zone/region labels). */
function nodeTopology(node: V1Node): TopologySegments {
  const labels = node.metadata?.labels ?? {};
  const seg: TopologySegments = {};
  for (const k of TOPOLOGY_KEYS) if (labels[k]) seg[k] = labels[k];
  return seg;
}

/**
 * The CreateVolume request for a claim. `selectedNode` is the node named by
 * the selected-node annotation (WaitForFirstConsumer): the volume must be
 * reachable from it. Throws BadClaimError for a claim without a valid size.
 */
export function createRequestFor(claim: V1PersistentVolumeClaim, sc: V1StorageClass, selectedNode?: V1Node): CreateVolumeRequest {
  const requestText = claim.spec?.resources?.requests?.storage;
  const requiredBytes = quantityToBytes(requestText);
  if (requiredBytes === undefined || requiredBytes <= 0) {
    throw new BadClaimError(`claim requests storage ${JSON.stringify(requestText ?? '')}: want a positive size such as 1Gi`);
  }
  const limitText = claim.spec?.resources?.limits?.storage;
  const limitBytes = limitText === undefined ? 0 : quantityToBytes(limitText);
  if (limitBytes === undefined) throw new BadClaimError(`claim storage limit ${JSON.stringify(limitText)} is not a valid size`);
  if (limitBytes > 0 && limitBytes < requiredBytes) throw new BadClaimError(`claim storage limit ${limitText} is below its request ${requestText}`);
  const parameters: Record<string, string> = {};
  for (const [k, v] of Object.entries(sc.parameters ?? {})) if (!k.startsWith(RESERVED_PARAMETER_PREFIX)) parameters[k] = v;
  let requisite = topologiesFromClass(sc);
  let preferred: TopologySegments[] = [];
  if (selectedNode) {
    const seg = nodeTopology(selectedNode);
    if (Object.keys(seg).length > 0) {
      // The volume must be where the pod was scheduled (strict topology).
      requisite = [seg];
      preferred = [seg];
    }
  }
  return { name: volumeNameFor(claim), requiredBytes, limitBytes, parameters, requisite, preferred };
}

/** Node affinity requiring one of the volume's topologies (none = reachable everywhere). */
export function nodeAffinityFor(topologies: TopologySegments[]): V1VolumeNodeAffinity | undefined {
  if (topologies.length === 0) return undefined;
  return {
    required: {
      nodeSelectorTerms: topologies.map((t) => ({
        matchExpressions: Object.entries(t)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([key, value]) => ({ key, operator: 'In', values: [value] })),
      })),
    },
  };
}

/**
 * The PersistentVolume for a provisioned volume: pre-bound to the claim,
 * with a csi source of `driver`, node affinity from the volume's topology,
 * reclaim policy and mount options from the class, and the provisioner
 * finalizer so the object outlives its cloud volume never.
 */
export function persistentVolumeFor(
  claim: V1PersistentVolumeClaim,
  sc: V1StorageClass,
  volume: CloudVolume,
  driver: string,
  identity: string,
): V1PersistentVolume {
  const fsType = sc.parameters?.[FSTYPE_PARAMETER];
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: volumeNameFor(claim),
      annotations: { [Annotations.PROVISIONED_BY]: driver },
      finalizers: [Finalizers.PROVISIONER],
    },
    spec: {
      accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
      capacity: { storage: bytesToQuantity(volume.capacityBytes) },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata!.namespace,
        name: claim.metadata!.name,
        uid: claim.metadata!.uid,
      },
      persistentVolumeReclaimPolicy: sc.reclaimPolicy ?? 'Delete',
      storageClassName: sc.metadata!.name,
      mountOptions: sc.mountOptions,
      volumeMode: claim.spec?.volumeMode ?? 'Filesystem',
      csi: {
        driver,
        volumeHandle: volume.volumeId,
        fsType,
        volumeAttributes: { ...volume.volumeContext, [PROVISIONER_IDENTITY_ATTRIBUTE]: identity },
      },
      nodeAffinity: nodeAffinityFor(volume.accessibleTopology),
    },
  };
}

/** The provisioner a claim is meant for: its storage-provisioner annotation (set by the PV binder), if any. */
export function claimProvisioner(claim: V1PersistentVolumeClaim): string | undefined {
  const a = claim.metadata?.annotations ?? {};
  return a[Annotations.STORAGE_PROVISIONER] ?? a[Annotations.STORAGE_PROVISIONER_BETA];
}
