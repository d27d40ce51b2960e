/**
 * Runs a rendered Deployment's pod (deploy/, rendered by the real kustomize)
 * as real processes against the shared control plane: one replica, each
 * container a process running its image's entrypoint with exactly the
 * container's args and env, except for these mappings:
 *
 * | In the pod                                   | Here                                              | Why |
 * |----------------------------------------------|---------------------------------------------------|-----|
 * | volume mounted at a path (args, env values)  | `<dir>/volumes/<volume name>`                     | no mounts; each volume is a directory |
 * | Secret volume                                | a file per key the test gives, mode defaultMode; none when the test has no Secret | |
 * | `/tmp` mount as the temp directory           | env TMPDIR=`<dir>/volumes/tmp`                    | os.tmpdir() is /tmp in the container |
 * | the image's files                            | the image's layout (test/helpers/image-layout.ts, or the bridged provider's binary) | no Docker here |
 * | a built image (`rootfs`, test/helpers/images.ts) | its entrypoint, user, working directory and env, chrooted into its root filesystem with `<dir>` bind-mounted at the same path; `<dir>` owned by the image's user | the kubelet's volumes, as the pod's user may read them |
 * | files the image carries (`/opt/ccm/plugins`) | `<dir>/image/<container>/opt/ccm/plugins`, linking into it | as the Dockerfile's exec stage |
 * | in-cluster config (token, CA, service host)  | env KUBECONFIG: a token of the pod's ServiceAccount | not in a pod |
 * | a mount at the token path (/var/run/secrets/kubernetes.io/serviceaccount), which keeps the pod's token out of that container (ServiceAccount admission) | an emptyDir: no KUBECONFIG; a Secret of type kubernetes.io/service-account-token the rendering ships: KUBECONFIG with a token of the ServiceAccount it names | the same identity; TokenRequest, as this control plane runs no token controller to fill the Secret |
 * | a probe's or `--*port` flag's port           | a free port                                       | hostNetwork: ports are the machine's, shared by every test |
 * | what the node gives a pod (e.g. the cloud's instance credentials) | env the test names per container (`extraEnv`) | not on a cloud instance |
 * | the kubelet keeping a container other than the host running, and its exec probes (startup, liveness, readiness) | test/helpers/kubelet-container.ts: restarts on exit and on a failed liveness or startup probe, `ready`, `restarts`, `events`; the probe command runs in the image (a built image: chrooted; a layout: its `paths` and `node` mapped) with the container's env | the host is a test host process, not restarted; its httpGet probes are the test's to poll (`probe` below) |
 *
 * and these flags appended to the host's arguments, so it touches nothing of
 * other tests on the shared API server (as every test host, CONTRIBUTING.md "How the suite is laid out"):
 * `--node-selector` (nodes), `--watch-namespace` (Services, claims),
 * `--volume-provisioner-name` (PersistentVolumes and VolumeAttachments of the
 * default provisioner), `--webhook-secure-port` (a free port) and
 * `--leader-elect-resource-namespace` (the test's namespace, with copies of
 * the rendered Roles and RoleBindings there, so the Lease is the test's own).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig, KubernetesObject, V1Container, V1Deployment, V1Probe, V1Volume } from '@kubernetes/client-node';
import { ManagedProcess } from '../controlplane/managed-process.js';
import { freePorts, get } from '../controlplane/probe.js';
import { startHostProcess, type HostProcess } from './host-process.js';
import { KubeletContainer } from './kubelet-container.js';
import { BRIDGED_IMAGE_ENTRYPOINT } from './providers.js';
import { tokenCredentialId } from './audit.js';
import { rootfsCommand, type ImageRootfs } from './images.js';
import { applyObjects, serviceAccountKubeConfig } from './service-account.js';

/** What an image runs, by image name without the tag: a built image's root filesystem, or a layout on this machine. */
export type ContainerImage = BuiltImage | LocalImage;

/** A built image, run from its root filesystem (see the table). */
export interface BuiltImage {
  rootfs: ImageRootfs;
  /** Whether this is a host image (started as a host process). */
  host: boolean;
}

