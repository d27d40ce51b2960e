/**
 * High availability with real host processes against the real API server:
 * two replicas share one Lease (own name and namespace) and one local cloud
 * (shared state dir, journaling every cloud call with the caller identity).
 * They run the cloud-node and service controllers, so leaders really change
 * the cloud: LoadBalancer Services are created and deleted before, during
 * and after each hand-over, with initialized nodes as backends.
 * Exactly one leads; SIGKILL of the leader → the standby takes over; SIGTERM
 * of the leader → it exits 0 after releasing, and the standby takes over at
 * once. The journal shows every leader changing the cloud, no two
 * identities calling the cloud at overlapping times, and exactly one create
 * per load balancer; in the end the cloud's load balancers are exactly those
 * of the Services that want one. Hand-over times are logged (measured, not
 * asserted).
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJournal } from '../../../plugins/local/journal.js';
import { forbiddenInLog } from '../../helpers/forbidden.js';
import { leaderReplicas, spawnHost, TEST_LEASE } from '../../helpers/ha-host-process.js';
import { lbService } from '../../helpers/lb.js';
import { sharedCloudFlags } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { addInitializedNode, firstLeader, lbCreatesByUid, leaseHolder, mutationsByCaller, overlaps, settledLbs } from './ha-checks.js';

const CLUSTER = 'ha';

test('two replicas: one leads; SIGKILL and SIGTERM of the leader hand over; every leader changes the cloud, never at overlapping times, one create per load balancer', async (t) => {
  t.timeout(240_000);
  // Namespace ha-<id>: the Lease ccm (granted as an operator who moves the Lease does), the Services, the Nodes' label.
  const { core, coordination, namespace, state, kubeconfig, nodes, hosts, spawnReplica } = await leaderReplicas(t, {
    prefix: 'ha',
    clusterName: CLUSTER,
  });
  // The replicas run as the shipped ServiceAccount; the test keeps the admin.
  const start = (n: number) =>
    spawnReplica(n, [
      `--kubeconfig=${kubeconfig}`,
      '--controllers=cloud-node,service',
      '--secure-port=0',
      ...sharedCloudFlags(state, '127.0.61.0/24'),
    ]);
  const holder = leaseHolder(coordination, namespace);
  const initNode = async (name: string) => {
    nodes.push(name);
    // The cloud-node controller copies this InternalIP to the node: a load balancer backend.
    await addInitializedNode(core, state, name, `127.0.4.${nodes.length}`, namespace);
  };
  const live: string[] = [];
  const gone: string[] = [];
  const createSvc = async (name: string) => {
    await core.createNamespacedService({ namespace, body: lbService(name, namespace, [{ port: 8080 }]) });
    live.push(name);
  };
  const deleteSvc = async (name: string) => {
    await core.deleteNamespacedService({ name, namespace });
    live.splice(live.indexOf(name), 1);
    gone.push(name);
  };

  const a = start(1);
  const b = start(2);
  const ids = new Map([
    [await a.identity, a],
    [await b.identity, b],
  ]);
  const first = await firstLeader(ids, holder);
  const leader = ids.get(first)!;
  const standby = leader === a ? b : a;
  await initNode(`${namespace}-1`);
  await createSvc('s1');
  await createSvc('s2');
  await settledLbs(core, state, { namespace, clusterName: CLUSTER, live, gone, backends: nodes });
  // Exactly one identity has called the cloud so far: the leader, and it created both load balancers.
  const before = await readJournal(state);
  t.deepEqual([...new Set(before.map((e) => e.caller))], [first]);
  t.is(
    [...lbCreatesByUid(before).values()].reduce((a, b) => a + b, 0),
    2,
  );

  // SIGKILL: no release; the standby waits out the lease. Meanwhile (no
  // leader) a Service is created and one deleted: the next leader's work.
  const killedAt = Date.now();
  leader.kill('SIGKILL');
  await createSvc('s3');
  await deleteSvc('s1');
  const second = await standby.identity;
  await waitFor(async () => (await holder()) === second, { what: 'standby takes over after SIGKILL', timeoutMs: 60_000 });
  const killHandOverMs = Date.now() - killedAt;
  await initNode(`${namespace}-2`);

  // A replacement replica joins as standby; SIGTERM the leader: release, exit 0.
  // Services created just before the SIGTERM (either leader may take them)
  // and just after the hand-over (the new leader's).
  const c = start(3);
  const third = await c.identity;
  await new Promise((r) => setTimeout(r, 2 * TEST_LEASE.retryS * 1000));
  t.is(await holder(), second, 'the new replica stands by');
  await createSvc('s4');
  const termAt = Date.now();
  standby.kill('SIGTERM');
  await waitFor(async () => (await holder()) === third, { what: 'hand-over after SIGTERM', timeoutMs: 60_000 });
  const termHandOverMs = Date.now() - termAt;
  await createSvc('s5');
  await deleteSvc('s2');
  t.is(await standby.exited, 0, 'a SIGTERMed leader exits 0');
  await initNode(`${namespace}-3`);

  // Converged: one cloud load balancer per live Service (same uid), all three nodes as backends, none left for deleted ones.
  const { services, lbs } = await settledLbs(core, state, { namespace, clusterName: CLUSTER, live, gone, backends: nodes });
  t.is(lbs.length, live.length);

  const journal = await readJournal(state);
  const callers = new Set(journal.map((e) => e.caller));
  t.deepEqual([...callers].sort(), [first, second, third].sort(), 'each leader in turn called the cloud');
  const mutations = mutationsByCaller(journal);
  for (const who of [first, second, third]) t.true((mutations.get(who) ?? 0) > 0, `leader ${who} changed the cloud`);
  t.deepEqual(overlaps(journal), [], 'no two identities called the cloud at overlapping times');
  t.deepEqual(overlaps(journal.filter((e) => e.mutating)), [], 'no two identities changed the cloud at overlapping times');
  // Each identity's calls form one contiguous term, in leadership order.
  const order = journal.map((e) => e.caller).filter((c, i, all) => i === 0 || all[i - 1] !== c);
  t.deepEqual(order, [first, second, third]);
  // Exactly one create per load balancer: one per live Service, at most one for each deleted one (s1 and s2 had theirs).
  const creates = lbCreatesByUid(journal);
  for (const s of services) t.is(creates.get(s.metadata!.uid!), 1, `one load balancer create for ${s.metadata!.name}`);
  t.deepEqual(
    [...creates.values()].filter((n) => n !== 1),
    [],
    'no load balancer created twice',
  );
  t.is(creates.size, live.length + gone.length, 'deleted Services had exactly one create each too');
  const lease = await coordination.readNamespacedLease({ name: 'ccm', namespace });
  t.is(lease.spec?.leaseTransitions, 2);
  t.log(
    `hand-over after SIGKILL: ${(killHandOverMs / 1000).toFixed(1)} s (lease ${TEST_LEASE.durationS} s + 2 × retry ${TEST_LEASE.retryS} s = ${TEST_LEASE.durationS + 2 * TEST_LEASE.retryS} s)`,
  );
  t.log(`hand-over after SIGTERM: ${(termHandOverMs / 1000).toFixed(1)} s (2 × retry = ${2 * TEST_LEASE.retryS} s)`);
  t.log(
    `journaled calls: ${journal.length}; mutating per leader: ${[first, second, third].map((w) => mutations.get(w) ?? 0).join(', ')}; load balancer creates: ${[...creates.values()].reduce((x, y) => x + y, 0)}`,
  );
  // Deleting the rest leaves no load balancer behind (and no finalizer to block the namespace's deletion).
  for (const n of [...live]) await deleteSvc(n);
  t.deepEqual((await settledLbs(core, state, { namespace, clusterName: CLUSTER, live, gone })).lbs, []);
  c.kill('SIGTERM');
  t.is(await c.exited, 0);
  for (const h of hosts) t.is(await forbiddenInLog(h.logPath), 0, `no 403 in ${h.logPath} (shipped RBAC)`);
});

test('invalid leader election settings: the host refuses to start with one clear line per problem', async (t) => {
  const h = spawnHost(
    [
      '--cloud-provider=local',
      '--leader-elect=true',
      '--leader-elect-lease-duration=5s',
      '--leader-elect-renew-deadline=10s',
      '--leader-elect-retry-period=9s',
    ],
    join(await mkdtemp(join(tmpdir(), 'ccm-le-bad-')), 'host.log'),
  );
  t.is(await h.exited, 2);
  const { readFile } = await import('node:fs/promises');
  const out = await readFile(h.logPath, 'utf8');
  t.regex(out, /--leader-elect-lease-duration=5s must be greater than --leader-elect-renew-deadline=10s/);
  t.regex(out, /--leader-elect-renew-deadline=10s must be greater than 1.2 × --leader-elect-retry-period=9s/);
  t.is(out.trim().split('\n').length, 2, out);
});
