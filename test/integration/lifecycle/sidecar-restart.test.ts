/**
 * A sidecar provider restarted under a running host comes back unconfigured.
 * The provider here (test/fixtures/unguarded-provider.ts) is written without
 * the SDK and does not refuse calls before Configure: unconfigured, it says
 * every instance is gone. The host must notice that a new process answers,
 * keep readiness false, send Configure again before any further cloud call,
 * and so delete no Node. Run with a per-process instance id (what the
 * protocol asks) and with none (an older provider: only the dropped
 * connection tells).
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { createTestNode, deleteScopedNodes, readNodeOrUndefined, testScope } from '../../helpers/nodes.js';
import { startUnguarded } from '../../helpers/unguarded.js';
import { waitFor } from '../../helpers/wait.js';

const cases = [
  { instanceId: 'random', scope: testScope('sr-id') },
  { instanceId: 'empty', scope: testScope('sr-noid') },
] as const;

for (const { instanceId, scope } of cases) {
  test.serial(`a sidecar restarted unconfigured (instance id ${instanceId}) is configured again and no Node is deleted`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ccm-sidecar-restart-'));
    const names = [`${scope.prefix}-a`, `${scope.prefix}-b`];
    const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
    const u = await startUnguarded(dir, names, instanceId, [
      '--controllers=cloud-node-lifecycle',
      '--node-monitor-period=1s',
      `--node-selector=${scope.selector}`,
    ]);
    t.teardown(async () => {
      await u.stop();
      await deleteScopedNodes(core, scope.selector);
    });
    const uids = new Map<string, string>();
    for (const n of names) uids.set(n, (await createTestNode(core, n, { labels: scope.labels, ready: false })).metadata!.uid!);
    const states: string[] = [];
    u.host.supervisor.on('state', (s: string) => states.push(s));

    // Passes run against the configured first process.
    const first = await waitFor(
      async () => {
        const c = await u.calls();
        return c.filter((x) => x.method === 'InstanceExists').length >= 2 * names.length ? c[0]!.pid : undefined;
      },
      { what: 'lifecycle passes against the first provider process' },
    );

    await u.restart();

    const second = await waitFor(
      async () => {
        const c = await u.calls();
        const pid = c.find((x) => x.pid !== first)?.pid;
        return pid && c.some((x) => x.pid === pid && x.method === 'Configure') ? pid : undefined;
      },
      { what: 'Configure sent to the restarted provider' },
    );
    // Passes resumed against the new process, so the host has looked at both nodes again.
    await waitFor(async () => (await u.calls()).filter((x) => x.pid === second && x.method === 'InstanceExists').length >= 2 * names.length, {
      what: 'lifecycle passes against the restarted provider',
    });

    const log = await u.calls();
    t.deepEqual(
      log.filter((x) => x.method === 'InstanceExists' && !x.configured),
      [],
      'no lookup reached an unconfigured process',
    );
    t.true(states.includes('starting'), `readiness went false while the start sequence ran again (states: ${states.join(' → ')})`);
    t.is(u.host.supervisor.state, 'ready');
    for (const n of names) t.is((await readNodeOrUndefined(core, n))?.metadata?.uid, uids.get(n), `${n} is kept`);
  });
}
