/**
 * Real kubelets (kubemark hollow nodes) against the host and the local cloud:
 * registration with --cloud-provider=external, status updates racing the
 * host's address writes, Lease heartbeats, and a machine dying.
 *
 * This file runs its own control plane: the dead-kubelet test needs KCM's
 * node-lifecycle-controller, which marks every node that does not heartbeat
 * Unknown, and on the shared control plane that would be every node other
 * test files write by hand.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Node } from '@kubernetes/client-node';
import { ControlPlane } from '../controlplane/controlplane.js';
import { HollowNodes } from '../helpers/hollow-nodes.js';
import { startTestHost, type TestHost } from '../helpers/host.js';
import { localcloud } from '../helpers/localcloud.js';
import { condition, hasTaint, readNodeOrUndefined, testScope } from '../helpers/nodes.js';
import { applyShippedRbac, serviceAccountKubeConfig } from '../helpers/service-account.js';
import { waitFor } from '../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const PROVIDED_NODE_IP = 'alpha.kubernetes.io/provided-node-ip';
/** KCM's --node-monitor-grace-period here: a killed kubelet's node goes Unknown this long after its last heartbeat. */
const GRACE = '20s';

interface Ctx {
  dir: string;
  cp: ControlPlane;
  host: TestHost;
  core: CoreV1Api;
  kubelets: HollowNodes;
}
const test = anyTest as TestFn<Ctx>;
const scope = testScope('hollow');

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-hollow-'));
  const cp = await ControlPlane.start({ nodeLifecycle: { gracePeriod: GRACE } });
  t.context.cp = cp;
  const admin = new KubeConfig();
  admin.loadFromFile(cp.kubeconfigPath);
  await applyShippedRbac(admin);
  const host = await startTestHost(dir, [
    '--controllers=cloud-node,cloud-node-lifecycle',
    '--node-monitor-period=2s',
    `--node-selector=${scope.selector}`,
  ], { kubeConfig: await serviceAccountKubeConfig(admin) });
  const kubelets = await HollowNodes.start(cp.kubeconfigPath, join(dir, 'kubelets'), []);
  Object.assign(t.context, { dir, host, core: admin.makeApiClient(CoreV1Api), kubelets });
});

test.after.always(async (t) => {
  await t.context.kubelets?.stop();
  await t.context.host?.stop();
  await t.context.cp?.stop();
});

/** Adds a cloud instance; returns its providerID. */
async function addInstance(dir: string, name: string, ...args: string[]): Promise<string> {
  const [added] = JSON.parse(await localcloud(join(dir, 'cloud'), 'instance', 'add', name, ...args, '-o', 'json')) as { providerId: string }[];
  return added!.providerId;
}

async function initializedNode(t: { context: Ctx }, name: string): Promise<V1Node> {
  const { core, host, kubelets } = t.context;
  return waitFor(async () => {
    const n = await core.readNode({ name });
    return !hasTaint(n, UNINITIALIZED) && n.spec?.providerID ? n : undefined;
  }, { timeoutMs: 120_000, what: `node ${name} initialized by the host`, log: `${host.logPath} and ${kubelets.logPath(name)}` });
}

