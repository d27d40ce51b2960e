/**
 * Volume provisioning and attachment at scale against a real control plane
 * (kube-apiserver, etcd and kube-controller-manager's PV binder and
 * attach/detach controllers): N claims created at once, the host as its own
 * process, the local cloud adding latency to every call. Measures seconds
 * until every claim is bound, and (Pods with nodeName created once all are
 * bound) until every VolumeAttachment is attached.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, StorageV1Api } from '@kubernetes/client-node';
import { execa } from 'execa';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { freePorts } from '../controlplane/probe.js';
import { httpsRequest } from '../helpers/https.js';
import { ALLOW_SIMULATION_FLAG, localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { f1, f2, type BenchSection } from './section.js';

const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));
const CREATE_CONCURRENCY = 32;
const DRIVER = 'bench.volumes.test';

export interface VolumeBenchSettings {
  claims: number;
  nodes: number;
  latencyMs: number;
  workers: number;
  qps: number;
  burst: number;
}

export interface VolumeBenchFigures extends VolumeBenchSettings {
  createSeconds: number;
  boundSeconds: number;
  podsSeconds: number;
  attachedSeconds: number;
  attachedFromStartSeconds: number;
  /** Mean seconds per plugin call, by method, from the host's /metrics. */
  rpcMeanSeconds: Record<string, number>;
}

/** Mean duration of each volume RPC the host made, from ccm_plugin_rpc_duration_seconds. */
async function rpcMeans(port: number, token: string): Promise<Record<string, number>> {
  // The admin (system:masters) may read /metrics without a SubjectAccessReview.
  const text = (await httpsRequest(`https://127.0.0.1:${port}/metrics`, { insecure: true, token })).body;
  const sum = new Map<string, number>();
  const count = new Map<string, number>();
  for (const m of text.matchAll(/^ccm_plugin_rpc_duration_seconds_(sum|count)\{[^}]*method="([A-Za-z]+)"[^}]*\} ([0-9.e+-]+)/gm)) {
    const into = m[1] === 'sum' ? sum : count;
    into.set(m[2]!, (into.get(m[2]!) ?? 0) + Number(m[3]));
  }
  const out: Record<string, number> = {};
  for (const [method, n] of count) if (n > 0 && /Volume/.test(method)) out[method] = (sum.get(method) ?? 0) / n;
  return out;
}

async function inParallel<T>(items: T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export async function benchVolumes(cp: ControlPlane, s: VolumeBenchSettings, log: (s: string) => void): Promise<VolumeBenchFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-bench-vol-'));
  const state = join(dir, 'cloud');
  const ns = 'bench-volumes';
  const nodeNames = Array.from({ length: s.nodes }, (_, i) => `bench-vol-node-${i}`);
  const out = await localcloud(state, 'instance', 'add', ...nodeNames);
  const providerIds = out
    .trim()
    .split('\n')
    .map((l) => l.split(/\s+/)[1]!);
  await localcloud(state, 'knobs', 'set', `latencyMs=${s.latencyMs}`);

  const kc = cp.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const storage = kc.makeApiClient(StorageV1Api);
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await storage.createStorageClass({
    body: { metadata: { name: 'bench' }, provisioner: DRIVER, reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate' },
  });
  for (const [i, name] of nodeNames.entries()) {
    await core.createNode({
      body: {
        metadata: {
          name,
          labels: { 'bench-volumes': 'yes', 'topology.kubernetes.io/zone': 'local-a', 'topology.kubernetes.io/region': 'local' },
          annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
        },
        spec: { providerID: providerIds[i] },
      },
    });
  }

  const [port] = await freePorts(1);
  const hostLog = createWriteStream(join(dir, 'host.log'));
  const host = execa(
    process.execPath,
    [
      HOST_MAIN,
      '--cloud-provider=local',
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--cluster-name=bench',
      '--controllers=volume-provisioner,volume-attacher',
      `--volume-provisioner-name=${DRIVER}`,
      `--watch-namespace=${ns}`,
      '--node-selector=bench-volumes=yes',
      '--webhook-secure-port=0',
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
      ALLOW_SIMULATION_FLAG,
      `--kube-api-qps=${s.qps}`,
      `--kube-api-burst=${s.burst}`,
      `--concurrent-volume-syncs=${s.workers}`,
    ],
    { reject: false, stdin: 'ignore', all: true, buffer: false },
  );
  host.all!.pipe(hostLog);
  let started = false;
  host.all!.on('data', (d: Buffer) => {
    if (d.toString().includes('cloud-controller-manager started')) started = true;
  });
  try {
    await waitFor(() => started, { what: 'host started', timeoutMs: 60_000 });
    const claims = Array.from({ length: s.claims }, (_, i) => `c${i}`);
    log(`volumes: creating ${s.claims} claims (cloud latency ${s.latencyMs} ms, workers=${s.workers})`);
    const t0 = Date.now();
    await inParallel(claims, (name) =>
      core.createNamespacedPersistentVolumeClaim({
        namespace: ns,
        body: {
          metadata: { name },
          spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'bench', resources: { requests: { storage: '1Gi' } } },
        },
      }),
    );
    const createSeconds = (Date.now() - t0) / 1000;
    await waitFor(
      async () => {
        const list = await core.listNamespacedPersistentVolumeClaim({ namespace: ns });
        return list.items.filter((c) => c.status?.phase === 'Bound').length === s.claims;
      },
      { what: `${s.claims} claims bound`, timeoutMs: 15 * 60_000, intervalMs: 250 },
    );
    const boundSeconds = (Date.now() - t0) / 1000;
    log(`volumes: all bound after ${f1(boundSeconds)} s; creating ${s.claims} pods on ${s.nodes} nodes`);

    const t1 = Date.now();
    await inParallel(
      claims.map((c, i) => [c, i] as const),
      ([claim, i]) =>
        core.createNamespacedPod({
          namespace: ns,
          body: {
            metadata: { name: `p-${claim}` },
            spec: {
              nodeName: nodeNames[i % s.nodes],
              containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'd', mountPath: '/d' }] }],
              volumes: [{ name: 'd', persistentVolumeClaim: { claimName: claim } }],
            },
          },
        }),
    );
    const podsSeconds = (Date.now() - t1) / 1000;
    await waitFor(
      async () => {
        const list = await storage.listVolumeAttachment();
        return list.items.filter((va) => va.spec.attacher === DRIVER && va.status?.attached).length === s.claims;
      },
      { what: `${s.claims} attachments attached`, timeoutMs: 15 * 60_000, intervalMs: 250 },
    );
    const attachedSeconds = (Date.now() - t1) / 1000;
    log(`volumes: all attached ${f1(attachedSeconds)} s after the pods were created`);
    const attachedFromStartSeconds = (Date.now() - t0) / 1000;
    return {
      ...s,
      createSeconds,
      boundSeconds,
      podsSeconds,
      attachedSeconds,
      attachedFromStartSeconds,
      rpcMeanSeconds: await rpcMeans(port!, cp.token),
    };
  } finally {
    host.kill('SIGTERM');
    await host;
  }
}

