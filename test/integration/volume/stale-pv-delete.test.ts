/**
 * Issue 29, finding 10 (volumes), against the real kube-apiserver and
 * kube-controller-manager: the provisioner deletes a released PV's cloud
 * volume only when a live read of the PV still asks for it, never on its
 * cache alone.
 *
 * The host talks to the API server through an HTTP-aware proxy
 * (test/helpers/http-proxy.ts). A VolumeAttachment (made by hand; no attacher
 * runs) holds back the deletion of a released PV; then the host's
 * PersistentVolume watch is black-holed, the PV's reclaim policy is changed
 * to Retain on the server, and the VolumeAttachment goes away (its watch
 * still works): the cache says "Released, Delete, nothing attached".
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJournal } from '../../../plugins/local/journal.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { startHttpProxy, type HttpProxy, type RequestLine } from '../../helpers/http-proxy.js';
import { patchOptions } from '../../helpers/kube-patch.js';
import { hostKubeConfig } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';
import { cloudVolumes, createClaim, createClass, hostFlags, volumeTestEnv, waitBound, type VolumeTestEnv } from '../../helpers/volumes.js';

// ava copies the context per test: the PV to clean up goes into a shared holder.
const test = anyTest as TestFn<{ env: VolumeTestEnv; host: TestHost; proxy: HttpProxy; made: { pv?: string } }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-stale-pv-'));
  const env = await volumeTestEnv(await testKubeConfig(), 'vstale', dir);
  const proxy = await startHttpProxy(await hostKubeConfig());
  const host = await startTestHost(dir, hostFlags(env, 'volume-provisioner'), { kubeConfig: proxy.kubeConfig(await hostKubeConfig()) });
  t.context = { env, host, proxy, made: {} };
});

test.after.always(async (t) => {
  const { env, host, proxy, made } = t.context;
  const pv = made?.pv;
  await host?.stop();
  await proxy?.close();
  if (pv) {
    // Retained: nobody else lets it go.
    await env.core.patchPersistentVolume({ name: pv, body: { metadata: { finalizers: null } } }, patchOptions('merge')).catch(() => undefined);
    await env.core.deletePersistentVolume({ name: pv }).catch(() => undefined);
  }
});

/** Sum of a counter's samples with these label values (0 when absent). */
async function counter(host: TestHost, name: string, labels: Record<string, string>): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric(name)?.get();
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
}

const pvWatch = (r: RequestLine) => r.method === 'GET' && r.path.startsWith('/api/v1/persistentvolumes?') && /[?&]watch=(true|1)(&|$)/.test(r.path);

test('a released PV whose cache is stale: the reclaim policy changed to Retain on the server keeps the cloud volume', async (t) => {
  const { env, host, proxy } = t.context;
  await createClass(env, `${env.id}-sc`);
  await createClaim(env, 'data', `${env.id}-sc`);
  const pvName = (await waitBound(env, 'data')).spec!.volumeName!;
  t.context.made.pv = pvName;
  const volume = (await cloudVolumes(env)).find((v) => v.name === pvName);
  t.truthy(volume, 'the claim has its cloud volume');
  const vaName = `${env.id}-va`;
  await env.storage.createVolumeAttachment({
    body: { metadata: { name: vaName }, spec: { attacher: env.driver, nodeName: `${env.id}-n1`, source: { persistentVolumeName: pvName } } },
  });

  // The claim goes: kube-controller-manager releases the PV; the provisioner would delete its volume but for the attachment.
  const retries = { name: 'volume-provisioner-pvs' };
  const retriesBefore = await counter(host, 'workqueue_retries_total', retries);
  await env.core.deleteNamespacedPersistentVolumeClaim({ name: 'data', namespace: env.namespace });
  await waitFor(async () => ((await counter(host, 'workqueue_retries_total', retries)) > retriesBefore ? true : undefined), {
    what: `the provisioner holding back the deletion of ${pvName} (${vaName} still uses it)`,
    log: host.logPath,
  });
  t.is((await env.core.readPersistentVolume({ name: pvName })).status?.phase, 'Released');

  // The cache stops following the PV; on the server it is retained now.
  await waitFor(() => (proxy.streaming(pvWatch).length > 0 ? true : undefined), { what: "the host's PersistentVolume watch", log: host.logPath });
  t.true(proxy.freeze(pvWatch) >= 1, 'the PersistentVolume watch is black-holed');
  await env.core.patchPersistentVolume({ name: pvName, body: { spec: { persistentVolumeReclaimPolicy: 'Retain' } } }, patchOptions('merge'));

  // The attachment goes: to the cache, nothing holds the deletion back any more.
  // The live PV disagrees with the cache (Retain, not Delete): ccm_live_reads_total's outcome "changed", nothing deleted.
  const refused = { resource: 'persistentvolumes', outcome: 'changed' };
  const refusedBefore = await counter(host, 'ccm_live_reads_total', refused);
  await env.storage.deleteVolumeAttachment({ name: vaName });
  const decided = await waitFor(
    async () => {
      if ((await counter(host, 'ccm_live_reads_total', refused)) > refusedBefore) return 'refused after a live read';
      if (!(await cloudVolumes(env)).some((v) => v.id === volume!.id)) return 'volume deleted';
      return undefined;
    },
    { what: `the provisioner deciding on ${pvName} once ${vaName} is gone`, log: host.logPath },
  );

  const deleteCalls = (await readJournal(env.stateDir)).filter((e) => /deletevolume$/i.test(e.method) && e.key === volume!.id);
  t.deepEqual(
    {
      decided,
      inCloud: (await cloudVolumes(env)).some((v) => v.id === volume!.id),
      deleteVolumeCalls: deleteCalls.length,
      pv: await env.core.readPersistentVolume({ name: pvName }).then(
        (pv) => pv.spec?.persistentVolumeReclaimPolicy,
        () => 'deleted',
      ),
    },
    { decided: 'refused after a live read', inCloud: true, deleteVolumeCalls: 0, pv: 'Retain' },
  );
});
