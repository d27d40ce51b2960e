/**
 * Issue 29, finding 4: the attacher's drift repair against a detach that
 * happens while its ListVolumes is slow. The local cloud's `hold` knob keeps
 * ListVolumes waiting (its `localcloud_held_calls` metric says when); the
 * VolumeAttachment is deleted and detached meanwhile; when ListVolumes then
 * answers "not attached", the repair must not publish the volume again from
 * its old snapshot: a volume attached to a node without a VolumeAttachment
 * could never attach elsewhere.
 *
 * Real host (provisioner + attacher), the local cloud as a real plugin
 * process, the real API server; VolumeAttachments made by hand as
 * kube-controller-manager's attach/detach controller would.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { pluginCalls } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { addNode, cloudVolumes, createClaim, createClass, hostFlags, volumeTestEnv, waitBound, type VolumeTestEnv } from '../../helpers/volumes.js';

const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost; node: V1Node }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-repair-race-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vrepair', dir);
  const host = await startTestHost(
    dir,
    hostFlags(env, 'volume-provisioner,volume-attacher', [
      '--volume-attach-reconcile-period=1s',
      // The held ListVolumes must answer, not time out (else no repair would run and the race would not be tried).
      '--plugin-call-timeout=2m',
    ]),
  );
  const node = await addNode(env, `${env.id}-n1`);
  await createClass(env, `${env.id}-sc`);
  t.context = { env, host, node };
});

test.after.always(async (t) => {
  const { env, host } = t.context;
  if (env) await localcloud(env.stateDir, 'knobs', 'unset', 'hold').catch(() => undefined);
  await host?.stop();
});

/** A bound claim's volume attached to the node through a VolumeAttachment made by hand; resolves with the cloud volume id. */
async function attached(env: VolumeTestEnv, node: V1Node, claim: string): Promise<{ va: string; volumeId: string }> {
  await createClaim(env, claim, `${env.id}-sc`);
  const pvName = (await waitBound(env, claim)).spec!.volumeName!;
  const va = `${env.id}-${claim}`;
  await env.storage.createVolumeAttachment({
    body: { metadata: { name: va }, spec: { attacher: env.driver, nodeName: node.metadata!.name!, source: { persistentVolumeName: pvName } } },
  });
  await waitFor(async () => (await env.storage.readVolumeAttachment({ name: va })).status?.attached, { what: `${va} attached`, log: env.hostLog });
  const volumeId = (await env.core.readPersistentVolume({ name: pvName })).spec!.csi!.volumeHandle;
  return { va, volumeId };
}

async function attachmentsOf(env: VolumeTestEnv, volumeId: string): Promise<string[]> {
  return ((await cloudVolumes(env)).find((v) => v.id === volumeId)?.attachments ?? []).map((a) => a.instanceId);
}

/** The value of a sample of the host's /metrics text (host and plugin metrics), 0 when absent. */
async function sample(host: TestHost, re: RegExp): Promise<number> {
  const m = (await host.metrics.registry.metrics()).match(re);
  return m ? Number(m[1]) : 0;
}

test('a VolumeAttachment deleted while the repair waits for ListVolumes stays detached', async (t) => {
  const { env, host, node } = t.context;
  // Keeps the repair loop listing after the other attachment is gone.
  const keep = await attached(env, node, 'keep');
  const race = await attached(env, node, 'race');

  await localcloud(env.stateDir, 'knobs', 'set', 'hold=listVolumes');
  await waitFor(async () => (await sample(host, /^localcloud_held_calls\{plugin="local",method="volumes\.listVolumes"\} (\d+)/m)) >= 1, {
    what: "the repair loop's ListVolumes held (its snapshot shows both attachments attached)",
    log: env.hostLog,
  });
  const listsBefore = await pluginCalls(host.metrics.registry, 'ListVolumes');

  // Detached for real while ListVolumes waits.
  await env.storage.deleteVolumeAttachment({ name: race.va });
  await waitFor(async () => !(await env.storage.listVolumeAttachment()).items.some((a) => a.metadata?.name === race.va), {
    what: `${race.va} detached and gone`,
    log: env.hostLog,
  });
  t.deepEqual(await attachmentsOf(env, race.volumeId), [], 'the detach unpublished the volume');

  await localcloud(env.stateDir, 'knobs', 'unset', 'hold');
  // The held pass answered and the one after it ran: the held pass's repairs are over.
  await waitFor(async () => (await pluginCalls(host.metrics.registry, 'ListVolumes')) >= listsBefore + 2, {
    what: 'two more repair passes',
    log: env.hostLog,
  });
  t.is(
    await sample(host, /^ccm_plugin_rpc_errors_total\{[^}]*method="ListVolumes"[^}]*\} (\d+)/m),
    0,
    'the held ListVolumes answered (the race was run)',
  );
  t.deepEqual(await attachmentsOf(env, race.volumeId), [], 'the repair did not attach the volume of a deleted VolumeAttachment again');
  t.is((await attachmentsOf(env, keep.volumeId)).length, 1, 'the other attachment is untouched');
  t.true(
    (await sample(host, /^ccm_live_reads_total\{controller="volume-attacher-controller",resource="volumeattachments",outcome="changed"\} (\d+)/m)) +
      (await sample(host, /^ccm_live_reads_total\{controller="volume-attacher-controller",resource="volumeattachments",outcome="gone"\} (\d+)/m)) >=
      1,
    'the live read that refused the repair is counted',
  );
});
