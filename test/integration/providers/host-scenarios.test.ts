/**
 * The host's controller scenarios against the Go and the Python provider,
 * each in exec mode (--plugin-path) and in sidecar mode (--plugin-endpoint):
 * the real host, the real kube-apiserver, the provider as a real process.
 *
 * Every scenario is a function of a running (provider, mode) pair, so a new
 * one is a few lines in SCENARIOS below.
 *
 * The load balancer scenario checks the cloud side through the providers'
 * test-only TestHooksService.ListTestLoadBalancers (served with
 * CCM_PROVIDER_TEST_HOOKS=1, in exec mode passed with --plugin-env): the Go
 * and Python providers keep load balancers in memory and have no data plane,
 * so unlike test/integration/service/lb-lifecycle.test.ts (the local cloud,
 * which forwards real TCP) there is no traffic to send.
 *
 * Upstream's k8s.io/cloud-provider/fake, served by the Go bridge
 * (sdk/go/bridge/example/fake), runs its own node scenarios (FAKE_SCENARIOS):
 * it takes no cloud config, so its machines come from the test hook, and
 * every instance call goes through the bridge's Instances v1 + Zones fallback.
 */
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { CoreV1Api, type V1Node, type V1Service } from '@kubernetes/client-node';
import { TestHooksServiceClient, type TestLoadBalancer } from '../../../proto/gen/ccm/provider/testing/v1/test_hooks.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startProviderHost, type ProviderHost, type ProviderMode } from '../../helpers/provider-host.js';
import { FAKE_CLOUD_PROVIDER, GO_PROVIDER, PYTHON_PROVIDER, type ProviderUnderTest } from '../../helpers/providers.js';
import { ensureNamespace, LB_FINALIZER, lbService, serviceEvents } from '../../helpers/lb.js';
import { patchNodeStatus, patchService } from '../../helpers/kube-patch.js';
import { waitFor } from '../../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const SELECTOR_LABEL = 'ccm-test/provider-scenario';
const EXCLUDE_FROM_LBS = 'node.kubernetes.io/exclude-from-external-load-balancers';
/** Each provider's load balancer address pool (plugins/go/loadbalancers.go, plugins/python/mempy/cloud.py, plugins/java Cloud.java); aws has tests of its own (aws-bridge.test.ts). */
const LB_POOL: Record<Exclude<ProviderUnderTest['name'], 'aws'>, RegExp> = {
  memgo: /^203\.0\.113\./,
  mempy: /^198\.51\.100\./,
  memjava: /^198\.18\.0\./,
  fake: /^192\.0\.2\.10$/,
};
/** What the fake cloud answers for every machine (sdk/go/bridge/example/fake/main.go). */
const FAKE = { zone: 'fake-zone-a', region: 'fake-region-1', type: 'fake-standard-2', internalIp: '10.240.0.10' };

/** What a scenario gets: a host running against one provider in one mode. */
interface ScenarioContext {
  provider: ProviderUnderTest;
  mode: ProviderMode;
  running: ProviderHost;
  core: CoreV1Api;
  /** Unique name prefix; also the value of SELECTOR_LABEL on the scenario's nodes. */
  prefix: string;
  /** The scenario's temporary directory. */
  dir: string;
}

interface Scenario {
  name: string;
  /** Host flags beyond the common ones (which controllers run). */
  controllers: string;
  /** More host flags; `prefix` is also the scenario's namespace name. */
  flags?(prefix: string): string[];
  /** Instances the provider's cloud config declares (names get the prefix). */
  instances(prefix: string): object[];
  run(t: ExecutionContext, c: ScenarioContext): Promise<void>;
}

const initialized = (n: V1Node) => !(n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED);

/**
 * Registers a Node like kubelet --cloud-provider=external, labelled for this
 * scenario's host. `more` adds what a kubelet and the node IPAM controller
 * would have set (annotations, taints, pod CIDRs, status).
 */
