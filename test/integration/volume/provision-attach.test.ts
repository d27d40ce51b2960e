/**
 * The volume provisioner and attacher end to end, with the genuine flow of a
 * cluster: claim → our provisioner (CreateVolume, PV) → kube-controller-
 * manager's binder binds → a Pod on a node → kube-controller-manager's
 * attach/detach controller creates the VolumeAttachment → our attacher
 * (ControllerPublish) → attached; and back. The real host, the local cloud as
 * a real plugin process, a real kube-apiserver, etcd and kube-controller-manager.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1VolumeAttachment } from '@kubernetes/client-node';
import { patchOptions } from '../../helpers/kube-patch.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { pluginCalls } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import {
  addNode,
  cloudVolumes,
  createClaim,
  createClass,
  createPod,
  deletePod,
  eventsFor,
  hostFlags,
  volumeTestEnv,
  waitBound,
  type VolumeTestEnv,
} from '../../helpers/volumes.js';

const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost; node: string }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-flow-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vflow', dir);
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner,volume-attacher', ['--volume-attach-reconcile-period=2s']));
  const node = `${env.id}-n1`;
  await addNode(env, node);
  await createClass(env, `${env.id}-delete`);
  await createClass(env, `${env.id}-retain`, { reclaimPolicy: 'Retain' });
  await createClass(env, `${env.id}-wffc`, { volumeBindingMode: 'WaitForFirstConsumer' });
  t.context = { env, host, node };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
});

async function attachmentFor(env: VolumeTestEnv, pvName: string): Promise<V1VolumeAttachment | undefined> {
  const list = await env.storage.listVolumeAttachment();
  return list.items.find((va) => va.spec.source.persistentVolumeName === pvName);
}

test.serial("claim → provisioned, bound, attached to the pod's node, detached, deleted with its cloud volume", async (t) => {
  const { env, node } = t.context;
  const claim = await createClaim(env, 'data', `${env.id}-delete`);
  const bound = await waitBound(env, 'data');
  const pvName = `pvc-${claim.metadata!.uid}`;
  t.is(bound.spec?.volumeName, pvName);

  const pv = await env.core.readPersistentVolume({ name: pvName });
  t.is(pv.spec?.csi?.driver, env.driver);
  t.is(pv.spec?.claimRef?.uid, claim.metadata!.uid);
  t.is(pv.spec?.persistentVolumeReclaimPolicy, 'Delete');
  t.is(pv.spec?.capacity?.storage, '1Gi');
  t.true(pv.metadata?.finalizers?.includes('external-provisioner.volume.kubernetes.io/finalizer'));
  t.is(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'], env.driver);
  const term = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0];
  t.deepEqual(term?.matchExpressions?.find((e) => e.key === 'topology.kubernetes.io/zone')?.values, ['local-a']);

  const vols = await cloudVolumes(env);
  const vol = vols.find((v) => v.name === pvName);
  t.truthy(vol, 'the cloud volume is named after the claim uid');
  t.is(pv.spec?.csi?.volumeHandle, vol!.id);
  t.is(vols.filter((v) => v.name === pvName).length, 1);
  t.is((await stat(join(env.stateDir, 'volumes', `${vol!.id}.img`))).size, 1024 ** 3, 'a sparse file of the requested size');
  const events = await eventsFor(env, 'data');
  t.true(events.some((e) => e.reason === 'ProvisioningSucceeded'));

  await createPod(env, 'app', node, 'data');
  const va = await waitFor(
    async () => {
      const a = await attachmentFor(env, pvName);
      return a?.status?.attached ? a : undefined;
    },
    { what: 'VolumeAttachment attached', timeoutMs: 120_000, log: env.hostLog },
  );
  t.is(va.spec.attacher, env.driver);
  t.is(va.spec.nodeName, node);
  t.truthy(va.status?.attachmentMetadata?.devicePath);
  t.true(va.metadata?.finalizers?.some((f) => f.startsWith('external-attacher/')));
  const attached = (await cloudVolumes(env)).find((v) => v.id === vol!.id)!;
  t.is(attached.attachments.length, 1);

  await deletePod(env, 'app', node);
  await waitFor(async () => !(await attachmentFor(env, pvName)), { what: 'VolumeAttachment deleted', timeoutMs: 120_000, log: env.hostLog });
  t.is((await cloudVolumes(env)).find((v) => v.id === vol!.id)!.attachments.length, 0, 'detached in the cloud');

  await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'data', namespace: env.namespace });
  await waitFor(
    async () => {
      const pvs = await env.core.listPersistentVolume();
      return !pvs.items.some((p) => p.metadata?.name === pvName);
    },
    { what: 'PV deleted', timeoutMs: 120_000, log: env.hostLog },
  );
  t.false(
    (await cloudVolumes(env)).some((v) => v.id === vol!.id),
    'cloud volume deleted',
  );
  await t.throwsAsync(stat(join(env.stateDir, 'volumes', `${vol!.id}.img`)));
});

test.serial('reclaim policy Retain keeps the released PV and its cloud volume', async (t) => {
  const { env } = t.context;
  const claim = await createClaim(env, 'kept', `${env.id}-retain`);
  await waitBound(env, 'kept');
  const pvName = `pvc-${claim.metadata!.uid}`;
  await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'kept', namespace: env.namespace });
  await waitFor(async () => (await env.core.readPersistentVolume({ name: pvName })).status?.phase === 'Released', {
    what: 'PV released',
    log: env.hostLog,
  });
  // Give the provisioner several chances to act wrongly.
  await new Promise((r) => setTimeout(r, 3000));
  const pv = await env.core.readPersistentVolume({ name: pvName });
  t.is(pv.status?.phase, 'Released');
  t.falsy(pv.metadata?.deletionTimestamp);
  t.true((await cloudVolumes(env)).some((v) => v.id === pv.spec?.csi?.volumeHandle));
});

test.serial("WaitForFirstConsumer: nothing until the scheduler picks a node, then the volume is placed in that node's zone", async (t) => {
  const { env } = t.context;
  const nodeB = `${env.id}-nb`;
  await addNode(env, nodeB, 'local-b');
  const claim = await createClaim(env, 'late', `${env.id}-wffc`);
  const volName = `pvc-${claim.metadata!.uid}`;
  // The binder leaves such a claim to the scheduler; no volume may appear yet.
  await new Promise((r) => setTimeout(r, 2000));
  t.false((await cloudVolumes(env)).some((v) => v.name === volName));
  // What the scheduler does for a pod using the claim on nodeB.
  await env.core.patchNamespacedPersistentVolumeClaim(
    { name: 'late', namespace: env.namespace, body: { metadata: { annotations: { 'volume.kubernetes.io/selected-node': nodeB } } } },
    patchOptions('merge'),
  );
  await waitBound(env, 'late');
  const vol = (await cloudVolumes(env)).find((v) => v.name === volName)!;
  t.is(vol.zone, 'local-b');
  const pv = await env.core.readPersistentVolume({ name: volName });
  const exprs = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions ?? [];
  t.deepEqual(exprs.find((e) => e.key === 'topology.kubernetes.io/zone')?.values, ['local-b']);
});

test.serial('a single-attach volume wanted on a second node: attachError (FAILED_PRECONDITION) until the first pod goes', async (t) => {
  const { env, node } = t.context;
  const node2 = `${env.id}-n2`;
  await addNode(env, node2);
  // ReadWriteMany lets the attach/detach controller ask for two attachments;
  // the cloud volume (no multiAttach parameter) takes one instance only.
  await env.core.createNamespacedPersistentVolumeClaim({
    namespace: env.namespace,
    body: {
      metadata: { name: 'shared' },
      spec: { accessModes: ['ReadWriteMany'], storageClassName: `${env.id}-delete`, resources: { requests: { storage: '1Gi' } } },
    },
  });
  const bound = await waitBound(env, 'shared');
  const pvName = bound.spec!.volumeName!;
  const vaOn = async (n: string) =>
    (await env.storage.listVolumeAttachment()).items.find((va) => va.spec.source.persistentVolumeName === pvName && va.spec.nodeName === n);
  await createPod(env, 'first', node, 'shared');
  await waitFor(async () => (await vaOn(node))?.status?.attached, { what: 'attached to the first node', timeoutMs: 120_000, log: env.hostLog });
  await createPod(env, 'second', node2, 'shared');
  const refused = await waitFor(
    async () => {
      const va = await vaOn(node2);
      return va?.status?.attachError ? va : undefined;
    },
    { what: 'attachError on the second node', timeoutMs: 120_000, log: env.hostLog },
  );
  t.regex(refused.status!.attachError!.message ?? '', /detach it first/);
  t.falsy(refused.status?.attached);
  await deletePod(env, 'first', node);
  await waitFor(async () => (await vaOn(node2))?.status?.attached, {
    what: 'attached to the second node once the first let go',
    timeoutMs: 120_000,
    log: env.hostLog,
  });
  t.pass();
  await deletePod(env, 'second', node2);
  await waitFor(async () => !(await vaOn(node2)), { what: 'detached from the second node', timeoutMs: 120_000, log: env.hostLog });
});

test.serial('detach succeeds when the instance no longer exists', async (t) => {
  const { env } = t.context;
  const doomed = `${env.id}-doomed`;
  await addNode(env, doomed);
  await createClaim(env, 'lost', `${env.id}-delete`);
  const bound = await waitBound(env, 'lost');
  const pvName = bound.spec!.volumeName!;
  await createPod(env, 'orphaned', doomed, 'lost');
  await waitFor(async () => (await attachmentFor(env, pvName))?.status?.attached, { what: 'attached', timeoutMs: 120_000, log: env.hostLog });
  await localcloud(env.stateDir, 'instance', 'delete', doomed);
  await deletePod(env, 'orphaned', doomed);
  await waitFor(async () => !(await attachmentFor(env, pvName)), { what: 'VolumeAttachment released', timeoutMs: 120_000, log: env.hostLog });
  t.pass();
});

test.serial('an attachment the cloud lost is repaired by the periodic comparison with ListVolumes', async (t) => {
  const { env, node } = t.context;
  const claim = await createClaim(env, 'drift', `${env.id}-delete`);
  await waitBound(env, 'drift');
  const pvName = `pvc-${claim.metadata!.uid}`;
  await createPod(env, 'drifter', node, 'drift');
  await waitFor(async () => (await attachmentFor(env, pvName))?.status?.attached, { what: 'attached', timeoutMs: 120_000, log: env.hostLog });
  const handle = (await env.core.readPersistentVolume({ name: pvName })).spec!.csi!.volumeHandle;
  const publishesBefore = await pluginCalls(t.context.host.metrics.registry, 'ControllerPublishVolume');
  // Someone detaches the volume behind Kubernetes' back.
  const { StateStore } = await import('../../../plugins/local/state.js');
  const store = new StateStore(env.stateDir);
  await store.update((draft) => {
    const v = draft.volumes.find((x) => x.id === handle)!;
    v.attachments = [];
  });
  // The edit must have stuck, and the repair must be a new publish call.
  t.is(store.read().volumes.find((v) => v.id === handle)?.attachments.length, 0);
  await waitFor(async () => (await cloudVolumes(env)).find((v) => v.id === handle)?.attachments.length === 1, {
    what: 'volume attached again by the reconciler',
    timeoutMs: 60_000,
  });
  t.true((await pluginCalls(t.context.host.metrics.registry, 'ControllerPublishVolume')) > publishesBefore);
  await deletePod(env, 'drifter', node);
});
