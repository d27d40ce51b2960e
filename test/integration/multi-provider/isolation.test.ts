/**
 * Isolation of two providers in one host (issue 31 item 5), against the real
 * API server: two local clouds, "steady" spawned by the host (exec mode, the
 * default provider) serving Services without a class, and "flaky" a sidecar
 * the host dials serving only class example.com/flaky. Flaky crashes
 * (SIGKILL, five times in a row, sometimes while its calls are in flight),
 * hangs (SIGSTOP) and answers errors or never answers its cloud calls (the
 * local cloud's failAll and hold knobs), while steady's Services are
 * created, updated and deleted and steady's Nodes join: steady's load
 * balancers converge meanwhile, and its Nodes initialize; flaky's objects
 * converge once flaky is back; neither cloud keeps a load balancer of a
 * Service that is gone (nothing orphaned), and traffic flows through both.
 *
 * Scoping for the shared API server: namespace mp-isolation, nodes labelled
 * by testScope('iso'), loopback addresses 127.0.137.0/24 (steady's pool),
 * 127.0.138.0/24 (flaky's pool), 127.0.139.1 (the backend node), cluster
 * name iso.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { NodePortBackends, tcpRequest } from '../../helpers/backends.js';
import { patchService } from '../../helpers/kube-patch.js';
import { cloudLbs, createBackendNode, ensureNamespace, lbService, serviceEvents } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, hasTaint, readNodeOrUndefined, testScope, UNINITIALIZED_TAINT } from '../../helpers/nodes.js';
import { type Sidecar } from '../../helpers/sidecar.js';
import {
  endpointEntry,
  execEntry,
  localCloudEnv,
  localCloudSidecar,
  startProvidersHost,
  writeProvidersFile,
  type ProvidersHost,
} from '../../helpers/two-clouds.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'mp-isolation';
const CLUSTER = 'iso';
const scope = testScope('iso');
const BACKEND = { name: `${scope.prefix}-backend`, ip: '127.0.139.1' };
const FLAKY_CLASS = 'example.com/flaky';
const POOL = { steady: '127.0.137', flaky: '127.0.138' } as const;
const UNINIT = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };
/** The cloud Nodes are no backends (their addresses are not on this machine): the backend node carries the traffic. */
const NO_LB = { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' };
/** Flaky's restarts and redials back off (1 s doubling): generous bounds for its convergence. */
const FLAKY_BACK_MS = 180_000;

type Cloud = keyof typeof POOL;

interface Setup {
  dir: string;
  core: CoreV1Api;
  host: ProvidersHost;
  /** The flaky sidecar as it runs now (replaced after each kill, as the kubelet restarts a container). */
  sidecar: Sidecar;
  startFlaky(): Promise<Sidecar>;
  /** The TCP backends on the backend node. */
  backends: NodePortBackends;
  /** The Services this test wants to exist now, by cloud. */
  want: Record<Cloud, Set<string>>;
  /** The Services it deleted, by cloud: each must be gone from the API (its provider deleted its load balancer). */
  gone: Record<Cloud, Set<string>>;
}

let setup: Setup | undefined;

const stateOf = (cloud: Cloud) => join(setup!.dir, cloud);
const flakySupervisor = () => setup!.host.providers.get('flaky')!.supervisor;

/** The host's flags besides those startProvidersHost sets. */
const FLAGS = [
  `--cluster-name=${CLUSTER}`,
  '--controllers=service,cloud-node,cloud-node-lifecycle',
  '--node-monitor-period=1s',
  // Two Service workers per provider, and a hung call is not given up for ten minutes: flaky's three hung
  // Services would hold every worker of a pool shared with steady for longer than any wait here.
  '--concurrent-service-syncs=2',
  '--plugin-mutation-timeout=10m',
  `--watch-namespace=${NS}`,
  `--node-selector=${scope.selector}`,
  // Each provider's sweep runs over its own listing, also while the other is down or restarting.
  '--lb-orphan-sweep-period=1s',
  '--lb-orphan-grace-period=2s',
];

test.before(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-mp-isolation-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  // Nobody's Node (no providerID, and with several providers one without a selector claims none): it only carries traffic.
  await createBackendNode(core, BACKEND.name, BACKEND.ip, scope.labels);
  const startFlaky = await localCloudSidecar(dir, 'flaky', {
    LOCALCLOUD_LB_CIDR: `${POOL.flaky}.0/24`,
    LOCALCLOUD_LB_CLASSES: FLAKY_CLASS,
    LOCALCLOUD_LB_CLASSES_ONLY: 'true',
  });
  const sidecar = await startFlaky();
  const providersFile = await writeProvidersFile(dir, [
    execEntry('steady', localCloudEnv(dir, 'steady', { LOCALCLOUD_LB_CIDR: `${POOL.steady}.0/24` })),
    endpointEntry('flaky', sidecar.endpoint),
  ]);
  const host = await startProvidersHost(dir, providersFile, FLAGS);
  setup = {
    dir,
    core,
    host,
    sidecar,
    startFlaky,
    backends: new NodePortBackends(BACKEND.ip),
    want: { steady: new Set(), flaky: new Set() },
    gone: { steady: new Set(), flaky: new Set() },
  };
});