async function registerNode(
  c: ScenarioContext,
  name: string,
  labels: Record<string, string> = {},
  more: Partial<typeof NODE_FIELDS> = {},
): Promise<void> {
  await c.core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, [SELECTOR_LABEL]: c.prefix, ...labels }, annotations: more.annotations },
      spec: {
        taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }, ...(more.taints ?? [])],
        podCIDR: more.podCIDRs?.[0],
        podCIDRs: more.podCIDRs,
      },
      status: { addresses: [{ type: 'Hostname', address: name }] },
    },
  });
  // The status a kubelet reports, through the status subresource as a kubelet writes it.
  if (more.nodeInfo || more.conditions)
    await patchNodeStatus(c.core, name, { status: { nodeInfo: more.nodeInfo, conditions: more.conditions } }, 'strategic');
}

/**
 * What the fake's load balancer scenario puts on its backend Node, as a
 * kubelet and the node IPAM controller would, for the host to forward and the
 * bridge to rebuild.
 */
const NODE_FIELDS = {
  annotations: { 'example.com/rack': 'r42' },
  taints: [{ key: 'example.com/dedicated', value: 'lb', effect: 'PreferNoSchedule' }],
  podCIDRs: ['10.244.42.0/24'],
  nodeInfo: {
    machineID: '0f1e2d3c4b5a69788796a5b4c3d2e1f0',
    systemUUID: '4211f4b8-8d3c-4d2a-9e6f-00000000002a',
    bootID: 'b0b0b0b0-0000-4000-8000-00000000002a',
    kernelVersion: '6.8.0-1017-generic',
    osImage: 'Ubuntu 24.04.1 LTS',
    containerRuntimeVersion: 'containerd://2.1.0',
    kubeletVersion: 'v1.34.4',
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: 'amd64',
  },
  conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
};

/** The fake's record of its last EnsureLoadBalancer (sdk/go/bridge/example/fake/record.go): the objects as it received them. */
interface FakeEnsureRecord {
  service: V1Service;
  nodes: V1Node[];
}

const fakeRecordPath = (dir: string) => join(dir, 'fake-ensure.json');

async function fakeRecord(c: ScenarioContext): Promise<FakeEnsureRecord | undefined> {
  const text = await readFile(fakeRecordPath(c.dir), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as FakeEnsureRecord);
}

async function waitInitialized(c: ScenarioContext, name: string): Promise<V1Node> {
  return waitFor(
    async () => {
      const n = await c.core.readNode({ name });
      return initialized(n) ? n : undefined;
    },
    { what: `node ${name} initialized by ${c.provider.name} (${c.mode})`, timeoutMs: 120_000 },
  );
}

/**
 * The provider's TestHooksService on the socket the scenario's host uses:
 * the sidecar's endpoint, or in exec mode the socket the host launched the
 * provider on (which serves the hooks because of --plugin-env).
 */
function providerHooks(c: ScenarioContext): TestHooksServiceClient {
  const target = c.running.sidecar?.endpoint ?? c.running.host.supervisor.connection().target;
  return new TestHooksServiceClient(target, credentials.createInsecure());
}

function createInstance(hooks: TestHooksServiceClient, name: string): Promise<string> {
  return new Promise((resolve, reject) =>
    hooks.createTestInstance({ name, internalIp: '', zone: '' }, (err, res) => (err ? reject(err) : resolve(res.providerId))),
  );
}

function deleteInstance(hooks: TestHooksServiceClient, name: string): Promise<void> {
  return new Promise((resolve, reject) => hooks.deleteTestInstance({ name }, (err) => (err ? reject(err) : resolve())));
}

function listProviderLbs(hooks: TestHooksServiceClient): Promise<TestLoadBalancer[]> {
  return new Promise((resolve, reject) => hooks.listTestLoadBalancers({}, (err, res) => (err ? reject(err) : resolve(res.loadBalancers))));
}