const SETTINGS: VolumeBenchSettings = { claims: 200, nodes: 10, latencyMs: 100, workers: 20, qps: 100, burst: 200 };

export const volumesSection: BenchSection = {
  name: 'volumes',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const loadBefore = loadavg()[0]!;
    const r = await benchVolumes(cp, SETTINGS, ctx.log);
    const loadAfter = loadavg()[0]!;
    return `## Volumes: provisioning and attaching against a real control plane

${r.claims} claims (1Gi, a StorageClass of the host's provisioner, \`Immediate\` binding) created at once
(${CREATE_CONCURRENCY} concurrent creates); the local cloud adds ${r.latencyMs} ms to every call; the host runs as its own
process with \`--controllers=volume-provisioner,volume-attacher --concurrent-volume-syncs=${r.workers}
--kube-api-qps=${r.qps} --kube-api-burst=${r.burst}\`. kube-controller-manager (same control plane, \`--kube-api-qps=100\`)
binds the claims and, for the ${r.claims} Pods (spec.nodeName set, ${r.nodes} nodes annotated for controller-managed
attach/detach) created once every claim was bound, creates the VolumeAttachments our attacher publishes.
No upstream column: the upstream CCM has no volume controllers; upstream provisions and attaches through the CSI
sidecars (external-provisioner, external-attacher) beside a cloud's CSI driver, and no CSI driver for the local cloud exists.

| figure | seconds | target |
|---|---|---|
| creating the claims | ${f1(r.createSeconds)} | |
| first claim created → all ${r.claims} bound | **${f1(r.boundSeconds)}** | ≤ 30 |
| creating the pods | ${f1(r.podsSeconds)} | |
| first pod created → all ${r.claims} VolumeAttachments attached | **${f1(r.attachedSeconds)}** | ≤ 30 |
| first claim created → all attached | ${f1(r.attachedFromStartSeconds)} | |

Machine load (1-minute load average, ${cpus().length} cores): ${f1(loadBefore)} when the run started, ${f1(loadAfter)} when
it ended${loadBefore > cpus().length ? ' — the machine was busy with other work, so these figures are pessimistic' : ''}.

Mean plugin call time seen by the host (100 ms of it is the injected latency; the rest is the local
cloud serializing its writes through one state-file lock):
${Object.entries(r.rpcMeanSeconds)
  .map(([m, sec]) => `${m} ${f2(sec)} s`)
  .join(', ')}.

Each claim costs one CreateVolume (plus the latency), one PV create and two claim patches (the provisioning
finalizer and request annotation, added before the create and removed once the PV exists); each attachment
one finalizer patch, one ControllerPublishVolume and one status patch.
`;
  },
};
