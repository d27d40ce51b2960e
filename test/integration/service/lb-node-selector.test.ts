/**
 * --node-selector and load balancer backends (issue 29, finding 5): a
 * selector that matches no Node while the cluster has Nodes never empties a
 * load balancer's backends. The real host, the local cloud as a real plugin,
 * the shared real kube-apiserver (which always has other tests' Nodes).
 *
 * | case                                                     | expected                                                    |
 * |----------------------------------------------------------|-------------------------------------------------------------|
 * | the only node relabelled out of the selector             | backends kept, Warning UpdateLoadBalancerFailed ("refusing") |
 * | a restarted host with a mistyped selector re-ensures it  | backends kept, Warning SyncLoadBalancerFailed ("refusing")   |
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, ensureNamespace, lbService, serviceEvents } from '../../helpers/lb.js';
import { patchNode } from '../../helpers/kube-patch.js';
import { deleteScopedNodes, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-node-selector';
const test = anyTest as TestFn<{ core: CoreV1Api; hosts: TestHost[]; selectors: string[] }>;

test.before(async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  t.context = { core, hosts: [], selectors: [] };
});

test.after.always(async (t) => {
  for (const h of t.context.hosts) await h.stop();
  for (const s of t.context.selectors) await deleteScopedNodes(t.context.core, s);
});

const backendsOf = async (cloud: string) => (await cloudLbs(cloud)).map((lb) => lb.backends.map((b) => b.nodeName).join(','));

test.serial('a selector matching no Node while the cluster has Nodes keeps the load balancer backends', async (t) => {
  const { core } = t.context;
  const scope = testScope('lbsel');
  const moved = testScope('lbselx');
  t.context.selectors.push(scope.selector, moved.selector);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-selector-it-'));
  const cloud = join(dir, 'cloud');
  const flags = ['--controllers=service', `--watch-namespace=${NS}`, '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.91.0/24'];
  const host = await startTestHost(dir, [...flags, `--node-selector=${scope.selector}`]);
  t.context.hosts.push(host);
  const node = `${scope.prefix}-n`;
  await createBackendNode(core, node, '127.0.91.200', scope.labels);
  const svc = await core.createNamespacedService({ namespace: NS, body: lbService(scope.prefix, NS) });
  await waitFor(async () => (await backendsOf(cloud)).join(' ') === node, { what: 'the load balancer with the node as backend', log: host.logPath });

  // Relabelled out: the host's cache is empty, the cluster is not.
  await patchNode(core, node, { metadata: { labels: moved.labels } }, 'strategic');
  const updateRefused = await waitFor(
    async () => (await serviceEvents(core, svc)).find((e) => e.reason === 'UpdateLoadBalancerFailed' && /refusing/.test(e.message ?? '')),
    { what: 'UpdateLoadBalancerFailed (refusing to remove every backend)', log: host.logPath },
  );
  t.is(updateRefused.type, 'Warning');
  t.deepEqual(await backendsOf(cloud), [node], 'backends kept');

  // A restart with a mistyped selector: the first ensure does not know the backends; the load balancer exists.
  await host.stop();
  t.context.hosts.pop();
  const typo = await startTestHost(dir, [...flags, `--node-selector=${scope.key}=no-such-value`]);
  t.context.hosts.push(typo);
  const syncRefused = await waitFor(
    async () => (await serviceEvents(core, svc)).find((e) => e.reason === 'SyncLoadBalancerFailed' && /refusing/.test(e.message ?? '')),
    { what: 'SyncLoadBalancerFailed (refusing to remove every backend)', log: typo.logPath },
  );
  t.is(syncRefused.type, 'Warning');
  t.deepEqual(await backendsOf(cloud), [node], 'backends kept');

  // Cleanup through the host: a deletion is not refused.
  await core.deleteNamespacedService({ namespace: NS, name: scope.prefix });
  await waitFor(async () => (await cloudLbs(cloud)).length === 0, { what: 'load balancer deleted', log: typo.logPath });
});
