/**
 * Nodes of two providers in one host (issue 31 items 2, 4 and 5), against
 * the real API server: two local clouds, "east" spawned by the host (exec
 * mode) and "west" a sidecar, with the cloud node, node lifecycle and route
 * controllers. Each provider's Nodes are initialized by it (providerID and
 * addresses from its own cloud state), a Node without a providerID goes to
 * the provider whose node selector matches it, and Nodes neither owns stay
 * untouched through many lifecycle passes and route reconciles. East is the
 * route provider (`routes: true`): only its Nodes get routes. With west
 * killed (SIGKILL), east's new Nodes still initialize and west's Node whose
 * instance is gone is not deleted until west is back.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { startHost } from '../../../host/app.js';
import { parseHostArgs } from '../../../host/config/flags.js';
import { createLogger } from '../../../host/log.js';
import { EventComponents } from '../../../host/names.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { freePorts } from '../../controlplane/probe.js';
import { checkForbiddenOnStop } from '../../helpers/forbidden.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN, localcloud } from '../../helpers/localcloud.js';
import { logFile } from '../../helpers/log-file.js';
import { assertNodeScoped } from '../../helpers/node-scope.js';
import {
  condition,
  createTestNode,
  deleteScopedNodes,
  hasTaint,
  nodeEvents,
  readNodeOrUndefined,
  testScope,
  UNINITIALIZED_TAINT,
  waitNodeInitialized,
} from '../../helpers/nodes.js';
import { hostKubeConfig } from '../../helpers/service-account.js';
import { startSidecar, type Sidecar } from '../../helpers/sidecar.js';
import { waitFor } from '../../helpers/wait.js';

const [ALLOW_NAME, ALLOW_VALUE] = ALLOW_SIMULATION.split('=') as [string, string];
const SHUTDOWN_TAINT = 'node.cloudprovider.kubernetes.io/shutdown';
const CLOUD_LABEL = 'ccm-test-cloud';
const OUR_COMPONENTS = new Set(Object.values(EventComponents));
const UNINIT = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };

interface Ctx {
  core: CoreV1Api;
  dir: string;
  scope: ReturnType<typeof testScope>;
  host: Awaited<ReturnType<typeof startMultiHost>>;
  /** The west sidecar as it runs now (replaced after it is killed; ava clones the context per test, so one object). */
  west: { sidecar: Sidecar };
  startWest(): Promise<Sidecar>;
}
const test = anyTest as TestFn<Ctx>;

async function startMultiHost(dir: string, providersFile: string, selector: string) {
  const [port] = await freePorts(1);
  const parsed = parseHostArgs([
    `--providers-config=${providersFile}`,
    '--cluster-name=test',
    `--secure-port=${port}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
    '--controllers=cloud-node,cloud-node-lifecycle,route',
    '--node-monitor-period=1s',
    '--route-reconciliation-period=1s',
    '--cluster-cidr=10.243.0.0/16',
    `--node-selector=${selector}`,
    '--plugin-start-timeout=20s',
    '-v=2',
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  const host = await startHost(parsed.config, { log, kubeConfig: await hostKubeConfig() });
  return checkForbiddenOnStop(host, logPath);
}

/** A local cloud's environment: its own state, provider name and node selector. */
function cloudEnv(dir: string, name: string): Record<string, string> {
  return {
    LOCALCLOUD_STATE_DIR: join(dir, name),
    [ALLOW_NAME]: ALLOW_VALUE,
    LOCALCLOUD_PROVIDER_NAME: name,
    LOCALCLOUD_NODE_SELECTOR: `${CLOUD_LABEL}=${name}`,
    LOCALCLOUD_FORWARD: 'false',
  };
}

test.before(async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-node-owners-'));
  const scope = testScope('owners');
  const launcher = join(dir, 'west-provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`, { mode: 0o755 });
  const sockets = join(dir, 'west-sockets');
  await mkdir(sockets, { mode: 0o700 });
  const startWest = () => startSidecar(launcher, sockets, cloudEnv(dir, 'west'), { logPath: join(dir, 'west.log') });
  const sidecar = await startWest();
  const providersFile = join(dir, 'providers.yaml');
  const east = Object.entries(cloudEnv(dir, 'east')).map(([k, v]) => `      - ${k}=${v}`);
  await writeFile(
    providersFile,
    `providers:\n  - name: east\n    pluginPath: ${LOCAL_PLUGIN}\n    routes: true\n    pluginEnv:\n${east.join('\n')}\n  - name: west\n    pluginEndpoint: ${sidecar.endpoint}\n`,
  );
  const host = await startMultiHost(dir, providersFile, scope.selector);
  t.context = { core, dir, scope, host, west: { sidecar }, startWest };
});

test.after.always(async (t) => {
  if (!t.context.host) return;
  await t.context.host.stop();
  await t.context.west.sidecar.stop();
  await deleteScopedNodes(t.context.core, t.context.scope.selector);
});

