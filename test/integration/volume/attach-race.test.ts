/**
 * The attacher's window between its finalizer and ControllerPublishVolume,
 * made deterministic with the local cloud's `hold` knob: a VolumeAttachment
 * that disappears while its publish is in flight (its finalizer removed by
 * hand, standing for kube-apiserver's deletion race, kubernetes#77988) must
 * not leave the volume attached to the instance.
 *
 * Real host (provisioner + attacher), the local cloud as a real plugin
 * process, the real API server; the VolumeAttachment is made by hand as
 * kube-controller-manager's attach/detach controller would.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { patchOptions } from '../../helpers/kube-patch.js';
import { readJournal } from '../../../plugins/local/journal.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { addNode, cloudVolumes, createClaim, createClass, hostFlags, volumeTestEnv, waitBound, type VolumeTestEnv } from '../../helpers/volumes.js';

const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-attach-race-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'varace', dir);
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner,volume-attacher'));
  t.context = { env, host };
});

test.after.always(async (t) => {
  const { env, host } = t.context;
  if (env) await localcloud(env.stateDir, 'knobs', 'unset', 'hold').catch(() => undefined);
  await host?.stop();
});

test('VolumeAttachment removed (finalizer dropped by hand) during ControllerPublishVolume: the volume ends up unpublished', async (t) => {
  const { env, host } = t.context;
  const node = await addNode(env, `${env.id}-n1`);
  await createClass(env, `${env.id}-sc`);
  await createClaim(env, 'data', `${env.id}-sc`);
  const pvName = (await waitBound(env, 'data')).spec!.volumeName!;
  const volume = (await cloudVolumes(env)).find((v) => v.name === pvName)!;
  t.truthy(volume, 'the claim has its cloud volume');

  await localcloud(env.stateDir, 'knobs', 'set', 'hold=ControllerPublishVolume');
  const vaName = `${env.id}-va`;
  const va = await env.storage.createVolumeAttachment({
    body: { metadata: { name: vaName }, spec: { attacher: env.driver, nodeName: node.metadata!.name!, source: { persistentVolumeName: pvName } } },
  });
  await waitFor(async () => ((await env.storage.readVolumeAttachment({ name: vaName })).metadata?.finalizers ?? []).length > 0, {
    what: `the attacher's finalizer on ${vaName} (its publish is next)`,
  });
  // Gone while the publish is held.
  const ops = [
    { op: 'test', path: '/metadata/uid', value: va.metadata!.uid },
    { op: 'remove', path: '/metadata/finalizers' },
  ];
  await env.storage.patchVolumeAttachment({ name: vaName, body: ops }, patchOptions('json'));
  await env.storage.deleteVolumeAttachment({ name: vaName });
  await waitFor(async () => !(await env.storage.listVolumeAttachment()).items.some((a) => a.metadata?.name === vaName), { what: `${vaName} gone` });
  await localcloud(env.stateDir, 'knobs', 'unset', 'hold');

  // The held publish goes through (the volume gets attached)...
  await waitFor(
    async () => (await readJournal(env.stateDir)).some((e) => e.method === 'volumes.controllerPublishVolume' && e.key === volume.id && e.ok),
    {
      what: `the held ControllerPublishVolume of ${volume.id} answered (journal)`,
    },
  );
  // ...and must be undone.
  const after = await waitFor(
    async () => {
      const v = (await cloudVolumes(env)).find((x) => x.id === volume.id);
      return v?.attachments.length === 0 ? v : undefined;
    },
    { what: `volume ${volume.id} unpublished after its VolumeAttachment vanished; see ${host.logPath}` },
  );
  t.deepEqual(after.attachments, [], 'no instance keeps the volume');
});
