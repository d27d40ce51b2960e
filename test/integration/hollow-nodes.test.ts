/**
 * Real kubelets (kubemark hollow nodes) against the host and the local cloud:
 * registration with --cloud-provider=external, status updates racing the
 * host's address writes, Lease heartbeats, and a machine dying.
 *
 * This file runs its own control plane: the dead-kubelet tests need KCM's
 * node-lifecycle-controller, which marks every node that does not heartbeat
 * Unknown, and on the shared control plane that would be every node other
 * test files write by hand. Each test stops its kubelets and deletes its
 * nodes when it ends, so a later test's load balancer has only its own
 * nodes as backends. Loopback: ingress pool 127.0.83.0/24, servable node
 * addresses 127.0.84.0/24.
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { mkdtemp, readFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Node } from '@kubernetes/client-node';
import { ControlPlane } from '../controlplane/controlplane.js';
import { startTcpBackend, tcpRequest, type Backend } from '../helpers/backends.js';
import { HollowNodes } from '../helpers/hollow-nodes.js';
import { startTestHost, type TestHost } from '../helpers/host.js';
import { cloudLbs, ensureNamespace, lbService } from '../helpers/lb.js';
import { localcloud } from '../helpers/localcloud.js';
import { condition, hasTaint, readNodeOrUndefined, testScope } from '../helpers/nodes.js';
import { applyShippedRbac, serviceAccountKubeConfig } from '../helpers/service-account.js';
import { waitFor } from '../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
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
  const host = await startTestHost(
    dir,
    [
      '--controllers=cloud-node,cloud-node-lifecycle,service',
      '--node-monitor-period=2s',
      // The address refresh runs often enough to meet a cloud outage in the outage test.
      '--node-status-update-frequency=5s',
      `--node-selector=${scope.selector}`,
      '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.83.0/24',
    ],
    { kubeConfig: await serviceAccountKubeConfig(admin) },
  );
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

/**
 * When the test ends: stops the named kubelets that still run and deletes
 * their nodes (instances stay: no node is made for them again).
 */
function retireAtEnd(t: ExecutionContext<Ctx>, ...names: string[]): void {
  t.teardown(async () => {
    const { core, kubelets } = t.context;
    for (const name of names) {
      if (kubelets.running(name)) await kubelets.kill(name);
      await core.deleteNode({ name }).catch((err: { code?: number }) => {
        if (err.code !== 404) throw err;
      });
    }
  });
}

/** Waits for the node's Ready condition to have `status` (True, or Unknown once a killed kubelet's grace period passed). */
async function readyIs(t: { context: Ctx }, name: string, status: 'True' | 'Unknown'): Promise<V1Node> {
  const { core, kubelets } = t.context;
  return waitFor(
    async () => {
      const n = await core.readNode({ name });
      return condition(n, 'Ready')?.status === status ? n : undefined;
    },
    { timeoutMs: 180_000, intervalMs: 1_000, what: `node ${name} Ready=${status}`, log: kubelets.logPath(name) },
  );
}

async function initializedNode(t: { context: Ctx }, name: string): Promise<V1Node> {
  const { core, host, kubelets } = t.context;
  return waitFor(
    async () => {
      const n = await core.readNode({ name });
      return !hasTaint(n, UNINITIALIZED) && n.spec?.providerID ? n : undefined;
    },
    { timeoutMs: 120_000, what: `node ${name} initialized by the host`, log: `${host.logPath} and ${kubelets.logPath(name)}` },
  );
}

