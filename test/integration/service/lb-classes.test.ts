/**
 * Load balancers by class (issue 31 item 3) against the real API server and
 * the local cloud as a real plugin process whose load balancers carry TCP
 * traffic. The local cloud declares class example.com/a and (by default)
 * Services without a class (LOCALCLOUD_LB_CLASSES): the host serves those two
 * and leaves every other class alone, as upstream leaves every classed
 * Service. A Service that leaves class a (through a type change, the only way
 * the API allows) has its load balancer deleted by the provider that made it,
 * also when no host saw the change (the maker recorded on the Service); and
 * the orphan sweep never deletes the load balancer of a Service that merely
 * has another class.
 *
 * Scoping for the shared API server: namespace lb-classes, nodes labelled
 * lbtest=classes, loopback addresses 127.0.92.0/24 (ingress pool) and
 * 127.0.93.0/24 (nodes), cluster name classes.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { NodePortBackends, tcpRequest } from '../../helpers/backends.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { patchService } from '../../helpers/kube-patch.js';
import {
  cloudLbs,
  createBackendNode,
  dropFinalizers,
  ensureNamespace,
  ingressIp,
  LB_FINALIZER,
  lbService,
  readService,
  serviceEvents,
  waitIngress,
} from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-classes';
const NODE = { name: 'lbcls-a', ip: '127.0.93.1' };
const CLASS_A = 'example.com/a';
const UNCLAIMED = 'example.com/unclaimed';
const MAKER = { provider: 'service.ccm.dev/load-balancer-provider', class: 'service.ccm.dev/load-balancer-class' };
const FLAGS = [
  '--controllers=service',
  '--cluster-name=classes',
  `--watch-namespace=${NS}`,
  '--node-selector=lbtest=classes',
  '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.92.0/24',
  `--plugin-env=LOCALCLOUD_LB_CLASSES=${CLASS_A}`,
  '--lb-orphan-sweep-period=1s',
  '--lb-orphan-grace-period=2s',
];

interface Ctx {
  dir: string;
  cloud: string;
  /** The running host; an object of its own, as AVA gives each test a shallow copy of the context. */
  run: { host?: TestHost };
  core: CoreV1Api;
  backends: NodePortBackends;
}
const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-classes-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE.name, NODE.ip, { lbtest: 'classes' });
  t.context = { dir, cloud: join(dir, 'cloud'), run: { host: await startTestHost(dir, FLAGS) }, core, backends: new NodePortBackends(NODE.ip) };
});

test.after.always(async (t) => {
  const { run, core, backends } = t.context;
  await run?.host?.stop();
  await backends?.closeAll();
  await core?.deleteNode({ name: NODE.name }).catch(() => undefined);
});

async function restartHost(t: { context: Ctx }, between: () => Promise<void>): Promise<TestHost> {
  const run = t.context.run;
  await run.host?.stop();
  run.host = undefined;
  await between();
  run.host = await startTestHost(t.context.dir, FLAGS);
  return run.host;
}

const readSvc = (core: CoreV1Api, name: string) => readService(core, NS, name);

/** Creates a LoadBalancer Service of `cls` (none when undefined) with a TCP backend named `name` on the node at its nodePort. */
async function create(t: { context: Ctx }, name: string, port: number, cls?: string, finalizers?: string[]): Promise<V1Service> {
  const body = lbService(name, NS, [{ port }], cls ? { loadBalancerClass: cls } : {});
  if (finalizers) body.metadata!.finalizers = finalizers;
  const svc = await t.context.core.createNamespacedService({ namespace: NS, body });
  await t.context.backends.start(name, svc.spec!.ports![0]!.nodePort!);
  return svc;
}

/** Waits for an ingress IP and returns the Service as it is then. */
const ensured = (core: CoreV1Api, name: string) => waitIngress(core, NS, name);

/** The cloud's load balancers of this test's cluster name, by Service uid. */
async function cloudUids(cloud: string): Promise<Set<string>> {
  return new Set((await cloudLbs(cloud)).filter((l) => l.clusterName === 'classes').map((l) => l.serviceUid));
}

/** Sum of ccm_orphan_load_balancers_total{outcome} in a host's registry. */
async function orphanCount(host: TestHost, outcome: string): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_orphan_load_balancers_total')?.get();
  return (m?.values ?? []).filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
}

