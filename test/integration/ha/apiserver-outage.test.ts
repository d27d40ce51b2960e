/**
 * The API server goes away under a leading host (its own control plane, so
 * other tests are not disturbed). 5 s down: the leader keeps its lease (the
 * outage is shorter than the renew deadline), does not restart, and
 * converges after. 60 s down: the leader cannot renew, exits non-zero as
 * upstream; the test restarts it like a kubelet would, and it converges.
 * The host runs the cloud-node and service controllers; LoadBalancer
 * Services are created and deleted before, between and after the outages,
 * with initialized nodes as backends. The cloud journal shows both the first
 * and the restarted leader changing the cloud, never at overlapping times,
 * and exactly one create per load balancer; in the end the cloud's load
 * balancers are exactly those of the Services that want one. The host runs
 * as the shipped ServiceAccount (deploy/rbac.yaml applied to this control
 * plane) and meets no 403 except while the API server restarts.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { readJournal } from '../../../plugins/local/journal.js';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { forbiddenLogTimes } from '../../helpers/forbidden.js';
import { spawnHost, type HostProcess } from '../../helpers/ha-host-process.js';
import { applyShippedRbac, serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { lbService } from '../../helpers/lb.js';
import { ALLOW_SIMULATION_FLAG, localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { lbCreatesByUid, mutationsByCaller, overlaps, settledLbs } from './ha-checks.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const CLUSTER = 'outage';
const NS = 'outage';
/** After it is ready again, how long a restarted API server may still answer 403 (RBAC caches filling). */
const RBAC_WARMUP_MS = 30_000;

