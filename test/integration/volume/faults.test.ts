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
import { kubeconfigFile, startHostProcess } from '../../helpers/host-process.js';
import { ALLOW_SIMULATION_FLAG, localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { cloudVolumes, createClaim, createClass, eventsFor, hostFlags, volumeTestEnv, waitBound, type VolumeTestEnv } from '../../helpers/volumes.js';

// ava copies the context per test: a restarted host goes into a shared holder.
interface Ctx {
  env: VolumeTestEnv;
  hosts: { current: TestHost };
  dir: string;
}
const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-faults-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vfault', dir);
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner'));
  await createClass(env, `${env.id}-ok`);
  await createClass(env, `${env.id}-bad`, { parameters: { multiAttach: 'maybe' } });
  t.context = { env, hosts: { current: host }, dir };
});

test.after.always(async (t) => {
  await t.context.hosts?.current.stop();
});

test.serial('bad StorageClass parameters: a Warning event on the claim, nothing created', async (t) => {
  const { env } = t.context;
  const claim = await createClaim(env, 'bad', `${env.id}-bad`);
  const warning = await waitFor(async () => (await eventsFor(env, 'bad')).find((e) => e.type === 'Warning' && e.reason === 'ProvisioningFailed'), {
    what: 'ProvisioningFailed event',
    log: env.hostLog,
  });
  t.regex(warning.message ?? '', /multiAttach/);
  t.false((await cloudVolumes(env)).some((v) => v.name === `pvc-${claim.metadata!.uid}`));
  const pvs = await env.core.listPersistentVolume();
  t.false(pvs.items.some((p) => p.metadata?.name === `pvc-${claim.metadata!.uid}`));
  const c = await env.core.readNamespacedPersistentVolumeClaim({ name: 'bad', namespace: env.namespace });
  t.is(c.status?.phase, 'Pending');
});

/** Sets the cloud's reply latency for the duration of `fn` (unset even when it fails, for the tests after it). */
async function withReplyLatency<T>(env: VolumeTestEnv, fn: () => Promise<T>): Promise<T> {
  await localcloud(env.stateDir, 'knobs', 'set', 'replyLatencyMs=5000');
  try {
    return await fn();
  } finally {
    await localcloud(env.stateDir, 'knobs', 'unset', 'replyLatencyMs');
  }
}

/** Creates a claim with the cloud's replies delayed, waits until the volume exists in the cloud, then kills the plugin. */
async function killDuringCreate(t: { context: Ctx }, name: string): Promise<string> {
  const { env } = t.context;
  const host = t.context.hosts.current;
  return withReplyLatency(env, async () => {
    const claim = await createClaim(env, name, `${env.id}-ok`);
    const volName = `pvc-${claim.metadata!.uid}`;
    await waitFor(async () => (await cloudVolumes(env)).some((v) => v.name === volName), {
      what: 'volume created in the cloud (reply still pending)',
      log: host.logPath,
    });
    process.kill(host.supervisor.pid!, 'SIGKILL');
    return volName;
  });
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
  await waitFor(async () => !(await cloudVolumes(env)).some((v) => v.name === volName), {
    what: 'orphaned volume deleted',
    timeoutMs: 120_000,
    log: env.hostLog,
  });
  const pvs = await env.core.listPersistentVolume();
  t.false(pvs.items.some((p) => p.metadata?.name === volName));
});

test.serial('host killed during CreateVolume and the claim deleted meanwhile: the next host deletes the volume, no orphan', async (t) => {
  const { env, dir } = t.context;
  // A host that can be SIGKILLed: its own process (a graceful stop would finish the create).
  await t.context.hosts.current.stop();
  const killedLog = join(dir, 'host-killed.log');
  let volName: string;
  try {
    volName = await withReplyLatency(env, async () => {
      const proc = await startHostProcess(
        [
          '--cloud-provider=local',
          '--cluster-name=test',
          `--kubeconfig=${await kubeconfigFile(dir)}`,
          `--plugin-env=LOCALCLOUD_STATE_DIR=${env.stateDir}`,
          ALLOW_SIMULATION_FLAG,
          ...hostFlags(env, 'volume-provisioner'),
        ],
        killedLog,
      );
      try {
        const claim = await createClaim(env, 'restart', `${env.id}-ok`);
        const name = `pvc-${claim.metadata!.uid}`;
        await waitFor(async () => (await cloudVolumes(env)).some((v) => v.name === name), {
          what: 'volume created in the cloud (reply still pending)',
          log: killedLog,
        });
        return name;
      } finally {
        await proc.kill();
      }
    });
    await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'restart', namespace: env.namespace });
    // The provisioning finalizer keeps the claim (and the request) for the next host.
    const held = await env.core.readNamespacedPersistentVolumeClaim({ name: 'restart', namespace: env.namespace });
    t.truthy(held.metadata?.deletionTimestamp);
    t.true(held.metadata?.finalizers?.includes('volume.ccm.dev/provisioning'));
    t.truthy(held.metadata?.annotations?.['volume.ccm.dev/create-request']);
  } finally {
    // The next host, also for the tests after this one when it failed.
    t.context.hosts.current = await startTestHost(dir, hostFlags(env, 'volume-provisioner'));
  }
  await waitFor(async () => !(await cloudVolumes(env)).some((v) => v.name === volName), {
    what: 'volume deleted by the next host',
    timeoutMs: 120_000,
    log: env.hostLog,
  });
  await waitFor(
    async () => !(await env.core.listNamespacedPersistentVolumeClaim({ namespace: env.namespace })).items.some((c) => c.metadata?.name === 'restart'),
    {
      what: 'claim gone',
      log: env.hostLog,
    },
  );
  t.false((await env.core.listPersistentVolume()).items.some((p) => p.metadata?.name === volName));
});

test.serial('a provisioned claim carries no provisioning finalizer or request annotation', async (t) => {
  const { env } = t.context;
  await createClaim(env, 'clean', `${env.id}-ok`);
  await waitBound(env, 'clean');
  const c = await waitFor(
    async () => {
      const x = await env.core.readNamespacedPersistentVolumeClaim({ name: 'clean', namespace: env.namespace });
      return x.metadata?.finalizers?.includes('volume.ccm.dev/provisioning') ? undefined : x;
    },
    { what: 'finalizer removed', log: env.hostLog },
  );
  t.falsy(c.metadata?.annotations?.['volume.ccm.dev/create-request']);
  t.true(c.metadata?.finalizers?.includes('kubernetes.io/pvc-protection'), 'other finalizers are kept');
});
