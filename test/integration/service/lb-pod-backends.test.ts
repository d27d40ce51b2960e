/**
 * Pod-IP backends (issue 33 item 4, CAPABILITY_LOAD_BALANCER_POD_BACKENDS),
 * with real traffic: the real host with --controllers=service, the local
 * cloud as a real plugin process whose loopback load balancers forward
 * TCP, the real kube-apiserver. Hollow kubelets run no pods, so the
 * Services have no selector and the test writes their EndpointSlices by
 * hand (managed-by podip-test.ccm.dev: kube-controller-manager leaves them
 * alone); each "pod" is a TCP server on its own loopback address answering
 * its name (the slices carry
 * addresses of the local cloud's pod network, LOCALCLOUD_POD_CIDR, which it
 * dials on loopback), and the backend Node's node port answers "node".
 *  - pods (LOCALCLOUD_POD_BACKENDS=true, zone podip-a): traffic reaches the
 *    ready pods and never the node port; a removed endpoint stops getting
 *    traffic, an added one starts; a not-ready one gets none; with
 *    trafficDistribution PreferClose only the same-zone pod gets traffic.
 *  - none (the capability not declared): the same Service goes to the node
 *    port, as before.
 *
 * Scoping: namespaces lb-podip and lb-podip-none, nodes labelled
 * lbtest=podip, pools 127.0.98.0/24 and 127.0.99.0/24, node 127.0.101.1,
 * pods 10.100.100.0/24 (listening on 127.100.100.0/24).
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api, type V1EndpointSlice, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { startTcpBackend, tcpRequest, type Backend } from '../../helpers/backends.js';
import { cloudLbs, createBackendNode, ensureNamespace, ingressIp, lbService, waitIngress } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-podip';
const NS_NONE = 'lb-podip-none';
const NODE = 'lb-podip-node';
const NODE_IP = '127.0.101.1';
const ZONE = 'podip-a';
const MANAGED_BY = 'podip-test.ccm.dev';
/** Connections per traffic sample: enough for round-robin to reach every backend several times. */
const SAMPLE = 12;

interface Side {
  host: TestHost;
  state: string;
}
interface Ctx {
  core: CoreV1Api;
  discovery: DiscoveryV1Api;
  pods: Side;
  none: Side;
  /** The port every pod server listens on (bound as port 0 by the first). */
  podPort: number;
  servers: Backend[];
}
const test = anyTest as TestFn<Ctx>;

/**
 * The pods' addresses as the EndpointSlices carry them (the API server refuses
 * loopback ones), in the local cloud's pod network LOCALCLOUD_POD_CIDR, and
 * where the servers listen: the same last three octets on loopback.
 */
const POD_CIDR = '10.100.0.0/16';
const POD_IPS = { a: '10.100.100.1', b: '10.100.100.2', c: '10.100.100.3', d: '10.100.100.4' } as const;
const listenOn = (ip: string) => ip.replace(/^10\./, '127.');

async function side(ns: string, pool: string, env: string[]): Promise<Side> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-${ns}-`));
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${ns}`,
    '--node-selector=lbtest=podip',
    `--plugin-env=LOCALCLOUD_LB_CIDR=${pool}`,
    `--plugin-env=LOCALCLOUD_ZONE=${ZONE}`,
    `--plugin-env=LOCALCLOUD_POD_CIDR=${POD_CIDR}`,
    ...env.map((e) => `--plugin-env=${e}`),
  ]);
  return { host, state: join(dir, 'cloud') };
}

test.before(async (t) => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const discovery = kc.makeApiClient(DiscoveryV1Api);
  await ensureNamespace(core, NS);
  await ensureNamespace(core, NS_NONE);
  await createBackendNode(core, NODE, NODE_IP, { lbtest: 'podip' });
  // The first pod server picks a free port; the others share it on their own addresses (a slice has one port per name).
  const first = await startTcpBackend('pod-a', listenOn(POD_IPS.a), 0);
  const podPort = first.port!;
  const servers = [first];
  for (const [name, ip] of Object.entries(POD_IPS).slice(1)) servers.push(await startTcpBackend(`pod-${name}`, listenOn(ip), podPort));
  const [pods, none] = await Promise.all([side(NS, '127.0.98.0/24', ['LOCALCLOUD_POD_BACKENDS=true']), side(NS_NONE, '127.0.99.0/24', [])]);
  t.context = { core, discovery, pods, none, podPort, servers };
});