const addressesOf = (n: V1Node) => (n.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`);

test.serial(
  "a kubelet registers tainted, the host initializes its node, and the addresses stay the cloud's across many status updates",
  async (t) => {
    const { dir, core, kubelets } = t.context;
    const name = 'hollow-init';
    const providerId = await addInstance(
      dir,
      name,
      '--zone',
      'zone-h',
      '--region',
      'region-h',
      '--type',
      'h.large',
      '--address',
      '127.0.3.1',
      '--address',
      'ExternalIP=127.0.4.1',
    );
    await kubelets.add({ name, labels: scope.labels, statusReportFrequency: '5s' });
    retireAtEnd(t, name);

    // The host initializes only nodes registered with the uninitialized taint: this proves the kubelet set it.
    const node = await initializedNode(t, name);
    t.is(node.spec?.providerID, providerId, "the provider ID is the cloud's, not kubemark's");
    const labels = node.metadata?.labels ?? {};
    t.is(labels['topology.kubernetes.io/zone'], 'zone-h');
    t.is(labels['topology.kubernetes.io/region'], 'region-h');
    t.is(labels['node.kubernetes.io/instance-type'], 'h.large');
    const expected = ['InternalIP=127.0.3.1', 'ExternalIP=127.0.4.1', `Hostname=${name}`].sort().join(' ');
    await waitFor(
      async () =>
        addressesOf(await core.readNode({ name }))
          .sort()
          .join(' ') === expected,
      { what: `the cloud's addresses on ${name}` },
    );

    // Every status the kubelet posts afterwards must leave the cloud's addresses in place.
    const heartbeats = new Set<string>();
    const wrong: string[] = [];
    await waitFor(
      async () => {
        const n = await core.readNode({ name });
        const seen = addressesOf(n).sort().join(' ');
        if (seen !== expected) wrong.push(`after ${heartbeats.size} status updates: ${seen}`);
        const beat = condition(n, 'Ready')?.lastHeartbeatTime;
        if (beat) heartbeats.add(String(beat));
        return heartbeats.size >= 5;
      },
      { timeoutMs: 180_000, intervalMs: 1_000, what: 'five kubelet status updates', log: kubelets.logPath(name) },
    );
    t.deepEqual(wrong, [], "addresses other than the cloud's were seen");
    t.is(condition(await core.readNode({ name }), 'Ready')?.status, 'True', 'the hollow kubelet reports Ready');
  },
);

test.serial("a killed kubelet's node goes Unknown, and once its instance is deleted the host deletes the node", async (t) => {
  const { dir, core, host, kubelets } = t.context;
  const name = 'hollow-dies';
  await addInstance(dir, name, '--address', '127.0.3.2');
  await kubelets.add({ name, labels: scope.labels });
  retireAtEnd(t, name);
  await initializedNode(t, name);
  await readyIs(t, name, 'True');

  await kubelets.kill(name);
  await readyIs(t, name, 'Unknown');
  // KCM sets Ready=Unknown and adds the taint in separate writes: wait for the taint rather than expect both in one read.
  await waitFor(async () => hasTaint(await core.readNode({ name }), 'node.kubernetes.io/unreachable'), {
    timeoutMs: 180_000,
    intervalMs: 1_000,
    what: `KCM taints the dead node ${name} unreachable`,
  });

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
  retireAtEnd(t, name);

  const node = await initializedNode(t, name);
  t.is(node.metadata?.annotations?.[PROVIDED_NODE_IP], ip);
  const addrs = await waitFor(
    async () => {
      const a = addressesOf(await core.readNode({ name }));
      return a.some((x) => x.startsWith('InternalIP=')) ? a : undefined;
    },
    { what: `addresses of ${name}` },
  );
  t.is(addrs[0], `InternalIP=${ip}`, 'the provided IP comes first');
  t.false(addrs.includes('InternalIP=127.0.3.3'), 'it is the only InternalIP');
  t.true(addrs.includes('ExternalIP=127.0.4.3'));
});

test.serial(
  'a kubelet killed while its instance is stopped: its node gets the shutdown taint, which goes once the instance runs and the kubelet is back',
  async (t) => {
    const { dir, core, host, kubelets } = t.context;
    const name = 'hollow-shutdown';
    await addInstance(dir, name, '--address', '127.0.3.4');
    const spec = { name, labels: scope.labels };
    await kubelets.add(spec);
    retireAtEnd(t, name);
    const uid = (await initializedNode(t, name)).metadata!.uid;
    await readyIs(t, name, 'True');

    // The machine stops: the cloud says so, the kubelet dies with it.
    await localcloud(join(dir, 'cloud'), 'instance', 'shutdown', name);
    await kubelets.kill(name);
    await readyIs(t, name, 'Unknown');
    const tainted = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        return hasTaint(n, SHUTDOWN) ? n : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000, what: `the shutdown taint on ${name}`, log: host.logPath },
    );
    t.is(tainted.metadata?.uid, uid, 'the node of a stopped instance is kept');
    t.is(tainted.spec?.taints?.find((x) => x.key === SHUTDOWN)?.effect, 'NoSchedule');

    // The machine boots again and its kubelet comes back.
    await localcloud(join(dir, 'cloud'), 'instance', 'start', name);
    await kubelets.add(spec);
    await readyIs(t, name, 'True');
    const back = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        return hasTaint(n, SHUTDOWN) ? undefined : n;
      },
      { timeoutMs: 120_000, intervalMs: 1_000, what: `the shutdown taint removed from ${name}`, log: host.logPath },
    );
    t.is(back.metadata?.uid, uid, 'the same node throughout');
  },
);

