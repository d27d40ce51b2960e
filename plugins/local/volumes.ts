/**
 * VolumesService of the local cloud. Each volume is a sparse file
 * `<state>/volumes/<id>.img` of exactly the volume's size (no rounding), so
 * a request below the current size is a shrink. StorageClass parameter
 * `multiAttach: "true"` lets a volume attach to several instances; a volume
 * attaches only to instances in its own zone.
 */
import { open, rm, stat } from 'node:fs/promises';
import { AlreadyExistsError, Code, InstanceNotFoundError, InUseError, InvalidArgumentError, NotFoundError, ProviderError } from '../../sdk/errors.js';
import type { VolumesProvider } from '../../sdk/provider.js';
import type { Topology } from '../../proto/gen/ccm/provider/v1/common.js';
import type { CapacityRange, TopologyRequirement, Volume } from '../../proto/gen/ccm/provider/v1/volumes.js';
import { nowIso, REGION_LABEL, required, ZONE_LABEL, type CloudContext } from './context.js';
import { instanceIdFromProviderId } from './instances.js';
import { newVolumeId, providerIdOf } from './names.js';
import { paginate } from './paging.js';
import type { LocalCloudState, StateStore, VolumeRecord } from './state.js';

/** Size of a volume created without required_bytes, in bytes (1 GiB). */
const DEFAULT_VOLUME_BYTES = 1024 ** 3;
/** Largest volume, in bytes (16 TiB, the ext4 file size limit). */
const MAX_VOLUME_BYTES = 16 * 1024 ** 4;
/** Longest volume name, in characters. */
const MAX_VOLUME_NAME_LENGTH = 128;
/** StorageClass parameter allowing attachment to several instances at once. */
const MULTI_ATTACH_PARAMETER = 'multiAttach';
/** volume_context key with the volume's name. */
const CONTEXT_NAME = 'local.ccm.dev/name';
/** volume_context / publish_context key with the absolute path of the image file. */
const CONTEXT_IMAGE = 'local.ccm.dev/image';

const VOLUME_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function checkBytes(n: number, field: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError(`${field} must be a whole number of bytes >= 0, got ${n}`);
  if (n > MAX_VOLUME_BYTES) throw new InvalidArgumentError(`${field} ${n} exceeds the largest volume (${MAX_VOLUME_BYTES} bytes)`);
}

/** The size CreateVolume makes for a capacity range. */
function sizeFor(range: CapacityRange | undefined): number {
  const requiredBytes = range?.requiredBytes ?? 0;
  const limitBytes = range?.limitBytes ?? 0;
  checkBytes(requiredBytes, 'capacity_range.required_bytes');
  checkBytes(limitBytes, 'capacity_range.limit_bytes');
  if (limitBytes > 0 && requiredBytes > limitBytes) {
    throw new InvalidArgumentError(`capacity_range.required_bytes ${requiredBytes} exceeds limit_bytes ${limitBytes}`);
  }
  if (requiredBytes > 0) return requiredBytes;
  return limitBytes > 0 ? Math.min(limitBytes, DEFAULT_VOLUME_BYTES) : DEFAULT_VOLUME_BYTES;
}

/**
 * Zone and region for a new volume: preferred ∩ requisite, else requisite,
 * else preferred; without topology, a zone that has instances (so the volume
 * can be attached somewhere): the default zone when an instance is there (or
 * there are no instances at all), else the zone with the most instances.
 */
export function placementFor(
  req: TopologyRequirement | undefined,
  zone: string,
  region: string,
  instances: readonly { zone: string; region: string }[] = [],
): { zone: string; region: string } {
  const zoned = (ts: Topology[] | undefined) => (ts ?? []).filter((t) => t.segments[ZONE_LABEL]);
  const requisite = zoned(req?.requisite);
  const preferred = zoned(req?.preferred);
  const allowed = (t: Topology) => requisite.length === 0 || requisite.some((r) => r.segments[ZONE_LABEL] === t.segments[ZONE_LABEL]);
  const pick = preferred.find(allowed) ?? requisite[0] ?? preferred[0];
  if (!pick) {
    if (instances.length === 0 || instances.some((i) => i.zone === zone)) return { zone, region };
    const counts = new Map<string, { n: number; region: string }>();
    for (const i of instances) counts.set(i.zone, { n: (counts.get(i.zone)?.n ?? 0) + 1, region: i.region });
    const [bestZone, best] = [...counts.entries()].sort(([za, a], [zb, b]) => b.n - a.n || za.localeCompare(zb))[0]!;
    return { zone: bestZone, region: best.region };
  }
  return { zone: pick.segments[ZONE_LABEL] as string, region: pick.segments[REGION_LABEL] || region };
}