test.after.always(async (t) => {
  await Promise.all([t.context.pods?.host.stop(), t.context.none?.host.stop()]);
  await Promise.all((t.context.servers ?? []).map((s) => s.close()));
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

/** A selector-less LoadBalancer Service asking for pod backends, port 80 "web" to the pods' port. */
function podService(name: string, ns: string, podPort: number, extra: Partial<V1Service['spec']> = {}): V1Service {
  const svc = lbService(name, ns, [{ name: 'web', port: 80 }], extra, { 'service.ccm.dev/load-balancer-backends': 'pods' });
  svc.spec!.ports![0]!.targetPort = podPort as never;
  return svc;
}

type Ep = { ip: string; ready?: boolean; zone?: string };

function slice(service: string, ns: string, podPort: number, eps: Ep[]): V1EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${service}-pods`,
      namespace: ns,
      labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY },
    },
    addressType: 'IPv4',
    ports: [{ name: 'web', port: podPort, protocol: 'TCP' }],
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, serving: e.ready ?? true, terminating: false },
      nodeName: NODE,
      zone: e.zone ?? ZONE,
    })),
  };
}

async function setSlice(t: { context: Ctx }, service: string, ns: string, eps: Ep[]): Promise<void> {
  const { discovery, podPort } = t.context;
  const body = slice(service, ns, podPort, eps);
  try {
    const cur = await discovery.readNamespacedEndpointSlice({ name: body.metadata!.name!, namespace: ns });
    body.metadata!.resourceVersion = cur.metadata?.resourceVersion;
    await discovery.replaceNamespacedEndpointSlice({ name: body.metadata!.name!, namespace: ns, body });
  } catch (err) {
    if ((err as { code?: number }).code !== 404) throw err;
    await discovery.createNamespacedEndpointSlice({ namespace: ns, body });
  }
}

/** The answers of SAMPLE connections through ip:80, as a sorted set. */
async function sample(ip: string): Promise<string[]> {
  const seen = new Set<string>();
  for (let i = 0; i < SAMPLE; i++) seen.add(await tcpRequest(ip, 80).catch((e: Error) => `error: ${e.message.split(':')[0]}`));
  return [...seen].sort();
}

/** Waits until a sample through ip:80 answers exactly `want`, then checks a second sample says the same. */
async function trafficReaches(
  t: { context: Ctx; deepEqual: (a: unknown, b: unknown, m?: string) => void },
  ip: string,
  want: string[],
  log: string,
  what: string,
) {
  await waitFor(async () => JSON.stringify(await sample(ip)) === JSON.stringify(want), { what: `${what}: traffic reaches ${want.join(', ')}`, log });
  t.deepEqual(await sample(ip), want, what);
}

test.serial('pod backends: traffic to the ready pods, never the node port; removed, added and not-ready endpoints follow', async (t) => {
  const { core, pods, podPort } = t.context;
  const rows: { what: string; eps: Ep[]; want: string[] }[] = [
    { what: 'two ready pods', eps: [{ ip: POD_IPS.a }, { ip: POD_IPS.b }], want: ['pod-a', 'pod-b'] },
    { what: 'pod-b removed from the slice', eps: [{ ip: POD_IPS.a }], want: ['pod-a'] },
    { what: 'pod-c added', eps: [{ ip: POD_IPS.a }, { ip: POD_IPS.c }], want: ['pod-a', 'pod-c'] },
    { what: 'pod-d not ready', eps: [{ ip: POD_IPS.a }, { ip: POD_IPS.c }, { ip: POD_IPS.d, ready: false }], want: ['pod-a', 'pod-c'] },
  ];
  // The slice first: the first ensure already has the pods; every later row is an endpoint update.
  await setSlice(t, 'web', NS, rows[0]!.eps);
  const svc = await core.createNamespacedService({ namespace: NS, body: podService('web', NS, podPort) });
  // A server on the node port: the old path, which must get nothing.
  const nodePort = svc.spec!.ports![0]!.nodePort!;
  const node = await startTcpBackend('node', NODE_IP, nodePort);
  try {
    const ip = ingressIp(await waitIngress(core, NS, 'web', { log: pods.host.logPath }))!;
    for (const row of rows) {
      await setSlice(t, 'web', NS, row.eps);
      await trafficReaches(t, ip, row.want, pods.host.logPath, row.what);
    }
    const [lb] = (await cloudLbs(pods.state)).filter((l) => l.serviceNamespace === NS && l.serviceName === 'web');
    t.deepEqual(
      ((lb as unknown as { podBackends?: { address: string }[] }).podBackends ?? []).map((b) => b.address),
      [POD_IPS.a, POD_IPS.c].map(listenOn),
      'the cloud records the ready pods as the backends',
    );
  } finally {
    await node.close();
    await core.deleteNamespacedService({ name: 'web', namespace: NS });
  }
});

test.serial('PreferClose: only the pod in the load balancer zone gets traffic, while there is one', async (t) => {
  const { core, pods, podPort } = t.context;
  await setSlice(t, 'close', NS, [{ ip: POD_IPS.a }, { ip: POD_IPS.b, zone: 'podip-b' }]);
  await core.createNamespacedService({ namespace: NS, body: podService('close', NS, podPort, { trafficDistribution: 'PreferClose' }) });
  const ip = ingressIp(await waitIngress(core, NS, 'close', { log: pods.host.logPath }))!;
  await trafficReaches(t, ip, ['pod-a'], pods.host.logPath, 'same zone only');
  await setSlice(t, 'close', NS, [{ ip: POD_IPS.b, zone: 'podip-b' }]);
  await trafficReaches(t, ip, ['pod-b'], pods.host.logPath, 'no pod in the zone: the other zone');
  await core.deleteNamespacedService({ name: 'close', namespace: NS });
});

test.serial('a provider without the capability gets no endpoints: node-port backends, as before', async (t) => {
  const { core, none, podPort } = t.context;
  await setSlice(t, 'web', NS_NONE, [{ ip: POD_IPS.a }, { ip: POD_IPS.b }]);
  const svc = await core.createNamespacedService({ namespace: NS_NONE, body: podService('web', NS_NONE, podPort) });
  const node = await startTcpBackend('node', NODE_IP, svc.spec!.ports![0]!.nodePort!);
  try {
    const ip = ingressIp(await waitIngress(core, NS_NONE, 'web', { log: none.host.logPath }))!;
    await trafficReaches(t, ip, ['node'], none.host.logPath, 'node port only');
    const [lb] = (await cloudLbs(none.state)).filter((l) => l.serviceNamespace === NS_NONE);
    t.is((lb as unknown as { podBackends?: unknown }).podBackends, undefined, 'no pod backends recorded');
  } finally {
    await node.close();
    await core.deleteNamespacedService({ name: 'web', namespace: NS_NONE });
  }
});