/** The image's files as laid out on this machine. */
export interface LocalImage {
  rootfs?: undefined;
  /** The ENTRYPOINT: a script run by node (`node: true`), or an executable. */
  entrypoint: string;
  node: boolean;
  /** Files the image carries outside its application directory, each a link to a file of the layout. */
  files?: Record<string, string>;
  /**
   * Paths of the image's own files (e.g. `/app`) by their local copies, for
   * commands that name them (exec probes); `node` is this Node. Default for a
   * binary (`node: false`, a bridged provider's image): its ENTRYPOINT
   * (BRIDGED_IMAGE_ENTRYPOINT) is `entrypoint`.
   */
  paths?: Record<string, string>;
  /** Whether this is a host image (started as a host process). */
  host: boolean;
}

export interface PodOptions {
  images: Record<string, ContainerImage>;
  /** The test's namespace: --watch-namespace, and the Lease's (with copies of the rendered Roles and RoleBindings). */
  namespace: string;
  /** --node-selector of the host. */
  nodeSelector: string;
  /** --volume-provisioner-name of the host. */
  provisionerName: string;
  /** The files of the pod's Secret volumes, by key; undefined: the Secret does not exist. */
  secretFiles?: Record<string, string>;
  /** Environment the test adds to a container (see the table), by container name. */
  extraEnv?: Record<string, Record<string, string>>;
}

/** A running container other than the host, kept running and probed as the kubelet would (see the table). */
export type ContainerProcess = KubeletContainer;

/** The Kubernetes identity a container runs with (see the table), or undefined: none. */
export interface ContainerIdentity {
  serviceAccount: { namespace: string; name: string };
  /** The API server's credential id of its token (test/helpers/audit.ts), to find its requests in the audit log. */
  credentialId: string;
}

export interface Pod {
  host: HostProcess;
  /** Each container's identity, by container name. */
  identities: Map<string, ContainerIdentity | undefined>;
  others: ContainerProcess[];
  /** Local path of each volume, by volume name. */
  volumes: Map<string, string>;
  /** Local port of each port the pod names. */
  ports: Map<number, number>;
  deployment: V1Deployment;
}

const run = promisify(execFile);

/** Replaces container paths (at the start of a value, after `=` or `unix://`) by local ones, in one pass so a mapped path is never mapped again. */
function pathMapper(map: Map<string, string>): (text: string) => string {
  if (map.size === 0) return (text) => text;
  const escaped = [...map.keys()].sort((a, b) => b.length - a.length).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`(?<=^|=|unix://)(${escaped.join('|')})(?=/|$)`, 'g');
  return (text) => text.replace(re, (p) => map.get(p)!);
}

/** The pod's volumes as directories under `dir`; a Secret volume gets `secretFiles` when given. */
async function mapVolumes(dir: string, volumes: V1Volume[], secretFiles: Record<string, string> | undefined): Promise<Map<string, string>> {
  const byName = new Map<string, string>();
  for (const v of volumes) {
    const local = join(dir, 'volumes', v.name);
    await mkdir(local, { recursive: true, mode: 0o700 });
    byName.set(v.name, local);
    if (v.secret && secretFiles) {
      for (const [key, content] of Object.entries(secretFiles)) {
        const file = join(local, key);
        await writeFile(file, content);
        await chmod(file, v.secret.defaultMode ?? 0o644);
      }
    }
  }
  return byName;
}

/** Port mapping: every port a probe or `--*port=N` flag names gets a free one; -1 is the webhook port the runner adds. */
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
  out.set(-1, free[ports.size]!);
  return out;
}

/** Applies the rendering's RBAC (and namespaces) as rendered, plus its Roles and RoleBindings copied into `namespace` (for the Lease there). */
async function applyRbac(admin: KubeConfig, objects: KubernetesObject[], namespace: string): Promise<void> {
  const kinds = ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
  const rbac = objects.filter((o) => kinds.includes(o.kind!));
  const copies = rbac
    .filter((o) => (o.kind === 'Role' || o.kind === 'RoleBinding') && o.metadata?.namespace === 'kube-system')
    .map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }));
  await applyObjects(admin, [...rbac, ...copies]);
}

