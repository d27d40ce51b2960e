/**
 * The volume resizer end to end: a bound claim grown from 1Gi to 2Gi grows
 * the local cloud's sparse file and updates the PV and the claim's status; a
 * class that does not allow expansion gets a Warning event; a shrink is
 * refused with a Warning event. Real host, plugin process, kube-apiserver
 * (with its PersistentVolumeClaimResize admission plugin), etcd and
 * kube-controller-manager.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { patchOptions } from '../../helpers/kube-patch.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { waitFor } from '../../helpers/wait.js';
import { cloudVolumes, createClaim, createClass, eventsFor, hostFlags, volumeTestEnv, waitBound, type VolumeTestEnv } from '../../helpers/volumes.js';

// ava copies the context object per test: the restarted host goes into a shared holder.
const test = anyTest as TestFn<{ env: VolumeTestEnv; hosts: { current: TestHost }; dir: string }>;
const GI = 1024 ** 3;
const CONTROLLERS = 'volume-provisioner,volume-resizer';

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-expand-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vexp', dir);
  const host = await startTestHost(dir, hostFlags(env, CONTROLLERS));
  await createClass(env, `${env.id}-grow`, { allowVolumeExpansion: true });
  await createClass(env, `${env.id}-later-fixed`, { allowVolumeExpansion: true });
  t.context = { env, hosts: { current: host }, dir };
});

test.after.always(async (t) => {
  await t.context.hosts?.current.stop();
});

async function resize(env: VolumeTestEnv, name: string, size: string): Promise<void> {
  await env.core.patchNamespacedPersistentVolumeClaim(
    { name, namespace: env.namespace, body: { spec: { resources: { requests: { storage: size } } } } },
    patchOptions('merge'),
  );
}

test.serial('1Gi → 2Gi grows the sparse file, the PV and the claim status (node expansion pending); a later shrink is refused', async (t) => {
  const { env } = t.context;
  await createClaim(env, 'grow', `${env.id}-grow`, '1Gi');
  const bound = await waitBound(env, 'grow');
  const pvName = bound.spec!.volumeName!;
  await resize(env, 'grow', '2Gi');
  const pv = await waitFor(
    async () => {
      const p = await env.core.readPersistentVolume({ name: pvName });
      return p.spec?.capacity?.storage === '2Gi' ? p : undefined;
    },
    { what: 'PV capacity 2Gi', log: env.hostLog },
  );
  const vol = (await cloudVolumes(env)).find((v) => v.id === pv.spec?.csi?.volumeHandle)!;
  t.is(vol.capacityBytes, 2 * GI);
  t.is((await stat(join(env.stateDir, 'volumes', `${vol.id}.img`))).size, 2 * GI, 'the sparse file grew');
  const claim = await waitFor(
    async () => {
      const c = await env.core.readNamespacedPersistentVolumeClaim({ name: 'grow', namespace: env.namespace });
      return c.status?.allocatedResourceStatuses?.storage === 'NodeResizePending' ? c : undefined;
    },
    { what: 'claim NodeResizePending', log: env.hostLog },
  );
  t.is(claim.status?.allocatedResources?.storage, '2Gi');
  t.true(claim.status?.conditions?.some((c) => c.type === 'FileSystemResizePending' && c.status === 'True'));
  t.false(claim.status?.conditions?.some((c) => c.type === 'Resizing') ?? false);
  t.is(claim.status?.capacity?.storage, '1Gi', 'capacity is updated by the kubelet after the node expansion');
  const events = await eventsFor(env, 'grow');
  t.true(events.some((e) => e.reason === 'Resizing'));
  t.true(events.some((e) => e.reason === 'FileSystemResizeRequired'));

  // While the node expansion is pending, status.capacity is still 1Gi, so the
  // API server lets the user lower the request (expansion recovery): below
  // the 2Gi already allocated that is a shrink.
  await resize(env, 'grow', '1536Mi');
  const warning = await waitFor(async () => (await eventsFor(env, 'grow')).find((e) => e.type === 'Warning' && e.reason === 'VolumeResizeFailed'), {
    what: 'shrink refused',
    log: env.hostLog,
  });
  t.regex(warning.message ?? '', /shrinking/);
  t.is((await env.core.readPersistentVolume({ name: pvName })).spec?.capacity?.storage, '2Gi');
  t.is((await cloudVolumes(env)).find((v) => v.id === vol.id)!.capacityBytes, 2 * GI);
});

test.serial('a class without volume expansion: Warning event, nothing resized', async (t) => {
  const { env, dir } = t.context;
  const className = `${env.id}-later-fixed`;
  await createClaim(env, 'fixed', className, '1Gi');
  const bound = await waitBound(env, 'fixed');
  // The admission plugin refuses to grow claims of a class without expansion,
  // so the class is changed after the claim was grown, while the host is down.
  await t.context.hosts.current.stop();
  await resize(env, 'fixed', '2Gi');
  await env.storage.patchStorageClass({ name: className, body: { allowVolumeExpansion: false } }, patchOptions('merge'));
  t.context.hosts.current = await startTestHost(dir, hostFlags(env, CONTROLLERS));
  const warning = await waitFor(async () => (await eventsFor(env, 'fixed')).find((e) => e.type === 'Warning' && e.reason === 'VolumeResizeFailed'), {
    what: 'VolumeResizeFailed event',
    log: env.hostLog,
  });
  t.regex(warning.message ?? '', /does not allow volume expansion/);
  const pv = await env.core.readPersistentVolume({ name: bound.spec!.volumeName! });
  t.is(pv.spec?.capacity?.storage, '1Gi');
  t.is((await cloudVolumes(env)).find((v) => v.id === pv.spec?.csi?.volumeHandle)!.capacityBytes, GI);
  const claim = await env.core.readNamespacedPersistentVolumeClaim({ name: 'fixed', namespace: env.namespace });
  t.falsy(claim.status?.allocatedResourceStatuses?.storage);
});
