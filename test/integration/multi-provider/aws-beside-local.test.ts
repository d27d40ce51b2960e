/**
 * A bridged real provider beside the local cloud in one host (issue 31, test
 * scenario 3), against the real API server: --providers-config names
 * k8s.io/cloud-provider-aws, unmodified, through the Go bridge
 * (plugins/aws-bridge) against moto on 127.0.0.1 (test/helpers/moto.ts, as
 * test/integration/providers/aws-bridge.test.ts runs it), and the local
 * cloud. Both are spawned by the host (exec mode).
 *
 * What each declares: AWS the Nodes whose providerID starts with aws://
 * (the bridge's default), the Nodes labelled ccm-test-cloud=aws that have
 * no providerID yet (CCM_BRIDGE_NODE_SELECTOR: AWS's kubelet registers by
 * private DNS name) and Services without a class plus example.com/aws-elb
 * (CCM_BRIDGE_LB_CLASSES); the local cloud its local:// Nodes, those
 * labelled ccm-test-cloud=local, and only example.com/local.
 *
 *   - each provider's Nodes are initialized by it (by providerID and by
 *     selector), from its own cloud; Nodes neither owns (another cloud's
 *     providerID; no providerID and another label, named like a real AWS
 *     instance) stay untouched through many lifecycle passes;
 *   - Services without a class and of example.com/aws-elb get classic ELBs in
 *     moto over the AWS instances only; the example.com/local Service gets a
 *     loopback load balancer in the local cloud over the local Nodes only,
 *     carrying TCP traffic; a class nobody claims is left alone;
 *   - an AWS instance terminated: AWS's lifecycle deletes its Node and the
 *     ELBs drop it, the local cloud's load balancer unchanged;
 *   - deleting the Services deletes each load balancer in its own cloud only.
 *
 * Scoping for the shared API server: namespace and cluster name `prefix`,
 * Nodes labelled by testScope, moto's VPC 10.50.0.0/16, the local cloud's
 * pool 127.0.104.0/24 and Nodes 127.0.105.0/24.
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node, type V1Service } from '@kubernetes/client-node';
import { EventComponents } from '../../../host/names.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTcpBackend, tcpRequest, type Backend } from '../../helpers/backends.js';
import { cloudLbs, ensureNamespace, LB_FINALIZER, lbService, serviceEvents } from '../../helpers/lb.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN, localcloud } from '../../helpers/localcloud.js';
import { awsCloudConfig, MOTO_CLIENT_ENV, startMoto, type Moto, seedCluster, SEED_DEFAULTS, type MotoInstance } from '../../helpers/moto.js';
import { createTestNode, deleteScopedNodes, hasTaint, nodeEvents, readNodeOrUndefined, testScope, UNINITIALIZED_TAINT } from '../../helpers/nodes.js';
import { providerKubeconfigFile } from '../../helpers/provider-identity.js';
import { awsCloudBinary } from '../../helpers/providers.js';
import { startProvidersHost, type ProvidersHost } from '../../helpers/two-clouds.js';
import { waitFor } from '../../helpers/wait.js';

const REGION = 'us-east-1';
const AZ = SEED_DEFAULTS.az;
const INSTANCE_TYPE = SEED_DEFAULTS.type;
const CLOUD_LABEL = 'ccm-test-cloud';
const AWS_CLASS = 'example.com/aws-elb';
const LOCAL_CLASS = 'example.com/local';
const UNCLAIMED = 'example.com/nobody';
const MAKER = { provider: 'service.ccm.dev/load-balancer-provider', class: 'service.ccm.dev/load-balancer-class' };
const SHUTDOWN_TAINT = 'node.cloudprovider.kubernetes.io/shutdown';
const UNINIT = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };
const OUR_COMPONENTS = new Set(Object.values(EventComponents));
/** The AWS provider's own client: what its Initialize and node informer need (as aws-bridge.test.ts), under a name of this file's. */
const PROVIDER_SA = { namespace: 'kube-system', name: 'ccm-test-aws-beside-local' } as const;

type Instance = MotoInstance;

interface MotoElb {
  name: string;
  instances: string[];
  tags: Record<string, string>;
}

