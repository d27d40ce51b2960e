/**
 * The shipped defaults start: each rendering of deploy/ (the real
 * kustomize, as `kubectl apply -k`) is run as its pod would run, with real
 * processes against the shared control plane, and must become ready
 * (readinessProbe) and initialize a node. The RBAC and ServiceAccount come
 * from the rendered output, and the host authenticates with a token of the
 * ServiceAccount the Deployment names.
 *
 * One replica of the pod runs (the standby of the second replica is covered
 * by test/integration/ha/). Each container becomes a process running its
 * image's entrypoint (deploy/Dockerfile, IMAGES below) with exactly the
 * container's args and env, except for these mappings:
 *
 * | In the pod                                   | Here                                              | Why |
 * |----------------------------------------------|---------------------------------------------------|-----|
 * | volume mounted at a path (args, env values)  | `<dir>/<volume name>`                             | no mounts; each volume is a directory |
 * | Secret volume                                | a file per key, mode defaultMode; absent when the case has no Secret | |
 * | `/tmp` mount as the temp directory           | env TMPDIR=`<dir>/tmp`                            | os.tmpdir() is /tmp in the container |
 * | the image's `/app`                           | the image's layout (test/helpers/image-layout.ts) | no Docker here: its dist/ compiled with tsconfig.image.json, production dependencies only |
 * | files the image carries (`/opt/ccm/plugins`) | `<dir>/image/opt/ccm/plugins`, linking into it    | as the Dockerfile's exec stage |
 * | in-cluster config (token, CA, service host)  | env KUBECONFIG: the ServiceAccount's token        | not in a pod |
 * | a probe's or `--*port` flag's port           | a free port                                       | hostNetwork: ports are the machine's, shared by every test |
 *
 * and these flags appended to the host's arguments, so it touches nothing of
 * other tests on the shared API server (as every test host, README "test/"):
 * `--node-selector` (nodes), `--watch-namespace` (Services, claims),
 * `--volume-provisioner-name` (PersistentVolumes and VolumeAttachments of the
 * default provisioner), `--webhook-secure-port` (a free port) and
 * `--leader-elect-resource-namespace` (the test's namespace, with copies of
 * the rendered Roles and RoleBindings there, so the Lease is the test's own).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1Container,
  type V1Deployment,
  type V1Node,
  type V1Probe,
  type V1Volume,
} from '@kubernetes/client-node';
import { ManagedProcess } from '../../controlplane/managed-process.js';
import { freePorts, get } from '../../controlplane/probe.js';
import { scrapeMetrics } from '../../helpers/scraper.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startHostProcess, type HostProcess } from '../../helpers/host-process.js';
import { localcloud } from '../../helpers/localcloud.js';
import { renderDeploy, renderingName, type Rendering } from '../../helpers/manifests.js';
import { buildImageLayout, type ImageLayout } from '../../helpers/image-layout.js';
import { deleteScopedNodes, testScope } from '../../helpers/nodes.js';
import { applyObjects, serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
/** The message the host logs when --cloud-config-optional finds no file. */
const NO_CLOUD_CONFIG = 'the --cloud-config file does not exist';

interface Image {
  /** The ENTRYPOINT after `node`. */
  entrypoint: string;
  /** Files the image carries outside /app, each a link to a file of the layout. */
  files?: Record<string, string>;
  /** Whether this is a host image (started as a host process). */
  host: boolean;
}

/** What deploy/Dockerfile builds, by image name without the tag, in the image layout built before the tests. */
function imagesOf(layout: ImageLayout): Record<string, Image> {
  return {
    'ghcr.io/grpc-ccm/cloud-controller-manager': { entrypoint: layout.hostMain, host: true },
    'ghcr.io/grpc-ccm/cloud-controller-manager-local': {
      entrypoint: layout.hostMain,
      host: true,
      files: { '/opt/ccm/plugins/ccm-provider-local.js': layout.localPlugin },
    },
    'ghcr.io/grpc-ccm/ccm-provider-local': { entrypoint: layout.localPlugin, host: false },
  };
}
let IMAGES: Record<string, Image> = {};

interface Case extends Rendering {
  /** Whether the optional cloud config Secret exists. */
  secret: boolean;
}

/** Every rendering, each flavour with and without the Secret. */
const CASES: Case[] = [
  { overlay: 'exec', perController: false, secret: false },
  { overlay: 'exec', perController: true, secret: true },
  { overlay: 'sidecar', perController: false, secret: true },
  { overlay: 'sidecar', perController: true, secret: false },
];

const scope = testScope('deployrun');
const NS = `deployrun-${randomBytes(3).toString('hex')}`;

