/**
 * No orphans, no leaks across crashes: the host runs as its own process and
 * is SIGKILLed at random points while 50 LoadBalancer Services are created and
 * deleted; it is restarted each time, and once everything settles the cloud's
 * load balancers must be exactly those of the Services that want one, and no
 * Service may be stuck on the finalizer.
 *
 * One window no finalizer closes: kube-apiserver can remove a Service whose
 * finalizer was written while its DELETE was in flight
 * (kubernetes/kubernetes#77988); the host deletes the load balancer it just
 * made when the status write then finds the Service gone, but a SIGKILL
 * between the cloud call and that write leaves the load balancer with no
 * Service any later host can see. That is what the orphan sweep is for
 * (orphan-sweep.ts; 10m and a 5m grace by default): here it runs every 2 s
 * with a 2 s grace, and may delete only load balancers of Services the test
 * deleted, at most one per SIGKILL (the window needs one). A finalizer path
 * that leaked on every deletion would exceed that.
 *
 * The random points come from a seed (CCM_TEST_SEED replays a run); the
 * seed, the host log and the cloud state directory are named in the failure.
 *
 * Scoping: namespace lb-crash, nodes labelled lbtest=crash (none are
 * created: load balancers without backends are enough here), ingress pool
 * 127.0.53.0/24.
 */
import test from 'ava';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { kubeconfigFile, startHostProcess, type HostProcess } from '../../helpers/host-process.js';
import { cloudLbs, ensureNamespace, LB_FINALIZER, lbService } from '../../helpers/lb.js';
import { seededRandom } from '../../helpers/seed.js';
import { waitFor } from '../../helpers/wait.js';
import { ALLOW_SIMULATION_FLAG } from '../../helpers/localcloud.js';

const NS = 'lb-crash';
const CYCLES = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL at random points during 50 create/delete cycles: cloud LBs == Services that want one', async (t) => {
  const { random, describe: seed } = seededRandom();
  t.log(seed);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-crash-'));
  const state = join(dir, 'cloud');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  const args = [
    '--cloud-provider=local',
    `--kubeconfig=${await kubeconfigFile(dir)}`,
    '--cluster-name=crash',
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=crash',
    '--secure-port=0',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
    ALLOW_SIMULATION_FLAG,
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.53.0/24',
    // Some cloud latency widens the windows between finalizer, cloud call and status write.
    '--plugin-env=LOCALCLOUD_LATENCY_MS=30',
    // The backstop for the one window above, soon enough for this test to see.
    '--lb-orphan-sweep-period=2s',
    '--lb-orphan-grace-period=2s',
  ];
  const logPath = join(dir, 'host.log');
  let host: HostProcess | undefined = await startHostProcess(args, logPath);
  t.teardown(async () => {
    await host?.stop();
  });
  let kills = 0;
  const live: string[] = [];
  const deleted: string[] = [];
  /** Service uid → name, for every Service the test made. */
  const uids = new Map<string, string>();
  for (let i = 0; i < CYCLES; i++) {
    const name = `c${i}`;
    const created = await core.createNamespacedService({ namespace: NS, body: lbService(name, NS, [{ port: 8080 }]) });
    uids.set(created.metadata!.uid!, name);
    live.push(name);
    // Delete about every other Service, some right away, some later.
    if (random() < 0.5 && live.length > 0) {
      const victim = live.splice(Math.floor(random() * live.length), 1)[0]!;
      await sleep(random() * 150);
      await core.deleteNamespacedService({ name: victim, namespace: NS });
      deleted.push(victim);
    }
    await sleep(random() * 120);
    if (random() < 0.16) {
      await host!.kill();
      kills++;
      host = undefined;
      await sleep(random() * 300);
      host = await startHostProcess(args, logPath);
    }
  }
  t.log(`${CYCLES} Services created, ${deleted.length} deleted, host SIGKILLed ${kills} times`);

  // Settle: every deleted Service is gone, every live one has an ingress, and the cloud matches.
  const settled = await waitFor(
    async () => {
      // Each unmet condition throws: the timeout error names the last one.
      const list = (await core.listNamespacedService({ namespace: NS })).items;
      const byName = new Map(list.map((s) => [s.metadata!.name!, s]));
      const stuck = deleted.filter((d) => byName.has(d));
      if (stuck.length) throw new Error(`deleted Services still present: ${stuck.join(', ')}`);
      const pending = live.filter((n) => !byName.get(n)?.status?.loadBalancer?.ingress?.[0]?.ip);
      if (pending.length) throw new Error(`Services without ingress: ${pending.join(', ')}`);
      const lbs = (await cloudLbs(state)).filter((l) => l.clusterName === 'crash');
      const want = new Set(live.map((n) => byName.get(n)!.metadata!.uid!));
      const extra = lbs.filter((l) => !want.has(l.serviceUid)).map((l) => `${l.serviceName} (${l.serviceUid})`);
      const missing = live.filter((n) => !lbs.some((l) => l.serviceUid === byName.get(n)!.metadata!.uid));
      if (extra.length || missing.length)
        throw new Error(`cloud load balancers without a Service: [${extra.join(', ')}]; Services without one: [${missing.join(', ')}]`);
      return { list, lbs };
    },
    { what: `cloud load balancers == Services that want one (${seed}; cloud state ${state})`, timeoutMs: 120_000, intervalMs: 500, log: logPath },
  );
  t.is(settled.lbs.length, live.length, 'zero orphans, zero leaks');
  const swept = [...(await readFile(logPath, 'utf8')).matchAll(/"orphaned load balancer deleted".*?uid="([0-9a-f-]+)"/g)].map(
    (m) => uids.get(m[1]!) ?? m[1]!,
  );
  t.log(`orphan sweep deleted ${swept.length} load balancer(s)${swept.length ? `: ${swept.join(', ')}` : ''}`);
  t.deepEqual(
    swept.filter((name) => !deleted.includes(name)),
    [],
    'the sweep deleted only load balancers of Services the test deleted',
  );
  t.true(swept.length <= kills, `at most one swept load balancer per SIGKILL (${swept.length} for ${kills})`);
  t.true(
    settled.list.every((s) => s.metadata?.finalizers?.includes(LB_FINALIZER)),
    'every live LB Service keeps its finalizer',
  );
  t.is(new Set(settled.lbs.map((l) => l.ingressIp)).size, settled.lbs.length, 'no ingress address handed out twice');
  for (const name of live) await core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(async () => (await core.listNamespacedService({ namespace: NS })).items.length === 0, {
    what: 'cleanup',
    timeoutMs: 60_000,
    log: logPath,
  });
  t.is((await cloudLbs(state)).filter((l) => l.clusterName === 'crash').length, 0, 'deleting the rest leaves no cloud LB');
});