/** The provider's load balancer of Service `uid` (cluster "test", the host's --cluster-name), if it holds one. */
async function providerLb(hooks: TestHooksServiceClient, uid: string): Promise<TestLoadBalancer | undefined> {
  return (await listProviderLbs(hooks)).find((l) => l.serviceUid === uid && l.clusterName === 'test');
}

async function readService(c: ScenarioContext, name: string): Promise<V1Service | undefined> {
  return c.core.readNamespacedService({ name, namespace: c.prefix }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

/**
 * Creates LoadBalancer Service `web` (port 8080) in the scenario's namespace
 * and waits for its ingress. `more`: a selector, and a targetPort other than
 * the port.
 */
async function createWebWithIngress(
  c: ScenarioContext,
  more: { selector?: Record<string, string>; targetPort?: string } = {},
): Promise<{ uid: string; svc: V1Service }> {
  await ensureNamespace(c.core, c.prefix);
  const body = lbService('web', c.prefix, [{ port: 8080 }], more.selector ? { selector: more.selector } : {});
  if (more.targetPort) body.spec!.ports![0]!.targetPort = more.targetPort as never;
  const created = await c.core.createNamespacedService({ namespace: c.prefix, body });
  const svc = await waitFor(
    async () => {
      const s = await readService(c, 'web');
      return s?.status?.loadBalancer?.ingress?.[0]?.ip ? s : undefined;
    },
    { what: `ingress of web (${c.provider.name}, ${c.mode})`, timeoutMs: 120_000 },
  );
  return { uid: created.metadata!.uid!, svc };
}

/** Deletes Service `web` and waits until it is gone (the host removed its finalizer). */
async function deleteWeb(c: ScenarioContext): Promise<void> {
  await c.core.deleteNamespacedService({ name: 'web', namespace: c.prefix });
  await waitFor(async () => (await readService(c, 'web')) === undefined, { what: 'Service web gone (finalizer removed)', timeoutMs: 120_000 });
}

const SCENARIOS: Scenario[] = [
  {
    name: 'node initialization',
    controllers: 'cloud-node',
    instances: (p) => [
      {
        name: `${p}-a`,
        type: 'mem.large',
        zone: 'zone-1',
        region: 'region-x',
        addresses: [
          { type: 'InternalIP', address: '10.9.0.1' },
          { type: 'ExternalIP', address: '203.0.113.9' },
        ],
        labels: { 'example.com/pool': 'blue' },
      },
    ],
    async run(t, c) {
      const name = `${c.prefix}-a`;
      await registerNode(c, name);
      const node = await waitInitialized(c, name);
      t.regex(node.spec?.providerID ?? '', new RegExp(`^${c.provider.name}://i-[0-9a-f]{8}$`));
      const labels = node.metadata?.labels ?? {};
      t.is(labels['topology.kubernetes.io/zone'], 'zone-1');
      t.is(labels['topology.kubernetes.io/region'], 'region-x');
      t.is(labels['node.kubernetes.io/instance-type'], 'mem.large');
      t.is(labels['example.com/pool'], 'blue');
      const addrs = await waitFor(
        async () => {
          const a = (await c.core.readNode({ name })).status?.addresses ?? [];
          return a.some((x) => x.type === 'InternalIP') ? a : undefined;
        },
        { what: `addresses of ${name}` },
      );
      t.true(addrs.some((a) => a.type === 'InternalIP' && a.address === '10.9.0.1'));
      t.true(addrs.some((a) => a.type === 'ExternalIP' && a.address === '203.0.113.9'));

      // A node the cloud does not know keeps its taint and gets a Warning event.
      const unknown = `${c.prefix}-unknown`;
      await registerNode(c, unknown);
      const warning = await waitFor(
        async () => {
          const ev = await c.core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${unknown}` });
          return ev.items.find((e) => e.type === 'Warning' && e.reason === 'FailedToSyncNode');
        },
        { what: `FailedToSyncNode for ${unknown}` },
      );
      t.truthy(warning.message);
      t.false(initialized(await c.core.readNode({ name: unknown })));

      // Sidecar mode: the test can reach the provider's test hook and make the instance appear.
      if (c.running.sidecar) {
        const hooks = new TestHooksServiceClient(c.running.sidecar.endpoint, credentials.createInsecure());
        await new Promise<void>((resolve, reject) =>
          hooks.createTestInstance({ name: unknown, internalIp: '10.9.0.2', zone: '' }, (err) => (err ? reject(err) : resolve())),
        );
        hooks.close();
        const later = await waitInitialized(c, unknown);
        t.regex(later.spec?.providerID ?? '', new RegExp(`^${c.provider.name}://`));
      }
    },
  },
  {
    // cloud-node too: only initialized nodes are load balancer backends.
    name: 'load balancer',
    controllers: 'cloud-node,service',
    flags: (p) => [`--watch-namespace=${p}`, '--plugin-env=CCM_PROVIDER_TEST_HOOKS=1'],
    instances: (p) => [
      { name: `${p}-a`, type: 'mem.small', zone: 'zone-1', region: 'region-x', addresses: [{ type: 'InternalIP', address: '10.9.1.1' }] },
      { name: `${p}-b`, type: 'mem.small', zone: 'zone-1', region: 'region-x', addresses: [{ type: 'InternalIP', address: '10.9.1.2' }] },
      { name: `${p}-x`, type: 'mem.small', zone: 'zone-1', region: 'region-x', addresses: [{ type: 'InternalIP', address: '10.9.1.3' }] },
    ],
    async run(t, c) {
      const [a, b, x, unknown] = ['a', 'b', 'x', 'unknown'].map((s) => `${c.prefix}-${s}`) as [string, string, string, string];
      const nodes = [a, b, x, unknown];
      const hooks = providerHooks(c);
      try {
        // Eligible: a. Not eligible: x (excluded by label), unknown (the cloud
        // has no instance for it, so it stays uninitialized).
        await registerNode(c, a);
        await registerNode(c, x, { [EXCLUDE_FROM_LBS]: 'true' });
        await registerNode(c, unknown);
        await waitInitialized(c, a);
        await waitInitialized(c, x);
        const { uid, svc } = await createWebWithIngress(c);

        t.true(svc.metadata!.finalizers!.includes(LB_FINALIZER));
        const ingress = svc.status!.loadBalancer!.ingress!;
        t.is(ingress.length, 1);
        t.regex(ingress[0]!.ip!, LB_POOL[c.provider.name as keyof typeof LB_POOL]);
        t.is(ingress[0]!.ipMode, 'VIP');

        // The cloud side: the provider holds the load balancer, on the
        // Service's port, with exactly the eligible nodes.
        const lb = await providerLb(hooks, uid);
        t.truthy(lb, 'the provider holds a load balancer for the Service');
        t.is(lb!.name, `a${uid.replaceAll('-', '')}`.slice(0, 32), "upstream's default load balancer name");
        t.deepEqual(lb!.ingressIps, [ingress[0]!.ip!]);
        t.deepEqual(lb!.ports, [8080]);
        t.deepEqual(lb!.nodeNames, [a]);
        const events = await waitFor(
          async () => {
            const ev = await serviceEvents(c.core, svc);
            return ev.some((e) => e.reason === 'EnsuredLoadBalancer') ? ev : undefined;
          },
          { what: 'EnsuredLoadBalancer event' },
        );
        t.true(events.some((e) => e.reason === 'EnsuringLoadBalancer'));

        // A new node becomes a backend once initialized.
        await registerNode(c, b);
        await waitInitialized(c, b);
        await waitFor(async () => (await providerLb(hooks, uid))?.nodeNames.join(',') === [a, b].sort().join(','), {
          what: `backends ${a},${b} in the provider`,
        });

        // Delete: finalizer removed, Service gone, the provider's load balancer gone.
        await deleteWeb(c);
        // The host deletes the load balancer before it removes the finalizer.
        t.is(await providerLb(hooks, uid), undefined, 'no load balancer left in the provider once the Service is gone');
        t.true((await serviceEvents(c.core, svc)).some((e) => e.reason === 'DeletedLoadBalancer'));
      } finally {
        hooks.close();
        for (const name of nodes) await c.core.deleteNode({ name }).catch(() => undefined);
      }
    },
  },
];

/**
 * Scenarios of upstream's fake cloud, whose machines the test hook makes
 * (exec mode: hooks on the host's socket). Its load balancer scenario checks
 * what the fake's EnsureLoadBalancer stored, and the Service and Nodes it
 * received as the fake writes them to FAKE_CLOUD_RECORD_FILE: the fields the
 * host fills end to end (pod CIDRs, taints, conditions, nodeInfo, annotations;
 * selector, targetPort, cluster IPs, policies, the current ingress). The fake
 * never deletes a balancer, so unlike SCENARIOS' it cannot check that none is
 * left.
 */
const FAKE_SCENARIOS: Scenario[] = [
  {
    name: 'node initialization',
    controllers: 'cloud-node',
    flags: () => ['--plugin-env=CCM_PROVIDER_TEST_HOOKS=1'],
    instances: () => [],
    async run(t, c) {
      const [name, unknown] = [`${c.prefix}-a`, `${c.prefix}-unknown`];
      const hooks = providerHooks(c);
      try {
        t.is(await createInstance(hooks, name), `fake://${name}`);
        await registerNode(c, name);
        const node = await waitInitialized(c, name);
        t.is(node.spec?.providerID, `fake://${name}`, 'providerID from InstanceID, as upstream builds it');
        const labels = node.metadata?.labels ?? {};
        t.is(labels['topology.kubernetes.io/zone'], FAKE.zone, 'zone from Zones.GetZoneByProviderID');
        t.is(labels['topology.kubernetes.io/region'], FAKE.region);
        t.is(labels['node.kubernetes.io/instance-type'], FAKE.type, 'type from Instances.InstanceTypeByProviderID');
        const addrs = await waitFor(
          async () => {
            const a = (await c.core.readNode({ name })).status?.addresses ?? [];
            return a.some((x) => x.type === 'InternalIP') ? a : undefined;
          },
          { what: `addresses of ${name}` },
        );
        t.true(addrs.some((a) => a.type === 'InternalIP' && a.address === FAKE.internalIp));

        // A machine the cloud does not have (InstanceID answers InstanceNotFound): tainted, with a Warning event.
        await deleteInstance(hooks, unknown);
        await registerNode(c, unknown);
        const warning = await waitFor(
          async () => {
            const ev = await c.core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${unknown}` });
            return ev.items.find((e) => e.type === 'Warning' && e.reason === 'FailedToSyncNode');
          },
          { what: `FailedToSyncNode for ${unknown}` },
        );
        t.regex(warning.message ?? '', /has no instance for node/);
        t.false(initialized(await c.core.readNode({ name: unknown })));
        // Once the machine exists, the retry initializes the node.
        await createInstance(hooks, unknown);
        t.is((await waitInitialized(c, unknown)).spec?.providerID, `fake://${unknown}`);
      } finally {
        hooks.close();
        for (const n of [name, unknown]) await c.core.deleteNode({ name: n }).catch(() => undefined);
      }
    },
  },
  {
    name: 'node lifecycle',
    controllers: 'cloud-node,cloud-node-lifecycle',
    flags: () => ['--plugin-env=CCM_PROVIDER_TEST_HOOKS=1', '--node-monitor-period=2s'],
    instances: () => [],
    async run(t, c) {
      const name = `${c.prefix}-a`;
      const hooks = providerHooks(c);
      try {
        await createInstance(hooks, name);
        await registerNode(c, name);
        await waitInitialized(c, name);
        // No kubelet: the node is not Ready, so the lifecycle controller asks
        // whether its machine still exists. While it does, the Node stays
        // (three monitor periods; a slow run only checks fewer of them).
        await new Promise((r) => setTimeout(r, 6_000));
        t.truthy(await c.core.readNode({ name }), 'the Node of an existing machine is kept');
        // The machine goes away: InstanceExistsByProviderID says so and the host deletes the Node.
        await deleteInstance(hooks, name);
        await waitFor(
          async () =>
            c.core.readNode({ name }).then(
              () => false,
              (err: { code?: number }) => err.code === 404,
            ),
          { what: `node ${name} deleted once its machine is gone`, timeoutMs: 120_000 },
        );
        const ev = await c.core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
        t.true(
          ev.items.some((e) => e.reason === 'DeletingNode'),
          ev.items.map((e) => e.reason).join(', '),
        );
      } finally {
        hooks.close();
        await c.core.deleteNode({ name }).catch(() => undefined);
      }
    },
  },
  {
    // cloud-node too: only initialized nodes are load balancer backends.
    name: 'load balancer',
    controllers: 'cloud-node,service',
    flags: (p) => [`--watch-namespace=${p}`, '--plugin-env=CCM_PROVIDER_TEST_HOOKS=1'],
    instances: () => [],
    async run(t, c) {
      const [a, x] = [`${c.prefix}-a`, `${c.prefix}-x`];
      const hooks = providerHooks(c);
      try {
        for (const n of [a, x]) await createInstance(hooks, n);
        await registerNode(c, a, {}, NODE_FIELDS);
        await registerNode(c, x, { [EXCLUDE_FROM_LBS]: 'true' });
        await waitInitialized(c, a);
        await waitInitialized(c, x);
        const { uid, svc } = await createWebWithIngress(c, { selector: { app: 'web' }, targetPort: 'http' });
        t.true(svc.metadata!.finalizers!.includes(LB_FINALIZER));
        const ingress = svc.status!.loadBalancer!.ingress!;
        t.is(ingress.length, 1);
        t.regex(ingress[0]!.ip!, LB_POOL.fake, "the fake's ExternalIP");
        t.deepEqual(
          (ingress[0]!.ports ?? []).map((p) => [p.port, p.protocol]),
          [[8080, 'TCP']],
          'port status from the fake, through the bridge',
        );
        // What the fake's EnsureLoadBalancer received: the rebuilt Service's ports and the eligible Nodes only.
        const name = `a${uid.replaceAll('-', '')}`.slice(0, 32);
        const lb = (await listProviderLbs(hooks)).find((l) => l.name === name);
        t.truthy(lb, `the fake holds ${name}`);
        t.deepEqual(lb!.ports, [8080]);
        t.deepEqual(lb!.nodeNames, [a]);

        // The objects upstream's EnsureLoadBalancer received carry what the
        // host read from the API server: the fields a provider of
        // k8s.io/cloud-provider reads (e.g. vSphere's systemUUID).
        const first = await waitFor(async () => ((await fakeRecord(c))?.service.metadata?.uid === uid ? fakeRecord(c) : undefined), {
          what: "the fake's record of EnsureLoadBalancer",
        });
        const spec = first!.service.spec!;
        t.deepEqual(spec.selector, { app: 'web' });
        t.deepEqual(
          spec.ports!.map((p) => [p.port, p.targetPort]),
          [[8080, 'http']],
        );
        t.truthy(svc.spec!.clusterIP);
        t.is(spec.clusterIP, svc.spec!.clusterIP, 'the cluster IP the API server allocated');
        t.deepEqual(spec.clusterIPs, svc.spec!.clusterIPs);
        t.is(spec.ipFamilyPolicy, svc.spec!.ipFamilyPolicy);
        t.is(spec.allocateLoadBalancerNodePorts, true, "the API server's default");
        t.is(spec.internalTrafficPolicy, 'Cluster');
        t.is(first!.nodes.length, 1);
        const backend = first!.nodes[0]!;
        t.is(backend.metadata!.name, a);
        t.is(backend.metadata!.annotations!['example.com/rack'], 'r42');
        t.deepEqual(backend.spec!.podCIDRs, NODE_FIELDS.podCIDRs);
        t.is(backend.spec!.podCIDR, NODE_FIELDS.podCIDRs[0]);
        // The Node's taints as the API server holds them (its TaintNodesByCondition
        // admission adds node.kubernetes.io/not-ready on create; no kubelet or
        // node lifecycle controller removes it here), without the uninitialized one.
        const taints = (n: V1Node) => (n.spec?.taints ?? []).map((x) => `${x.key}=${x.value ?? ''}:${x.effect}`).sort();
        t.deepEqual(taints(backend), taints(await c.core.readNode({ name: a })));
        t.true(taints(backend).includes('example.com/dedicated=lb:PreferNoSchedule'));
        t.false(taints(backend).some((x) => x.startsWith(`${UNINITIALIZED}=`)));
        t.deepEqual(
          (backend.status!.conditions ?? []).map((x) => [x.type, x.status, x.reason]),
          [['Ready', 'True', 'KubeletReady']],
        );
        t.is(backend.status!.nodeInfo!.systemUUID, NODE_FIELDS.nodeInfo.systemUUID);
        t.is(backend.status!.nodeInfo!.kubeletVersion, 'v1.34.4');
        // A change of the Service ensures again, now with the ingress the Service shows.
        await patchService(c.core, c.prefix, 'web', { metadata: { annotations: { 'example.com/touched': '1' } } }, 'merge');
        const again = await waitFor(
          async () => {
            const r = await fakeRecord(c);
            return r?.service.metadata?.annotations?.['example.com/touched'] === '1' ? r : undefined;
          },
          { what: 'EnsureLoadBalancer again after the annotation' },
        );
        t.deepEqual(
          (again.service.status?.loadBalancer?.ingress ?? []).map((i) => i.ip),
          [ingress[0]!.ip],
          "status.loadBalancer: the Service's current ingress",
        );

        await deleteWeb(c);
        t.true((await serviceEvents(c.core, svc)).some((e) => e.reason === 'DeletedLoadBalancer'));
      } finally {
        hooks.close();
        for (const n of [a, x]) await c.core.deleteNode({ name: n }).catch(() => undefined);
      }
    },
  },
];

for (const [provider, scenarios] of [
  [GO_PROVIDER, SCENARIOS],
  [PYTHON_PROVIDER, SCENARIOS],
  [FAKE_CLOUD_PROVIDER, FAKE_SCENARIOS],
] as const) {
  for (const mode of ['exec', 'sidecar'] as const) {
    for (const scenario of scenarios) {
      test(`${scenario.name}: ${provider.name} provider, ${mode} mode`, async (t) => {
        const prefix = `${provider.name}-${mode}-${randomBytes(3).toString('hex')}`;
        const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
        const running = await startProviderHost(
          dir,
          provider,
          mode,
          { zone: 'zone-1', region: 'region-x', instances: scenario.instances(prefix) },
          [
            `--controllers=${scenario.controllers}`,
            `--node-selector=${SELECTOR_LABEL}=${prefix}`,
            '--node-status-update-frequency=2s',
            ...(scenario.flags?.(prefix) ?? []),
          ],
          // The fake cloud records what its EnsureLoadBalancer received (a sidecar given env gets only that env, so hooks are named too).
          provider === FAKE_CLOUD_PROVIDER && mode === 'sidecar'
            ? { env: { FAKE_CLOUD_RECORD_FILE: fakeRecordPath(dir), CCM_PROVIDER_TEST_HOOKS: '1' } }
            : provider === FAKE_CLOUD_PROVIDER
              ? { env: { FAKE_CLOUD_RECORD_FILE: fakeRecordPath(dir) } }
              : {},
        );
        try {
          t.is(running.host.supervisor.identity?.capabilities.providerName, provider.name);
          await scenario.run(t, { provider, mode, running, core: (await testKubeConfig()).makeApiClient(CoreV1Api), prefix, dir });
        } finally {
          await running.stop();
        }
      });
    }
  }
}
