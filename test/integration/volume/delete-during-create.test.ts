/**
 * A claim deleted while its first CreateVolume is in flight (the volume made
 * in the cloud, the reply held back): whatever the order in which the reply
 * and the deletion reach the host, no cloud volume and no PV may be left.
 * The real host, the local cloud as a real plugin process, real
 * kube-apiserver, etcd and kube-controller-manager (whose PV binder releases
 * a PV whose claim is gone).
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { patchOptions } from '../../helpers/kube-patch.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { cloudVolumes, createClaim, createClass, hostFlags, volumeTestEnv, type VolumeTestEnv } from '../../helpers/volumes.js';

const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost }>;
/** Long enough that the claim is deleted (a few API calls) well before the reply arrives, even on a loaded machine. */
const REPLY_LATENCY_MS = 20_000;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-delcreate-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vdelc', dir);
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner'));
  await createClass(env, `${env.id}-sc`);
  t.context = { env, host };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
});

const CASES = [
  { claim: 'held', how: 'deleted; the provisioning finalizer holds it until the create is answered', removeFinalizer: false },
  { claim: 'gone', how: 'deleted and its provisioning finalizer removed by hand: gone before the create is answered', removeFinalizer: true },
];

for (const c of CASES) {
  test.serial(`claim ${c.how}: no cloud volume and no PV left`, async (t) => {
    const { env } = t.context;
    await localcloud(env.stateDir, 'knobs', 'set', `replyLatencyMs=${REPLY_LATENCY_MS}`);
    let volName: string;
    try {
      const claim = await createClaim(env, c.claim, `${env.id}-sc`);
      volName = `pvc-${claim.metadata!.uid}`;
      await waitFor(async () => (await cloudVolumes(env)).some((v) => v.name === volName), {
        what: 'volume created in the cloud (reply held back)',
        log: env.hostLog,
      });
      await env.core.deleteNamespacedPersistentVolumeClaim({ name: c.claim, namespace: env.namespace });
      if (c.removeFinalizer) {
        await env.core.patchNamespacedPersistentVolumeClaim(
          { name: c.claim, namespace: env.namespace, body: { metadata: { '$deleteFromPrimitiveList/finalizers': ['volume.ccm.dev/provisioning'] } } },
          patchOptions('strategic'),
        );
      }
      t.false(
        (await env.core.listPersistentVolume()).items.some((p) => p.metadata?.name === volName),
        'deleted while the create was still unanswered',
      );
    } finally {
      await localcloud(env.stateDir, 'knobs', 'unset', 'replyLatencyMs');
    }
    await waitFor(
      async () => !(await env.core.listNamespacedPersistentVolumeClaim({ namespace: env.namespace })).items.some((x) => x.metadata?.name === c.claim),
      {
        what: `claim ${c.claim} gone`,
        timeoutMs: 120_000,
        log: env.hostLog,
      },
    );
    await waitFor(async () => !(await cloudVolumes(env)).some((v) => v.name === volName), {
      what: `volume ${volName} deleted`,
      timeoutMs: 120_000,
      log: env.hostLog,
    });
    await waitFor(async () => !(await env.core.listPersistentVolume()).items.some((p) => p.metadata?.name === volName), {
      what: `PV ${volName} gone`,
      timeoutMs: 120_000,
      log: env.hostLog,
    });
  });
}
