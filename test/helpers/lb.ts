/** Helpers for load balancer tests against the real API server and the local cloud. */
import type { CoreV1Api, CoreV1Event, V1Node, V1Service } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { patchNodeStatus, patchService } from './kube-patch.js';
import { localcloud } from './localcloud.js';
import { waitFor } from './wait.js';

export const LB_FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';

/** Creates the namespace if it does not exist yet. */
export async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } }).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}

/** A ready, initialized Node with `labels` and an InternalIP (status written like a kubelet would). */
export async function createBackendNode(core: CoreV1Api, name: string, ip: string, labels: Record<string, string>): Promise<V1Node> {
  const addresses = [
    { type: 'InternalIP', address: ip },
    { type: 'Hostname', address: name },
  ];
  // Registered with its addresses in one write, as a kubelet does.
  const node = await core.createNode({ body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } }, status: { addresses } } });
  if ((node.status?.addresses ?? []).some((a) => a.type === 'InternalIP')) return node;
  return patchNodeStatus(core, name, { status: { addresses } }, 'merge');
}

/** The Service as it is now, or undefined when it does not exist. */
export async function readService(core: CoreV1Api, namespace: string, name: string): Promise<V1Service | undefined> {
  return core.readNamespacedService({ name, namespace }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

/** The first ingress IP of a Service's load balancer status. */
export const ingressIp = (s: V1Service | undefined): string | undefined => s?.status?.loadBalancer?.ingress?.[0]?.ip;

/** Waits for an ingress IP on the Service and returns the Service as it is then; `log` is the host's, named on a timeout. */
export async function waitIngress(
  core: CoreV1Api,
  namespace: string,
  name: string,
  opts: { timeoutMs?: number; log?: string } = {},
): Promise<V1Service> {
  return waitFor(
    async () => {
      const s = await readService(core, namespace, name);
      return ingressIp(s) ? s : undefined;
    },
    { what: `ingress on ${namespace}/${name}`, ...opts },
  );
}

/** A LoadBalancer Service with one TCP port (or the given ports). */
export function lbService(
  name: string,
  namespace: string,
  ports: { name?: string; port: number; protocol?: string }[] = [{ port: 80 }],
  extra: Partial<V1Service['spec']> = {},
  annotations: Record<string, string> = {},
): V1Service {
  return {
    metadata: { name, namespace, annotations },
    spec: {
      type: 'LoadBalancer',
      ports: ports.map((p, i) => ({ name: p.name ?? `p${i}`, port: p.port, protocol: p.protocol ?? 'TCP', targetPort: p.port as never })),
      ...extra,
    },
  };
}

export interface CloudLb {
  name: string;
  clusterName: string;
  serviceUid: string;
  serviceNamespace: string;
  serviceName: string;
  ingressIp: string;
  ipMode: string;
  ports: { port: number; nodePort: number; protocol: string }[];
  backends: { nodeName: string; address: string }[];
  createdAt: string;
  /** The cluster UID it is tagged with (absent: untagged). */
  clusterUid?: string;
}

/** The local cloud's load balancers (`localcloud lb list -o json`). */
export async function cloudLbs(stateDir: string): Promise<CloudLb[]> {
  return JSON.parse(await localcloud(stateDir, 'lb', 'list', '-o', 'json')) as CloudLb[];
}

/** Events about this Service object (not an earlier one of its name), except those of the API server's repair loops. */
export async function serviceEvents(core: CoreV1Api, svc: V1Service): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: svc.metadata!.namespace!, fieldSelector: `involvedObject.name=${svc.metadata!.name}` });
  return list.items.filter((e) => (!svc.metadata?.uid || e.involvedObject.uid === svc.metadata.uid) && !fromApiServerRepair(e));
}

/**
 * Whether an Event is from the API server's own ClusterIP or NodePort repair loop: those may report a Warning
 * (ClusterIPNotAllocated) on a Service they catch between its creation and its allocation's commit, a race inside
 * the API server, no CCM's doing (a CI run saw one in a "no Warning" assertion).
 */
export function fromApiServerRepair(e: CoreV1Event): boolean {
  return API_SERVER_REPAIR.has(e.reportingComponent || e.source?.component || '');
}

const API_SERVER_REPAIR = new Set(['ipallocator-repair-controller', 'portallocator-repair-controller']);

/** Plugin calls of `method` the host made so far (ccm_plugin_rpc_duration_seconds count, any code). */
export async function pluginCalls(registry: Registry, method: string): Promise<number> {
  const text = await registry.metrics();
  let n = 0;
  for (const m of text.matchAll(/^ccm_plugin_rpc_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    if (m[1]!.includes(`method="${method}"`)) n += Number(m[2]);
  }
  return n;
}

/** Removes every finalizer of the Service by hand, guarded by its uid (what an impatient user does). */
export async function dropFinalizers(core: CoreV1Api, svc: V1Service): Promise<void> {
  const ops = [
    { op: 'test', path: '/metadata/uid', value: svc.metadata!.uid },
    { op: 'remove', path: '/metadata/finalizers' },
  ];
  await patchService(core, svc.metadata!.namespace!, svc.metadata!.name!, ops, 'json');
}