interface Ctx {
  prefix: string;
  dir: string;
  core: CoreV1Api;
  moto: Moto;
  /** AWS instances: a (Node by providerID), b (Node by providerID, terminated later), d (Node by name), e (named like a Node nobody owns). */
  aws: Record<'a' | 'b' | 'd' | 'e', Instance>;
  /** Local cloud instance ids by Node name. */
  local: Record<string, string>;
  scope: ReturnType<typeof testScope>;
  host: ProvidersHost;
  backends: Backend[];
}
const test = anyTest as TestFn<Ctx>;

const localState = (t: { context: Ctx }) => join(t.context.dir, 'local');

/** The host's flags besides those startProvidersHost sets; the AWS bridge and moto may take longer to start than its 20 s. */
function hostFlags(prefix: string, selector: string): string[] {
  return [
    `--cluster-name=${prefix}`,
    '--controllers=cloud-node,cloud-node-lifecycle,service',
    '--node-monitor-period=2s',
    '--node-status-update-frequency=2s',
    `--node-selector=${selector}`,
    `--watch-namespace=${prefix}`,
    '--plugin-start-timeout=60s',
  ];
}

test.before(async (t) => {
  const scope = testScope('awsloc');
  const prefix = scope.prefix;
  const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const moto = await startMoto(dir, REGION);
  t.context = { prefix, dir, core, moto, scope, backends: [] } as unknown as Ctx;
  const seeded = await seedCluster(moto, { cluster: prefix, instances: 4, net: 50 });
  const [a, b, d, e] = seeded.instances as [Instance, Instance, Instance, Instance];
  t.context.aws = { a, b, d, e };
  const cloudConfig = join(dir, 'aws.conf');
  await writeFile(cloudConfig, awsCloudConfig(moto, seeded, prefix));
  const kubeconfig = await providerKubeconfigFile(await testKubeConfig(), dir, PROVIDER_SA, 'ccm-test:aws-beside-local', [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  ]);
  const local: Record<string, string> = {};
  for (const [name, address] of [
    [`${prefix}-local-id`, '127.0.105.1'],
    [`${prefix}-local-sel`, '127.0.105.2'],
  ] as const) {
    const out = await localcloud(
      join(dir, 'local'),
      'instance',
      'add',
      name,
      '--zone',
      'local-a',
      '--type',
      'local.large',
      '--address',
      address,
      '-o',
      'json',
    );
    local[name] = (JSON.parse(out) as { id: string }[])[0]!.id;
  }
  t.context.local = local;
  const env = (vars: Record<string, string>) => Object.entries(vars).map(([k, v]) => `${k}=${v}`);
  // JSON is YAML: the file as the operator would write it, one provider per entry.
  const providers = {
    providers: [
      {
        name: 'aws',
        pluginPath: await awsCloudBinary(),
        // The host's cloud config is the provider's file (bridge.CloudConfigFile checks they agree).
        cloudConfig,
        pluginEnv: env({
          CLOUD_CONFIG: cloudConfig,
          KUBECONFIG: kubeconfig,
          ...MOTO_CLIENT_ENV,
          CCM_BRIDGE_NODE_SELECTOR: `${CLOUD_LABEL}=aws`,
          CCM_BRIDGE_LB_CLASSES: AWS_CLASS,
        }),
      },
      {
        name: 'local',
        pluginPath: LOCAL_PLUGIN,
        pluginEnv: [
          ALLOW_SIMULATION,
          ...env({
            LOCALCLOUD_STATE_DIR: join(dir, 'local'),
            LOCALCLOUD_NODE_SELECTOR: `${CLOUD_LABEL}=local`,
            LOCALCLOUD_LB_CIDR: '127.0.104.0/24',
            LOCALCLOUD_LB_CLASSES: LOCAL_CLASS,
            LOCALCLOUD_LB_CLASSES_ONLY: 'true',
          }),
        ],
      },
    ],
  };
  const providersFile = join(dir, 'providers.yaml');
  await writeFile(providersFile, JSON.stringify(providers, undefined, 2));
  await ensureNamespace(core, prefix);
  t.context.host = await startProvidersHost(dir, providersFile, hostFlags(prefix, scope.selector));
});

test.after.always(async (t) => {
  const { host, core, scope, prefix, moto, backends } = t.context;
  await host?.stop();
  await Promise.all((backends ?? []).map((b) => b.close()));
  if (core) {
    await deleteScopedNodes(core, scope.selector);
    await core.deleteNamespace({ name: prefix }).catch(() => undefined);
  }
  await moto?.stop();
});