test('API server down 5 s: no restart; down 60 s: the leader exits 1, is restarted and converges; one create per load balancer, no overlapping cloud changes, no orphans', async (t) => {
  t.timeout(300_000);
  const cp = await ControlPlane.start();
  t.teardown(() => cp.stop());
  const dir = await mkdtemp(join(tmpdir(), 'ccm-outage-'));
  // The host runs as the shipped ServiceAccount on this control plane too; the test keeps the admin.
  await applyShippedRbac(cp.kubeConfig());
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, (await serviceAccountKubeConfig(cp.kubeConfig())).exportConfig(), { mode: 0o600 });
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const state = join(dir, 'cloud');
  const args = [
    '--cloud-provider=local',
    `--cluster-name=${CLUSTER}`,
    `--kubeconfig=${kubeconfig}`,
    '--controllers=cloud-node,service',
    `--watch-namespace=${NS}`,
    '--secure-port=0',
    '--leader-elect=true',
    // Renew deadline 40 s: longer than a 5 s outage plus the API server's
    // stop and restart (several seconds each on a loaded machine; at a load
    // of 30 a restarted API server took 20 s to answer the first renewal),
    // and shorter than the 60 s outage.
    '--leader-elect-lease-duration=45s',
    '--leader-elect-renew-deadline=40s',
    '--leader-elect-retry-period=2s',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
    ALLOW_SIMULATION_FLAG,
    '--plugin-env=LOCALCLOUD_JOURNAL=all',
    // Own ingress pool: the load balancers really listen on loopback.
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.62.0/24',
    '-v=2',
    // JSON lines: 403s are allowed only while the API server restarts, read by each line's time.
    '--logging-format=json',
  ];
  // A kubelet stand-in: restart the host whenever it exits, until the test ends.
  const runs: { host: HostProcess; code?: number | string }[] = [];
  let stopping = false;
  const run = (n: number): void => {
    const host = spawnHost(args, join(dir, `host-${n}.log`), { ownApiServer: true });
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
  const nodes: string[] = [];
  const initNode = async () => {
    const name = `outage-${randomBytes(3).toString('hex')}-${++seq}`;
    nodes.push(name);
    // The cloud-node controller copies this InternalIP to the node: a load balancer backend.
    await localcloud(state, 'instance', 'add', name, '--address', `127.0.5.${seq}`);
    await waitFor(
      () =>
        core
          .createNode({ body: { metadata: { name }, spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] } } })
          .then(() => true),
      { what: `create ${name}`, timeoutMs: 120_000 },
    );
    await waitFor(async () => !(await core.readNode({ name })).spec?.taints?.some((x) => x.key === UNINITIALIZED), {
      what: `${name} initialized`,
      timeoutMs: 120_000,
    });
  };
  const live: string[] = [];
  const gone: string[] = [];
  const createSvc = async (name: string) => {
    await core.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8080 }]) });
    live.push(name);
  };
  const settled = () => settledLbs(core, state, { namespace: NS, clusterName: CLUSTER, live, gone, backends: nodes, timeoutMs: 120_000 });
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await runs[0]!.host.identity;
  await initNode();
  await createSvc('s1');
  await createSvc('s2');
  await settled();

  // 5 s outage.
  const outages: { down: number; up: number }[] = [];
  const down5 = Date.now();
  await cp.stopApiServer();
  await new Promise((r) => setTimeout(r, 5000));
  await cp.startApiServer();
  const outage5Ms = Date.now() - down5;
  outages.push({ down: down5, up: Date.now() });
  await createSvc('s3');
  await initNode();
  await settled();
  t.is(runs.length, 1, 'no restart after a 5 s outage');
  t.is(runs[0]!.code, undefined, 'the leader kept running');

  // 60 s outage, a Service created just before it (the leader may or may not get to it).
  await createSvc('s4');
  const down60 = Date.now();
  await cp.stopApiServer();
  await waitFor(() => runs[0]!.code !== undefined, { what: 'the leader exits when it cannot renew', timeoutMs: 70_000 });
  t.is(runs[0]!.code, 1, 'a lost lease exits 1');
  await new Promise((r) => setTimeout(r, Math.max(0, 60_000 - 20_000)));
  await cp.startApiServer();
  outages.push({ down: down60, up: Date.now() });
  await createSvc('s5');
  await core.deleteNamespacedService({ name: 's1', namespace: NS });
  live.splice(live.indexOf('s1'), 1);
  gone.push('s1');
  await initNode();
  const { services } = await settled();
  const serving = runs.at(-1)!;
  t.is(serving.code, undefined, 'the restarted host runs');
  t.not(await serving.host.identity, await runs[0]!.host.identity);

  const journal = await readJournal(state);
  const mutations = mutationsByCaller(journal);
  const firstId = await runs[0]!.host.identity;
  const servingId = await serving.host.identity;
  t.true((mutations.get(firstId) ?? 0) > 0, 'the first leader changed the cloud');
  t.true((mutations.get(servingId) ?? 0) > 0, 'the restarted leader changed the cloud');
  t.deepEqual(overlaps(journal.filter((e) => e.mutating)), [], 'no two identities changed the cloud at overlapping times');
  const creates = lbCreatesByUid(journal);
  for (const s of services) t.is(creates.get(s.metadata!.uid!), 1, `one load balancer create for ${s.metadata!.name}`);
  t.deepEqual(
    [...creates.values()].filter((n) => n !== 1),
    [],
    'no load balancer created twice',
  );
  t.is(creates.size, live.length + gone.length, 'the deleted Service had exactly one create too');
  // Shipped RBAC: no 403 except while the API server restarts (it answers 403 until its RBAC caches are filled).
  const restarting = (at: number) => outages.some((o) => at >= o.down && at <= o.up + RBAC_WARMUP_MS);
  for (const r of runs) {
    const stray = (await forbiddenLogTimes(r.host.logPath)).filter((at) => !restarting(at));
    t.deepEqual(
      stray.map((at) => new Date(at).toISOString()),
      [],
      `403s in ${r.host.logPath} outside the API server's restarts (shipped RBAC)`,
    );
  }
  t.log(`first outage, stop to ready again: ${(outage5Ms / 1000).toFixed(1)} s`);
  t.log(
    `host runs: ${runs.length}; exit codes: ${runs.map((r) => r.code ?? 'running').join(', ')}; journaled calls: ${journal.length} (mutating: ${journal.filter((e) => e.mutating).length}; load balancer creates: ${[...creates.values()].reduce((x, y) => x + y, 0)})`,
  );
});
