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
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, readNodeOrUndefined, testScope, UNINITIALIZED_TAINT, waitNodeInitialized } from '../../helpers/nodes.js';
import {
  execEntry,
  localCloudEnv,
  startProvidersHost,
  startTwoLocalClouds,
  writeProvidersFile,
  type TwoLocalClouds,
} from '../../helpers/two-clouds.js';
import {
  CLOUD_LABEL,
  cloudRoutes as cloudRoutesOf,
  footprint,
  lifecyclePasses as passesOf,
  ourNodeEvents,
  routeSyncs as syncsOf,
  SHUTDOWN_TAINT,
} from '../../helpers/untouched-nodes.js';
import { waitFor } from '../../helpers/wait.js';

const UNINIT = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };

interface Ctx {
  core: CoreV1Api;
  scope: ReturnType<typeof testScope>;
  /** The two clouds and their host (one object: ava clones the context per test, and west is replaced after it is killed). */
  clouds: TwoLocalClouds;
  host: TwoLocalClouds['host'];
}
const test = anyTest as TestFn<Ctx>;

/** The host's flags besides the providers file: the cloud node, node lifecycle and route controllers, fast. */
function hostFlags(selector: string): string[] {
  return [
    '--cluster-name=test',
    '--controllers=cloud-node,cloud-node-lifecycle,route',
    '--node-monitor-period=1s',
    '--route-reconciliation-period=1s',
    '--cluster-cidr=10.243.0.0/16',
    `--node-selector=${selector}`,
  ];
}

/** A cloud's environment besides its state and name: its node selector, no forwarder. */
const cloudEnv = (name: string) => ({ LOCALCLOUD_NODE_SELECTOR: `${CLOUD_LABEL}=${name}`, LOCALCLOUD_FORWARD: 'false' });

test.before(async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const scope = testScope('owners');
  const clouds = await startTwoLocalClouds({
    tmpPrefix: 'ccm-node-owners-',
    flags: hostFlags(scope.selector),
    eastEnv: cloudEnv('east'),
    westEnv: cloudEnv('west'),
    eastKeys: ['routes: true'],
  });
  t.context = { core, scope, clouds, host: clouds.host };
});

test.after.always(async (t) => {
  if (!t.context.clouds) return;
  await t.context.clouds.stop();
  await deleteScopedNodes(t.context.core, t.context.scope.selector);
});

/** Adds an instance to a cloud; its id. */
async function addInstance(t: { context: Ctx }, cloud: 'east' | 'west', name: string, address: string): Promise<string> {
  const out = await localcloud(
    t.context.clouds.stateOf(cloud),
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

const cloudRoutes = (t: { context: Ctx }, cloud: 'east' | 'west') => cloudRoutesOf(t.context.clouds.stateOf(cloud));
/** Completed lifecycle passes, of both providers. */
const lifecyclePasses = (t: { context: Ctx }) => passesOf(t.context.host);
const routeSyncs = (t: { context: Ctx }) => syncsOf(t.context.host);

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
    t.deepEqual(await ourNodeEvents(core, n), [], `${n}: no event from this host`);
  }
});

test.serial("west killed: east's new Nodes still initialize, and west's Node whose instance is gone waits for west", async (t) => {
  const { core, scope, host } = t.context;
  const name = (s: string) => `${scope.prefix}-${s}`;
  t.context.clouds.west.signal('SIGKILL');
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
  await t.context.clouds.restartWest();
  await waitFor(async () => (await readNodeOrUndefined(core, name('west-gone'))) === undefined, {
    what: `${name('west-gone')} deleted by west once it is back`,
    timeoutMs: 120_000,
    log: host.logPath,
  });
  t.pass();
});

test('two providers that implement routes, neither marked "routes: true": the host refuses to start, in one line', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-node-owners-routes-'));
  const file = await writeProvidersFile(
    dir,
    (['east', 'west'] as const).map((c) => execEntry(c, localCloudEnv(dir, c, cloudEnv(c)))),
  );
  const err = await t.throwsAsync(startProvidersHost(dir, file, hostFlags(testScope('owners-r').selector)));
  t.is(
    err?.message,
    'providers east and west of --providers-config both implement routes, and a cluster has one route provider: mark one "routes: true" in the file, or set --configure-cloud-routes=false',
  );
});