/** What this host could have changed on a Node. */
function footprint(n: V1Node) {
  return {
    uninitialized: hasTaint(n, UNINITIALIZED_TAINT),
    shutdown: hasTaint(n, SHUTDOWN_TAINT),
    providerID: n.spec?.providerID,
    labels: n.metadata?.labels,
    addresses: n.status?.addresses,
  };
}

/** The initialized Node as its provider's cloud describes it. */
function initializedAs(n: V1Node) {
  return {
    providerID: n.spec?.providerID,
    zone: n.metadata?.labels?.['topology.kubernetes.io/zone'],
    instanceType: n.metadata?.labels?.['node.kubernetes.io/instance-type'],
    internalIP: n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address,
  };
}

/** Completed lifecycle passes, of both providers. */
async function lifecyclePasses(t: { context: Ctx }): Promise<number> {
  const m = await t.context.host.metrics.registry.getSingleMetric('ccm_node_lifecycle_pass_duration_seconds')!.get();
  return m.values.find((v) => (v as { metricName?: string }).metricName === 'ccm_node_lifecycle_pass_duration_seconds_count')?.value ?? 0;
}

function waitInitialized(t: { context: Ctx }, name: string, by: string): Promise<V1Node> {
  return waitFor(
    async () => {
      const n = await t.context.core.readNode({ name });
      return hasTaint(n, UNINITIALIZED_TAINT) || !n.status?.addresses?.some((a) => a.type === 'InternalIP') ? undefined : n;
    },
    { what: `node ${name} initialized by ${by}`, timeoutMs: 120_000, log: t.context.host.logPath },
  );
}

/** The Nodes of this file, by role. */
function nodeNames(t: { context: Ctx }) {
  const { prefix, aws } = t.context;
  return {
    awsId: `${prefix}-aws-id`,
    awsGone: `${prefix}-aws-gone`,
    /** AWS names a Node by its instance's private DNS name. */
    awsSel: aws.d.privateDns,
    localId: `${prefix}-local-id`,
    localSel: `${prefix}-local-sel`,
    /** Another cloud's providerID. */
    nobodyId: `${prefix}-nobody-id`,
    /** No providerID, labelled for neither cloud, named like a running AWS instance: only ownership keeps AWS from initializing it. */
    nobodySel: aws.e.privateDns,
  };
}

test.serial("each provider's Nodes are initialized by it, from its own cloud; Nodes neither owns stay untouched", async (t) => {
  const { core, scope, aws, local } = t.context;
  const n = nodeNames(t);
  const labels = (cloud?: string) => ({ ...scope.labels, ...(cloud ? { [CLOUD_LABEL]: cloud } : {}) });
  const awsWant = (i: Instance) => ({ providerID: `aws:///${AZ}/${i.id}`, zone: AZ, instanceType: INSTANCE_TYPE, internalIP: i.privateIp });
  const localWant = (name: string, ip: string) => ({
    providerID: `local://${local[name]}`,
    zone: 'local-a',
    instanceType: 'local.large',
    internalIP: ip,
  });
  // AWS's Nodes as its kubelets register them (no Ready condition: the lifecycle controller checks every one of them).
  const cases: { node: string; create: Parameters<typeof createTestNode>[2]; by: string; want: ReturnType<typeof initializedAs> }[] = [
    { node: n.awsId, create: { labels: labels(), taints: [UNINIT], providerId: `aws:///${AZ}/${aws.a.id}` }, by: 'aws', want: awsWant(aws.a) },
    { node: n.awsGone, create: { labels: labels(), taints: [UNINIT], providerId: `aws:///${AZ}/${aws.b.id}` }, by: 'aws', want: awsWant(aws.b) },
    // No providerID: claimed by AWS's declared selector, found by AWS by its private DNS name.
    { node: n.awsSel, create: { labels: labels('aws'), taints: [UNINIT] }, by: 'aws', want: awsWant(aws.d) },
    {
      node: n.localId,
      create: { labels: labels(), ready: true, taints: [UNINIT], providerId: `local://${local[n.localId]}` },
      by: 'local',
      want: localWant(n.localId, '127.0.105.1'),
    },
    { node: n.localSel, create: { labels: labels('local'), ready: true, taints: [UNINIT] }, by: 'local', want: localWant(n.localSel, '127.0.105.2') },
  ];
  // Nobody's, NotReady with the uninitialized taint: a Node of a third cloud, and one named like AWS instance e but labelled for neither.
  await createTestNode(core, n.nobodyId, { labels: labels('aws'), ready: false, taints: [UNINIT], providerId: 'gce://project/us-central1-a/vm-1' });
  await createTestNode(core, n.nobodySel, { labels: labels('onprem'), ready: false, taints: [UNINIT] });
  const before = new Map<string, ReturnType<typeof footprint>>();
  for (const name of [n.nobodyId, n.nobodySel]) before.set(name, footprint(await core.readNode({ name })));
  for (const c of cases) await createTestNode(core, c.node, c.create);

  for (const c of cases) {
    const node = await waitInitialized(t, c.node, c.by);
    // A Node without a providerID gets its owner's: the selector chose the cloud, which found the instance by name.
    t.deepEqual(initializedAs(node), c.want, `${c.node}: initialized from ${c.by}'s cloud`);
  }

  const passes = await lifecyclePasses(t);
  await waitFor(async () => (await lifecyclePasses(t)) >= passes + 10, {
    what: 'ten more lifecycle passes (both providers)',
    log: t.context.host.logPath,
  });
  for (const name of [n.nobodyId, n.nobodySel]) {
    const node = await readNodeOrUndefined(core, name);
    t.truthy(node, `${name} is not deleted`);
    if (!node) continue;
    t.deepEqual(footprint(node), before.get(name), `${name}: no taint, providerID, label or address change`);
    const ours = (await nodeEvents(core, name)).filter((e) => OUR_COMPONENTS.has(e.source?.component ?? e.reportingComponent ?? ''));
    t.deepEqual(
      ours.map((e) => `${e.reason}: ${e.message}`),
      [],
      `${name}: no event from this host`,
    );
  }
});