test.before(async () => {
  IMAGES = imagesOf(await buildImageLayout(await mkdtemp(join(tmpdir(), 'ccm-image-'))));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});

test.after.always(async () => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await deleteScopedNodes(core, scope.selector);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
});

/** Replaces container paths (at the start of a value, after `=` or `unix://`) by local ones, in one pass so a mapped path is never mapped again. */
function pathMapper(map: Map<string, string>): (text: string) => string {
  if (map.size === 0) return (text) => text;
  const escaped = [...map.keys()].sort((a, b) => b.length - a.length).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`(?<=^|=|unix://)(${escaped.join('|')})(?=/|$)`, 'g');
  return (text) => text.replace(re, (p) => map.get(p)!);
}

/** The pod's volumes as directories under `dir`; a Secret volume gets its files only when `secret` is set. */
async function mapVolumes(dir: string, volumes: V1Volume[], secret: boolean): Promise<Map<string, string>> {
  const byName = new Map<string, string>();
  for (const v of volumes) {
    const local = join(dir, 'volumes', v.name);
    await mkdir(local, { recursive: true, mode: 0o700 });
    byName.set(v.name, local);
    if (v.secret && secret) {
      // The Secret the manifest expects: key cloud-config.json (deploy/base/deployment.yaml).
      const file = join(local, 'cloud-config.json');
      await writeFile(file, JSON.stringify({ zone: 'deploy-zone', region: 'deploy-region' }));
      await chmod(file, v.secret.defaultMode ?? 0o644);
    }
  }
  return byName;
}

/** A running container: its process and log. */
interface ContainerProcess {
  name: string;
  logPath: string;
  stop(): Promise<number | string>;
}

/** Port mapping: every port a probe or `--*port=N` flag names gets a free one. */
async function mapPorts(containers: V1Container[]): Promise<Map<number, number>> {
  const ports = new Set<number>();
  for (const c of containers) {
    for (const p of [c.livenessProbe, c.readinessProbe]) if (typeof p?.httpGet?.port === 'number') ports.add(p.httpGet.port);
    for (const a of c.args ?? []) {
      const m = /^--[a-z-]*port=(\d+)$/.exec(a);
      if (m) ports.add(Number(m[1]));
    }
  }
  const free = await freePorts(ports.size + 1);
  const out = new Map([...ports].map((p, i) => [p, free[i]!] as const));
  out.set(-1, free[ports.size]!); // the webhook port the test adds
  return out;
}

interface Pod {
  host: HostProcess;
  others: ContainerProcess[];
  /** Local path of each volume, by volume name. */
  volumes: Map<string, string>;
  ports: Map<number, number>;
  deployment: V1Deployment;
}

/** Applies the rendering's RBAC as rendered, plus its Roles and RoleBindings copied into the test's namespace (for the Lease there). */
async function applyRbac(admin: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const rbac = objects.filter((o) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind!));
  const copies = rbac.filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding').map((o) => ({ ...o, metadata: { ...o.metadata, namespace: NS } }));
  await applyObjects(admin, [...rbac, ...copies]);
}