/** Runs the rendered pod's containers as processes (see the table at the top); each is stopped at the test's teardown. */
export async function runPod(
  t: { teardown(fn: () => Promise<void>): void },
  objects: KubernetesObject[],
  admin: KubeConfig,
  opts: PodOptions,
): Promise<Pod> {
  const deployment = objects.find((o): o is V1Deployment => o.kind === 'Deployment')!;
  const spec = deployment.spec!.template.spec!;
  await applyRbac(admin, objects, opts.namespace);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-pod-'));
  const namespace = deployment.metadata!.namespace!;
  const identities = new Map<string, ContainerIdentity | undefined>();
  const kubeconfigs = new Map<string, string | undefined>();
  for (const c of spec.containers) {
    const sa = containerServiceAccount(c, spec, objects, namespace);
    if (!sa) continue;
    const kc = await serviceAccountKubeConfig(admin, sa);
    const file = join(dir, `kubeconfig-${c.name}`);
    await writeFile(file, kc.exportConfig(), { mode: 0o600 });
    kubeconfigs.set(c.name, file);
    identities.set(c.name, { serviceAccount: sa, credentialId: tokenCredentialId(kc.getCurrentUser()!.token!) });
  }
  const volumes = await mapVolumes(
    dir,
    (spec.volumes ?? []).filter((v) => !v.secret || !tokenSecret(objects, v.secret.secretName)),
    opts.secretFiles,
  );
  const ports = await mapPorts(spec.containers);

  const processes = spec.containers.map((container) => {
    const image = opts.images[container.image!.replace(/:[^/:]+$/, '')];
    if (!image) throw new Error(`no entrypoint known for image ${container.image}: add it to the test's images as its Dockerfile builds it`);
    const paths = new Map<string, string>();
    for (const m of container.volumeMounts ?? []) if (m.mountPath !== TOKEN_PATH) paths.set(m.mountPath, volumes.get(m.name)!);
    return { container, image, paths };
  });
  // A built image's process runs as the image's user, which must read what the kubelet would give it.
  const users = new Set(processes.flatMap(({ image }) => (image.rootfs ? [image.rootfs.user] : [])));
  if (users.size > 1) throw new Error(`the images run as different users (${[...users].join(', ')}): not supported here`);
  for (const user of users) await run('chown', ['-R', user, dir]);
  const others: ContainerProcess[] = [];
  let host: HostProcess | undefined;
  // Other containers first: the host dials a sidecar's socket as soon as it starts.
  for (const { container, image, paths } of [...processes].sort((a, b) => Number(a.image.host) - Number(b.image.host))) {
    for (const [file, target] of Object.entries((!image.rootfs && image.files) || {})) {
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
    const env: NodeJS.ProcessEnv = image.rootfs ? { HOME: '/', ...image.rootfs.env } : { PATH: process.env.PATH, HOME: process.env.HOME };
    if (kubeconfigs.get(container.name)) env.KUBECONFIG = kubeconfigs.get(container.name);
    if (paths.has('/tmp')) env.TMPDIR = paths.get('/tmp');
    for (const e of container.env ?? []) env[e.name] = mapPath(e.value ?? '');
    Object.assign(env, opts.extraEnv?.[container.name]);
    const logPath = join(dir, `${container.name}.log`);
    if (image.host) {
      const scoped = [
        `--node-selector=${opts.nodeSelector}`,
        `--watch-namespace=${opts.namespace}`,
        `--volume-provisioner-name=${opts.provisionerName}`,
        `--webhook-secure-port=${ports.get(-1)}`,
        `--leader-elect-resource-namespace=${opts.namespace}`,
      ];
      const { rootfs } = image;
      const main = rootfs ? (a: string[]) => rootfsCommand(rootfs, [dir], [...rootfs.entrypoint, ...a]) : image.entrypoint;
      host = await startHostProcess([...args, ...scoped], logPath, env, main);
      const h = host;
      t.teardown(async () => void (await h.stop()));
    } else {
      const [file, argv] = image.rootfs
        ? rootfsCommand(image.rootfs, [dir], [...image.rootfs.entrypoint, ...args])
        : image.node
          ? [process.execPath, [image.entrypoint, ...args]]
          : [image.entrypoint, args];
      // An exec probe's command runs in the image: chrooted into a built one, or with the layout's paths (and this Node) for one assembled here.
      const { rootfs } = image;
      const imagePaths = image.rootfs ? {} : (image.paths ?? (image.node ? {} : { [BRIDGED_IMAGE_ENTRYPOINT]: image.entrypoint }));
      const inImage = pathMapper(new Map([...paths, ...Object.entries(imagePaths)]));
      const execCommand = (command: string[]): [string, string[]] => {
        const mapped = command.map(mapPath);
        if (rootfs) return rootfsCommand(rootfs, [dir], mapped);
        const [bin, ...rest] = command.map(inImage);
        return [bin === 'node' ? process.execPath : bin!, rest];
      };
      const c = new KubeletContainer({
        name: container.name,
        logPath,
        eventsPath: join(dir, `${container.name}.events.log`),
        spawn: () => ManagedProcess.spawn(container.name, file, argv, logPath, { env, keepAlive: true }),
        execCommand,
        env,
        startupProbe: container.startupProbe,
        livenessProbe: container.livenessProbe,
        readinessProbe: container.readinessProbe,
        terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds,
      });
      others.push(c);
      t.teardown(async () => void (await c.stop()));
    }
  }
  if (!host) throw new Error('the pod has no host container');
  return { host, identities, others, volumes, ports, deployment };
}

/** Where a container's in-cluster client reads its token (kubelet mounts the pod's there unless the container mounts something else). */
export const TOKEN_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The ServiceAccount token Secret named `name` among the rendered objects, if it is one. */
function tokenSecret(objects: KubernetesObject[], name: string | undefined): (KubernetesObject & { type?: string }) | undefined {
  return objects.find(
    (o): o is KubernetesObject & { type?: string } =>
      o.kind === 'Secret' && o.metadata?.name === name && (o as { type?: string }).type === 'kubernetes.io/service-account-token',
  );
}

/** The ServiceAccount whose token `c` finds at TOKEN_PATH, as the ServiceAccount admission plugin and kubelet would arrange it; undefined: none. */
function containerServiceAccount(
  c: V1Container,
  spec: NonNullable<NonNullable<V1Deployment['spec']>['template']['spec']>,
  objects: KubernetesObject[],
  namespace: string,
): { namespace: string; name: string } | undefined {
  const mount = (c.volumeMounts ?? []).find((m) => m.mountPath === TOKEN_PATH);
  if (!mount) return spec.automountServiceAccountToken === false ? undefined : { namespace, name: spec.serviceAccountName ?? 'default' };
  const volume = (spec.volumes ?? []).find((v) => v.name === mount.name);
  if (volume?.emptyDir) return undefined;
  const secret = tokenSecret(objects, volume?.secret?.secretName);
  const name = secret?.metadata?.annotations?.['kubernetes.io/service-account.name'];
  if (!name)
    throw new Error(
      `container ${c.name} mounts ${mount.name} at ${TOKEN_PATH}: neither an emptyDir nor a ServiceAccount token Secret the rendering ships`,
    );
  return { namespace: secret.metadata?.namespace ?? namespace, name };
}

/** The kubelet's view of an httpGet probe: 200..399 is a success. */
export async function probe(p: V1Probe | undefined, ports: Map<number, number>): Promise<boolean> {
  const g = p?.httpGet;
  if (!g) throw new Error('the container has no httpGet probe');
  const scheme = (g.scheme ?? 'HTTP').toLowerCase();
  const r = await get(`${scheme}://127.0.0.1:${ports.get(Number(g.port))}${g.path ?? '/'}`, { insecure: true }).catch(() => undefined);
  return r !== undefined && r.status >= 200 && r.status < 400;
}
