/**
 * Test helpers for the volume controllers: the objects a kubelet, a
 * scheduler and a cluster admin would create, against the real API server,
 * and reads of the local cloud's volumes through its CLI.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  CoreV1Api,
  StorageV1Api,
  type AdmissionregistrationV1Api,
  type CoreV1Event,
  type KubeConfig,
  type V1Node,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from '@kubernetes/client-node';
import { patchOptions } from './kube-patch.js';
import { testHostLogPath } from './host.js';
import { localcloud } from './localcloud.js';
import { waitFor } from './wait.js';

/** Label the test hosts select their nodes by (`--node-selector=ccm-test/volumes=<id>`). */
export const NODE_SELECTOR_KEY = 'ccm-test/volumes';

export interface VolumeTestEnv {
  id: string;
  namespace: string;
  driver: string;
  stateDir: string;
  /** The log of startTestHost(dir), named when a wait times out. */
  hostLog: string;
  core: CoreV1Api;
  storage: StorageV1Api;
}

/** A unique id, namespace and provisioner name for one test file. */
export async function volumeTestEnv(kc: KubeConfig, prefix: string, dir: string): Promise<VolumeTestEnv> {
  const id = `${prefix}-${randomBytes(3).toString('hex')}`;
  const core = kc.makeApiClient(CoreV1Api);
  const storage = kc.makeApiClient(StorageV1Api);
  await core.createNamespace({ body: { metadata: { name: id } } });
  return { id, namespace: id, driver: `${id}.volumes.test`, stateDir: join(dir, 'cloud'), hostLog: testHostLogPath(dir), core, storage };
}

/** Host flags scoping a test host to this env. */
export function hostFlags(env: VolumeTestEnv, controllers: string, extra: string[] = []): string[] {
  return [
    `--controllers=${controllers}`,
    `--watch-namespace=${env.namespace}`,
    `--node-selector=${NODE_SELECTOR_KEY}=${env.id}`,
    `--volume-provisioner-name=${env.driver}`,
    '--webhook-secure-port=0',
    ...extra,
  ];
}

/**
 * A local-cloud instance and its Node, registered as an initialized node with
 * controller-managed attach/detach (as kubelet does by default): providerID
 * set, zone/region labels, the selector label.
 */
export async function addNode(env: VolumeTestEnv, name: string, zone = 'local-a'): Promise<V1Node> {
  const out = await localcloud(env.stateDir, 'instance', 'add', name, '--zone', zone, '--region', 'local');
  const providerID = out.trim().split(/\s+/)[1]!;
  return env.core.createNode({
    body: {
      metadata: {
        name,
        labels: {
          [NODE_SELECTOR_KEY]: env.id,
          'kubernetes.io/hostname': name,
          'topology.kubernetes.io/zone': zone,
          'topology.kubernetes.io/region': 'local',
        },
        annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      spec: { providerID },
    },
  });
}

export async function createClass(env: VolumeTestEnv, name: string, extra: Partial<V1StorageClass> = {}): Promise<V1StorageClass> {
  return env.storage.createStorageClass({
    body: { metadata: { name }, provisioner: env.driver, reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate', ...extra },
  });
}

export async function createClaim(
  env: VolumeTestEnv,
  name: string,
  storageClassName: string,
  size = '1Gi',
  annotations?: Record<string, string>,
): Promise<V1PersistentVolumeClaim> {
  return env.core.createNamespacedPersistentVolumeClaim({
    namespace: env.namespace,
    body: {
      metadata: { name, annotations },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: size } } },
    },
  });
}

export async function waitBound(env: VolumeTestEnv, name: string, timeoutMs = 90_000): Promise<V1PersistentVolumeClaim> {
  return waitFor(
    async () => {
      const c = await env.core.readNamespacedPersistentVolumeClaim({ name, namespace: env.namespace });
      return c.status?.phase === 'Bound' ? c : undefined;
    },
    { what: `claim ${name} bound`, timeoutMs, log: env.hostLog },
  );
}

/** A Pod already "scheduled" to `node` (no scheduler runs), using `claim`. */
export async function createPod(env: VolumeTestEnv, name: string, node: string, claim: string): Promise<void> {
  await env.core.createNamespacedPod({
    namespace: env.namespace,
    body: {
      metadata: { name },
      spec: {
        nodeName: node,
        containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
      },
    },
  });
}

/** Deletes a pod at once (no kubelet confirms a graceful delete) and reports, as kubelet would, that the node no longer uses volumes. */
export async function deletePod(env: VolumeTestEnv, name: string, node: string): Promise<void> {
  await env.core.deleteNamespacedPod({ name, namespace: env.namespace, gracePeriodSeconds: 0 });
  await env.core.patchNodeStatus({ name: node, body: { status: { volumesInUse: [] } } }, patchOptions('merge'));
  // Any Node update makes the attach/detach controller re-read volumesInUse.
  await env.core.patchNode({ name: node, body: { metadata: { annotations: { 'ccm-test/unmounted': String(Date.now()) } } } }, patchOptions('merge'));
}

export interface CloudVolumeRecord {
  id: string;
  name: string;
  capacityBytes: number;
  zone: string;
  attachments: { instanceId: string }[];
}

/** The local cloud's volumes (the state document, via the CLI). */
export async function cloudVolumes(env: VolumeTestEnv): Promise<CloudVolumeRecord[]> {
  return JSON.parse(await localcloud(env.stateDir, 'volume', 'list', '-o', 'json')) as CloudVolumeRecord[];
}

export async function eventsFor(env: VolumeTestEnv, name: string, namespace = env.namespace): Promise<CoreV1Event[]> {
  return (await env.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items;
}

/** A PV made by hand (as an operator would for an existing volume), of `driver` for volume `volumeHandle`, reclaim Retain. */
export function handPv(name: string, driver: string, volumeHandle: string): V1PersistentVolume {
  return {
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      csi: { driver, volumeHandle },
    },
  };
}

/**
 * Registers the host's PV label webhook at 127.0.0.1:`port` (caBundle: the
 * host's certificate) as MutatingWebhookConfiguration `name`, for PV
 * CREATE, failurePolicy Ignore, and only for the PVs whose name starts with
 * `pvPrefix`, so the other test files sharing the API server are not affected.
 */
export async function registerPvLabelWebhook(
  admission: AdmissionregistrationV1Api,
  name: string,
  port: number,
  caBundle: string,
  pvPrefix: string,
): Promise<void> {
  await admission.createMutatingWebhookConfiguration({
    body: {
      metadata: { name },
      webhooks: [
        {
          name: 'persistentvolume-label.ccm.test',
          clientConfig: { url: `https://127.0.0.1:${port}/mutate-v1-persistentvolume`, caBundle: Buffer.from(caBundle).toString('base64') },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['persistentvolumes'] }],
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 5,
          matchConditions: [{ name: 'this-test-only', expression: `object.metadata.name.startsWith('${pvPrefix}')` }],
        },
      ],
    },
  });
}