/** Runs the rendered pod's containers as processes (see the table at the top). */
async function runPod(t: { teardown(fn: () => Promise<void>): void }, c: Case, admin: KubeConfig): Promise<Pod> {
  const objects = await renderDeploy(c);
  const deployment = objects.find((o): o is V1Deployment => o.kind === 'Deployment')!;
  const spec = deployment.spec!.template.spec!;
  await applyRbac(admin, objects);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-deployrun-'));
  const sa = { namespace: deployment.metadata!.namespace!, name: spec.serviceAccountName! };
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, (await serviceAccountKubeConfig(admin, sa)).exportConfig(), { mode: 0o600 });
  const volumes = await mapVolumes(dir, spec.volumes ?? [], c.secret);
  const ports = await mapPorts(spec.containers);

  const processes = spec.containers.map((container) => {
    const image = IMAGES[container.image!.replace(/:[^/:]+$/, '')];
    if (!image) throw new Error(`no entrypoint known for image ${container.image}: add it to IMAGES as deploy/Dockerfile builds it`);
    const paths = new Map<string, string>();
    for (const m of container.volumeMounts ?? []) paths.set(m.mountPath, volumes.get(m.name)!);
    return { container, image, paths };
  });
  const others: ContainerProcess[] = [];
  let host: HostProcess | undefined;
  // Other containers first: the host dials a sidecar's socket as soon as it starts.
  for (const { container, image, paths } of [...processes].sort((a, b) => Number(a.image.host) - Number(b.image.host))) {
    for (const [file, target] of Object.entries(image.files ?? {})) {
      const local = join(dir, 'image', container.name, file);
      await mkdir(join(local, '..'), { recursive: true });
      await symlink(target, local);
      paths.set(file.slice(0, file.lastIndexOf('/')), join(local, '..'));
    }
    const mapPath = pathMapper(paths);
    const args = (container.args ?? []).map((a) => {
      const port = /^(--[a-z-]*port)=(\d+)$/.exec(a);
      return port ? `${port[1]}=${ports.get(Number(port[2]))}` : mapPath(a);
    });
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig };
    if (paths.has('/tmp')) env.TMPDIR = paths.get('/tmp');
    for (const e of container.env ?? []) env[e.name] = mapPath(e.value ?? '');
    const logPath = join(dir, `${container.name}.log`);
    if (image.host) {
      const scoped = [
        `--node-selector=${scope.selector}`,
        `--watch-namespace=${NS}`,
        `--volume-provisioner-name=${scope.prefix}.deploy.test`,
        `--webhook-secure-port=${ports.get(-1)}`,
        `--leader-elect-resource-namespace=${NS}`,
      ];
      host = await startHostProcess([...args, ...scoped], logPath, env, image.entrypoint);
      const h = host;
      t.teardown(async () => void (await h.stop()));
    } else {
      const p = ManagedProcess.spawn(container.name, process.execPath, [image.entrypoint, ...args], logPath, { env, keepAlive: true });
      const stop = async () => {
        p.signal('SIGTERM');
        return p.exited;
      };
      others.push({ name: container.name, logPath, stop });
      t.teardown(async () => void (await stop()));
    }
  }
  return { host: host!, others, volumes, ports, deployment };
}

/** The kubelet's view of an httpGet probe: 200..399 is a success. */
async function probe(p: V1Probe | undefined, ports: Map<number, number>): Promise<boolean> {
  const g = p?.httpGet;
  if (!g) throw new Error('the container has no httpGet probe');
  const scheme = (g.scheme ?? 'HTTP').toLowerCase();
  const r = await get(`${scheme}://127.0.0.1:${ports.get(Number(g.port))}${g.path ?? '/'}`, { insecure: true }).catch(() => undefined);
  return r !== undefined && r.status >= 200 && r.status < 400;
}

for (const c of CASES) {
  const name = `${renderingName(c)}, ${c.secret ? 'with' : 'without'} the cloud config Secret`;
  test.serial(`${name}: the host starts, becomes ready and initializes a node`, async (t) => {
    const admin = await testKubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    const pod = await runPod(t, c, admin);
    const hostContainer = pod.deployment.spec!.template.spec!.containers[0]!;
    const log = pod.host.logPath;
    await waitFor(() => probe(hostContainer.readinessProbe, pod.ports), { what: `${name}: readinessProbe`, timeoutMs: 90_000, log });
    t.true(await probe(hostContainer.livenessProbe, pod.ports), 'livenessProbe');
    t.is((await readFile(log, 'utf8')).includes(NO_CLOUD_CONFIG), !c.secret, 'an empty cloud config only without the Secret');

    // The provider's state is the cloud-state volume (exec: --plugin-env; sidecar: the provider's env).
    const nodeName = `${scope.prefix}-${c.overlay}${c.perController ? '-pc' : ''}`;
    await localcloud(pod.volumes.get('cloud-state')!, 'instance', 'add', nodeName, '--zone', 'deploy-a', '--address', '127.0.4.1');
    await core.createNode({
      body: {
        metadata: { name: nodeName, labels: { ...scope.labels, 'kubernetes.io/hostname': nodeName } },
        spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      },
    });
    const node = await waitFor(
      async () => {
        const n: V1Node = await core.readNode({ name: nodeName });
        return (n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED) ? undefined : n;
      },
      { what: `${name}: node ${nodeName} initialized`, timeoutMs: 90_000, log },
    );
    t.true(node.spec?.providerID?.startsWith('local://'), node.spec?.providerID);
    t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'deploy-a');

    // The rendered RBAC was enough: not one 403 (per identity, in the host's own metrics).
    const metricsPort = hostContainer.ports!.find((p) => p.name === 'metrics')!.containerPort;
    const metrics = await scrapeMetrics(pod.ports.get(metricsPort)!);
    t.deepEqual(
      metrics.split('\n').filter((l) => l.startsWith('rest_client_requests_total') && l.includes('code="403"')),
      [],
    );
    t.is(await pod.host.stop(), 0, 'the host stops cleanly');
    for (const o of pod.others) t.is(await o.stop(), 0, `${o.name} stops cleanly`);
  });
}
