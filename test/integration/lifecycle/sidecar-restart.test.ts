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
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost } from '../../helpers/host.js';
import { createTestNode, deleteScopedNodes, readNodeOrUndefined, testScope } from '../../helpers/nodes.js';
import { startSidecar } from '../../helpers/sidecar.js';
import { waitFor } from '../../helpers/wait.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/unguarded-provider.js', import.meta.url));

interface Call {
  pid: number;
  configured: boolean;
  method: string;
  node?: string;
}

async function calls(path: string): Promise<Call[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Call);
}

const cases = [
  { instanceId: 'random', scope: testScope('sr-id') },
  { instanceId: 'empty', scope: testScope('sr-noid') },
];

for (const { instanceId, scope } of cases) {
  test.serial(`a sidecar restarted unconfigured (instance id ${instanceId}) is configured again and no Node is deleted`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ccm-sidecar-restart-'));
    const callLog = join(dir, 'calls.jsonl');
    const launcher = join(dir, 'provider');
    await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${FIXTURE}' "$@"\n`);
    await chmod(launcher, 0o755);
    const env = { FIXTURE_INSTANCE_ID: instanceId, FIXTURE_CALL_LOG: callLog };
    const names = [`${scope.prefix}-a`, `${scope.prefix}-b`];
    const config = join(dir, 'cloud.json');
    await writeFile(config, JSON.stringify({ instances: names }));

    const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
    let sidecar = await startSidecar(launcher, dir, env);
    const host = await startTestHost(dir, [
      '--cloud-provider=unguarded',
      `--plugin-endpoint=${sidecar.endpoint}`,
      `--cloud-config=${config}`,
      '--controllers=cloud-node-lifecycle',
      '--node-monitor-period=1s',
      `--node-selector=${scope.selector}`,
    ]);
    t.teardown(async () => {
      await host.stop();
      await sidecar.stop();
      await deleteScopedNodes(core, scope.selector);
    });
    const uids = new Map<string, string>();
    for (const n of names) uids.set(n, (await createTestNode(core, n, { labels: scope.labels, ready: false })).metadata!.uid!);
    const states: string[] = [];
    host.supervisor.on('state', (s: string) => states.push(s));

    // Passes run against the configured first process.
    const first = await waitFor(async () => {
      const c = await calls(callLog);
      return c.filter((x) => x.method === 'InstanceExists').length >= 2 * names.length ? c[0]!.pid : undefined;
    }, { what: 'lifecycle passes against the first provider process' });

    await sidecar.stop();
    sidecar = await startSidecar(launcher, dir, env);

    const second = await waitFor(async () => {
      const c = await calls(callLog);
      const pid = c.find((x) => x.pid !== first)?.pid;
      return pid && c.some((x) => x.pid === pid && x.method === 'Configure') ? pid : undefined;
    }, { what: 'Configure sent to the restarted provider' });
    // Passes resumed against the new process, so the host has looked at both nodes again.
    await waitFor(async () => (await calls(callLog)).filter((x) => x.pid === second && x.method === 'InstanceExists').length >= 2 * names.length, {
      what: 'lifecycle passes against the restarted provider',
    });

    const log = await calls(callLog);
    t.deepEqual(log.filter((x) => x.method === 'InstanceExists' && !x.configured), [], 'no lookup reached an unconfigured process');
    t.true(states.includes('starting'), `readiness went false while the start sequence ran again (states: ${states.join(' → ')})`);
    t.is(host.supervisor.state, 'ready');
    for (const n of names) t.is((await readNodeOrUndefined(core, n))?.metadata?.uid, uids.get(n), `${n} is kept`);
  });
}