/** What the host wrote on a Service: finalizers, maker annotations, ingress, event reasons. */
async function footprint(core: CoreV1Api, svc: V1Service) {
  const live = await readSvc(core, svc.metadata!.name!);
  const a = live?.metadata?.annotations ?? {};
  return {
    finalizers: live?.metadata?.finalizers ?? [],
    maker: [a[MAKER.provider], a[MAKER.class]].filter((v) => v !== undefined),
    ingress: ingressIp(live) ?? '',
    events: (await serviceEvents(core, svc)).map((e) => e.reason).sort(),
  };
}

test.serial(
  'class a and no class get load balancers that carry traffic; an unclaimed class, and another controller’s finalizer on it, are left alone',
  async (t) => {
    const { core, cloud } = t.context;
    // The unclaimed ones first: by the time the later Services are ensured, their adds were handled.
    // An update of the unclaimed one is not picked up either.
    const unclaimed = await create(t, 'unclaimed', 8081, UNCLAIMED);
    const foreign = await create(t, 'foreign-fin', 8082, UNCLAIMED, [LB_FINALIZER]);
    await patchService(core, NS, 'unclaimed', { metadata: { annotations: { touched: 'yes' } } }, 'merge');
    await create(t, 'plain', 8083);
    await create(t, 'classa', 8084, CLASS_A);
    const plain = await ensured(core, 'plain');
    const classa = await ensured(core, 'classa');
    await waitFor(async () => (await serviceEvents(core, classa)).some((e) => e.reason === 'EnsuredLoadBalancer'), { what: 'classa ensured event' });
    await waitFor(async () => (await serviceEvents(core, plain)).some((e) => e.reason === 'EnsuredLoadBalancer'), { what: 'plain ensured event' });

    t.is(await tcpRequest(ingressIp(plain)!, 8083), 'plain', 'traffic through the unclassed Service’s load balancer');
    t.is(await tcpRequest(ingressIp(classa)!, 8084), 'classa', 'traffic through the class-a Service’s load balancer');
    t.deepEqual(
      {
        plain: await footprint(core, plain),
        classa: await footprint(core, classa),
        unclaimed: await footprint(core, unclaimed),
        foreign: await footprint(core, foreign),
      },
      {
        // As upstream: no record on a Service without a class.
        plain: { finalizers: [LB_FINALIZER], maker: [], ingress: ingressIp(plain)!, events: ['EnsuredLoadBalancer', 'EnsuringLoadBalancer'] },
        classa: {
          finalizers: [LB_FINALIZER],
          maker: ['local', CLASS_A],
          ingress: ingressIp(classa)!,
          events: ['EnsuredLoadBalancer', 'EnsuringLoadBalancer'],
        },
        unclaimed: { finalizers: [], maker: [], ingress: '', events: [] },
        foreign: { finalizers: [LB_FINALIZER], maker: [], ingress: '', events: [] },
      },
    );
    const uids = await cloudUids(cloud);
    t.deepEqual(
      [plain, classa, unclaimed, foreign].map((s) => uids.has(s.metadata!.uid!)),
      [true, true, false, false],
      'load balancers for the served Services only',
    );
  },
);

test.serial('class a → ClusterIP → unclaimed class while the host runs: its maker deletes the load balancer, nothing else is deleted', async (t) => {
  const { core, cloud } = t.context;
  await create(t, 'switch', 8085, CLASS_A);
  const before = await ensured(core, 'switch');
  const ip = ingressIp(before)!;
  t.is(await tcpRequest(ip, 8085), 'switch');
  const others = [...(await cloudUids(cloud))].filter((u) => u !== before.metadata!.uid);

  await patchService(core, NS, 'switch', { spec: { type: 'ClusterIP', loadBalancerClass: null } }, 'merge');
  await patchService(core, NS, 'switch', { spec: { type: 'LoadBalancer', loadBalancerClass: UNCLAIMED } }, 'merge');
  await waitFor(async () => !(await cloudUids(cloud)).has(before.metadata!.uid!), { what: 'the class-a load balancer of switch deleted' });
  const after = await waitFor(
    async () => {
      const s = await readSvc(core, 'switch');
      return s && !(s.metadata?.finalizers ?? []).includes(LB_FINALIZER) ? s : undefined;
    },
    { what: 'the finalizer of switch removed' },
  );
  t.is(after.spec?.loadBalancerClass, UNCLAIMED);
  t.deepEqual(
    Object.keys(after.metadata?.annotations ?? {}).filter((k) => k.startsWith('service.ccm.dev/')),
    [],
    'the maker record goes with the finalizer',
  );
  await t.throwsAsync(tcpRequest(ip, 8085), undefined, 'its old address no longer answers');
  const still = await cloudUids(cloud);
  t.deepEqual(
    others.filter((u) => !still.has(u)),
    [],
    'every other load balancer is still there',
  );
  const events = (await serviceEvents(core, after)).map((e) => e.reason);
  t.true(events.includes('DeletedLoadBalancer'), 'the Service is told its load balancer was deleted');
});

