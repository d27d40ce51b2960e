/**
 * Node events trigger route reconciles, but no more often than upstream's
 * watch-based route controller allows (KEP-5237, cloud-provider v1.35: a
 * token bucket of one reconcile per 10 s whose wait is capped at 10 s): a
 * burst of node additions costs one reconcile at once and then one per 10 s,
 * not one per event. The periodic reconcile is set to an hour, so only events
 * drive this host.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';

const scope = testScope('rtev');
/** Upstream's minRouteResyncInterval. */
const MIN_INTERVAL_MS = 10_000;
const WAVES = 4;
const PER_WAVE = 3;

async function reconciles(host: TestHost): Promise<number> {
  const metric = await host.metrics.registry.getSingleMetric('route_controller_route_sync_total')!.get();
  return metric.values.reduce((n, v) => n + v.value, 0);
}

test('a burst of node events costs one reconcile at once, then at most one per 10 s', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-route-events-it-'));
  const state = join(dir, 'cloud');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const host = await startTestHost(dir, [
    '--controllers=route',
    '--cluster-cidr=10.241.0.0/16',
    '--route-reconciliation-period=1h',
    `--node-selector=${scope.selector}`,
  ]);
  t.teardown(async () => {
    await host.stop();
    await deleteScopedNodes(core, scope.selector);
  });
  // The first periodic reconcile runs at start.
  await waitFor(async () => (await reconciles(host)) >= 1, { what: 'the first reconcile', log: host.logPath });
  const before = await reconciles(host);

  // Waves of additions, each waited for: without a minimum interval every wave costs at least one
  // reconcile within a second or two; with it, waves after the first wait for the bucket.
  const started = Date.now();
  for (let wave = 0; wave < WAVES; wave++) {
    const names = Array.from({ length: PER_WAVE }, (_, i) => `${scope.prefix}-${wave}-${i}`);
    const cidrs = names.map((_, i) => `10.241.${wave * PER_WAVE + i}.0/24`);
    await localcloud(state, 'instance', 'add', ...names);
    for (const [i, name] of names.entries()) await createTestNode(core, name, { labels: scope.labels, podCidrs: [cidrs[i]!] });
    await waitFor(
      async () => {
        const routes = JSON.parse(await localcloud(state, 'route', 'list', '--cluster', 'test', '-o', 'json')) as { destinationCidr: string }[];
        return cidrs.every((c) => routes.some((r) => r.destinationCidr === c));
      },
      { what: `routes for wave ${wave}`, log: host.logPath },
    );
  }
  const elapsed = Date.now() - started;
  const made = (await reconciles(host)) - before;
  // One at once, one per started 10 s since, and one in flight when counting stopped.
  const allowed = 2 + Math.ceil(elapsed / MIN_INTERVAL_MS);
  t.true(made <= allowed, `${made} reconciles for ${WAVES} waves of node additions in ${elapsed} ms; at most ${allowed} allowed`);
  // Upstream v1.37's labels: the start's reconcile was periodic, the waves' were node changes that created routes.
  const byLabels = (await host.metrics.registry.getSingleMetric('route_controller_route_sync_total')!.get()).values;
  const count = (trigger: string, outcome: string) =>
    byLabels.filter((v) => v.labels.trigger === trigger && v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
  t.true(count('periodic', 'noop') >= 1, JSON.stringify(byLabels));
  t.true(count('node_change', 'changed') >= 1, JSON.stringify(byLabels));
  t.is(count('node_change', 'error') + count('periodic', 'error'), 0, JSON.stringify(byLabels));
});
