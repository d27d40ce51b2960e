/**
 * Shard membership from Leases (--shard-count=2, no --shard-index:
 * docs/design/sharding.md) with real host processes against the real API
 * server: three replicas, each with its own local-cloud plugin process over
 * one cloud state (LOCALCLOUD_JOURNAL=all: the journal names the replica
 * behind every call, reads too), campaign for the Leases ccm-shard-0 and
 * ccm-shard-1 in a namespace of the test's own. Two serve distinct shards,
 * the third stands by and touches nothing; every Service of both shards gets
 * its load balancer from its own shard's holder. SIGKILL of shard 0's holder
 * (no release: its Lease has to expire): the standby takes shard 0 (and with
 * it the cluster-wide controllers) and serves a new Service of that shard;
 * shard 1 stays where it was; nothing is deleted, no load balancer is
 * created twice. Hand-over time is logged, not asserted.
 *
 * Scoping for the shared API server: namespace shl-<id>, Nodes labelled
 * ccm-test=shl-<id>, cluster name shl, ingress pool 127.0.143.0/24, node
 * addresses 127.0.7.x.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import type { V1Service } from '@kubernetes/client-node';
import { shardOfUid } from '../../../host/kube/shard-view.js';
import { readJournal } from '../../../plugins/local/journal.js';
import { forbiddenInLog } from '../../helpers/forbidden.js';
import { leaderReplicas, TEST_LEASE, type HostProcess } from '../../helpers/ha-host-process.js';
import { lbService } from '../../helpers/lb.js';
import { sharedCloudFlags } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { addInitializedNode, callersByKey, lbCreatesByUid, leaseHolder, settledLbs, shardOwners } from './ha-checks.js';

const SHARDS = 2;
const CLUSTER = 'shl';
/** Services per shard before the kill (created until each shard has this many). */
const PER_SHARD = 2;
/** Bound on Services created to land one in a given shard (each lands in either with p = 1/2). */
const MAX_TRIES = 24;

/** The shards named by the replica's "took a shard" log lines, in order. */
async function tookShard(h: HostProcess): Promise<number[]> {
  const log = await readFile(h.logPath, 'utf8');
  return [...log.matchAll(/took a shard[^\n]*?\sshard=(\d+)/g)].map((m) => Number(m[1]));
}

/** The same, once the replica has logged at least `n` of them (the line may reach the file after the Lease changed). */
function tookShards(h: HostProcess, n: number): Promise<number[]> {
  return waitFor(async () => ((await tookShard(h)).length >= n ? tookShard(h) : undefined), { what: `${n} "took a shard" line(s) in ${h.logPath}` });
}

