/**
 * Issue 29, finding 3: a CreateVolume that made a volume the host cannot use
 * must not be forgotten. The cloud is the local cloud wrapped in
 * test/fixtures/volume-rounding-provider.ts, which rounds volumes of one
 * StorageClass up to whole GiB above the claim's limit (an answer the host
 * rejects); ALREADY_EXISTS comes from a volume of the claim's name put into
 * the cloud with another size while the create is held. Either way, once the
 * claim is deleted, no volume of its name may be left in the cloud.
 *
 * Real host (provisioner), the fixture as a real plugin process, real
 * kube-apiserver, etcd and kube-controller-manager.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { StateStore } from '../../../plugins/local/state.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { cloudVolumes, createClaim, createClass, eventsFor, hostFlags, volumeTestEnv, type VolumeTestEnv } from '../../helpers/volumes.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/volume-rounding-provider.js', import.meta.url));
/** test/fixtures/volume-rounding-provider.ts (importing it would start it). */
const ROUND_UP_PARAMETER = 'fixture.test/round-up-gib';
const PROVISIONING_FINALIZER = 'volume.ccm.dev/provisioning';
const CREATE_REQUEST_ANNOTATION = 'volume.ccm.dev/create-request';

const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-unusable-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vunuse', dir);
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner', [`--plugin-path=${FIXTURE}`]));
  await createClass(env, `${env.id}-rounded`, { parameters: { [ROUND_UP_PARAMETER]: 'true' } });
  await createClass(env, `${env.id}-plain`);
  t.context = { env, host };
});

test.after.always(async (t) => {
  const { env, host } = t.context;
  if (env) await localcloud(env.stateDir, 'knobs', 'unset', 'hold').catch(() => undefined);
  await host?.stop();
});

const readClaim = (env: VolumeTestEnv, name: string) => env.core.readNamespacedPersistentVolumeClaim({ name, namespace: env.namespace });

async function claimGone(env: VolumeTestEnv, name: string): Promise<boolean> {
  return !(await env.core.listNamespacedPersistentVolumeClaim({ namespace: env.namespace })).items.some((c) => c.metadata?.name === name);
}

async function warning(env: VolumeTestEnv, claim: string, pattern: RegExp): Promise<string> {
  const e = await waitFor(
    async () => (await eventsFor(env, claim)).find((x) => x.type === 'Warning' && x.reason === 'ProvisioningFailed' && pattern.test(x.message ?? '')),
    { what: `ProvisioningFailed Warning on ${claim} matching ${pattern}`, log: env.hostLog },
  );
  return e.message ?? '';
}

/** The claim still holds the provisioning finalizer and the persisted request: the host has not forgotten its volume. */
function assertHeld(t: { true: (v: boolean, m?: string) => void; truthy: (v: unknown, m?: string) => void }, c: V1PersistentVolumeClaim): void {
  t.true((c.metadata?.finalizers ?? []).includes(PROVISIONING_FINALIZER), 'the provisioning finalizer stays');
  t.truthy(c.metadata?.annotations?.[CREATE_REQUEST_ANNOTATION], 'the persisted request stays');
}

test.serial(
  'capacity rounded above the limit: the volume is deleted in the cloud, the claim kept; once the claim is deleted no volume is left',
  async (t) => {
    const { env } = t.context;
    // 1.5Gi asked with a limit of 1.5Gi; the cloud makes 2Gi.
    const claim = await env.core.createNamespacedPersistentVolumeClaim({
      namespace: env.namespace,
      body: {
        metadata: { name: 'rounded' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: `${env.id}-rounded`,
          resources: { requests: { storage: '1536Mi' }, limits: { storage: '1536Mi' } },
        },
      },
    });
    const volName = `pvc-${claim.metadata!.uid}`;
    const message = await warning(env, 'rounded', /exceeds the limit/);
    const before = await readClaim(env, 'rounded');
    const pvs = (await env.core.listPersistentVolume()).items.filter((p) => p.metadata?.name === volName);

    await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'rounded', namespace: env.namespace });
    await waitFor(() => claimGone(env, 'rounded'), { what: 'claim rounded gone', timeoutMs: 120_000, log: env.hostLog });
    // The invariant first (ava reports the first failed assertion).
    t.deepEqual(
      (await cloudVolumes(env)).filter((v) => v.name === volName).map((v) => v.id),
      [],
      'no volume of the deleted claim is left in the cloud',
    );
    assertHeld(t, before);
    t.deepEqual(pvs, [], 'no PV for an unusable volume');
    t.regex(message, /was deleted/, 'the event says the unusable volume was deleted in the cloud');
  },
);

test.serial('ALREADY_EXISTS: the claim keeps its finalizer, and a deleted claim is held until its volume is gone from the cloud', async (t) => {
  const { env } = t.context;
  await localcloud(env.stateDir, 'knobs', 'set', 'hold=createVolume');
  const claim = await createClaim(env, 'taken', `${env.id}-plain`);
  const volName = `pvc-${claim.metadata!.uid}`;
  await waitFor(async () => ((await readClaim(env, 'taken')).metadata?.finalizers ?? []).includes(PROVISIONING_FINALIZER), {
    what: 'provisioning finalizer on taken (its CreateVolume is held)',
    log: env.hostLog,
  });
  // The claim's volume name taken by a volume of another size (made by an earlier, different request).
  const store = new StateStore(env.stateDir);
  await store.update((draft) => {
    draft.volumes.push({
      id: 'vol-0a0a0a0a',
      name: volName,
      capacityBytes: 2 * 1024 ** 3,
      requestedBytes: 2 * 1024 ** 3,
      zone: 'local-a',
      region: 'local',
      parameters: {},
      attachments: [],
      createdAt: new Date().toISOString(),
    });
  });
  await localcloud(env.stateDir, 'knobs', 'unset', 'hold');
  await warning(env, 'taken', /exists with/);
  assertHeld(t, await readClaim(env, 'taken'));

  await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'taken', namespace: env.namespace });
  await warning(env, 'taken', /claim deleted, but its volume .* cannot be deleted/);
  const held = await readClaim(env, 'taken');
  t.truthy(held.metadata?.deletionTimestamp);
  assertHeld(t, held);
  t.true(
    (await cloudVolumes(env)).some((v) => v.name === volName),
    'the volume the host cannot name is still there (not forgotten)',
  );

  // The operator deletes it in the cloud: the next retry finds the name free, deletes what it makes, and lets the claim go.
  await store.update((draft) => {
    draft.volumes = draft.volumes.filter((v) => v.name !== volName);
  });
  await waitFor(() => claimGone(env, 'taken'), { what: 'claim taken gone', timeoutMs: 120_000, log: env.hostLog });
  t.false(
    (await cloudVolumes(env)).some((v) => v.name === volName),
    'no volume of the deleted claim is left in the cloud',
  );
});
