/**
 * Volumes of two providers in one host, by StorageClass provisioner (issue
 * 31 item 4), against the real API server and kube-controller-manager: two
 * local clouds, "east" spawned by the host (exec mode) and "west" a sidecar
 * the host dials, each declaring its own provisioner name
 * (LOCALCLOUD_VOLUME_PROVISIONERS). Each claim gets its volume from the cloud
 * of its class's provisioner; a claim, a PersistentVolume and a
 * VolumeAttachment of a third provisioner nobody serves are left alone (no
 * finalizer, no event, no status, never deleted); a released PV is deleted
 * by its own provider only; a volume attaches only to its own provider's
 * Nodes. The PV label webhook (called by the API server) labels each PV
 * from the cloud of its driver and refuses one whose volume only the other
 * cloud has. West SIGKILLed: east's claims keep being provisioned, west's waits
 * for west. A host whose two volume providers serve the same provisioner
 * does not start, naming both.
 *
 * Scoping for the shared API server: a namespace and provisioner names of
 * this run's id, nodes labelled by testScope('voltwo'), the webhook only for
 * PVs named `<id>-hooked-*`.
 */
import test from 'ava';
import { mkdtemp, readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  StorageV1Api,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1VolumeAttachment,
} from '@kubernetes/client-node';
import { readJournal } from '../../../plugins/local/journal.js';
import { freePorts } from '../../controlplane/probe.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { patchOptions } from '../../helpers/kube-patch.js';
import { localcloud } from '../../helpers/localcloud.js';
import { loadManifest } from '../../helpers/manifests.js';
import { handPv, registerPvLabelWebhook } from '../../helpers/volumes.js';
import { deleteScopedNodes, testScope } from '../../helpers/nodes.js';
import {
  execEntry,
  localCloudEnv,
  startProvidersHost,
  startTwoLocalClouds,
  writeProvidersFile,
  type CloudName as Cloud,
  type TwoLocalClouds,
} from '../../helpers/two-clouds.js';
import { waitFor } from '../../helpers/wait.js';

const ID = `voltwo-${randomBytes(3).toString('hex')}`;
const NS = ID;
const scope = testScope('voltwo');
/** The provisioner (CSI driver) names: east's, west's, and one nobody serves. */
const DRIVER = { east: `east.${ID}.volumes.test`, west: `west.${ID}.volumes.test`, nobody: `nobody.${ID}.volumes.test` } as const;
const CLASS = { east: `${ID}-east`, west: `${ID}-west`, nobody: `${ID}-nobody` } as const;
/** The event source of the host's volume controllers. */
const OUR_COMPONENTS = ['volume-provisioner-controller', 'volume-attacher-controller'];
const PV_FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';

/** Finalizers other than kube-controller-manager's own protection (kubernetes.io/pvc-protection, kubernetes.io/pv-protection). */
const notKubes = (finalizers: string[] | undefined) => (finalizers ?? []).filter((f) => !f.startsWith('kubernetes.io/'));

/** The flags of every host here, besides those startProvidersHost sets. */
const FLAGS = [`--watch-namespace=${NS}`, `--node-selector=${scope.selector}`];
/** The refused hosts' controllers (they never get to serve a webhook). */
const REFUSED_FLAGS = [...FLAGS, '--controllers=volume-provisioner,volume-attacher', '--webhook-secure-port=0'];

/** The PV label webhook's registration: only this file's PVs named `<ID>-hooked-*` go to it. */
const WEBHOOK = `${ID}-pvl`;
const ZONE = 'topology.kubernetes.io/zone';

interface Setup {
  /** East (exec) and west (sidecar, restarted after it is killed) in one host. */
  clouds: TwoLocalClouds;
  core: CoreV1Api;
  storage: StorageV1Api;
  admission: AdmissionregistrationV1Api;
}

let setup: Setup | undefined;

const stateOf = (cloud: Cloud) => setup!.clouds.stateOf(cloud);