function sameParameters(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
}

/** Creates (or resizes) the sparse image file to `bytes`. */
async function sizeImage(path: string, bytes: number): Promise<void> {
  const fh = await open(path, 'a');
  try {
    await fh.truncate(bytes);
  } finally {
    await fh.close();
  }
}

/** A volume as the protocol shows it. */
function toVolume(store: StateStore, v: VolumeRecord): Volume {
  return {
    volumeId: v.id,
    capacityBytes: v.capacityBytes,
    volumeContext: { [CONTEXT_NAME]: v.name, [CONTEXT_IMAGE]: store.volumePath(v.id) },
    accessibleTopology: [{ segments: { [ZONE_LABEL]: v.zone, [REGION_LABEL]: v.region } }],
  };
}

function findVolume(state: LocalCloudState, volumeId: string): VolumeRecord {
  const v = state.volumes.find((x) => x.id === volumeId);
  if (!v) throw new NotFoundError(`volume ${volumeId} not found`);
  return v;
}

/**
 * The VolumesService of the local cloud: a volume's life, its attachments
 * and reads, each a group of its own below.
 */
export function createVolumesService(c: CloudContext): VolumesProvider {
  return { ...volumeLifecycle(c), ...volumeAttachments(c), ...volumeReads(c) };
}

/** A volume's life: create, expand, delete. */
function volumeLifecycle(c: CloudContext): Pick<VolumesProvider, 'createVolume' | 'controllerExpandVolume' | 'deleteVolume'> {
  return {
    async createVolume(req) {
      const name = required(req.name, 'name');
      if (name.length > MAX_VOLUME_NAME_LENGTH || !VOLUME_NAME_RE.test(name)) {
        throw new InvalidArgumentError(
          `volume name ${JSON.stringify(name)} must be at most ${MAX_VOLUME_NAME_LENGTH} letters, digits, '.', '_' and '-'`,
        );
      }
      const size = sizeFor(req.capacityRange);
      const multi = req.parameters[MULTI_ATTACH_PARAMETER];
      if (multi !== undefined && multi !== 'true' && multi !== 'false') {
        throw new InvalidArgumentError(`parameter ${MULTI_ATTACH_PARAMETER} must be "true" or "false", got ${JSON.stringify(multi)}`);
      }
      const place = placementFor(req.accessibilityRequirements, c.settings.zone, c.settings.region, c.store.read().instances);
      const record = await c.store.update(async (draft) => {
        const existing = draft.volumes.find((v) => v.name === name);
        if (existing) {
          if (existing.requestedBytes !== size) {
            throw new AlreadyExistsError(`volume ${name} exists with ${existing.requestedBytes} bytes, not ${size}`);
          }
          if (!sameParameters(existing.parameters, req.parameters)) throw new AlreadyExistsError(`volume ${name} exists with other parameters`);
          // Heal an image lost outside the cloud's control.
          await stat(c.store.volumePath(existing.id)).catch(() => sizeImage(c.store.volumePath(existing.id), existing.capacityBytes));
          return existing;
        }
        const id = newVolumeId((candidate) => draft.volumes.some((v) => v.id === candidate));
        await sizeImage(c.store.volumePath(id), size);
        const v: VolumeRecord = {
          id,
          name,
          capacityBytes: size,
          requestedBytes: size,
          zone: place.zone,
          region: place.region,
          parameters: { ...req.parameters },
          attachments: [],
          createdAt: nowIso(),
        };
        draft.volumes.push(v);
        c.log.info({ volume: id, name, bytes: size, zone: v.zone }, 'volume created');
        return v;
      });
      return { volume: toVolume(c.store, record) };
    },

    async controllerExpandVolume(req) {
      const volumeId = required(req.volumeId, 'volume_id');
      const want = req.capacityRange?.requiredBytes ?? 0;
      const limit = req.capacityRange?.limitBytes ?? 0;
      checkBytes(want, 'capacity_range.required_bytes');
      checkBytes(limit, 'capacity_range.limit_bytes');
      if (want === 0) throw new InvalidArgumentError('capacity_range.required_bytes is required');
      if (limit > 0 && want > limit) throw new InvalidArgumentError(`capacity_range.required_bytes ${want} exceeds limit_bytes ${limit}`);
      const capacityBytes = await c.store.update(async (draft) => {
        const v = findVolume(draft, volumeId);
        // required_bytes is a minimum (CSI): a volume already that large is success. Only a limit
        // below the current size asks for shrinking, which no volume does.
        if (limit > 0 && limit < v.capacityBytes)
          throw new InvalidArgumentError(`volume ${volumeId} has ${v.capacityBytes} bytes; shrinking to ${limit} is not supported`);
        if (want > v.capacityBytes) {
          await sizeImage(c.store.volumePath(v.id), want);
          c.log.info({ volume: v.id, from: v.capacityBytes, to: want }, 'volume expanded');
          v.capacityBytes = want;
        }
        return v.capacityBytes;
      });
      return { capacityBytes, nodeExpansionRequired: true };
    },

    async deleteVolume(req) {
      const id = required(req.volumeId, 'volume_id');
      if (!c.store.view().volumeById(id)) return {};
      await c.store.update(async (draft) => {
        const v = draft.volumes.find((x) => x.id === id);
        if (!v) return;
        if (v.attachments.length > 0) {
          throw new InUseError(`volume ${id} is attached to ${v.attachments.map((a) => a.instanceId).join(', ')}`);
        }
        await rm(c.store.volumePath(id), { force: true });
        draft.volumes = draft.volumes.filter((x) => x !== v);
        c.log.info({ volume: id }, 'volume deleted');
      });
      return {};
    },
  };
}

