/**
 * The mass-deletion brake (--node-deletion-limit) end to end: a provider
 * that reports every instance gone (the unguarded fixture configured with no
 * instances) and many NotReady Nodes. The host deletes at most the bound per
 * window, holds back the rest with a Warning event each and the metric, and
 * resumes once the window allows; and the count survives a restart (it is
 * kept on a Lease, not in the host's memory).
 */
import test from 'ava';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import type { TestHost } from '../../helpers/host.js';
import { createTestNode, deleteScopedNodes, nodeEvents, readNodeOrUndefined, testScope } from '../../helpers/nodes.js';
import { startUnguarded } from '../../helpers/unguarded.js';
import { waitFor } from '../../helpers/wait.js';

async function heldBackTotal(host: TestHost): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_node_lifecycle_deletions_held_back_total')!.get();
  return m.values.reduce((n, v) => n + v.value, 0);
}

/** Completed lifecycle passes of `host` (its pass duration histogram's count). */
async function passes(host: TestHost): Promise<number> {
  const m = await host.metrics.registry.getSingleMetric('ccm_node_lifecycle_pass_duration_seconds')!.get();
  return m.values.find((v) => (v as { metricName?: string }).metricName === 'ccm_node_lifecycle_pass_duration_seconds_count')?.value ?? 0;
}

async function existing(core: CoreV1Api, names: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const n of names) if (await readNodeOrUndefined(core, n)) out.push(n);
  return out;
}

test.serial('default limit: of 12 Nodes reported gone, 5 are deleted; the other 7 are held back with a Warning each and the metric', async (t) => {
  const scope = testScope('brk');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-deletion-brake-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  // All Nodes exist (with their status) before the host starts: it would otherwise delete one between its create and its status write.
  const names = Array.from({ length: 12 }, (_, i) => `${scope.prefix}-n${String(i).padStart(2, '0')}`);
  t.teardown(() => deleteScopedNodes(core, scope.selector));
  for (const n of names) await createTestNode(core, n, { labels: scope.labels, ready: false });
  const u = await startUnguarded(dir, [], 'random', [
    '--controllers=cloud-node-lifecycle',
    '--node-monitor-period=1s',
    `--node-selector=${scope.selector}`,
  ]);
  t.teardown(() => u.stop());

  const kept = await waitFor(
    async () => {
      const left = await existing(core, names);
      return left.length <= names.length - 5 ? left : undefined;
    },
    { what: '5 nodes deleted' },
  );
  t.is(kept.length, 7, 'no more than max(10% of 12, 5) = 5 deleted');

  // Three more passes over the held-back nodes delete nothing more.
  const lookups = async () => (await u.calls()).filter((c) => c.method === 'InstanceExists' && c.node === kept[0]).length;
  const before = await lookups();
  await waitFor(async () => (await lookups()) >= before + 3, { what: 'three more lifecycle passes' });
  t.deepEqual(await existing(core, names), kept);

  for (const n of kept) {
    const ev = await waitFor(async () => (await nodeEvents(core, n)).find((e) => e.reason === 'DeletingNodeHeldBack'), {
      what: `DeletingNodeHeldBack on ${n}`,
    });
    t.is(ev.type, 'Warning');
    t.regex(ev.message ?? '', /at most 5 nodes are deleted per 5m0s \(--node-deletion-limit\)/);
  }
  t.true((await heldBackTotal(u.host)) >= kept.length);
  t.true((await readFile(u.host.logPath, 'utf8')).includes('node deletion limit reached'), 'one log line says why');
});

test.serial('the brake resumes: held-back Nodes still reported gone are deleted as the window allows', async (t) => {
  const scope = testScope('brr');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-deletion-brake-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  // All Nodes exist (with their status) before the host starts: it would otherwise delete one between its create and its status write.
  const names = Array.from({ length: 8 }, (_, i) => `${scope.prefix}-n${i}`);
  t.teardown(() => deleteScopedNodes(core, scope.selector));
  for (const n of names) await createTestNode(core, n, { labels: scope.labels, ready: false });
  const u = await startUnguarded(dir, [], 'random', [
    '--controllers=cloud-node-lifecycle',
    '--node-monitor-period=1s',
    '--node-deletion-limit=3',
    '--node-deletion-limit-window=2s',
    `--node-selector=${scope.selector}`,
  ]);
  t.teardown(() => u.stop());
  await waitFor(async () => (await existing(core, names)).length === 0, { what: 'every node deleted in the end' });
  t.true((await heldBackTotal(u.host)) > 0, 'some deletions were held back on the way');
});

test.serial('the brake remembers across a restart: with a limit of 3, a new host deletes nothing more inside the window', async (t) => {
  const scope = testScope('brm');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const coordination = (await testKubeConfig()).makeApiClient(CoordinationV1Api);
  const names = Array.from({ length: 8 }, (_, i) => `${scope.prefix}-n${i}`);
  t.teardown(() => deleteScopedNodes(core, scope.selector));
  for (const n of names) await createTestNode(core, n, { labels: scope.labels, ready: false });
  const args = [
    '--controllers=cloud-node-lifecycle',
    '--node-monitor-period=1s',
    '--node-deletion-limit=3',
    '--node-deletion-limit-window=10m',
    `--node-selector=${scope.selector}`,
  ];

  // The first host deletes 3 and holds back the rest.
  const first = await startUnguarded(await mkdtemp(join(tmpdir(), 'ccm-deletion-brake-')), [], 'random', args);
  let firstStopped = false;
  t.teardown(() => (firstStopped ? undefined : first.stop()));
  await waitFor(async () => (await existing(core, names)).length <= names.length - 3 && (await heldBackTotal(first.host)) > 0, {
    what: '3 nodes deleted and the rest held back',
  });
  firstStopped = true;
  await first.stop();
  const kept = await existing(core, names);
  t.is(kept.length, 5);

  // The count is in the cluster: the brake's Lease carries this host's deletions.
  const lease = await coordination.readNamespacedLease({ name: 'cloud-controller-manager-node-deletions', namespace: 'kube-system' });
  const record = Object.entries(lease.metadata?.annotations ?? {})
    .filter(([k]) => k.startsWith('lifecycle.ccm.dev/node-deletions-'))
    .map(([, v]) => JSON.parse(v) as { for: string; deletions: { count: number }[] })
    .find((v) => v.for.includes(scope.selector));
  t.is(
    record?.deletions.reduce((n, d) => n + d.count, 0),
    3,
    'three deletions recorded for this node selector',
  );

  // A new host (a restart, or another replica taking over) on the same Nodes, well inside the window.
  const second = await startUnguarded(await mkdtemp(join(tmpdir(), 'ccm-deletion-brake-')), [], 'random', args);
  t.teardown(() => second.stop());
  await waitFor(async () => (await passes(second.host)) >= 3, { what: "three of the new host's lifecycle passes" });
  t.deepEqual(await existing(core, names), kept, 'no more than 3 Nodes deleted within the window in total');
});
