/**
 * Load balancers of two providers in one host (issue 31 items 3 and 5),
 * against the real API server: two local clouds, "east" spawned by the host
 * (exec mode, the default provider) serving Services without a class and
 * class example.com/east, and "west" a sidecar the host dials serving only
 * example.com/west, each with its own ingress pool. Each Service gets its
 * load balancer from the cloud of its class (each cloud's own state), and
 * carries TCP traffic through it; a class nobody claims is left alone. West
 * SIGKILLed while east's Services churn: east's converge meanwhile, west's
 * converge once it is back, and neither cloud keeps an orphan. A host whose
 * two providers both serve Services without a class does not start.
 *
 * Scoping for the shared API server: namespace lb-two-clouds, nodes labelled
 * by testScope('lbtwo'), loopback addresses 127.0.101.0/24 (east's pool),
 * 127.0.102.0/24 (west's pool), 127.0.103.0/24 (nodes), cluster name lbtwo.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { NodePortBackends, tcpRequest } from '../../helpers/backends.js';
import {
  cloudLbs,
  createBackendNode,
  ensureNamespace,
  ingressIp,
  LB_FINALIZER,
  lbService,
  readService,
  serviceEvents,
  waitIngress,
} from '../../helpers/lb.js';
import { testScope } from '../../helpers/nodes.js';
import {
  execEntry,
  localCloudEnv,
  startProvidersHost,
  startTwoLocalClouds,
  writeProvidersFile,
  type TwoLocalClouds,
} from '../../helpers/two-clouds.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-two-clouds';
const CLUSTER = 'lbtwo';
const scope = testScope('lbtwo');
const NODE = { name: 'lbtwo-n1', ip: '127.0.103.1' };
const EAST = 'example.com/east';
const WEST = 'example.com/west';
const UNCLAIMED = 'example.com/nobody';
const MAKER = { provider: 'service.ccm.dev/load-balancer-provider', class: 'service.ccm.dev/load-balancer-class' };
const FLAGS = [
  `--cluster-name=${CLUSTER}`,
  '--controllers=service',
  `--watch-namespace=${NS}`,
  `--node-selector=${scope.selector}`,
  // The sweep runs per provider over its own listing: it must never take the other cloud's load balancers for orphans.
  '--lb-orphan-sweep-period=1s',
  '--lb-orphan-grace-period=2s',
];
/** East's environment besides its state and name: its ingress pool and class (and Services without a class). */
const EAST_ENV = { LOCALCLOUD_LB_CIDR: '127.0.101.0/24', LOCALCLOUD_LB_CLASSES: EAST };

interface Setup {
  core: CoreV1Api;
  clouds: TwoLocalClouds;
  backends: NodePortBackends;
}

let setup: Setup | undefined;

const stateOf = (cloud: 'east' | 'west') => setup!.clouds.stateOf(cloud);

test.before(async () => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE.name, NODE.ip, scope.labels);
  const clouds = await startTwoLocalClouds({
    tmpPrefix: 'ccm-lb-two-clouds-',
    flags: FLAGS,
    eastEnv: EAST_ENV,
    westEnv: { LOCALCLOUD_LB_CIDR: '127.0.102.0/24', LOCALCLOUD_LB_CLASSES: WEST, LOCALCLOUD_LB_CLASSES_ONLY: 'true' },
  });
  setup = { core, clouds, backends: new NodePortBackends(NODE.ip) };
});

test.after.always(async () => {
  if (!setup) return;
  await setup.clouds.stop();
  await setup.backends.closeAll();
  await setup.core.deleteNode({ name: NODE.name }).catch(() => undefined);
});

const readSvc = (name: string) => readService(setup!.core, NS, name);

/** Creates a LoadBalancer Service of `cls` (none when undefined) with a TCP backend named `name` on the node at its nodePort. */
async function create(name: string, port: number, cls?: string): Promise<V1Service> {
  const body = lbService(name, NS, [{ port }], cls ? { loadBalancerClass: cls } : {});
  const svc = await setup!.core.createNamespacedService({ namespace: NS, body });
  await setup!.backends.start(name, svc.spec!.ports![0]!.nodePort!);
  return svc;
}

/** Waits for an ingress IP and returns the Service as it is then. */
const ensured = (name: string, timeoutMs = 60_000) => waitIngress(setup!.core, NS, name, { timeoutMs, log: setup!.clouds.host.logPath });

/** A cloud's load balancers of this test's cluster: Service name → uid. */
async function cloudServices(cloud: 'east' | 'west'): Promise<Record<string, string>> {
  const lbs = (await cloudLbs(stateOf(cloud))).filter((l) => l.clusterName === CLUSTER);
  return Object.fromEntries(lbs.map((l) => [l.serviceName, l.serviceUid]).sort(([a], [b]) => a!.localeCompare(b!)));
}

/** Whether each cloud holds exactly the load balancers of the Services named (by their live uids). */
async function cloudsHold(want: { east: string[]; west: string[] }): Promise<boolean> {
  for (const cloud of ['east', 'west'] as const) {
    const held = await cloudServices(cloud);
    if (Object.keys(held).join() !== [...want[cloud]].sort().join()) return false;
    for (const [name, uid] of Object.entries(held)) if ((await readSvc(name))?.metadata?.uid !== uid) return false;
  }
  return true;
}

async function deleteSvc(name: string): Promise<void> {
  await setup!.core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(async () => (await readSvc(name)) === undefined, { what: `${NS}/${name} gone`, log: setup!.clouds.host.logPath });
}

