/**
 * A cloud that fails (UNAVAILABLE, RATE_LIMITED, DEADLINE_EXCEEDED) never
 * makes the lifecycle controller delete a Node, not even one whose instance
 * really is gone; once the cloud answers again, only that one is deleted.
 * The provider runs without its batch RPCs here (LOCALCLOUD_NO_BATCH), so the
 * single-call path (InstanceExists + InstanceShutdown) is the one exercised.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { localcloud } from '../../helpers/localcloud.js';
import { createTestNode, deleteScopedNodes, readNodeOrUndefined, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';

const scope = testScope('lcf');
const test = anyTest as TestFn<{ state: string; host: TestHost; core: CoreV1Api }>;
const FAULT_MS = 30_000;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lifecycle-faults-it-'));
  const host = await startTestHost(dir, [
    '--controllers=cloud-node-lifecycle',
    '--node-monitor-period=1s',
    '--plugin-call-timeout=1s',
    `--node-selector=${scope.selector}`,
    '--plugin-env=LOCALCLOUD_NO_BATCH=1',
  ]);
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  t.context = { state: join(dir, 'cloud'), host, core };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
  if (t.context.core) await deleteScopedNodes(t.context.core, scope.selector);
});

/** Calls the host made to the plugin that ended with `code`. */
function callsWithCode(host: TestHost, code: string): Promise<number> {
  return host.metrics.registry
    .getSingleMetric('ccm_plugin_rpc_errors_total')!
    .get()
    .then((m) => m.values.filter((v) => v.labels.code === code).reduce((n, v) => n + v.value, 0));
}

test.serial(
  'no node is deleted while the cloud answers UNAVAILABLE, RATE_LIMITED or DEADLINE_EXCEEDED; afterwards only the gone one is',
  async (t) => {
    const { state, core, host } = t.context;
    t.false(host.cloud.instances()!.batched, 'the provider runs without batch RPCs');
    const names = Array.from({ length: 5 }, (_, i) => `${scope.prefix}-n${i}`);
    await localcloud(state, 'instance', 'add', ...names);
    for (const n of names) await createTestNode(core, n, { labels: scope.labels, ready: false });
    const uids = new Map<string, string>();
    for (const n of names) uids.set(n, (await core.readNode({ name: n })).metadata!.uid!);

    // The rate limiter lets its first call through (burst 1), so n0's instance
    // is deleted only from the second phase on, when every call fails. Each
    // phase sets its knobs before the previous phase's are unset, so the cloud
    // never answers normally in between.
    const phases: { label: string; set: string[]; code: string; ms: number }[] = [
      { label: 'RATE_LIMITED', set: ['rateLimitQps=0.001', 'rateLimitBurst=1'], code: 'RESOURCE_EXHAUSTED', ms: FAULT_MS },
      { label: 'UNAVAILABLE', set: ['failAll=true'], code: 'UNAVAILABLE', ms: FAULT_MS },
      { label: 'DEADLINE_EXCEEDED', set: ['latencyMs=3000'], code: 'DEADLINE_EXCEEDED', ms: 10_000 },
    ];
    let previous: string[] = [];
    for (const { label, set, code, ms } of phases) {
      const before = await callsWithCode(host, code);
      await localcloud(state, 'knobs', 'set', ...set);
      if (previous.length) await localcloud(state, 'knobs', 'unset', ...previous.map((kv) => kv.split('=')[0]!));
      previous = set;
      if (label === 'UNAVAILABLE') await localcloud(state, 'instance', 'delete', names[0]!);
      const until = Date.now() + ms;
      while (Date.now() < until) {
        for (const n of names) {
          const node = await readNodeOrUndefined(core, n);
          t.is(node?.metadata?.uid, uids.get(n), `${n} still exists during ${label}`);
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
      t.true((await callsWithCode(host, code)) > before, `the host saw ${code} during ${label}`);
    }
    await localcloud(state, 'knobs', 'reset');

    await waitFor(async () => (await readNodeOrUndefined(core, names[0]!)) === undefined, {
      what: 'the node without an instance deleted after recovery',
    });
    for (const n of names.slice(1)) t.is((await readNodeOrUndefined(core, n))?.metadata?.uid, uids.get(n), `${n} kept`);
  },
);