/** The names answering `n` connections to ip:port in a row (the forwarder goes round-robin over the backends). */
async function answers(ip: string, port: number, n: number): Promise<string[]> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) seen.add(await tcpRequest(ip, port));
  return [...seen].sort();
}

test.serial("a LoadBalancer Service's backends follow hollow nodes as they join and leave, and so does its TCP traffic", async (t) => {
  const { dir, core, host, kubelets } = t.context;
  const cloud = join(dir, 'cloud');
  const ns = 'hollow-lb';
  const nodes = [
    { name: 'hollow-lb-1', ip: '127.0.84.1' },
    { name: 'hollow-lb-2', ip: '127.0.84.2' },
    { name: 'hollow-lb-3', ip: '127.0.84.3' },
  ];
  const [n1, n2, n3] = nodes as [(typeof nodes)[0], (typeof nodes)[0], (typeof nodes)[0]];
  for (const n of nodes) await addInstance(dir, n.name, '--address', n.ip);
  retireAtEnd(t, ...nodes.map((n) => n.name));
  await kubelets.add({ name: n1.name, labels: scope.labels }, { name: n2.name, labels: scope.labels });
  await Promise.all([initializedNode(t, n1.name), initializedNode(t, n2.name)]);

  await ensureNamespace(core, ns);
  const svc = await core.createNamespacedService({ namespace: ns, body: lbService('web', ns, [{ port: 8080 }]) });
  // Gone, load balancer and finalizer included, before the next test: its cloud outage must meet no deletion in flight.
  t.teardown(async () => {
    await core.deleteNamespacedService({ name: 'web', namespace: ns });
    await waitFor(
      () =>
        core.readNamespacedService({ name: 'web', namespace: ns }).then(
          () => false,
          (err: { code?: number }) => err.code === 404,
        ),
      {
        timeoutMs: 60_000,
        what: `Service ${ns}/web and its load balancer deleted`,
        log: host.logPath,
      },
    );
  });
  // What kube-proxy would serve on each node's address at the nodePort: a server answering the node's name.
  const nodePort = svc.spec!.ports![0]!.nodePort!;
  const servers: Backend[] = [];
  t.teardown(() => Promise.all(servers.map((b) => b.close())).then(() => undefined));
  for (const n of nodes) servers.push(await startTcpBackend(n.name, n.ip, nodePort));

  const backendsAre = async (names: string[], what: string) => {
    const want = names
      .map((name) => `${name}=${nodes.find((n) => n.name === name)!.ip}`)
      .sort()
      .join(' ');
    const lb = await waitFor(
      async () => {
        const found = (await cloudLbs(cloud)).find((l) => l.serviceUid === svc.metadata!.uid);
        return found &&
          found.backends
            .map((b) => `${b.nodeName}=${b.address}`)
            .sort()
            .join(' ') === want
          ? found
          : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000, what: `load balancer backends ${want} (${what})`, log: host.logPath },
    );
    // Round-robin: six connections in a row reach every backend and nothing else.
    const ingress = lb.ingressIp;
    t.deepEqual(
      await waitFor(
        async () => {
          const got = await answers(ingress, 8080, 6);
          return got.join(' ') === [...names].sort().join(' ') ? got : undefined;
        },
        { timeoutMs: 30_000, what: `TCP through ${ingress}:8080 reaching exactly ${names.join(', ')} (${what})` },
      ),
      [...names].sort(),
    );
  };

  await backendsAre([n1.name, n2.name], 'the two initialized nodes');

  // Joins: backend once the host has initialized it.
  await kubelets.add({ name: n3.name, labels: scope.labels });
  await initializedNode(t, n3.name);
  await backendsAre([n1.name, n2.name, n3.name], 'a third node joined');

  // Dies: NotReady nodes stay backends (the load balancer's health check is what skips them), as upstream.
  await kubelets.kill(n1.name);
  await readyIs(t, n1.name, 'Unknown');
  await backendsAre([n1.name, n2.name, n3.name], 'a node Unknown but its instance still there');

  // Leaves: its instance deleted, the host deletes the node and takes it out of the load balancer.
  // Its server still answers on its address: no traffic reaching it proves the forwarder dropped it.
  await localcloud(cloud, 'instance', 'delete', n1.name);
  await waitFor(async () => (await readNodeOrUndefined(core, n1.name)) === undefined, {
    timeoutMs: 120_000,
    intervalMs: 1_000,
    what: `node ${n1.name} deleted`,
    log: host.logPath,
  });
  await backendsAre([n2.name, n3.name], 'a node left');
});