/** Adds an instance to a cloud; its id. */
async function addInstance(t: { context: Ctx }, cloud: 'east' | 'west', name: string, address: string): Promise<string> {
  const out = await localcloud(
    join(t.context.dir, cloud),
    'instance',
    'add',
    name,
    '--zone',
    `${cloud}-a`,
    '--type',
    `${cloud}.large`,
    '--address',
    address,
    '-o',
    'json',
  );
  return (JSON.parse(out) as { id: string }[])[0]!.id;
}

async function cloudRoutes(t: { context: Ctx }, cloud: 'east' | 'west'): Promise<{ targetNode: string }[]> {
  return JSON.parse(await localcloud(join(t.context.dir, cloud), 'route', 'list', '--cluster', 'test', '-o', 'json')) as { targetNode: string }[];
}

/** Completed lifecycle passes, of both providers. */
async function lifecyclePasses(t: { context: Ctx }): Promise<number> {
  const m = await t.context.host.metrics.registry.getSingleMetric('ccm_node_lifecycle_pass_duration_seconds')!.get();
  return m.values.find((v) => (v as { metricName?: string }).metricName === 'ccm_node_lifecycle_pass_duration_seconds_count')?.value ?? 0;
}

async function routeSyncs(t: { context: Ctx }): Promise<number> {
  const m = await t.context.host.metrics.registry.getSingleMetric('route_controller_route_sync_total')!.get();
  return m.values.reduce((n, v) => n + v.value, 0);
}