test.serial(
  'class a → unclaimed class while no host runs: the maker recorded on the Service deletes the load balancer after a restart',
  async (t) => {
    const { core, cloud } = t.context;
    await create(t, 'offline', 8086, CLASS_A);
    const before = await ensured(core, 'offline');
    const others = [...(await cloudUids(cloud))].filter((u) => u !== before.metadata!.uid);

    const host = await restartHost(t, async () => {
      await patchService(core, NS, 'offline', { spec: { type: 'ClusterIP', loadBalancerClass: null } }, 'merge');
      await patchService(core, NS, 'offline', { spec: { type: 'LoadBalancer', loadBalancerClass: UNCLAIMED } }, 'merge');
    });
    // The host sees only an unclaimed-class Service with our finalizer: its record says who made the load balancer.
    await waitFor(async () => !(await cloudUids(cloud)).has(before.metadata!.uid!), {
      what: `the class-a load balancer of offline deleted; see ${host.logPath}`,
    });
    await waitFor(async () => !((await readSvc(core, 'offline'))?.metadata?.finalizers ?? []).includes(LB_FINALIZER), {
      what: 'the finalizer of offline removed',
    });
    const still = await cloudUids(cloud);
    t.deepEqual(
      others.filter((u) => !still.has(u)),
      [],
      'every other load balancer is still there',
    );
    const foreign = await readSvc(core, 'foreign-fin');
    t.deepEqual(foreign?.metadata?.finalizers, [LB_FINALIZER], 'another controller’s finalizer on an unclaimed class is still not touched');
  },
);

test.serial('the orphan sweep never deletes the load balancer of a Service that merely has another class', async (t) => {
  const { core, cloud } = t.context;
  // Made in this order, so the sweep lists (and would delete) the class-switched one first.
  await create(t, 'reclassed', 8087, CLASS_A);
  await create(t, 'gone', 8088, CLASS_A);
  const reclassed = await ensured(core, 'reclassed');
  const gone = await ensured(core, 'gone');

  // While no host runs: finalizers removed by hand; one Service changes class, one is deleted (the positive control).
  const host = await restartHost(t, async () => {
    await dropFinalizers(core, reclassed);
    await patchService(core, NS, 'reclassed', { spec: { type: 'ClusterIP', loadBalancerClass: null } }, 'merge');
    await patchService(core, NS, 'reclassed', { spec: { type: 'LoadBalancer', loadBalancerClass: UNCLAIMED } }, 'merge');
    await dropFinalizers(core, gone);
    await core.deleteNamespacedService({ name: 'gone', namespace: NS });
  });
  await waitFor(async () => !(await cloudUids(cloud)).has(gone.metadata!.uid!), {
    what: `the orphan of the deleted Service swept; see ${host.logPath}`,
    timeoutMs: 30_000,
  });
  t.true((await cloudUids(cloud)).has(reclassed.metadata!.uid!), 'the load balancer of the Service that changed class is kept');
  t.is(await orphanCount(host, 'deleted'), 1, 'one orphan deleted: the deleted Service’s');
  const live = await readSvc(core, 'reclassed');
  t.deepEqual(
    { finalizers: live?.metadata?.finalizers ?? [], class: live?.spec?.loadBalancerClass },
    { finalizers: [], class: UNCLAIMED },
    'and its Service is not touched',
  );
});
