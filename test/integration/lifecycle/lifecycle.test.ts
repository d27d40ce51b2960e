/**
 * The cloud node lifecycle controller end to end: the real host, the local
 * cloud as a real plugin process (instances deleted, shut down and started
 * with its CLI), and the shared real kube-apiserver. The host only sees this
 * file's nodes (--node-selector).
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, hasTaint, nodeEvents, readNodeOrUndefined, setReady, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';

const SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
const scope = testScope('lc');
const test = anyTest as TestFn<{ state: string; host: TestHost; core: CoreV1Api }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lifecycle-it-'));
  const host = await startTestHost(dir, ['--controllers=cloud-node-lifecycle', '--node-monitor-period=1s', `--node-selector=${scope.selector}`]);
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  t.context = { state: join(dir, 'cloud'), host, core };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
  if (t.context.core) await deleteScopedNodes(t.context.core, scope.selector);
});

const name = (s: string) => `${scope.prefix}-${s}`;

test('a NotReady node whose instance is deleted is deleted, with a DeletingNode event', async (t) => {
  const { state, core } = t.context;
  const n = name('gone');
  await localcloud(state, 'instance', 'add', n);
  await createTestNode(core, n, { labels: scope.labels, ready: false });
  await localcloud(state, 'instance', 'delete', n);
  await waitFor(async () => (await readNodeOrUndefined(core, n)) === undefined, { what: `node ${n} deleted`, timeoutMs: 60_000 });
  const events = await waitFor(
    async () => {
      const ev = await nodeEvents(core, n);
      return ev.some((e) => e.reason === 'DeletingNode') ? ev : undefined;
    },
    { what: 'DeletingNode event' },
  );
  const ev = events.find((e) => e.reason === 'DeletingNode')!;
  t.is(ev.type, 'Normal');
  t.is(ev.source?.component, 'cloud-node-lifecycle-controller');
  t.regex(ev.message ?? '', /does not exist in the cloud provider/);
});

test('shut down → shutdown taint (NoSchedule); started again → taint removed; the node is kept throughout', async (t) => {
  const { state, core } = t.context;
  const n = name('stop');
  await localcloud(state, 'instance', 'add', n);
  await createTestNode(core, n, { labels: scope.labels, ready: false });
  await localcloud(state, 'instance', 'shutdown', n);
  const tainted = await waitFor(
    async () => {
      const node = await core.readNode({ name: n });
      return hasTaint(node, SHUTDOWN) ? node : undefined;
    },
    { what: 'shutdown taint' },
  );
  const taint = tainted.spec!.taints!.find((x) => x.key === SHUTDOWN)!;
  t.is(taint.effect, 'NoSchedule');
  await localcloud(state, 'instance', 'start', n);
  await waitFor(async () => !hasTaint(await core.readNode({ name: n }), SHUTDOWN), { what: 'shutdown taint removed after start' });

  // Shut down again, then the node reports Ready: the taint goes too (upstream rule).
  await localcloud(state, 'instance', 'shutdown', n);
  await waitFor(async () => hasTaint(await core.readNode({ name: n }), SHUTDOWN), { what: 'shutdown taint again' });
  await setReady(core, n, true);
  await waitFor(async () => !hasTaint(await core.readNode({ name: n }), SHUTDOWN), { what: 'shutdown taint removed from a Ready node' });
  t.truthy(await readNodeOrUndefined(core, n));
});

test('a Ready node whose instance is gone is not deleted (only NotReady nodes are checked)', async (t) => {
  const { state, core } = t.context;
  const ready = name('ready');
  const marker = name('marker');
  await localcloud(state, 'instance', 'add', ready);
  const created = await createTestNode(core, ready, { labels: scope.labels, ready: true });
  await localcloud(state, 'instance', 'delete', ready);
  // A NotReady node without an instance, created after: once it is gone, the
  // controller has made passes that saw the Ready node without its instance.
  await createTestNode(core, marker, { labels: scope.labels, ready: false });
  await waitFor(async () => (await readNodeOrUndefined(core, marker)) === undefined, { what: 'marker node deleted' });
  // A second marker, created after the first is gone, proves one more complete pass.
  const marker2 = name('marker2');
  await createTestNode(core, marker2, { labels: scope.labels, ready: false });
  await waitFor(async () => (await readNodeOrUndefined(core, marker2)) === undefined, { what: 'second marker node deleted' });
  const still = await readNodeOrUndefined(core, ready);
  t.truthy(still, 'the Ready node is still there');
  t.is(still?.metadata?.uid, created.metadata?.uid);
  t.false((await nodeEvents(core, ready)).some((e) => e.reason === 'DeletingNode'));
});

test('a node with the shutdown taint whose instance runs loses the taint even while NotReady', async (t) => {
  const { state, core } = t.context;
  const n = name('stale-taint');
  await localcloud(state, 'instance', 'add', n);
  await createTestNode(core, n, { labels: scope.labels, ready: false, taints: [{ key: SHUTDOWN, effect: 'NoSchedule' }] });
  await waitFor(async () => !hasTaint(await core.readNode({ name: n }), SHUTDOWN), { what: 'stale shutdown taint removed' });
  t.pass();
});
