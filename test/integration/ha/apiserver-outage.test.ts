/**
 * The API server goes away under a leading host (its own control plane, so
 * other tests are not disturbed). 5 s down: the leader keeps its lease (the
 * outage is shorter than the renew deadline), does not restart, and
 * converges after. 60 s down: the leader cannot renew, exits non-zero as
 * upstream; the test restarts it like a kubelet would, and it converges. The
 * cloud journal shows no duplicate create either way.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { readJournal } from '../../../plugins/local/journal.js';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { spawnHost, type HostProcess } from '../../helpers/ha-host-process.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

test('API server down 5 s: no restart; down 60 s: the leader exits 1, is restarted and converges; no duplicate cloud creates', async (t) => {
  t.timeout(300_000);
  const cp = await ControlPlane.start();
  t.teardown(() => cp.stop());
  const dir = await mkdtemp(join(tmpdir(), 'ccm-outage-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, cp.kubeConfig().exportConfig(), { mode: 0o600 });
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const state = join(dir, 'cloud');
  const args = [
    '--cloud-provider=local',
    '--cluster-name=outage',
    `--kubeconfig=${kubeconfig}`,
    '--controllers=cloud-node',
    '--secure-port=0',
    '--leader-elect=true',
    // Renew deadline 25 s: longer than a 5 s outage plus the API server's
    // stop and restart (several seconds each on a loaded machine).
    '--leader-elect-lease-duration=30s',
    '--leader-elect-renew-deadline=25s',
    '--leader-elect-retry-period=2s',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
    '--plugin-env=LOCALCLOUD_JOURNAL=all',
    '-v=2',
  ];
  // A kubelet stand-in: restart the host whenever it exits, until the test ends.
  const runs: { host: HostProcess; code?: number | string }[] = [];
  let stopping = false;
  const run = (n: number): void => {
    const host = spawnHost(args, join(dir, `host-${n}.log`));
    const entry: { host: HostProcess; code?: number | string } = { host };
    runs.push(entry);
    void host.exited.then((code) => {
      entry.code = code;
      if (!stopping) setTimeout(() => run(n + 1), 1000);
    });
  };
  run(1);
  t.teardown(() => {
    stopping = true;
    for (const r of runs) r.host.kill('SIGKILL');
  });
  let seq = 0;
  const initNode = async () => {
    const name = `outage-${randomBytes(3).toString('hex')}-${++seq}`;
    await localcloud(state, 'instance', 'add', name, '--address', `127.0.5.${seq}`);
    await waitFor(() => core.createNode({ body: { metadata: { name }, spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] } } }).then(() => true), { what: `create ${name}`, timeoutMs: 120_000 });
    await waitFor(async () => !(await core.readNode({ name })).spec?.taints?.some((x) => x.key === UNINITIALIZED), { what: `${name} initialized`, timeoutMs: 120_000 });
  };
  await runs[0]!.host.identity;
  await initNode();

  // 5 s outage.
  const down5 = Date.now();
  await cp.stopApiServer();
  await new Promise((r) => setTimeout(r, 5000));
  await cp.startApiServer();
  const outage5Ms = Date.now() - down5;
  await initNode();
  t.is(runs.length, 1, 'no restart after a 5 s outage');
  t.is(runs[0]!.code, undefined, 'the leader kept running');

  // 60 s outage.
  await cp.stopApiServer();
  await waitFor(() => runs[0]!.code !== undefined, { what: 'the leader exits when it cannot renew', timeoutMs: 70_000 });
  t.is(runs[0]!.code, 1, 'a lost lease exits 1');
  await new Promise((r) => setTimeout(r, Math.max(0, 60_000 - 20_000)));
  await cp.startApiServer();
  await initNode();
  const serving = runs.at(-1)!;
  t.is(serving.code, undefined, 'the restarted host runs');
  t.not(await serving.host.identity, await runs[0]!.host.identity);

  const journal = await readJournal(state);
  const creates = journal.filter((e) => e.mutating && /\.(ensure|create)/i.test(e.method) && e.ok);
  const keys = creates.map((e) => `${e.method} ${e.key}`);
  t.deepEqual(keys.filter((k, i) => keys.indexOf(k) !== i), [], 'no object created twice');
  t.log(`first outage, stop to ready again: ${(outage5Ms / 1000).toFixed(1)} s`);
  t.log(`host runs: ${runs.length}; exit codes: ${runs.map((r) => r.code ?? 'running').join(', ')}; journaled calls: ${journal.length} (mutating: ${journal.filter((e) => e.mutating).length})`);
});
