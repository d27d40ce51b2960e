/** VolumesService checks (CSI-controller semantics). */
import { Capability, Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import type {
  ControllerExpandVolumeResponse,
  CreateVolumeResponse,
  GetVolumeLabelsResponse,
  ListVolumesEntry,
  Volume,
} from '../../proto/gen/ccm/provider/v1/volumes.js';
import { ErrorReason } from '../../sdk/protocol.js';
import { CheckFailed, expect, skip, type Check, type Kit } from '../kit.js';
import { Code } from '../rpc.js';
import { expectCode, listAll } from './common.js';

const GIB = 1024 ** 3;
const ZONE_KEY = 'topology.kubernetes.io/zone';
const REGION_KEY = 'topology.kubernetes.io/region';
/** The kit's main volume as CreateVolume answered it (volumes/create-twice). */
const mainVolumes = new WeakMap<Kit, Volume>();

function createReq(k: Kit, suffix: string, requiredBytes: number): object {
  const zone = k.testNode?.zone;
  return {
    meta: k.meta(`vol-${suffix}`),
    name: `${k.prefix}-vol-${suffix}`,
    capacityRange: { requiredBytes, limitBytes: 0 },
    parameters: {},
    accessibilityRequirements: zone ? { requisite: [{ segments: { [ZONE_KEY]: zone } }], preferred: [] } : undefined,
  };
}

/** Id of the kit's main volume (volumes/create-twice). */
function mainVolume(k: Kit): string {
  const id = [...k.created.volumes].find(([, name]) => name === `${k.prefix}-vol-a`)?.[0];
  return id ?? skip('needs the volume of volumes/create-twice');
}

export const volumeChecks: Check[] = [
  {
    id: 'volumes/create-twice',
    title: 'CreateVolume twice with the same name and size returns the same volume',
    run: async (k) => {
      k.needService(Service.SERVICE_VOLUMES);
      const req = createReq(k, 'a', GIB);
      const a = (await k.rpc.call<CreateVolumeResponse>(k.rpc.conn.volumes, 'CreateVolume', req)).volume;
      expect(a?.volumeId, 'CreateVolume answered no volume id');
      k.created.volumes.set(a.volumeId, `${k.prefix}-vol-a`);
      mainVolumes.set(k, a);
      expect(a.capacityBytes >= GIB, `capacity ${a.capacityBytes} is below the required ${GIB}`);
      const b = (await k.rpc.call<CreateVolumeResponse>(k.rpc.conn.volumes, 'CreateVolume', req)).volume;
      expect(b?.volumeId === a.volumeId, `the second CreateVolume made another volume (${b?.volumeId} vs ${a.volumeId})`);
    },
  },
  {
    id: 'volumes/conflict',
    title: 'CreateVolume with the same name but more than the volume has answers ALREADY_EXISTS',
    run: async (k) => {
      mainVolume(k);
      // More than the volume got, not only more than was asked: a cloud that rounds sizes up may hold
      // 64 GiB already, and then a 64 GiB request is compatible (success) under CSI (docs/protocol.md).
      const has = mainVolumes.get(k)?.capacityBytes ?? GIB;
      await expectCode(k, k.rpc.conn.volumes, 'CreateVolume', createReq(k, 'a', Math.max(64 * GIB, has + GIB)), Code.ALREADY_EXISTS);
    },
  },
  {
    id: 'volumes/absent',
    title: 'an absent volume: publish, expand and labels NOT_FOUND; unpublish and delete succeed',
    run: async (k) => {
      k.needService(Service.SERVICE_VOLUMES);
      const v = k.rpc.conn.volumes;
      const volumeId = `${k.prefix}-no-such-volume`;
      const nodeId = k.testNode?.providerId ?? `${k.caps.providerName}://${k.prefix}-no-node`;
      await expectCode(k, v, 'ControllerPublishVolume', { meta: k.meta(), volumeId, nodeId, readonly: false, volumeContext: {} }, Code.NOT_FOUND);
      await expectCode(
        k,
        v,
        'ControllerExpandVolume',
        { meta: k.meta(), volumeId, capacityRange: { requiredBytes: 2 * GIB, limitBytes: 0 } },
        Code.NOT_FOUND,
      );
      await expectCode(k, v, 'GetVolumeLabels', { meta: k.meta(), volumeId }, Code.NOT_FOUND);
      await k.rpc.call(v, 'ControllerUnpublishVolume', { meta: k.meta(), volumeId, nodeId });
      await k.rpc.call(v, 'DeleteVolume', { meta: k.meta(), volumeId });
    },
  },
  {
    id: 'volumes/publish-absent-instance',
    title: 'ControllerPublishVolume to an absent instance answers NOT_FOUND/INSTANCE_NOT_FOUND',
    run: async (k) => {
      const volumeId = mainVolume(k);
      const nodeId = `${k.caps.providerName}://${k.prefix}-no-node`;
      await expectCode(
        k,
        k.rpc.conn.volumes,
        'ControllerPublishVolume',
        { meta: k.meta(), volumeId, nodeId, readonly: false, volumeContext: {} },
        Code.NOT_FOUND,
        ErrorReason.INSTANCE_NOT_FOUND,
      );
    },
  },
  {
    id: 'volumes/publish-twice',
    title: 'ControllerPublishVolume twice to the test instance succeeds both times; ListVolumes shows the attachment',
    run: async (k) => {
      const volumeId = mainVolume(k);
      const t = k.needTestNode();
      const req = { meta: k.meta(), volumeId, nodeId: t.providerId, readonly: false, volumeContext: {} };
      await k.rpc.call(k.rpc.conn.volumes, 'ControllerPublishVolume', req);
      await k.rpc.call(k.rpc.conn.volumes, 'ControllerPublishVolume', req);
      if (k.caps.capabilities.includes(Capability.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES)) {
        const entry = (await listAll<ListVolumesEntry>(k, k.rpc.conn.volumes, 'ListVolumes', 'entries', 0)).items.find(
          (e) => e.volume?.volumeId === volumeId,
        );
        expect(entry, 'ListVolumes does not list the volume');
        expect(entry.publishedNodeIds.includes(t.providerId), `published_node_ids ${JSON.stringify(entry.publishedNodeIds)} lacks ${t.providerId}`);
      }
    },
  },
  {
    id: 'volumes/delete-attached',
    title: 'DeleteVolume of an attached volume answers FAILED_PRECONDITION/IN_USE',
    run: async (k) => {
      const volumeId = mainVolume(k);
      k.needTestNode();
      await expectCode(k, k.rpc.conn.volumes, 'DeleteVolume', { meta: k.meta(), volumeId }, Code.FAILED_PRECONDITION, ErrorReason.IN_USE);
    },
  },
  {
    id: 'volumes/unpublish-twice',
    title: 'ControllerUnpublishVolume twice succeeds both times',
    run: async (k) => {
      const volumeId = mainVolume(k);
      const t = k.needTestNode();
      const req = { meta: k.meta(), volumeId, nodeId: t.providerId };
      await k.rpc.call(k.rpc.conn.volumes, 'ControllerUnpublishVolume', req);
      await k.rpc.call(k.rpc.conn.volumes, 'ControllerUnpublishVolume', req);
    },
  },
  {
    id: 'volumes/expand-twice',
    title: 'ControllerExpandVolume twice to the same size succeeds both times with at least that size',
    run: async (k) => {
      const volumeId = mainVolume(k);
      const req = { meta: k.meta(), volumeId, capacityRange: { requiredBytes: 2 * GIB, limitBytes: 0 } };
      for (let i = 0; i < 2; i++) {
        const r = await k.rpc.call<ControllerExpandVolumeResponse>(k.rpc.conn.volumes, 'ControllerExpandVolume', req);
        expect(r.capacityBytes >= 2 * GIB, `capacity after expansion is ${r.capacityBytes}, want >= ${2 * GIB}`);
      }
    },
  },
  {
    id: 'volumes/expand-smaller',
    title:
      'ControllerExpandVolume to less than the volume has is success at its current size (required_bytes is a minimum); a limit_bytes below it answers INVALID_ARGUMENT',
    run: async (k) => {
      const volumeId = mainVolume(k);
      const v = k.rpc.conn.volumes;
      const grown = await k.rpc.call<ControllerExpandVolumeResponse>(v, 'ControllerExpandVolume', {
        meta: k.meta(),
        volumeId,
        capacityRange: { requiredBytes: 2 * GIB, limitBytes: 0 },
      });
      let smaller: ControllerExpandVolumeResponse;
      try {
        smaller = await k.rpc.call<ControllerExpandVolumeResponse>(v, 'ControllerExpandVolume', {
          meta: k.meta(),
          volumeId,
          capacityRange: { requiredBytes: GIB, limitBytes: 0 },
        });
      } catch (err) {
        throw new CheckFailed(
          `ControllerExpandVolume with required_bytes ${GIB} for a volume of ${grown.capacityBytes} bytes failed (${(err as Error).message}); required_bytes is a minimum: a volume already that large is success, answering its current size`,
        );
      }
      expect(
        smaller.capacityBytes >= grown.capacityBytes,
        `ControllerExpandVolume with a smaller required_bytes answered capacity ${smaller.capacityBytes}, below the volume's ${grown.capacityBytes}: a volume never shrinks`,
      );
      await expectCode(
        k,
        v,
        'ControllerExpandVolume',
        { meta: k.meta(), volumeId, capacityRange: { requiredBytes: GIB, limitBytes: GIB } },
        Code.INVALID_ARGUMENT,
      );
    },
  },
  {
    id: 'volumes/labels',
    title:
      'GetVolumeLabels answers for an existing volume, with the same keys and values as its accessible_topology (topology.kubernetes.io/zone, …) and the test instance zone it was created in',
    run: async (k) => {
      const volumeId = mainVolume(k);
      const labels = (await k.rpc.call<GetVolumeLabelsResponse>(k.rpc.conn.volumes, 'GetVolumeLabels', { meta: k.meta(), volumeId })).labels;
      const vol = mainVolumes.get(k);
      for (const [i, t] of (vol?.accessibleTopology ?? []).entries()) {
        for (const [key, value] of Object.entries(t.segments)) {
          if (key !== ZONE_KEY && key !== REGION_KEY) continue;
          const have = labels[key];
          expect(
            have !== undefined && have.split('__').includes(value),
            `accessible_topology[${i}] has ${key}=${value}, but GetVolumeLabels answered ${key}=${JSON.stringify(have)} (labels ${JSON.stringify(labels)}); use the same Node label keys and values for both`,
          );
        }
      }
      const zone = k.testNode?.zone;
      if (zone && vol) {
        expect(
          vol.accessibleTopology.some((t) => t.segments[ZONE_KEY] === zone),
          `the volume was created with requisite ${ZONE_KEY}=${zone} (the test instance's zone), but its accessible_topology is ${JSON.stringify(vol.accessibleTopology)}`,
        );
        expect(
          labels[ZONE_KEY]?.split('__').includes(zone),
          `a volume created in ${ZONE_KEY}=${zone} has labels ${JSON.stringify(labels)}; GetVolumeLabels must answer the zone under ${ZONE_KEY}`,
        );
      }
    },
  },
  {
    id: 'volumes/paging',
    title: 'ListVolumes with page_size 1 visits every volume exactly once; an invalid page_token answers ABORTED',
    run: async (k) => {
      mainVolume(k);
      const b = (await k.rpc.call<CreateVolumeResponse>(k.rpc.conn.volumes, 'CreateVolume', createReq(k, 'b', GIB))).volume;
      if (b) k.created.volumes.set(b.volumeId, `${k.prefix}-vol-b`);
      const { items } = await listAll<ListVolumesEntry>(k, k.rpc.conn.volumes, 'ListVolumes', 'entries', 1);
      const ids = items.map((e) => e.volume?.volumeId ?? '');
      expect(new Set(ids).size === ids.length, 'a volume appears twice across pages');
      for (const id of k.created.volumes.keys()) expect(ids.includes(id), `volume ${id} is missing from the paged list`);
      await expectCode(k, k.rpc.conn.volumes, 'ListVolumes', { meta: k.meta(), pageSize: 1, pageToken: 'not-a-token!' }, Code.ABORTED);
    },
  },
  {
    id: 'volumes/delete-twice',
    title: 'DeleteVolume twice succeeds both times, and the volume is gone',
    run: async (k) => {
      k.needService(Service.SERVICE_VOLUMES);
      if (k.created.volumes.size === 0) skip('needs the volumes of volumes/create-twice');
      for (const id of [...k.created.volumes.keys()]) {
        await k.rpc.call(k.rpc.conn.volumes, 'DeleteVolume', { meta: k.meta(), volumeId: id });
        await k.rpc.call(k.rpc.conn.volumes, 'DeleteVolume', { meta: k.meta(), volumeId: id });
        await expectCode(k, k.rpc.conn.volumes, 'GetVolumeLabels', { meta: k.meta(), volumeId: id }, Code.NOT_FOUND);
      }
    },
  },
];