const addressesOf = (n: V1Node) => (n.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`);

test.serial('a kubelet registers tainted, the host initializes its node, and the addresses stay the cloud\'s across many status updates', async (t) => {
  const { dir, core, kubelets } = t.context;
  const name = 'hollow-init';
  const providerId = await addInstance(dir, name, '--zone', 'zone-h', '--region', 'region-h', '--type', 'h.large', '--address', '127.0.3.1', '--address', 'ExternalIP=127.0.4.1');
  await kubelets.add({ name, labels: scope.labels, statusReportFrequency: '5s' });

  // The host initializes only nodes registered with the uninitialized taint: this proves the kubelet set it.
  const node = await initializedNode(t, name);
  t.is(node.spec?.providerID, providerId, 'the provider ID is the cloud\'s, not kubemark\'s');
  const labels = node.metadata?.labels ?? {};
  t.is(labels['topology.kubernetes.io/zone'], 'zone-h');
  t.is(labels['topology.kubernetes.io/region'], 'region-h');
  t.is(labels['node.kubernetes.io/instance-type'], 'h.large');
  const expected = ['InternalIP=127.0.3.1', 'ExternalIP=127.0.4.1', `Hostname=${name}`].sort().join(' ');
  await waitFor(async () => addressesOf(await core.readNode({ name })).sort().join(' ') === expected, { what: `the cloud's addresses on ${name}` });

  // Every status the kubelet posts afterwards must leave the cloud's addresses in place.
  const heartbeats = new Set<string>();
  const wrong: string[] = [];
  await waitFor(async () => {
    const n = await core.readNode({ name });
    const seen = addressesOf(n).sort().join(' ');
    if (seen !== expected) wrong.push(`after ${heartbeats.size} status updates: ${seen}`);
    const beat = condition(n, 'Ready')?.lastHeartbeatTime;
    if (beat) heartbeats.add(String(beat));
    return heartbeats.size >= 5;
  }, { timeoutMs: 180_000, intervalMs: 1_000, what: 'five kubelet status updates', log: kubelets.logPath(name) });
  t.deepEqual(wrong, [], 'addresses other than the cloud\'s were seen');
  t.is(condition(await core.readNode({ name }), 'Ready')?.status, 'True', 'the hollow kubelet reports Ready');
});

test.serial('a killed kubelet\'s node goes Unknown, and once its instance is deleted the host deletes the node', async (t) => {
  const { dir, core, host, kubelets } = t.context;
  const name = 'hollow-dies';
  await addInstance(dir, name, '--address', '127.0.3.2');
  await kubelets.add({ name, labels: scope.labels });
  await initializedNode(t, name);
  await waitFor(async () => condition(await core.readNode({ name }), 'Ready')?.status === 'True', { timeoutMs: 120_000, what: `node ${name} Ready` });

  await kubelets.kill(name);
  const unknown = await waitFor(async () => {
    const n = await core.readNode({ name });
    return condition(n, 'Ready')?.status === 'Unknown' ? n : undefined;
  }, { timeoutMs: 180_000, intervalMs: 1_000, what: `node ${name} Unknown after its kubelet died (KCM node-lifecycle-controller)` });
  t.true(hasTaint(unknown, 'node.kubernetes.io/unreachable'), 'KCM taints the dead node unreachable');

  await localcloud(join(dir, 'cloud'), 'instance', 'delete', name);
  await waitFor(async () => (await readNodeOrUndefined(core, name)) === undefined, {
    timeoutMs: 180_000,
    intervalMs: 1_000,
    what: `node ${name} deleted by the host after its instance was deleted`,
    log: host.logPath,
  });
  t.pass();
});

/** An IPv4 address of this machine that is not loopback: the kubelet accepts only such an address for --node-ip. */
function hostIp(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    const a = (addrs ?? []).find((x) => x.family === 'IPv4' && !x.internal && !x.address.startsWith('169.254.'));
    if (a) return a.address;
  }
  throw new Error('this machine has no non-loopback IPv4 address; the kubelet needs one for --node-ip');
}

test.serial('a kubelet started with --node-ip annotates its node, and the host makes that IP the first and only InternalIP', async (t) => {
  const { dir, core, kubelets } = t.context;
  const name = 'hollow-nodeip';
  const ip = hostIp();
  await addInstance(dir, name, '--address', '127.0.3.3', '--address', `InternalIP=${ip}`, '--address', 'ExternalIP=127.0.4.3');
  await kubelets.add({ name, labels: scope.labels, nodeIp: ip });

  const node = await initializedNode(t, name);
  t.is(node.metadata?.annotations?.[PROVIDED_NODE_IP], ip);
  const addrs = await waitFor(async () => {
    const a = addressesOf(await core.readNode({ name }));
    return a.some((x) => x.startsWith('InternalIP=')) ? a : undefined;
  }, { what: `addresses of ${name}` });
  t.is(addrs[0], `InternalIP=${ip}`, 'the provided IP comes first');
  t.false(addrs.includes('InternalIP=127.0.3.3'), 'it is the only InternalIP');
  t.true(addrs.includes('ExternalIP=127.0.4.3'));
});