test.after.always(async () => {
  if (!setup) return;
  await setup.host.stop();
  await setup.sidecar.stop();
  await setup.backends.closeAll();
  await deleteScopedNodes(setup.core, scope.selector);
});

async function readSvc(name: string): Promise<V1Service | undefined> {
  return setup!.core.readNamespacedService({ name, namespace: NS }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

const ingressIp = (s: V1Service | undefined) => s?.status?.loadBalancer?.ingress?.[0]?.ip;

/** Creates a LoadBalancer Service in `cloud` (flaky: its class) with a TCP backend named `name` on the backend node. */
async function create(cloud: Cloud, name: string, port: number): Promise<V1Service> {
  const body = lbService(name, NS, [{ port }], cloud === 'flaky' ? { loadBalancerClass: FLAKY_CLASS } : {});
  const svc = await setup!.core.createNamespacedService({ namespace: NS, body });
  await setup!.backends.start(name, svc.spec!.ports![0]!.nodePort!);
  setup!.want[cloud].add(name);
  return svc;
}

/** Changes the Service's port (its load balancer's listener follows). */
async function setPort(name: string, port: number): Promise<void> {
  await patchService(setup!.core, NS, name, [{ op: 'replace', path: '/spec/ports/0/port', value: port }], 'json');
}

/** Deletes the Service (its load balancer's finalizer holds it until its provider deleted the load balancer). */
async function remove(cloud: Cloud, name: string): Promise<void> {
  await setup!.core.deleteNamespacedService({ name, namespace: NS });
  setup!.want[cloud].delete(name);
  setup!.gone[cloud].add(name);
}

/**
 * Whether `cloud` converged: exactly the Services it should serve have a
 * load balancer there, each for the live Service's uid, on its ports, its
 * ingress in the Service's status; and the ones deleted are gone from the API.
 */
async function converged(cloud: Cloud): Promise<boolean> {
  const lbs = (await cloudLbs(stateOf(cloud))).filter((l) => l.clusterName === CLUSTER);
  const want = [...setup!.want[cloud]].sort();
  if (
    lbs
      .map((l) => l.serviceName)
      .sort()
      .join() !== want.join()
  )
    return false;
  for (const lb of lbs) {
    const s = await readSvc(lb.serviceName);
    if (!s || s.metadata?.uid !== lb.serviceUid || s.metadata?.deletionTimestamp) return false;
    if (ingressIp(s) !== lb.ingressIp || !lb.ingressIp.startsWith(`${POOL[cloud]}.`)) return false;
    if (lb.ports.map((p) => p.port).join() !== (s.spec?.ports ?? []).map((p) => p.port).join()) return false;
  }
  for (const name of setup!.gone[cloud]) if ((await readSvc(name)) !== undefined) return false;
  return true;
}

function waitConverged(cloud: Cloud, what: string, timeoutMs = 60_000): Promise<boolean> {
  return waitFor(() => converged(cloud), { what: `${cloud} converged: ${what}`, timeoutMs, log: setup!.host.logPath });
}

/** The load balancers each cloud holds for this test's cluster, by Service name: what must equal the Services wanted at the end. */
async function cloudHoldings(): Promise<Record<Cloud, string[]>> {
  const names = async (c: Cloud) =>
    (await cloudLbs(stateOf(c)))
      .filter((l) => l.clusterName === CLUSTER)
      .map((l) => l.serviceName)
      .sort();
  return { steady: await names('steady'), flaky: await names('flaky') };
}

const wanted = (): Record<Cloud, string[]> => ({ steady: [...setup!.want.steady].sort(), flaky: [...setup!.want.flaky].sort() });

/** Traffic through the Service's load balancer reaches its backend. */
async function traffic(name: string): Promise<string> {
  const s = await readSvc(name);
  return tcpRequest(ingressIp(s)!, s!.spec!.ports![0]!.port);
}

/** Adds an instance named `name` to `cloud`; the providerID its Node gets. */
async function addInstance(cloud: Cloud, name: string, address: string): Promise<string> {
  const out = await localcloud(stateOf(cloud), 'instance', 'add', name, '--zone', `${cloud}-a`, '--address', address, '-o', 'json');
  return `${cloud}://${(JSON.parse(out) as { id: string }[])[0]!.id}`;
}

/** Registers a Node as a kubelet with --provider-id would: Ready, uninitialized. */
async function registerNode(name: string, providerId: string): Promise<string> {
  await createTestNode(setup!.core, name, { labels: { ...scope.labels, ...NO_LB }, ready: true, taints: [UNINIT], providerId });
  return name;
}

/** A Node of `cloud` with its instance. */
async function joinNode(cloud: Cloud, suffix: string, address: string): Promise<string> {
  const name = `${scope.prefix}-${suffix}`;
  return registerNode(name, await addInstance(cloud, name, address));
}

async function initialized(name: string): Promise<boolean> {
  const n = await readNodeOrUndefined(setup!.core, name);
  return n !== undefined && !hasTaint(n, UNINITIALIZED_TAINT) && n.metadata?.labels?.['topology.kubernetes.io/zone'] !== undefined;
}

test.serial('both clouds serve their Services, each from its own pool, with traffic', async (t) => {
  await create('steady', 's-keep', 9101);
  await create('steady', 's-upd', 9102);
  await create('flaky', 'f-keep', 9103);
  await create('flaky', 'f-del', 9104);
  await waitConverged('steady', 'first Services');
  await waitConverged('flaky', 'first Services');
  t.deepEqual(await cloudHoldings(), wanted());
  t.is(await traffic('s-keep'), 's-keep');
  t.is(await traffic('f-keep'), 'f-keep');
  // Each provider's lifecycle instance and queues have their own series (with one provider: no provider label).
  const series = [
    'ccm_node_lifecycle_not_ready_nodes{provider="steady"}',
    'ccm_node_lifecycle_not_ready_nodes{provider="flaky"}',
    'workqueue_adds_total{name="Nodes",provider="steady"}',
    'workqueue_adds_total{name="Nodes",provider="flaky"}',
    'workqueue_adds_total{name="service",provider="steady"}',
    'workqueue_adds_total{name="service",provider="flaky"}',
  ];
  const text = await waitFor(
    async () => {
      const m = await setup!.host.metrics.registry.metrics();
      return series.every((s) => m.includes(`${s} `)) ? m : undefined;
    },
    { what: 'per-provider series on /metrics', log: setup!.host.logPath },
  );
  t.deepEqual(
    text
      .split('\n')
      .filter((l) => /^(ccm_node_lifecycle_not_ready_nodes|workqueue_adds_total\{name="(Nodes|service)")[ {]/.test(l) && !l.includes('provider=')),
    [],
    'no unlabelled series beside them',
  );
});

test.serial(
  "flaky SIGKILLed five times while steady's Services churn: steady's converge each time flaky is down, flaky's once it is back, nothing orphaned",
  async (t) => {
    const { host } = setup!;
    const flaky = flakySupervisor();
    // What each round does besides the kill: steady's Services created, updated, deleted; flaky's created or deleted
    // while flaky is down; and whether the round waits for flaky to be back before the next kill (the next kill then
    // hits it while it re-ensures its Services) or kills it again at once (in its redial backoff, or its start).
    const rounds: { steady: () => Promise<unknown>; flaky: () => Promise<unknown>; waitBack: boolean }[] = [
      { steady: () => create('steady', 's-r0', 9110), flaky: () => create('flaky', 'f-r0', 9120), waitBack: true },
      {
        steady: async () => (await create('steady', 's-r1', 9111), await setPort('s-upd', 9202)),
        flaky: () => remove('flaky', 'f-del'),
        waitBack: false,
      },
      {
        steady: async () => (await remove('steady', 's-r0'), await create('steady', 's-r2', 9112)),
        flaky: () => create('flaky', 'f-r2', 9122),
        waitBack: true,
      },
      { steady: async () => (await setPort('s-r1', 9211), await remove('steady', 's-r2')), flaky: () => remove('flaky', 'f-r0'), waitBack: false },
      {
        steady: async () => (await create('steady', 's-r4', 9114), await setPort('s-upd', 9302)),
        flaky: () => setPort('f-r2', 9222),
        waitBack: true,
      },
    ];
    const steadyWhileFlakyDown: { round: number; flakyState: string }[] = [];
    for (const [i, round] of rounds.entries()) {
      setup!.sidecar.signal('SIGKILL');
      await waitFor(() => flaky.state !== 'ready', { what: `flaky down (round ${i})`, log: host.logPath });
      await round.flaky();
      await round.steady();
      await waitConverged('steady', `round ${i}, flaky down`);
      // Flaky is dead until the next line restarts it: steady converged without it.
      steadyWhileFlakyDown.push({ round: i, flakyState: flaky.state === 'ready' ? 'ready' : 'down' });
      setup!.sidecar = await setup!.startFlaky();
      if (round.waitBack)
        await waitFor(() => flaky.state === 'ready', { what: `flaky back (round ${i})`, timeoutMs: FLAKY_BACK_MS, log: host.logPath });
    }
    t.deepEqual(
      steadyWhileFlakyDown,
      rounds.map((_, round) => ({ round, flakyState: 'down' })),
      "steady's Services converged in every round while flaky was dead",
    );

    await waitFor(() => flaky.state === 'ready', { what: 'flaky back for good', timeoutMs: FLAKY_BACK_MS, log: host.logPath });
    await waitConverged('flaky', "flaky's Services once it is back", FLAKY_BACK_MS);
    await waitConverged('steady', 'at the end');
    t.deepEqual(await cloudHoldings(), wanted(), 'each cloud holds exactly the load balancers of its live Services (no orphan)');
    t.deepEqual(wanted(), { steady: ['s-keep', 's-r1', 's-r4', 's-upd'], flaky: ['f-keep', 'f-r2'] });
    for (const name of ['s-upd', 's-r4', 'f-r2', 'f-keep']) t.is(await traffic(name), name, `traffic through ${name}`);
  },
);

test.serial("flaky hangs (SIGSTOP): steady's Nodes initialize and its Services reconcile meanwhile; flaky's catch up after SIGCONT", async (t) => {
  const { host } = setup!;
  const flaky = flakySupervisor();
  // Flaky's work first, so its calls hang (cloud-node, lifecycle and service workers of flaky) while steady's is done.
  // The instance first: a provider stopped while it holds its state's lock would keep the CLI out.
  const flakyId = await addInstance('flaky', `${scope.prefix}-flaky-n1`, '10.138.0.1');
  setup!.sidecar.signal('SIGSTOP');
  const flakyNode = await registerNode(`${scope.prefix}-flaky-n1`, flakyId);
  await create('flaky', 'f-stop', 9130);
  await setPort('f-keep', 9203);
  const steadyNode = await joinNode('steady', 'steady-n1', '10.137.0.1');
  await create('steady', 's-stop', 9131);
  await setPort('s-keep', 9201);
  await remove('steady', 's-r1');
  await waitFor(() => initialized(steadyNode), { what: `${steadyNode} initialized by steady while flaky hangs`, log: host.logPath });
  await waitConverged('steady', 'while flaky hangs');
  const whileStopped = {
    flakyNodeInitialized: await initialized(flakyNode),
    flakyServiceIngress: ingressIp(await readSvc('f-stop')) ?? '',
  };
  t.deepEqual(whileStopped, { flakyNodeInitialized: false, flakyServiceIngress: '' }, "flaky's objects wait for it (it is stopped)");
  t.is(await traffic('s-stop'), 's-stop', 'traffic through steady while flaky hangs');

  setup!.sidecar.signal('SIGCONT');
  await waitFor(() => flaky.state === 'ready', { what: 'flaky answering again', timeoutMs: FLAKY_BACK_MS, log: host.logPath });
  await waitFor(() => initialized(flakyNode), {
    what: `${flakyNode} initialized by flaky after SIGCONT`,
    timeoutMs: FLAKY_BACK_MS,
    log: host.logPath,
  });
  await waitConverged('flaky', 'after SIGCONT', FLAKY_BACK_MS);
  const n = await setup!.core.readNode({ name: flakyNode });
  t.is(n.metadata?.labels?.['topology.kubernetes.io/zone'], 'flaky-a', "flaky's Node initialized from flaky's cloud");
  t.deepEqual(await cloudHoldings(), wanted(), 'nothing orphaned on either side');
  t.is(await traffic('f-stop'), 'f-stop');
});

test.serial("flaky's cloud answers errors, then never answers: only flaky's Services wait; they converge once it answers again", async (t) => {
  const { host } = setup!;
  const knobs = (...args: string[]) => localcloud(stateOf('flaky'), 'knobs', ...args);
  // Errors: every flaky cloud call fails UNAVAILABLE (the provider itself is alive and ready).
  await knobs('set', 'failAll=true');
  const failing = await create('flaky', 'f-err', 9140);
  await create('steady', 's-err', 9141);
  await remove('steady', 's-stop');
  await waitConverged('steady', 'while flaky answers errors');
  await waitFor(async () => (await serviceEvents(setup!.core, failing)).some((e) => e.reason === 'SyncLoadBalancerFailed'), {
    what: 'a Warning on f-err',
    log: host.logPath,
  });
  // Hangs: flaky's load balancer calls wait (hold) until the knob is unset, each up to its deadline.
  // One write, so no call slips through between the two knobs.
  await knobs('set', 'failAll=false', 'hold=EnsureLoadBalancer,EnsureLoadBalancers,UpdateLoadBalancerHosts,EnsureLoadBalancerDeleted');
  await create('flaky', 'f-hold', 9142);
  await remove('flaky', 'f-keep');
  await create('steady', 's-hold', 9143);
  await setPort('s-err', 9241);
  await waitConverged('steady', "while flaky's calls hang");
  t.deepEqual(
    {
      fErr: ingressIp(await readSvc('f-err')) ?? '',
      fHold: ingressIp(await readSvc('f-hold')) ?? '',
      fKeepDeleting: !!(await readSvc('f-keep'))?.metadata?.deletionTimestamp,
    },
    { fErr: '', fHold: '', fKeepDeleting: true },
    "flaky's Services wait for its cloud",
  );
  t.is(await traffic('s-hold'), 's-hold', "traffic through steady while flaky's calls hang");

  await knobs('reset');
  await waitConverged('flaky', 'once its cloud answers', FLAKY_BACK_MS);
  t.deepEqual(await cloudHoldings(), wanted(), 'nothing orphaned on either side');
  t.is(await traffic('f-hold'), 'f-hold');
});