async function readSvc(t: { context: Ctx }, name: string): Promise<V1Service | undefined> {
  return t.context.core.readNamespacedService({ name, namespace: t.context.prefix }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

const ingressOf = (s: V1Service | undefined) => s?.status?.loadBalancer?.ingress?.[0];
/** The classic ELB cloud-provider-aws names for a Service (GetLoadBalancerName: "a" + uid without dashes, 32 characters). */
const elbName = (s: V1Service) => `a${s.metadata!.uid!.replaceAll('-', '')}`.slice(0, 32);

async function elbs(t: { context: Ctx }): Promise<MotoElb[]> {
  return (await t.context.moto.ctl<{ loadBalancers: MotoElb[] }>('describe-elbs')).loadBalancers;
}

/** Each cloud's load balancers: moto's ELBs by name → their instances, the local cloud's by Service name → their backend Nodes. */
async function clouds(t: { context: Ctx }): Promise<{ aws: Record<string, string[]>; local: Record<string, string[]> }> {
  const sorted = (xs: string[]) => [...xs].sort();
  return {
    aws: Object.fromEntries((await elbs(t)).map((l) => [l.name, sorted(l.instances)])),
    local: Object.fromEntries(
      (await cloudLbs(localState(t)))
        .filter((l) => l.clusterName === t.context.prefix)
        .map((l) => [l.serviceName, sorted(l.backends.map((b) => b.nodeName))]),
    ),
  };
}

type CloudsState = Awaited<ReturnType<typeof clouds>>;

/** Sorted keys, so that two states compare whatever order each cloud lists its load balancers in. */
const canonical = (c: CloudsState) => JSON.stringify({ aws: Object.entries(c.aws).sort(), local: Object.entries(c.local).sort() });

/** Waits until the clouds hold `want`; on a timeout, compares what they held last, so the failure shows the difference. */
async function cloudsConverge(t: ExecutionContext<Ctx>, want: CloudsState, what: string): Promise<void> {
  let last: CloudsState | undefined;
  try {
    await waitFor(async () => canonical((last = await clouds(t))) === canonical(want), { what, timeoutMs: 120_000, log: t.context.host.logPath });
  } catch (err) {
    if (last) t.deepEqual(last, want, what);
    throw err;
  }
}

async function ensured(t: { context: Ctx }, name: string): Promise<V1Service> {
  return waitFor(
    async () => {
      const s = await readSvc(t, name);
      const i = ingressOf(s);
      return i?.ip || i?.hostname ? s : undefined;
    },
    { what: `ingress on ${t.context.prefix}/${name}`, timeoutMs: 180_000, log: t.context.host.logPath },
  );
}

test.serial(
  "each class gets its load balancer from its own cloud, over that cloud's Nodes; the local one carries traffic; an unclaimed class is untouched",
  async (t) => {
    const { core, prefix, aws } = t.context;
    const n = nodeNames(t);
    const create = async (name: string, port: number, cls?: string) =>
      core.createNamespacedService({ namespace: prefix, body: lbService(name, prefix, [{ port }], cls ? { loadBalancerClass: cls } : {}) });
    const unclaimed = await create('unclaimed', 8204, UNCLAIMED);
    const created = {
      plain: await create('plain', 8201),
      'aws-classed': await create('aws-classed', 8202, AWS_CLASS),
      'local-lb': await create('local-lb', 8203, LOCAL_CLASS),
    };
    for (const node of [n.localId, n.localSel]) {
      const ip = node === n.localId ? '127.0.105.1' : '127.0.105.2';
      t.context.backends.push(await startTcpBackend(node, ip, created['local-lb'].spec!.ports![0]!.nodePort!));
    }
    const live = Object.fromEntries(await Promise.all(Object.keys(created).map(async (name) => [name, await ensured(t, name)] as const)));

    const awsInstances = [aws.a.id, aws.b.id, aws.d.id].sort();
    const localNodes = [n.localId, n.localSel].sort();
    // The backends converge after the first ensure (Nodes initialized meanwhile): wait for the final sets, then compare whole.
    const want = {
      aws: { [elbName(live.plain!)]: awsInstances, [elbName(live['aws-classed']!)]: awsInstances },
      local: { 'local-lb': localNodes },
    };
    await cloudsConverge(t, want, "ELBs in moto over the AWS instances only; the local cloud's over its own Nodes only");
    t.is(canonical(await clouds(t)), canonical(want), 'and they stay so');

    const byName = await elbs(t);
    t.deepEqual(
      Object.fromEntries(
        Object.entries(live).map(([name, s]) => {
          const a = s.metadata?.annotations ?? {};
          const ingress = ingressOf(s)!;
          return [
            name,
            {
              ingress: ingress.hostname
                ? byName.find((l) => l.name === elbName(s))
                  ? 'the ELB'
                  : ingress.hostname
                : ingress.ip!.split('.').slice(0, 3).join('.'),
              maker: [a[MAKER.provider], a[MAKER.class]].filter((v) => v !== undefined),
              finalizers: s.metadata?.finalizers,
            },
          ];
        }),
      ),
      {
        // No record on a Service without a class, as upstream; classed ones name their provider by its name in the host.
        plain: { ingress: 'the ELB', maker: [], finalizers: [LB_FINALIZER] },
        'aws-classed': { ingress: 'the ELB', maker: ['aws', AWS_CLASS], finalizers: [LB_FINALIZER] },
        'local-lb': { ingress: '127.0.104', maker: ['local', LOCAL_CLASS], finalizers: [LB_FINALIZER] },
      },
      'each ingress from its cloud',
    );
    for (const l of byName) t.is(l.tags[`kubernetes.io/cluster/${prefix}`], 'owned', `${l.name}: tagged for this cluster`);
    const ip = ingressOf(live['local-lb'])!.ip!;
    // Two requests: round-robin over both local Nodes, each answering with its Node's name.
    t.deepEqual(
      [await tcpRequest(ip, 8203), await tcpRequest(ip, 8203)].sort(),
      localNodes,
      'TCP traffic through the local load balancer to both local Nodes',
    );

    const u = await readSvc(t, 'unclaimed');
    t.deepEqual(
      { finalizers: u?.metadata?.finalizers ?? [], ingress: ingressOf(u) ?? {}, events: (await serviceEvents(core, unclaimed)).map((e) => e.reason) },
      { finalizers: [], ingress: {}, events: [] },
      'no finalizer, status or Event on a class nobody claims',
    );
  },
);

test.serial(
  'an AWS instance terminated: AWS deletes its Node and the ELBs drop it; deleting the Services deletes each load balancer in its own cloud only',
  async (t) => {
    const { core, prefix, moto, aws } = t.context;
    const n = nodeNames(t);
    const svc = async (name: string) => (await readSvc(t, name))!;
    const [plain, classed] = [elbName(await svc('plain')), elbName(await svc('aws-classed'))];
    const localNodes = [n.localId, n.localSel].sort();

    await moto.ctl('terminate-instances', { ids: [aws.b.id] });
    await waitFor(async () => (await readNodeOrUndefined(core, n.awsGone)) === undefined, {
      what: `${n.awsGone} deleted by AWS's lifecycle`,
      timeoutMs: 120_000,
      log: t.context.host.logPath,
    });
    const afterTerminate = {
      aws: { [plain]: [aws.a.id, aws.d.id].sort(), [classed]: [aws.a.id, aws.d.id].sort() },
      local: { 'local-lb': localNodes },
    };
    await cloudsConverge(t, afterTerminate, 'the ELBs without the terminated instance, the local cloud unchanged');
    for (const name of [n.nobodyId, n.nobodySel]) t.truthy(await readNodeOrUndefined(core, name), `${name} still there`);

    // Deleted one by one: after each, the other cloud holds exactly what it held.
    const steps: { service: string; left: { aws: Record<string, string[]>; local: Record<string, string[]> } }[] = [
      { service: 'local-lb', left: { aws: afterTerminate.aws, local: {} } },
      { service: 'plain', left: { aws: { [classed]: afterTerminate.aws[classed]! }, local: {} } },
      { service: 'aws-classed', left: { aws: {}, local: {} } },
    ];
    for (const step of steps) {
      const s = await svc(step.service);
      await core.deleteNamespacedService({ name: step.service, namespace: prefix });
      await waitFor(async () => (await readSvc(t, step.service)) === undefined, {
        what: `${step.service} gone (finalizer removed)`,
        timeoutMs: 120_000,
        log: t.context.host.logPath,
      });
      t.is(canonical(await clouds(t)), canonical(step.left), `after deleting ${step.service}`);
      t.true(
        (await serviceEvents(core, s)).some((e) => e.reason === 'DeletedLoadBalancer'),
        `${step.service}: DeletedLoadBalancer`,
      );
    }
  },
);

test.serial(
  "each cloud's load balancers get only its own Nodes and those nobody owns: a local Node whose providerID ends in an AWS instance id never reaches an ELB",
  async (t) => {
    const { core, prefix, scope, aws } = t.context;
    const n = nodeNames(t);
    // Ready and initialized, so both are eligible backends. The twin is the local cloud's (local:// prefix) but its
    // providerID ends in instance e's id: cloud-provider-aws keeps only that last segment, so it would register e.
    const twin = `${prefix}-local-twin`;
    const unowned = `${prefix}-unowned`;
    await createTestNode(core, twin, { labels: { ...scope.labels }, ready: true, providerId: `local://${aws.e.id}` });
    await createTestNode(core, unowned, { labels: { ...scope.labels, [CLOUD_LABEL]: 'onprem' }, ready: true });
    const create = async (name: string, port: number, cls?: string) =>
      core.createNamespacedService({ namespace: prefix, body: lbService(name, prefix, [{ port }], cls ? { loadBalancerClass: cls } : {}) });
    await create('aws-owned', 8211);
    await create('local-owned', 8212, LOCAL_CLASS);
    const live = { aws: await ensured(t, 'aws-owned'), local: await ensured(t, 'local-owned') };

    // b was terminated (its Node deleted) by the test before; the local cloud lists a Node without providerID by its name.
    const want = {
      aws: { [elbName(live.aws)]: [aws.a.id, aws.d.id].sort() },
      local: { 'local-owned': [n.localId, n.localSel, twin, unowned].sort() },
    };
    await cloudsConverge(t, want, "the ELB over AWS's instances only (not e); the local load balancer over its Nodes and the unowned one");
    t.is(canonical(await clouds(t)), canonical(want), 'and they stay so');

    for (const name of ['aws-owned', 'local-owned']) {
      await core.deleteNamespacedService({ name, namespace: prefix });
      await waitFor(async () => (await readSvc(t, name)) === undefined, { what: `${name} gone`, timeoutMs: 120_000, log: t.context.host.logPath });
    }
    t.is(canonical(await clouds(t)), canonical({ aws: {}, local: {} }), 'both load balancers deleted');
  },
);