test.before(async () => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const storage = kc.makeApiClient(StorageV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  for (const c of ['east', 'west', 'nobody'] as const)
    await storage.createStorageClass({
      body: { metadata: { name: CLASS[c] }, provisioner: DRIVER[c], reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate' },
    });
  // The PV label webhook (one server for the host, asking the provider of each PV's driver), called by the API server.
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const obj of await loadManifest('volumes/webhook-caller-rbac.yaml'))
    await objects.patch(obj, undefined, undefined, 'ccm-tests', true, PatchStrategy.ServerSideApply);
  const [webhookPort] = await freePorts(1);
  const certDir = await mkdtemp(join(tmpdir(), 'ccm-volumes-two-clouds-webhook-'));
  const clouds = await startTwoLocalClouds({
    tmpPrefix: 'ccm-volumes-two-clouds-',
    flags: [
      ...FLAGS,
      '--controllers=volume-provisioner,volume-attacher,pvl',
      `--webhook-secure-port=${webhookPort}`,
      '--webhook-bind-address=127.0.0.1',
      `--webhook-cert-dir=${certDir}`,
    ],
    eastEnv: { LOCALCLOUD_VOLUME_PROVISIONERS: DRIVER.east },
    westEnv: { LOCALCLOUD_VOLUME_PROVISIONERS: DRIVER.west },
  });
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  setup = { clouds, core, storage, admission };
  const caBundle = await waitFor(() => readFile(join(certDir, 'webhook.crt'), 'utf8'), {
    what: 'generated webhook certificate',
    log: clouds.host.logPath,
  });
  await registerPvLabelWebhook(admission, WEBHOOK, webhookPort, caBundle, `${ID}-hooked-`);
});

test.after.always(async () => {
  if (!setup) return;
  await setup.admission.deleteMutatingWebhookConfiguration({ name: WEBHOOK }).catch(() => undefined);
  await setup.clouds.stop();
  const { core, storage } = setup;
  for (const va of (await storage.listVolumeAttachment()).items.filter((v) => Object.values(DRIVER).includes(v.spec?.attacher as never)))
    await storage
      .patchVolumeAttachment({ name: va.metadata!.name!, body: { metadata: { finalizers: null } } }, patchOptions('merge'))
      .then(() => storage.deleteVolumeAttachment({ name: va.metadata!.name! }))
      .catch(() => undefined);
  for (const pv of (await core.listPersistentVolume()).items.filter((p) => Object.values(DRIVER).includes(p.spec?.csi?.driver as never)))
    await core
      .patchPersistentVolume({ name: pv.metadata!.name!, body: { metadata: { finalizers: null } } }, patchOptions('merge'))
      .then(() => core.deletePersistentVolume({ name: pv.metadata!.name! }))
      .catch(() => undefined);
  for (const c of Object.values(CLASS)) await storage.deleteStorageClass({ name: c }).catch(() => undefined);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
  await deleteScopedNodes(core, scope.selector);
});

/** A cloud's volumes (its state document, via the CLI). */
async function cloudVolumes(cloud: Cloud): Promise<{ id: string; name: string }[]> {
  return JSON.parse(await localcloud(stateOf(cloud), 'volume', 'list', '-o', 'json')) as { id: string; name: string }[];
}

async function createClaim(name: string, cls: string): Promise<void> {
  await setup!.core.createNamespacedPersistentVolumeClaim({
    namespace: NS,
    body: { metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, resources: { requests: { storage: '1Gi' } } } },
  });
}

const readClaim = (name: string) => setup!.core.readNamespacedPersistentVolumeClaim({ name, namespace: NS });

async function waitBound(name: string): Promise<V1PersistentVolumeClaim> {
  return waitFor(
    async () => {
      const c = await readClaim(name);
      return c.status?.phase === 'Bound' ? c : undefined;
    },
    { what: `claim ${name} bound`, timeoutMs: 90_000, log: setup!.clouds.host.logPath },
  );
}

async function readPv(name: string): Promise<V1PersistentVolume | undefined> {
  return setup!.core.readPersistentVolume({ name }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

/** Events the host's volume controllers wrote about an object. */
async function ourEvents(name: string, namespace?: string): Promise<string[]> {
  const list = namespace
    ? await setup!.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })
    : await setup!.core.listEventForAllNamespaces({ fieldSelector: `involvedObject.name=${name}` });
  return list.items.filter((e) => OUR_COMPONENTS.includes(e.source?.component ?? e.reportingComponent ?? '')).map((e) => `${e.reason}: ${e.message}`);
}

/** DeleteVolume calls in a cloud's journal. */
async function deleteCalls(cloud: Cloud): Promise<string[]> {
  return (await readJournal(stateOf(cloud))).filter((e) => /deletevolume$/i.test(e.method)).map((e) => e.key ?? '');
}