test('three replicas, --shard-count=2 and no index: two serve distinct shards from their Leases, one stands by touching nothing; SIGKILL of a holder hands its shard to the standby; nothing deleted', async (t) => {
  t.timeout(300_000);
  const leaseNames = Array.from({ length: SHARDS }, (_, i) => `ccm-shard-${i}`);
  // Namespace shl-<id>: the shard Leases, granted as an operator grants any moved Lease (docs/flags.md).
  const { core, coordination, namespace, state, kubeconfig, nodes, hosts, spawnReplica } = await leaderReplicas(t, {
    prefix: 'shl',
    clusterName: CLUSTER,
    leases: leaseNames,
  });
  const start = (n: number) =>
    spawnReplica(n, [
      // No --shard-index: the shard comes from the Leases.
      `--shard-count=${SHARDS}`,
      // The orphan sweep (a singleton) lists the cloud soon and often: it must stay with shard 0's holder.
      '--lb-orphan-sweep-period=2s',
      `--kubeconfig=${kubeconfig}`,
      '--controllers=cloud-node,service',
      '--secure-port=0',
      ...sharedCloudFlags(state, '127.0.143.0/24'),
    ]);
  const holders = leaseNames.map((name) => leaseHolder(coordination, namespace, name));
  // Each shard's Lease held by one of ours, two different replicas.
  const { byIdentity, owners: firstHolders } = await shardOwners([start(1), start(2), start(3)], holders, 90_000);
  const standby = [...byIdentity.keys()].find((who) => !firstHolders.includes(who))!;
  for (const [shard, who] of firstHolders.entries()) {
    t.deepEqual(await tookShards(byIdentity.get(who)!, 1), [shard], `the holder of shard ${shard} logged that it took shard ${shard}, once`);
  }
  t.deepEqual(await tookShard(byIdentity.get(standby)!), [], 'the standby took no shard');

  // Work for both shards: initialized Nodes (backends), and Services until each shard has PER_SHARD.
  for (const n of [1, 2]) {
    const name = `${namespace}-${n}`;
    nodes.push(name);
    await addInitializedNode(core, state, name, `127.0.7.${n}`, namespace);
  }
  const live: string[] = [];
  const created: V1Service[] = [];
  const createIn = async (shard: number): Promise<V1Service> => {
    for (let i = 0; i < MAX_TRIES; i++) {
      const name = `s${created.length}`;
      const s = await core.createNamespacedService({ namespace, body: lbService(name, namespace, [{ port: 8080 }]) });
      created.push(s);
      live.push(name);
      if (shardOfUid(s.metadata!.uid!, SHARDS) === shard) return s;
    }
    throw new Error(`no Service landed in shard ${shard} in ${MAX_TRIES} tries`);
  };
  for (let shard = 0; shard < SHARDS; shard++) {
    while (created.filter((s) => shardOfUid(s.metadata!.uid!, SHARDS) === shard).length < PER_SHARD) await createIn(shard);
  }
  await settledLbs(core, state, { namespace, clusterName: CLUSTER, live, gone: [], backends: nodes });
  // The sweep (a singleton) has listed the cloud at least once.
  const before = await waitFor(
    async () => {
      const j = await readJournal(state);
      return j.some((e) => e.method === 'loadBalancers.listLoadBalancers') ? j : undefined;
    },
    { what: 'an orphan sweep' },
  );
  t.deepEqual(
    before.filter((e) => e.caller === standby).map((e) => e.method),
    [],
    'the standby called the cloud for nothing, reads included',
  );
  const nodeUids = new Map((await core.listNode({ labelSelector: `ccm-test=${namespace}` })).items.map((n) => [n.metadata!.name!, n.metadata!.uid!]));
  const ownerBefore = (uid: string) => firstHolders[shardOfUid(uid, SHARDS)]!;
  const rows = [
    ...nodes.map((n) => ({ what: `Node ${n}`, want: [ownerBefore(nodeUids.get(n)!)], got: callersByKey(before, 'instances').get(n) })),
    ...created.map((s) => ({
      what: `Service ${s.metadata!.name} (shard ${shardOfUid(s.metadata!.uid!, SHARDS)})`,
      want: [ownerBefore(s.metadata!.uid!)],
      got: callersByKey(before, 'loadBalancers').get(s.metadata!.uid!),
    })),
  ];
  for (const r of rows) t.deepEqual([...(r.got ?? [])], r.want, `${r.what}: cloud calls from its own shard's holder only`);
  const listers = new Set(before.filter((e) => e.method === 'loadBalancers.listLoadBalancers').map((e) => e.caller));
  t.deepEqual([...listers], [firstHolders[0]], "the orphan sweep runs on shard 0's holder only");

  // SIGKILL shard 0's holder: no release, its Lease has to expire; the standby takes shard 0.
  const victim = firstHolders[0]!;
  const killedAt = Date.now();
  byIdentity.get(victim)!.kill('SIGKILL');
  await waitFor(async () => (await holders[0]!()) === standby, { what: 'the standby takes shard 0 after the SIGKILL', timeoutMs: 90_000 });
  const handOverMs = Date.now() - killedAt;
  t.deepEqual(await tookShards(byIdentity.get(standby)!, 1), [0], 'the former standby logged that it took shard 0');
  t.is(await holders[1]!(), firstHolders[1], 'shard 1 stays with its holder');
  const fresh = await createIn(0);
  await settledLbs(core, state, { namespace, clusterName: CLUSTER, live, gone: [], backends: nodes });

  const journal = await readJournal(state);
  const lbCallers = callersByKey(journal, 'loadBalancers');
  t.deepEqual(
    [...(lbCallers.get(fresh.metadata!.uid!) ?? [])],
    [standby],
    `the new Service ${fresh.metadata!.name} of shard 0: served by the new holder only`,
  );
  // Over the whole run, each object was touched only by holders of its shard's Lease.
  const shardHolders = [new Set([victim, standby]), new Set([firstHolders[1]!])];
  for (const s of created) {
    const shard = shardOfUid(s.metadata!.uid!, SHARDS);
    for (const who of lbCallers.get(s.metadata!.uid!) ?? [])
      t.true(shardHolders[shard]!.has(who), `Service ${s.metadata!.name}: ${who} held shard ${shard}`);
  }
  // Nothing deleted: no load balancer, no Node; one create per load balancer.
  t.deepEqual(
    journal.filter((e) => e.method.startsWith('loadBalancers.ensureLoadBalancerDeleted')).map((e) => e.key),
    [],
    'no load balancer deleted',
  );
  t.is((await core.listNode({ labelSelector: `ccm-test=${namespace}` })).items.length, nodes.length, 'no Node deleted');
  const creates = lbCreatesByUid(journal);
  for (const s of created) t.is(creates.get(s.metadata!.uid!), 1, `one load balancer create for ${s.metadata!.name}`);
  t.log(
    `shard 0 hand-over after SIGKILL: ${(handOverMs / 1000).toFixed(1)} s (lease ${TEST_LEASE.durationS} s); ${created.length} Services, ${journal.length} journaled calls`,
  );

  // Clean up through the hosts (the Services' finalizers), then stop them: SIGTERM releases and exits 0.
  for (const n of [...live]) await core.deleteNamespacedService({ name: n, namespace });
  t.deepEqual((await settledLbs(core, state, { namespace, clusterName: CLUSTER, live: [], gone: live })).lbs, []);
  for (const who of [standby, firstHolders[1]!]) {
    const h = byIdentity.get(who)!;
    h.kill('SIGTERM');
    t.is(await h.exited, 0, `${who} exits 0 on SIGTERM`);
  }
  for (const h of hosts) t.is(await forbiddenInLog(h.logPath), 0, `no 403 in ${h.logPath} (shipped RBAC)`);
});