/** The host's log lines so far with message `msg`. */
async function logged(host: TestHost, msg: string): Promise<number> {
  const text = await readFile(host.logPath, 'utf8');
  return text.split('\n').filter((l) => l.includes(`"msg":${JSON.stringify(msg)}`)).length;
}

/** What the host logs when the cloud fails it, per controller that asks about these nodes. */
const OUTAGE_LOGS = [
  'node address refresh failed', // cloud-node: the live node's periodic address refresh
  'instance status lookup failed; no NotReady node is changed this pass', // cloud-node-lifecycle: the dead node
  'requeue after error', // cloud-node: the late node's initialization
];

test.serial('through a cloud outage nothing is deleted or changed while kubelets heartbeat; afterwards the host catches up', async (t) => {
  const { dir, core, host, kubelets } = t.context;
  const cloud = join(dir, 'cloud');
  const [alive, dead, late] = ['hollow-outage-1', 'hollow-outage-2', 'hollow-outage-3'];
  for (const [i, name] of [alive, dead, late].entries()) await addInstance(dir, name, '--address', `127.0.3.${10 + i}`);
  retireAtEnd(t, alive, dead, late);
  await kubelets.add({ name: alive, labels: scope.labels, statusReportFrequency: '5s' }, { name: dead, labels: scope.labels });
  const before = await Promise.all([initializedNode(t, alive), initializedNode(t, dead)]);
  const uids = new Map(before.map((n) => [n.metadata!.name!, n.metadata!.uid!]));
  await readyIs(t, alive, 'True');
  const aliveAddresses = addressesOf(before[0]).sort().join(' ');
  // A NotReady node is what the lifecycle controller asks the cloud about.
  await kubelets.kill(dead);
  await readyIs(t, dead, 'Unknown');

  // The outage: every cloud call fails UNAVAILABLE. Meanwhile the dead node's
  // instance really goes away and a new kubelet registers.
  const failedBefore = await Promise.all(OUTAGE_LOGS.map((msg) => logged(host, msg)));
  await localcloud(cloud, 'knobs', 'set', 'failAll=true');
  t.teardown(() => localcloud(cloud, 'knobs', 'unset', 'failAll').then(() => undefined));
  await localcloud(cloud, 'instance', 'delete', dead);
  await kubelets.add({ name: late, labels: scope.labels });

  // Until the host has met the outage in each controller that asks the cloud
  // about these nodes, nothing of theirs may change.
  const wrong = new Set<string>();
  await waitFor(
    async () => {
      for (const name of [alive, dead, late]) {
        const n = await readNodeOrUndefined(core, name);
        if (!n) wrong.add(`${name} deleted during the outage`);
        else if (uids.has(name) && n.metadata?.uid !== uids.get(name)) wrong.add(`${name} recreated during the outage`);
        else if (name === late && !hasTaint(n, UNINITIALIZED)) wrong.add(`${late} initialized during the outage`);
        else if (name === alive && addressesOf(n).sort().join(' ') !== aliveAddresses)
          wrong.add(`${alive} addresses ${addressesOf(n).join(' ')} during the outage`);
        else if (hasTaint(n, SHUTDOWN)) wrong.add(`${name} tainted shut down during the outage`);
      }
      const now = await Promise.all(OUTAGE_LOGS.map((msg) => logged(host, msg)));
      return now.every((n, i) => n - failedBefore[i]! >= 3) ? now : undefined;
    },
    {
      timeoutMs: 120_000,
      intervalMs: 1_000,
      what: `the host to log each of ${OUTAGE_LOGS.join(' / ')} three times in the outage`,
      log: host.logPath,
    },
  );
  t.deepEqual([...wrong], []);
  t.is(condition(await core.readNode({ name: alive }), 'Ready')?.status, 'True', 'the live kubelet kept heartbeating');

  // The cloud answers again: the dead node goes, the late one is initialized, the live one is untouched.
  await localcloud(cloud, 'knobs', 'unset', 'failAll');
  await waitFor(async () => (await readNodeOrUndefined(core, dead)) === undefined, {
    timeoutMs: 120_000,
    intervalMs: 1_000,
    what: `node ${dead} deleted after the outage`,
    log: host.logPath,
  });
  await initializedNode(t, late);
  const after = await core.readNode({ name: alive });
  t.is(after.metadata?.uid, uids.get(alive));
  t.is(addressesOf(after).sort().join(' '), aliveAddresses);
});
