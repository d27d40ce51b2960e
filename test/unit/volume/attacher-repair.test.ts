/**
 * The attacher's drift repair with fakes (issue 29, finding 4): the cache's
 * copy of an attachment the cloud lost is from before ListVolumes; the
 * repair publishes only when the VolumeAttachment read live still asks for
 * it, and records what it published, so a VolumeAttachment that vanishes
 * afterwards is unpublished. The integration test
 * (test/integration/volume/attach-repair-race.test.ts) races a real detach.
 */
import test from 'ava';
import { Registry } from 'prom-client';
import type { KubernetesObject, V1VolumeAttachment } from '@kubernetes/client-node';
import type { Volumes } from '../../../host/cloud-volumes.js';
import type { KubeClients } from '../../../host/kube/client.js';
import type { Informer } from '../../../host/kube/informer.js';
import { ApiError } from '../../../host/kube/rest.js';
import { createLogger } from '../../../host/log.js';
import { VolumeAttacher } from '../../../host/controllers/volume/attacher.js';

const DRIVER = 'd.example.com';
const FINALIZER = 'external-attacher/d-example-com';
const NODE_ID = 'local://i-1';

function informer<T extends KubernetesObject>(objects: Record<string, T>): Informer<T> {
  return {
    get: (key: string) => objects[key],
    list: () => Object.values(objects),
    addEventHandler: () => undefined,
    waitForSync: async () => true,
  } as unknown as Informer<T>;
}

function va(over: { uid?: string; deleting?: boolean; attached?: boolean; nodeId?: string; finalizers?: string[] } = {}): V1VolumeAttachment {
  return {
    metadata: {
      name: 'va-1',
      uid: over.uid ?? 'uid-1',
      finalizers: over.finalizers ?? [FINALIZER],
      annotations: { 'csi.alpha.kubernetes.io/node-id': over.nodeId ?? NODE_ID, 'volume.ccm.dev/volume-handle': 'vol-1' },
      ...(over.deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: { attacher: DRIVER, nodeName: 'n1', source: { persistentVolumeName: 'pv-1' } },
    status: { attached: over.attached ?? true },
  };
}

function setup(live: V1VolumeAttachment | undefined) {
  const calls: string[] = [];
  const cache: Record<string, V1VolumeAttachment> = { 'va-1': va() };
  const registry = new Registry();
  const storage = {
    readVolumeAttachment: async () => {
      if (!live) throw new ApiError(404, { message: 'not found' }, 'GET', '/va-1');
      return structuredClone(live);
    },
    patchVolumeAttachmentStatus: async () => ({}),
  };
  const volumes = {
    listsPublishedNodes: true,
    listVolumes: async () => [{ volume: { volumeId: 'vol-1', capacityBytes: 1, volumeContext: {}, accessibleTopology: [] }, publishedNodeIds: [] }],
    controllerPublish: async (h: string, n: string) => {
      calls.push(`publish ${h} ${n}`);
      return {};
    },
    controllerUnpublish: async (h: string, n: string) => {
      calls.push(`unpublish ${h} ${n}`);
    },
  } as unknown as Volumes;
  const attacher = new VolumeAttacher({
    driver: DRIVER,
    volumes,
    clients: { storage, core: {} } as unknown as KubeClients,
    attachments: informer(cache),
    pvs: informer({}),
    nodes: informer({}),
    nodesSharded: false,
    log: createLogger({ level: 'silent' }),
    registry,
    workers: 1,
    reconcilePeriodMs: 60_000,
  });
  return { attacher, calls, cache, registry };
}

const cases: { what: string; live: V1VolumeAttachment | undefined; publishes: boolean; outcome: string }[] = [
  { what: 'still attached, same uid and node', live: va(), publishes: true, outcome: 'confirmed' },
  { what: 'gone (detached meanwhile)', live: undefined, publishes: false, outcome: 'gone' },
  { what: 'being deleted', live: va({ deleting: true }), publishes: false, outcome: 'changed' },
  { what: 'replaced by another object of that name', live: va({ uid: 'uid-2' }), publishes: false, outcome: 'changed' },
  { what: 'marked detached', live: va({ attached: false }), publishes: false, outcome: 'changed' },
  { what: 'our finalizer gone', live: va({ finalizers: [] }), publishes: false, outcome: 'changed' },
  { what: 'published to another instance now', live: va({ nodeId: 'local://i-2' }), publishes: false, outcome: 'changed' },
];
for (const c of cases) {
  test(`repair of an attachment the cloud lost, read live: ${c.what} → ${c.publishes ? 'published again' : 'left alone'}`, async (t) => {
    const f = setup(c.live);
    t.is(await f.attacher.reconcile(), c.publishes ? 1 : 0);
    t.deepEqual(f.calls, c.publishes ? [`publish vol-1 ${NODE_ID}`] : []);
    const text = await f.registry.getSingleMetricAsString('ccm_live_reads_total');
    t.regex(text, new RegExp(`outcome="${c.outcome}"\\} 1`));
  });
}

test('a re-publish is recorded: the VolumeAttachment vanishing afterwards gets the volume unpublished', async (t) => {
  const f = setup(va());
  t.is(await f.attacher.reconcile(), 1);
  delete f.cache['va-1']; // finalizer removed by hand, object gone
  await f.attacher.sync('va-1');
  t.deepEqual(f.calls, [`publish vol-1 ${NODE_ID}`, `unpublish vol-1 ${NODE_ID}`]);
});
