/**
 * The provisioner's destructive decisions with fakes (issue 29): a released
 * PV's volume is deleted only when the PV read live still asks for it
 * (finding 10), and a CreateVolume that made an unusable volume keeps the
 * claim's finalizer and request (finding 3). The integration tests
 * (test/integration/volume/unusable-create.test.ts) run the same paths
 * against the real API server.
 */
import test from 'ava';
import { Registry } from 'prom-client';
import type { KubernetesObject, V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import type { CloudVolume, CreateVolumeRequest, Volumes } from '../../../host/cloud-volumes.js';
import { CloudCallError, UnusableVolumeError } from '../../../host/errors.js';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { ApiError } from '../../../host/kube/rest.js';
import { createLogger } from '../../../host/log.js';
import { VolumeProvisioner } from '../../../host/controllers/volume/provisioner.js';

const DRIVER = 'd.example.com';
const PROVISIONING_FINALIZER = 'volume.ccm.dev/provisioning';

function informer<T extends KubernetesObject>(objects: Record<string, T>): Informer<T> {
  return {
    get: (key: string) => objects[key],
    list: () => Object.values(objects),
    addEventHandler: () => undefined,
    waitForSync: async () => true,
  } as unknown as Informer<T>;
}

const notFound = () => new ApiError(404, { message: 'not found' }, 'GET', '/x');

function releasedPv(over: { uid?: string; phase?: string; policy?: string; driver?: string } = {}): V1PersistentVolume {
  const driver = over.driver ?? DRIVER;
  return {
    metadata: {
      name: 'pvc-1',
      uid: over.uid ?? 'uid-1',
      resourceVersion: '7',
      finalizers: ['external-provisioner.volume.kubernetes.io/finalizer'],
      annotations: { 'pv.kubernetes.io/provisioned-by': driver },
    },
    spec: { csi: { driver, volumeHandle: 'vol-1' }, persistentVolumeReclaimPolicy: over.policy ?? 'Delete' },
    status: { phase: over.phase ?? 'Released' },
  };
}

interface Fakes {
  provisioner: VolumeProvisioner;
  deleted: string[];
  claimPatches: Record<string, unknown>[];
  events: string[];
  registry: Registry;
}

function setup(opts: {
  pvs?: Record<string, V1PersistentVolume>;
  live?: V1PersistentVolume | undefined;
  claims?: Record<string, V1PersistentVolumeClaim>;
  create?: (req: CreateVolumeRequest) => Promise<CloudVolume>;
}): Fakes {
  const deleted: string[] = [];
  const claimPatches: Record<string, unknown>[] = [];
  const events: string[] = [];
  const registry = new Registry();
  const core = {
    readPersistentVolume: async () => {
      if (!opts.live) throw notFound();
      return structuredClone(opts.live);
    },
    deletePersistentVolume: async () => ({}),
    patchPersistentVolume: async (a: { body: { metadata: Record<string, unknown> } }) => ({ metadata: a.body.metadata }),
    patchNamespacedPersistentVolumeClaim: async (a: { body: { metadata: Record<string, unknown> } }) => {
      claimPatches.push(a.body.metadata);
      return { metadata: a.body.metadata };
    },
    createPersistentVolume: async () => ({}),
  } as unknown as CoreV1Api;
  const volumes = {
    createVolume: opts.create ?? (async () => Promise.reject(new Error('no create expected'))),
    deleteVolume: async (id: string) => {
      deleted.push(id);
    },
  } as unknown as Volumes;
  const sc: V1StorageClass = { metadata: { name: 'sc' }, provisioner: DRIVER, volumeBindingMode: 'Immediate' };
  const provisioner = new VolumeProvisioner({
    driver: DRIVER,
    volumes,
    core,
    claims: informer(opts.claims ?? {}),
    pvs: informer(opts.pvs ?? {}),
    classes: informer({ sc }),
    attachments: informer({}),
    nodes: informer({}),
    recorder: {
      event: (_o: unknown, type: string, reason: string, message: string) => events.push(`${type} ${reason} ${message}`),
    } as unknown as EventRecorder,
    log: createLogger({ level: 'silent' }),
    registry,
    workers: 1,
  });
  return { provisioner, deleted, claimPatches, events, registry };
}

async function liveReads(registry: Registry, outcome: string): Promise<number> {
  const m = (await registry.getSingleMetricAsString('ccm_live_reads_total')).match(
    new RegExp(`^ccm_live_reads_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, 'm'),
  );
  return m ? Number(m[1]) : 0;
}

// The cache says: released, policy Delete, ours. The live read decides.
const liveCases: { what: string; live: V1PersistentVolume | undefined; deletes: boolean; outcome: string }[] = [
  { what: 'live PV agrees', live: releasedPv(), deletes: true, outcome: 'confirmed' },
  { what: 'live PV retained meanwhile', live: releasedPv({ policy: 'Retain' }), deletes: false, outcome: 'changed' },
  { what: 'live PV bound again', live: releasedPv({ phase: 'Bound' }), deletes: false, outcome: 'changed' },
  { what: 'live PV is another object of that name', live: releasedPv({ uid: 'uid-2' }), deletes: false, outcome: 'changed' },
  { what: 'live PV of another driver', live: releasedPv({ driver: 'other.example.com' }), deletes: false, outcome: 'changed' },
  { what: 'live PV gone', live: undefined, deletes: false, outcome: 'gone' },
];
for (const c of liveCases) {
  test(`syncVolume with a cached released PV: ${c.what} → ${c.deletes ? 'DeleteVolume' : 'volume kept'}`, async (t) => {
    const f = setup({ pvs: { 'pvc-1': releasedPv() }, live: c.live });
    await f.provisioner.syncVolume('pvc-1');
    t.deepEqual(f.deleted, c.deletes ? ['vol-1'] : []);
    t.is(await liveReads(f.registry, c.outcome), 1, 'the live read is counted');
  });
}

const claim: V1PersistentVolumeClaim = {
  metadata: { name: 'c', namespace: 'ns', uid: 'u1' },
  spec: { storageClassName: 'sc', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
};
const releases = (patches: Record<string, unknown>[]) => patches.some((p) => '$deleteFromPrimitiveList/finalizers' in p);

const createCases: { what: string; err: Error; deleted: string[] }[] = [
  {
    what: 'an unusable answer with an id: the volume is deleted',
    err: new UnusableVolumeError(['capacity_bytes 2 exceeds the limit 1'], 'vol-9'),
    deleted: ['vol-9'],
  },
  { what: 'an unusable answer without an id: the volume is kept', err: new UnusableVolumeError(['volume is missing'], undefined), deleted: [] },
  {
    what: 'ALREADY_EXISTS: the volume is kept',
    err: new CloudCallError('CreateVolume', 'ALREADY_EXISTS', 'volume pvc-u1 exists with other parameters'),
    deleted: [],
  },
];
for (const c of createCases) {
  test(`syncClaim, CreateVolume made a volume the host cannot use, ${c.what}; the claim keeps its finalizer and request`, async (t) => {
    const f = setup({ claims: { 'ns/c': claim }, create: async () => Promise.reject(c.err) });
    await t.throwsAsync(f.provisioner.syncClaim('ns/c'));
    t.deepEqual(f.deleted, c.deleted);
    t.true(
      f.claimPatches.some((p) => (p.finalizers as string[] | undefined)?.includes(PROVISIONING_FINALIZER)),
      'the finalizer was added before the call',
    );
    t.false(releases(f.claimPatches), 'the finalizer and the request stay');
    t.true(f.events.some((e) => e.startsWith('Warning ProvisioningFailed')));
  });
}

test('syncClaim, a final error that made nothing (INVALID_ARGUMENT): the claim is released', async (t) => {
  const f = setup({ claims: { 'ns/c': claim }, create: async () => Promise.reject(new CloudCallError('CreateVolume', 'INVALID_ARGUMENT', 'bad')) });
  await t.throwsAsync(f.provisioner.syncClaim('ns/c'));
  t.true(releases(f.claimPatches));
  t.deepEqual(f.deleted, []);
});

test('a deleted claim whose unusable volume has an id: the volume is deleted (PV absent, read live), then the claim let go', async (t) => {
  const held: V1PersistentVolumeClaim = {
    ...claim,
    metadata: {
      ...claim.metadata,
      deletionTimestamp: new Date(),
      finalizers: [PROVISIONING_FINALIZER],
      annotations: {
        'volume.ccm.dev/create-request': JSON.stringify({
          name: 'pvc-u1',
          requiredBytes: 1,
          limitBytes: 1,
          parameters: {},
          requisite: [],
          preferred: [],
        }),
      },
    },
  };
  const f = setup({ claims: { 'ns/c': held }, create: async () => Promise.reject(new UnusableVolumeError(['too big'], 'vol-9')) });
  await f.provisioner.syncClaim('ns/c');
  t.deepEqual(f.deleted, ['vol-9']);
  t.true(releases(f.claimPatches));
  t.is(await liveReads(f.registry, 'gone'), 1, 'no PV records the volume');
});