test.serial('each claim is provisioned by the cloud of its provisioner; a claim of a provisioner nobody serves is left alone', async (t) => {
  // The unserved claim first: once the later claims are bound, both providers' queues have been past it.
  await createClaim('nobodys', CLASS.nobody);
  await createClaim('in-east', CLASS.east);
  await createClaim('in-west', CLASS.west);
  const east = await waitBound('in-east');
  const west = await waitBound('in-west');
  const pvOf = async (c: V1PersistentVolumeClaim) => (await readPv(c.spec!.volumeName!))!;
  const [eastPv, westPv] = [await pvOf(east), await pvOf(west)];
  const names = async (cloud: Cloud) => (await cloudVolumes(cloud)).map((v) => v.name).sort();
  const nobody = await readClaim('nobodys');
  t.deepEqual(
    {
      eastPv: { driver: eastPv.spec?.csi?.driver, provisionedBy: eastPv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] },
      westPv: { driver: westPv.spec?.csi?.driver, provisionedBy: westPv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] },
      eastCloud: await names('east'),
      westCloud: await names('west'),
    },
    {
      eastPv: { driver: DRIVER.east, provisionedBy: DRIVER.east },
      westPv: { driver: DRIVER.west, provisionedBy: DRIVER.west },
      eastCloud: [eastPv.metadata!.name!],
      westCloud: [westPv.metadata!.name!],
    },
  );
  t.deepEqual(
    {
      phase: nobody.status?.phase,
      finalizers: notKubes(nobody.metadata?.finalizers),
      createRequest: nobody.metadata?.annotations?.['volume.ccm.dev/create-request'],
      events: await ourEvents('nobodys', NS),
    },
    { phase: 'Pending', finalizers: [], createRequest: undefined, events: [] },
    "the unserved claim has nothing of this host's",
  );
});

test.serial('a released PV is deleted by its own provider only; a released PV of a provisioner nobody serves is never deleted', async (t) => {
  const { core } = setup!;
  // A released PV of the unserved provisioner, as external-provisioner leaves one: finalizer, provisioned-by, reclaim Delete.
  const orphan = `${ID}-nobodys-pv`;
  await core.createPersistentVolume({
    body: {
      metadata: { name: orphan, finalizers: [PV_FINALIZER], annotations: { 'pv.kubernetes.io/provisioned-by': DRIVER.nobody } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: CLASS.nobody,
        csi: { driver: DRIVER.nobody, volumeHandle: 'vol-nobodys' },
        claimRef: { namespace: NS, name: 'gone-claim', uid: '00000000-0000-0000-0000-000000000001' },
      },
    },
  });
  await waitFor(async () => ((await readPv(orphan))?.status?.phase === 'Released' ? true : undefined), {
    what: `${orphan} released by kube-controller-manager`,
    log: setup!.clouds.host.logPath,
  });
  const eastPv = (await readClaim('in-east')).spec!.volumeName!;
  const westPv = (await readClaim('in-west')).spec!.volumeName!;
  const westVolume = (await cloudVolumes('west')).find((v) => v.name === westPv)!.id;
  const eastVolume = (await cloudVolumes('east')).find((v) => v.name === eastPv)!.id;
  await core.deleteNamespacedPersistentVolumeClaim({ name: 'in-east', namespace: NS });
  await waitFor(async () => ((await readPv(eastPv)) === undefined ? true : undefined), {
    what: `${eastPv} deleted by east once released`,
    timeoutMs: 90_000,
    log: setup!.clouds.host.logPath,
  });
  const left = await readPv(orphan);
  t.deepEqual(
    {
      eastCloud: (await cloudVolumes('east')).map((v) => v.id),
      westCloud: (await cloudVolumes('west')).map((v) => v.id),
      eastDeletes: await deleteCalls('east'),
      westDeletes: await deleteCalls('west'),
      westPvPhase: (await readPv(westPv))?.status?.phase,
      orphan: left && { phase: left.status?.phase, finalizers: notKubes(left.metadata?.finalizers), deleting: !!left.metadata?.deletionTimestamp },
      orphanEvents: await ourEvents(orphan),
    },
    {
      eastCloud: [],
      westCloud: [westVolume],
      eastDeletes: [eastVolume],
      westDeletes: [],
      westPvPhase: 'Bound',
      orphan: { phase: 'Released', finalizers: [PV_FINALIZER], deleting: false },
      orphanEvents: [],
    },
  );
});