/** Attaching to and detaching from instances. */
function volumeAttachments(c: CloudContext): Pick<VolumesProvider, 'controllerPublishVolume' | 'controllerUnpublishVolume'> {
  return {
    async controllerPublishVolume(req) {
      const volumeId = required(req.volumeId, 'volume_id');
      const instanceId = instanceIdFromProviderId(required(req.nodeId, 'node_id'));
      await c.store.update((draft) => {
        const v = findVolume(draft, volumeId);
        const inst = draft.instances.find((i) => i.id === instanceId);
        if (!inst) throw new InstanceNotFoundError(`instance ${instanceId} not found`, { providerID: req.nodeId });
        const mine = v.attachments.find((a) => a.instanceId === instanceId);
        if (mine) {
          if (mine.readonly !== req.readonly) {
            throw new AlreadyExistsError(`volume ${volumeId} is already attached to ${instanceId} with readonly=${mine.readonly}`);
          }
          return;
        }
        if (inst.zone !== v.zone) {
          throw new ProviderError(Code.FAILED_PRECONDITION, `volume ${volumeId} is in zone ${v.zone}, instance ${instanceId} in zone ${inst.zone}`);
        }
        if (v.attachments.length > 0 && v.parameters[MULTI_ATTACH_PARAMETER] !== 'true') {
          throw new ProviderError(Code.FAILED_PRECONDITION, `volume ${volumeId} is attached to ${v.attachments[0]?.instanceId}; detach it first`);
        }
        v.attachments.push({ instanceId, readonly: req.readonly });
      });
      return {
        publishContext: {
          devicePath: `/dev/disk/by-id/local-${volumeId}`,
          [CONTEXT_IMAGE]: c.store.volumePath(volumeId),
          readonly: String(req.readonly),
        },
      };
    },

    async controllerUnpublishVolume(req) {
      const volumeId = required(req.volumeId, 'volume_id');
      const instanceId = req.nodeId ? instanceIdFromProviderId(req.nodeId) : undefined;
      const attached = (a: { instanceId: string }) => instanceId === undefined || a.instanceId === instanceId;
      if (!c.store.view().volumeById(volumeId)?.attachments.some(attached)) return {};
      await c.store.update((draft) => {
        const v = draft.volumes.find((x) => x.id === volumeId);
        if (v) v.attachments = v.attachments.filter((a) => !attached(a));
      });
      return {};
    },
  };
}

/** Read-only: the volumes (paged) and a volume's topology labels. */
function volumeReads(c: CloudContext): Pick<VolumesProvider, 'listVolumes' | 'getVolumeLabels'> {
  return {
    async listVolumes(req) {
      const state = c.store.read();
      const { page, nextPageToken } = paginate(state.volumes, (v) => v.id, req, 'volumes', '');
      return {
        entries: page.map((v) => ({ volume: toVolume(c.store, v), publishedNodeIds: v.attachments.map((a) => providerIdOf(a.instanceId)) })),
        nextPageToken,
      };
    },

    async getVolumeLabels(req) {
      const v = c.store.view().volumeById(required(req.volumeId, 'volume_id'));
      if (!v) throw new NotFoundError(`volume ${req.volumeId} not found`);
      return { labels: { [ZONE_LABEL]: v.zone, [REGION_LABEL]: v.region } };
    },
  };
}
