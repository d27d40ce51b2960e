/**
 * Node ownership (issue 31 item 2, KEP-5778) end to end with one provider:
 * the real host running the local cloud, with the cloud node, node
 * lifecycle and route controllers, against the real API server. The local
 * provider owns `local://` Nodes and the Nodes without a providerID labelled
 * ccm-test-cloud=local: once as the provider declares it
 * (GetPluginCapabilitiesResponse.node_selector, LOCALCLOUD_NODE_SELECTOR),
 * once as the operator's --node-ownership-selector says, replacing the
 * provider's own (which would claim ccm-test-cloud=elsewhere).
 *
 * Nodes no provider owns stay untouched through many lifecycle passes and
 * route reconciles: one with another provider's providerID (`other://x`,
 * Ready, with the uninitialized and shutdown taints and a pod CIDR), one
 * without a providerID whose labels do not match (a cloud instance of its
 * name exists, so without the check it would be initialized), and one
 * without a providerID, NotReady and without an instance (without the check
 * it would be deleted). Meanwhile the local cloud's own Nodes are handled:
 * one initialized and routed, one whose instance is gone deleted.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, readNodeOrUndefined, testScope, UNINITIALIZED_TAINT, waitNodeInitialized } from '../../helpers/nodes.js';
import { CLOUD_LABEL, cloudRoutes, footprint, lifecyclePasses, ourNodeEvents, routeSyncs, SHUTDOWN_TAINT } from '../../helpers/untouched-nodes.js';
import { waitFor } from '../../helpers/wait.js';

const test = anyTest as TestFn<{ core: CoreV1Api }>;

test.before(async (t) => {
  t.context = { core: (await testKubeConfig()).makeApiClient(CoreV1Api) };
});

/** How the local cloud comes to claim the Nodes labelled ccm-test-cloud=local (and no other Node without a providerID). */
const WAYS: { name: string; args: string[] }[] = [
  { name: 'declared by the provider (node_selector)', args: [`--plugin-env=LOCALCLOUD_NODE_SELECTOR=${CLOUD_LABEL}=local`] },
  {
    name: "the operator's --node-ownership-selector replacing the provider's",
    args: [`--plugin-env=LOCALCLOUD_NODE_SELECTOR=${CLOUD_LABEL}=elsewhere`, `--node-ownership-selector=${CLOUD_LABEL}=local`],
  },
];

for (const way of WAYS) {
  test.serial(
    `Nodes no provider owns are never initialized, tainted, untainted, deleted or routed; the local cloud's are handled: ${way.name}`,
    async (t) => {
      const { core } = t.context;
      const dir = await mkdtemp(join(tmpdir(), 'ccm-ownership-it-'));
      const scope = testScope('own');
      const state = join(dir, 'cloud');
      t.teardown(() => deleteScopedNodes(core, scope.selector));
      const host = await startTestHost(dir, [
        '--controllers=cloud-node,cloud-node-lifecycle,route',
        '--node-monitor-period=1s',
        '--route-reconciliation-period=1s',
        '--cluster-cidr=10.241.0.0/16',
        `--node-selector=${scope.selector}`,
        ...way.args,
      ]);
      t.teardown(() => host.stop());
      const name = (s: string) => `${scope.prefix}-${s}`;
      const [ours, oursGone, foreign, stray, gone] = ['ours', 'ours-gone', 'foreign', 'stray', 'gone'].map(name) as [
        string,
        string,
        string,
        string,
        string,
      ];
      // Cloud instances: ours, and one named like the stray Node (so only ownership keeps it from being initialized).
      await localcloud(state, 'instance', 'add', ours, stray, '--zone', 'zone-a', '--type', 'm.large');
      const uninit = { key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' };
      const shutdown = { key: SHUTDOWN_TAINT, effect: 'NoSchedule' };
      // The local cloud's: one to initialize and route, one whose instance is gone (deleted as usual).
      await createTestNode(core, ours, {
        labels: { ...scope.labels, [CLOUD_LABEL]: 'local' },
        ready: true,
        taints: [uninit],
        podCidrs: ['10.241.1.0/24'],
      });
      await createTestNode(core, oursGone, { labels: scope.labels, ready: false, providerId: 'local://no-such-instance' });
      // Nobody's: another provider's Node, Ready with both taints; a Node without providerID whose labels do not
      // match (an instance of its name exists); a NotReady Node without providerID or instance.
      await createTestNode(core, foreign, {
        labels: { ...scope.labels, [CLOUD_LABEL]: 'local' },
        ready: true,
        taints: [uninit, shutdown],
        podCidrs: ['10.241.2.0/24'],
        providerId: 'other://x',
      });
      await createTestNode(core, stray, {
        labels: { ...scope.labels, [CLOUD_LABEL]: 'elsewhere' },
        ready: true,
        taints: [uninit],
        podCidrs: ['10.241.3.0/24'],
      });
      await createTestNode(core, gone, { labels: scope.labels, ready: false, podCidrs: ['10.241.4.0/24'] });
      const before = new Map<string, ReturnType<typeof footprint>>();
      for (const n of [foreign, stray, gone]) before.set(n, footprint(await core.readNode({ name: n })));

      // The local cloud's Nodes are handled normally.
      const initialized = await waitNodeInitialized(core, ours, 'the host');
      t.is(initialized.spec?.providerID?.startsWith('local://'), true);
      await waitFor(async () => (await cloudRoutes(state)).some((r) => r.targetNode === ours && r.destinationCidr === '10.241.1.0/24'), {
        what: `a route for ${ours}`,
        log: host.logPath,
      });
      await waitFor(async () => (await readNodeOrUndefined(core, oursGone)) === undefined, { what: `${oursGone} deleted`, log: host.logPath });

      // Several more lifecycle passes (its grace period is 0: the first "gone" deletes) and route reconciles.
      const passes = await lifecyclePasses(host);
      const syncs = await routeSyncs(host);
      await waitFor(async () => (await lifecyclePasses(host)) >= passes + 5 && (await routeSyncs(host)) >= syncs + 3, {
        what: 'five more lifecycle passes and three more route reconciles',
      });

      const routes = await cloudRoutes(state);
      for (const n of [foreign, stray, gone]) {
        const node = await readNodeOrUndefined(core, n);
        t.truthy(node, `${n} is not deleted`);
        if (!node) continue;
        t.deepEqual(footprint(node), before.get(n), `${n}: no taint, providerID, label, address or condition change`);
        t.deepEqual(
          routes.filter((r) => r.targetNode === n),
          [],
          `${n}: no route`,
        );
        t.deepEqual(await ourNodeEvents(core, n), [], `${n}: no event from this host`);
      }
      t.true(before.get(foreign)!.uninitialized && before.get(foreign)!.shutdown, 'the foreign Node had both taints to begin with');
    },
  );
}