test.serial('a volume attaches through its own provider to its Nodes only; an attachment nobody serves is left alone', async (t) => {
  const { core, storage } = setup!;
  const westPv = (await readClaim('in-west')).spec!.volumeName!;
  // One Node of each cloud (instances in their own state), initialized as the cloud node controller would have.
  const node = async (cloud: Cloud) => {
    const out = await localcloud(stateOf(cloud), 'instance', 'add', `${ID}-${cloud}-n1`, '--zone', 'local-a', '-o', 'json');
    const id = (JSON.parse(out) as { id: string }[])[0]!.id;
    await core.createNode({
      body: { metadata: { name: `${ID}-${cloud}-n1`, labels: scope.labels }, spec: { providerID: `${cloud}://${id}` } },
    });
    return id;
  };
  const westInstance = await node('west');
  await node('east');
  const va = (name: string, attacher: string, nodeName: string, pv: string): Promise<V1VolumeAttachment> =>
    storage.createVolumeAttachment({ body: { metadata: { name }, spec: { attacher, nodeName, source: { persistentVolumeName: pv } } } });
  // Made by hand (no attach/detach controller manages these Nodes): west's volume on west's Node, on east's Node, and one nobody serves.
  await va(`${ID}-nobodys`, DRIVER.nobody, `${ID}-west-n1`, `${ID}-nobodys-pv`);
  await va(`${ID}-west-on-east`, DRIVER.west, `${ID}-east-n1`, westPv);
  await va(`${ID}-west-on-west`, DRIVER.west, `${ID}-west-n1`, westPv);
  const attached = await waitFor(
    async () => {
      const v = await storage.readVolumeAttachment({ name: `${ID}-west-on-west` });
      return v.status?.attached ? v : undefined;
    },
    { what: `${ID}-west-on-west attached by west`, log: setup!.clouds.host.logPath },
  );
  const refused = await waitFor(
    async () => {
      const v = await storage.readVolumeAttachment({ name: `${ID}-west-on-east` });
      return v.status?.attachError ? v : undefined;
    },
    { what: `${ID}-west-on-east refused by west`, log: setup!.clouds.host.logPath },
  );
  const nobody = await storage.readVolumeAttachment({ name: `${ID}-nobodys` });
  const westVolumes = JSON.parse(await localcloud(stateOf('west'), 'volume', 'list', '-o', 'json')) as {
    name: string;
    attachments: { instanceId: string }[];
  }[];
  t.deepEqual(
    {
      attached: { nodeId: attached.metadata?.annotations?.['csi.alpha.kubernetes.io/node-id'] },
      inWestCloud: westVolumes.find((v) => v.name === westPv)?.attachments.map((a) => a.instanceId),
      refused: { attached: refused.status?.attached, error: refused.status?.attachError?.message, finalizers: refused.metadata?.finalizers ?? [] },
      nobody: {
        attached: nobody.status?.attached ?? false,
        attachError: nobody.status?.attachError,
        finalizers: nobody.metadata?.finalizers ?? [],
        annotations: nobody.metadata?.annotations ?? {},
      },
    },
    {
      attached: { nodeId: `west://${westInstance}` },
      inWestCloud: [westInstance],
      refused: {
        attached: false,
        error: `node ${ID}-east-n1 is provider east's, and volumes of ${DRIVER.west} (provider west) attach only to provider west's Nodes`,
        finalizers: [],
      },
      nobody: { attached: false, attachError: undefined, finalizers: [], annotations: {} },
    },
  );
});

test.serial(
  "the PV label webhook asks the provider of each PV's driver: each PV gets its own cloud's zone; a volume of the other cloud is refused; a PV nobody serves is left as it is",
  async (t) => {
    const { core, clouds } = setup!;
    const zoneOf = { east: `${ID}-east-zone`, west: `${ID}-west-zone` } as const;
    const volumeIn = async (cloud: Cloud) =>
      (
        await clouds.host.providers
          .get(cloud)!
          .cloud.volumes()!
          .createVolume({
            name: `${ID}-hand-${cloud}`,
            requiredBytes: 1024 ** 2,
            limitBytes: 0,
            parameters: {},
            requisite: [{ [ZONE]: zoneOf[cloud], 'topology.kubernetes.io/region': 'local' }],
            preferred: [],
          })
      ).volumeId;
    const handle = { east: await volumeIn('east'), west: await volumeIn('west') };
    // Until the API server calls the webhook (failurePolicy Ignore lets PVs through): a dry run east cannot label is refused.
    await waitFor(
      () =>
        core.createPersistentVolume({ body: handPv(`${ID}-hooked-probe`, DRIVER.east, `${ID}-no-such-volume`), dryRun: 'All' }).then(
          () => false,
          (err: { body?: unknown }) => /cannot label PersistentVolume/.test(String(err.body ?? err)),
        ),
      { what: 'the webhook to refuse a PV of a volume east does not have', log: clouds.host.logPath },
    );
    /** What the webhook made of a PV: its zone label, or the refusal. */
    const outcome = (name: string, driver: string, volume: string) =>
      core.createPersistentVolume({ body: handPv(`${ID}-hooked-${name}`, driver, volume) }).then(
        (pv) => ({ zone: pv.metadata?.labels?.[ZONE] ?? 'none', affinity: pv.spec?.nodeAffinity ? 'set' : 'none' }),
        (err: { body?: unknown }) => ({ refused: /cannot label PersistentVolume/.test(String(err.body ?? err)) }),
      );
    const rows = [
      { what: "east's driver, east's volume", name: 'east', driver: DRIVER.east, volume: handle.east, want: { zone: zoneOf.east, affinity: 'set' } },
      { what: "west's driver, west's volume", name: 'west', driver: DRIVER.west, volume: handle.west, want: { zone: zoneOf.west, affinity: 'set' } },
      // Asked of east only: west has the volume, so an answer from west would label it.
      { what: "east's driver, west's volume", name: 'east-on-west', driver: DRIVER.east, volume: handle.west, want: { refused: true } },
      { what: "west's driver, east's volume", name: 'west-on-east', driver: DRIVER.west, volume: handle.east, want: { refused: true } },
      { what: 'a driver nobody serves', name: 'nobody', driver: DRIVER.nobody, volume: handle.east, want: { zone: 'none', affinity: 'none' } },
    ];
    const got: { what: string; outcome: object }[] = [];
    for (const r of rows) got.push({ what: r.what, outcome: await outcome(r.name, r.driver, r.volume) });
    t.deepEqual(
      got,
      rows.map((r) => ({ what: r.what, outcome: r.want })),
    );
  },
);