/** What this host could have changed on a Node. */
function footprint(n: V1Node) {
  return {
    uninitialized: hasTaint(n, UNINITIALIZED_TAINT),
    shutdown: hasTaint(n, SHUTDOWN_TAINT),
    providerID: n.spec?.providerID,
    zone: n.metadata?.labels?.['topology.kubernetes.io/zone'],
    addresses: n.status?.addresses,
    networkUnavailable: condition(n, 'NetworkUnavailable')?.status,
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

test.serial("each provider's Nodes are initialized by it; Nodes neither owns are untouched; routes only for the route provider's", async (t) => {
  const { core, scope, host } = t.context;
  const name = (s: string) => `${scope.prefix}-${s}`;
  const eastId = await addInstance(t, 'east', name('east-id'), '10.61.0.1');
  await addInstance(t, 'east', name('east-sel'), '10.61.0.2');
  const westId = await addInstance(t, 'west', name('west-id'), '10.62.0.1');
  await addInstance(t, 'west', name('west-sel'), '10.62.0.2');
  // Instances named like the Nodes nobody owns, in both clouds: only ownership keeps them from being initialized.
  for (const c of ['east', 'west'] as const) await addInstance(t, c, name('nobody-sel'), c === 'east' ? '10.61.0.9' : '10.62.0.9');
  const labels = (cloud: string) => ({ ...scope.labels, [CLOUD_LABEL]: cloud });
  const cases: { node: string; create: Parameters<typeof createTestNode>[2]; want: ReturnType<typeof initializedAs> }[] = [
    {
      node: name('east-id'),
      create: { labels: scope.labels, ready: true, taints: [UNINIT], podCidrs: ['10.243.1.0/24'], providerId: `east://${eastId}` },
      want: { providerID: `east://${eastId}`, zone: 'east-a', instanceType: 'east.large', internalIP: '10.61.0.1' },
    },
    {
      node: name('east-sel'),
      create: { labels: labels('east'), ready: true, taints: [UNINIT], podCidrs: ['10.243.2.0/24'] },
      want: { providerID: undefined, zone: 'east-a', instanceType: 'east.large', internalIP: '10.61.0.2' },
    },
    {
      node: name('west-id'),
      create: { labels: scope.labels, ready: true, taints: [UNINIT], podCidrs: ['10.243.3.0/24'], providerId: `west://${westId}` },
      want: { providerID: `west://${westId}`, zone: 'west-a', instanceType: 'west.large', internalIP: '10.62.0.1' },
    },
    {
      node: name('west-sel'),
      create: { labels: labels('west'), ready: true, taints: [UNINIT], podCidrs: ['10.243.4.0/24'] },
      want: { providerID: undefined, zone: 'west-a', instanceType: 'west.large', internalIP: '10.62.0.2' },
    },
  ];
  for (const c of cases) await createTestNode(core, c.node, c.create);
  // Nobody's: a Node without providerID whose label matches neither selector (both clouds have an instance of its
  // name), and a NotReady Node of a third provider with both taints (its "instance" exists nowhere).
  const nobody = [name('nobody-sel'), name('nobody-id')];
  await createTestNode(core, nobody[0]!, { labels: labels('north'), ready: true, taints: [UNINIT], podCidrs: ['10.243.5.0/24'] });
  await createTestNode(core, nobody[1]!, {
    labels: labels('east'),
    ready: false,
    taints: [UNINIT, { key: SHUTDOWN_TAINT, effect: 'NoSchedule' }],
    podCidrs: ['10.243.6.0/24'],
    providerId: 'north://i-00000000',
  });
  const before = new Map<string, ReturnType<typeof footprint>>();
  for (const n of nobody) before.set(n, footprint(await core.readNode({ name: n })));

  for (const c of cases) {
    const n = await waitNodeInitialized(core, c.node, 'its provider', 60_000);
    // A Node without a providerID gets its owner's: the selector chose the cloud.
    const cloud = c.node.includes('east') ? 'east' : 'west';
    const want = { ...c.want, providerID: c.want.providerID ?? n.spec?.providerID };
    t.deepEqual(initializedAs(n), want, `${c.node}: initialized from ${cloud}'s state`);
    t.true(n.spec?.providerID?.startsWith(`${cloud}://`), `${c.node}: ${cloud}'s providerID`);
  }
  await waitFor(
    async () => {
      const targets = new Set((await cloudRoutes(t, 'east')).map((r) => r.targetNode));
      return targets.has(name('east-id')) && targets.has(name('east-sel'));
    },
    { what: "routes for east's Nodes", log: host.logPath },
  );

  const passes = await lifecyclePasses(t);
  const syncs = await routeSyncs(t);
  await waitFor(async () => (await lifecyclePasses(t)) >= passes + 10 && (await routeSyncs(t)) >= syncs + 3, {
    what: 'ten more lifecycle passes (both providers) and three more route reconciles',
  });
  const eastRoutes = (await cloudRoutes(t, 'east')).map((r) => r.targetNode).sort();
  t.deepEqual(eastRoutes, [name('east-id'), name('east-sel')].sort(), 'the route provider routes only its own Nodes');
  t.deepEqual(await cloudRoutes(t, 'west'), [], 'west is not the route provider');
  for (const n of nobody) {
    const node = await readNodeOrUndefined(core, n);
    t.truthy(node, `${n} is not deleted`);
    if (!node) continue;
    t.deepEqual(footprint(node), before.get(n), `${n}: no taint, providerID, label, address or condition change`);
    const ours = (await nodeEvents(core, n)).filter((e) => OUR_COMPONENTS.has(e.source?.component ?? e.reportingComponent ?? ''));
    t.deepEqual(
      ours.map((e) => `${e.reason}: ${e.message}`),
      [],
      `${n}: no event from this host`,
    );
  }
});

test.serial("west killed: east's new Nodes still initialize, and west's Node whose instance is gone waits for west", async (t) => {
  const { core, scope, host } = t.context;
  const name = (s: string) => `${scope.prefix}-${s}`;
  t.context.west.sidecar.signal('SIGKILL');
  await waitFor(() => host.providers.get('west')!.supervisor.state !== 'ready', { what: 'west down', log: host.logPath });
  // West's Node whose instance is gone: west would delete it at its first pass, but west is not there to say so.
  await createTestNode(core, name('west-gone'), { labels: scope.labels, ready: false, providerId: 'west://i-0badc0de' });
  const eastId = await addInstance(t, 'east', name('east-late'), '10.61.0.3');
  await createTestNode(core, name('east-late'), { labels: scope.labels, ready: true, taints: [UNINIT], providerId: `east://${eastId}` });
  const n = await waitNodeInitialized(core, name('east-late'), 'east while west is down', 60_000);
  t.is(initializedAs(n).internalIP, '10.61.0.3');
  const passes = await lifecyclePasses(t);
  await waitFor(async () => (await lifecyclePasses(t)) >= passes + 10, { what: 'ten more lifecycle passes' });
  t.not(host.providers.get('west')!.supervisor.state, 'ready', 'west was down all along');
  t.truthy(await readNodeOrUndefined(core, name('west-gone')), "west's Node is not deleted while west is down");
  // West back: its own lifecycle instance finds the instance gone and deletes it (so it was west's to judge).
  t.context.west.sidecar = await t.context.startWest();
  await waitFor(async () => (await readNodeOrUndefined(core, name('west-gone'))) === undefined, {
    what: `${name('west-gone')} deleted by west once it is back`,
    timeoutMs: 120_000,
    log: host.logPath,
  });
  t.pass();
});

test('two providers that implement routes, neither marked "routes: true": the host refuses to start, in one line', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-node-owners-routes-'));
  const file = join(dir, 'providers.yaml');
  const env = (c: string) =>
    `[${Object.entries(cloudEnv(dir, c))
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}]`;
  await writeFile(
    file,
    `providers:\n  - name: east\n    pluginPath: ${LOCAL_PLUGIN}\n    pluginEnv: ${env('east')}\n  - name: west\n    pluginPath: ${LOCAL_PLUGIN}\n    pluginEnv: ${env('west')}\n`,
  );
  const err = await t.throwsAsync(startMultiHost(dir, file, testScope('owners-r').selector));
  t.is(
    err?.message,
    'providers east and west of --providers-config both implement routes, and a cluster has one route provider: mark one "routes: true" in the file, or set --configure-cloud-routes=false',
  );
});
