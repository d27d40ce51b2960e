/**
 * Faults around provisioning: a bad StorageClass, and the provider killed
 * while CreateVolume is in progress (the volume made, the reply lost). The
 * real host, the local cloud as a real plugin process, real kube-apiserver,
 * etcd and kube-controller-manager.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { cloudVolumes, createClaim, createClass, eventsFor, hostFlags, volumeTestEnv, waitBound, type VolumeTestEnv } from '../../helpers/volumes.js';

const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-faults-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vfault', dir);
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner'));
  await createClass(env, `${env.id}-ok`);
  await createClass(env, `${env.id}-bad`, { parameters: { multiAttach: 'maybe' } });
  t.context = { env, host };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
});

test.serial('bad StorageClass parameters: a Warning event on the claim, nothing created', async (t) => {
  const { env } = t.context;
  const claim = await createClaim(env, 'bad', `${env.id}-bad`);
  const warning = await waitFor(async () => (await eventsFor(env, 'bad')).find((e) => e.type === 'Warning' && e.reason === 'ProvisioningFailed'), {
    what: 'ProvisioningFailed event',
  });
  t.regex(warning.message ?? '', /multiAttach/);
  t.false((await cloudVolumes(env)).some((v) => v.name === `pvc-${claim.metadata!.uid}`));
  const pvs = await env.core.listPersistentVolume();
  t.false(pvs.items.some((p) => p.metadata?.name === `pvc-${claim.metadata!.uid}`));
  const c = await env.core.readNamespacedPersistentVolumeClaim({ name: 'bad', namespace: env.namespace });
  t.is(c.status?.phase, 'Pending');
});

/** Creates a claim with the cloud's replies delayed, waits until the volume exists in the cloud, then kills the plugin. */
async function killDuringCreate(t: { context: { env: VolumeTestEnv; host: TestHost } }, name: string): Promise<string> {
  const { env, host } = t.context;
  await localcloud(env.stateDir, 'knobs', 'set', 'replyLatencyMs=5000');
  const claim = await createClaim(env, name, `${env.id}-ok`);
  const volName = `pvc-${claim.metadata!.uid}`;
  await waitFor(async () => (await cloudVolumes(env)).some((v) => v.name === volName), { what: 'volume created in the cloud (reply still pending)' });
  const pid = host.supervisor.pid!;
  process.kill(pid, 'SIGKILL');
  await localcloud(env.stateDir, 'knobs', 'unset', 'replyLatencyMs');
  return volName;
}

test.serial('plugin killed during CreateVolume: after recovery exactly one cloud volume, bound', async (t) => {
  const { env } = t.context;
  const volName = await killDuringCreate(t, 'survivor');
  const bound = await waitBound(env, 'survivor', 120_000);
  t.is(bound.spec?.volumeName, volName);
  const matching = (await cloudVolumes(env)).filter((v) => v.name === volName);
  t.is(matching.length, 1, 'the retried CreateVolume returned the same volume');
  const pv = await env.core.readPersistentVolume({ name: volName });
  t.is(pv.spec?.csi?.volumeHandle, matching[0]!.id);
});

test.serial('plugin killed during CreateVolume and the claim deleted meanwhile: no orphan volume', async (t) => {
  const { env } = t.context;
  const volName = await killDuringCreate(t, 'orphan');
  await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'orphan', namespace: env.namespace });
  await waitFor(async () => !(await cloudVolumes(env)).some((v) => v.name === volName), { what: 'orphaned volume deleted', timeoutMs: 120_000 });
  const pvs = await env.core.listPersistentVolume();
  t.false(pvs.items.some((p) => p.metadata?.name === volName));
});