test.serial("west SIGKILLed: east's claims keep being provisioned; west's waits and is provisioned by west once it is back", async (t) => {
  const { host } = setup!.clouds;
  const west = host.providers.get('west')!.supervisor;
  setup!.clouds.west.signal('SIGKILL');
  await waitFor(() => west.state !== 'ready', { what: 'west not ready', log: host.logPath });
  await createClaim('west-while-down', CLASS.west);
  await createClaim('east-while-west-down', CLASS.east);
  const east = await waitBound('east-while-west-down');
  const waiting = await readClaim('west-while-down');
  t.not(west.state, 'ready', 'east provisioned while west was still down');
  t.deepEqual(
    { phase: waiting.status?.phase, volumeName: waiting.spec?.volumeName },
    { phase: 'Pending', volumeName: undefined },
    "west's claim waits for west",
  );
  // West comes back (as the kubelet restarts its container): its claim gets its volume from west.
  await setup!.clouds.restartWest();
  await waitFor(() => west.state === 'ready', { what: 'west redialled', timeoutMs: 120_000, log: host.logPath });
  const back = await waitBound('west-while-down');
  const names = async (cloud: Cloud) => (await cloudVolumes(cloud)).map((v) => v.name);
  t.deepEqual(
    { eastHas: (await names('east')).includes(east.spec!.volumeName!), westHas: (await names('west')).includes(back.spec!.volumeName!) },
    { eastHas: true, westHas: true },
  );
  t.false((await names('east')).includes(back.spec!.volumeName!), "west's claim has no volume in east");
});

test('a host whose two volume providers serve the same provisioner does not start, naming both', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-volumes-two-clouds-bad-'));
  // Neither declares a name: both serve their plugin's name, local.ccm.dev; and the flag cannot say which it would replace.
  const providersFile = await writeProvidersFile(dir, [
    execEntry('north', localCloudEnv(dir, 'north')),
    execEntry('south', localCloudEnv(dir, 'south')),
  ]);
  // A host that started anyway (the guard broken) is stopped, so the test fails rather than hangs.
  const err = await t.throwsAsync(startProvidersHost(dir, providersFile, REFUSED_FLAGS).then(async (h) => (await h.stop(), h)));
  t.is(
    err?.message,
    "the volume providers' provisioner names conflict: " +
      'volume provisioner "local.ccm.dev" is served by several providers (north, south); give each provisioner one provider: declare volume_provisioners in each (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)',
  );
  const flagged = await t.throwsAsync(
    startProvidersHost(dir, providersFile, [...REFUSED_FLAGS, '--volume-provisioner-name=x.example.com']).then(async (h) => (await h.stop(), h)),
  );
  t.is(
    flagged?.message,
    "the volume providers' provisioner names conflict: " +
      "--volume-provisioner-name replaces one provider's provisioner names, and 2 providers serve volumes: remove the flag and let each declare volume_provisioners (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS); " +
      'volume provisioner "local.ccm.dev" is served by several providers (north, south); give each provisioner one provider: declare volume_provisioners in each (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)',
  );
});