test.serial('each class gets its load balancer from its own cloud and carries traffic; a class nobody claims is untouched', async (t) => {
  const unclaimed = await create('unclaimed', 8104, UNCLAIMED);
  const created = {
    plain: await create('plain', 8101),
    'in-east': await create('in-east', 8102, EAST),
    'in-west': await create('in-west', 8103, WEST),
  };
  const live = Object.fromEntries(await Promise.all(Object.keys(created).map(async (n) => [n, await ensured(n)] as const)));
  t.deepEqual(
    Object.fromEntries(
      Object.entries(live).map(([n, s]) => {
        const a = s.metadata?.annotations ?? {};
        return [
          n,
          { pool: ingressIp(s)!.split('.').slice(0, 3).join('.'), maker: [a[MAKER.provider], a[MAKER.class]].filter((v) => v !== undefined) },
        ];
      }),
    ),
    {
      // No record on a Service without a class, as upstream; classed ones name the provider by its name in the host.
      plain: { pool: '127.0.101', maker: [] },
      'in-east': { pool: '127.0.101', maker: ['east', EAST] },
      'in-west': { pool: '127.0.102', maker: ['west', WEST] },
    },
    "each ingress from its cloud's pool",
  );
  t.deepEqual(await cloudServices('east'), { 'in-east': created['in-east'].metadata!.uid!, plain: created.plain.metadata!.uid! });
  t.deepEqual(await cloudServices('west'), { 'in-west': created['in-west'].metadata!.uid! });
  for (const [name, svc] of Object.entries(live)) t.is(await tcpRequest(ingressIp(svc)!, svc.spec!.ports![0]!.port), name, `traffic to ${name}`);

  // By the time three later Services were ensured, the unclaimed one's add was handled long ago.
  const u = await readSvc('unclaimed');
  t.deepEqual(
    {
      finalizers: u?.metadata?.finalizers ?? [],
      ingress: ingressIp(u) ?? '',
      events: (await serviceEvents(setup!.core, unclaimed)).map((e) => e.reason),
    },
    { finalizers: [], ingress: '', events: [] },
    'no finalizer, status or Event on a class nobody claims',
  );
});

test.serial("west SIGKILLed while east's Services churn: east's converge meanwhile, west's once it is back, nothing orphaned", async (t) => {
  const { host } = setup!.clouds;
  const west = host.providers.get('west')!.supervisor;
  setup!.clouds.west.signal('SIGKILL');
  await waitFor(() => west.state !== 'ready', { what: 'west not ready', log: host.logPath });

  // West's Services change while it is down: one created, one deleted (its finalizer holds it until west deletes the load balancer).
  await create('west-new', 8105, WEST);
  await setup!.core.deleteNamespacedService({ name: 'in-west', namespace: NS });
  // East's churn: created, deleted, recreated under a name, while west is down.
  for (const [i, name] of ['churn-1', 'churn-2', 'churn-3'].entries()) await create(name, 8110 + i, i === 1 ? EAST : undefined);
  await deleteSvc('churn-2');
  await create('churn-2', 8113, EAST);
  await deleteSvc('plain');
  for (const name of ['churn-1', 'churn-2', 'churn-3']) await ensured(name);
  await waitFor(() => cloudsHold({ east: ['in-east', 'churn-1', 'churn-2', 'churn-3'], west: ['in-west'] }), {
    what: "east converged while west is down (west's cloud as it was)",
    log: host.logPath,
  });
  t.not(west.state, 'ready', 'east converged while west was still down');
  t.truthy((await readSvc('in-west'))?.metadata?.deletionTimestamp, "in-west waits for west's cleanup");
  t.deepEqual((await readSvc('west-new'))?.metadata?.finalizers ?? [], [LB_FINALIZER], 'west-new has its finalizer before any cloud call');

  // West comes back (as the kubelet restarts its container): its Services converge, nothing orphaned on either side.
  await setup!.clouds.restartWest();
  await waitFor(() => west.state === 'ready', { what: 'west redialled', timeoutMs: 120_000, log: host.logPath });
  const westNew = await ensured('west-new', 120_000);
  await waitFor(async () => (await readSvc('in-west')) === undefined, { what: 'in-west deleted by west', timeoutMs: 120_000, log: host.logPath });
  await waitFor(() => cloudsHold({ east: ['in-east', 'churn-1', 'churn-2', 'churn-3'], west: ['west-new'] }), {
    what: 'both clouds converged',
    log: host.logPath,
  });
  t.is(ingressIp(westNew)!.split('.').slice(0, 3).join('.'), '127.0.102');
  t.is(await tcpRequest(ingressIp(westNew)!, 8105), 'west-new', 'traffic through west after its restart');
  const churn2 = await readSvc('churn-2');
  t.is(await tcpRequest(ingressIp(churn2)!, 8113), 'churn-2', 'traffic through east to the recreated Service');
});

test('a host whose two providers both serve Services without a class does not start, naming the conflict', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-two-clouds-bad-'));
  const providersFile = await writeProvidersFile(dir, [
    execEntry('east', localCloudEnv(dir, 'east', EAST_ENV)),
    execEntry('south', localCloudEnv(dir, 'south', { LOCALCLOUD_LB_CLASSES: EAST })),
  ]);
  // A host that started anyway (the guard broken) is stopped, so the test fails rather than hangs.
  const err = await t.throwsAsync(startProvidersHost(dir, providersFile, FLAGS).then(async (h) => (await h.stop(), h)));
  t.is(
    err?.message,
    "the load-balancer providers' class declarations conflict: " +
      `load balancer class "${EAST}" is declared by several providers (east, south); give each class one provider; ` +
      'several providers serve Services without a loadBalancerClass (east, south); at most one may: set load_balancer_classes_only on the others',
  );
});
