/**
 * The cloud-call budget split by live shard membership (--shard-index=auto,
 * --cloud-api-qps: docs/design/sharding.md "One cloud API budget") with
 * real host processes against the real API server: three replicas of
 * --shard-count=3 each hold a shard Lease, each Lease ends up publishing
 * k = 3 (annotation sharding.ccm.dev/cloud-budget-shares) and each replica
 * logs its way up to k = 3 (`cloud budget share`, the gauge's value), never
 * down while only joining; a Service gets its load balancer (the calls were
 * not left held). SIGKILL of one replica (no standby, no release): once its
 * Lease expired, both survivors go from 3 straight to 2 (never 1) and their
 * Leases publish 2, while the dead one's Lease still says 3 (the victim
 * is a holder of another shard than the Service's, so a survivor deletes
 * it at the end). Values and order, never timings.
 *
 * Scoping for the shared API server: namespace shb-<id>, Nodes labelled
 * ccm-test=shb-<id>, cluster name shb, ingress pool 127.0.153.0/24, node
 * address 127.0.9.1.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { shardOfUid } from '../../../host/kube/shard-view.js';
import { forbiddenInLog } from '../../helpers/forbidden.js';
import { leaderReplicas, type HostProcess } from '../../helpers/ha-host-process.js';
import { lbService } from '../../helpers/lb.js';
import { sharedCloudFlags } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';
import { CLOUD_BUDGET_SHARES_ANNOTATION } from '../../../host/names.js';
import { addInitializedNode, leaseHolder, settledLbs, shardOwners } from './ha-checks.js';

const SHARDS = 3;
const CLUSTER = 'shb';
/** The budget of all shards: 1/k of it is 6/k per second, burst floor(6/k). */
const QPS = 6;

interface Share {
  k: number;
  qps?: number;
  burst?: number;
}

/** The replica's `cloud budget share` log lines, in order (k 0: held). */
async function shares(h: HostProcess): Promise<Share[]> {
  const log = await readFile(h.logPath, 'utf8');
  return [...log.matchAll(/cloud budget share[^\n]*/g)].map(([line]) => {
    const num = (key: string) => {
      const m = new RegExp(`\\s${key}=([0-9.]+)`).exec(line);
      return m ? Number(m[1]) : undefined;
    };
    return { k: num('k')!, qps: num('qps'), burst: num('burst') };
  });
}

/** The values of k a replica logged, held (0) left out. */
const ks = (s: Share[]) => s.map((x) => x.k).filter((k) => k > 0);

test('three replicas of --shard-count=3 with --cloud-api-qps: each at 1/3, published on its Lease; SIGKILL of one: the survivors go to 1/2 once its Lease expired, never further', async (t) => {
  t.timeout(240_000);
  const leaseNames = Array.from({ length: SHARDS }, (_, i) => `ccm-shard-${i}`);
  const { core, coordination, namespace, state, kubeconfig, nodes, hosts, spawnReplica } = await leaderReplicas(t, {
    prefix: 'shb',
    clusterName: CLUSTER,
    leases: leaseNames,
  });
  const start = (n: number) =>
    spawnReplica(n, [
      `--shard-count=${SHARDS}`,
      `--cloud-api-qps=${QPS}`,
      `--cloud-api-burst=${QPS}`,
      `--kubeconfig=${kubeconfig}`,
      '--controllers=cloud-node,service',
      '--secure-port=0',
      ...sharedCloudFlags(state, '127.0.153.0/24'),
    ]);
  const holders = leaseNames.map((name) => leaseHolder(coordination, namespace, name));
  const published = async () =>
    Promise.all(
      leaseNames.map(
        async (name) => (await coordination.readNamespacedLease({ name, namespace })).metadata?.annotations?.[CLOUD_BUDGET_SHARES_ANNOTATION],
      ),
    );
  const replicas = [start(1), start(2), start(3)];
  const { byIdentity, owners } = await shardOwners(replicas, holders, 90_000);

  // Converged at 1/3: every Lease publishes 3, every replica's last logged k is 3.
  t.deepEqual(
    await waitFor(async () => ((await published()).every((p) => p === '3') ? published() : undefined), { what: 'every shard Lease publishing 3' }),
    ['3', '3', '3'],
  );
  for (const h of replicas) {
    const got = await waitFor(async () => (ks(await shares(h)).at(-1) === 3 ? shares(h) : undefined), { what: `k = 3 in ${h.logPath}` });
    const values = ks(got);
    t.deepEqual(
      values,
      [...values].sort((a, b) => a - b),
      `${h.logPath}: while replicas only join, k only rises (${values.join(' → ')})`,
    );
    t.deepEqual(got.at(-1), { k: 3, qps: QPS / 3, burst: QPS / 3 }, `${h.logPath}: budget/3`);
  }

  // Cloud calls go (the share is not left held): a Service gets its load balancer.
  const node = `${namespace}-1`;
  nodes.push(node);
  await addInitializedNode(core, state, node, '127.0.9.1', namespace);
  const service = await core.createNamespacedService({ namespace, body: lbService('s0', namespace, [{ port: 8080 }]) });
  await settledLbs(core, state, { namespace, clusterName: CLUSTER, live: ['s0'], gone: [], backends: nodes });

  // SIGKILL the holder of a shard other than the Service's (a survivor deletes it at the end): no
  // standby, so that Lease expires and stays with the dead holder.
  const dead = shardOfUid(service.metadata!.uid!, SHARDS) === SHARDS - 1 ? SHARDS - 2 : SHARDS - 1;
  const alive = Array.from({ length: SHARDS }, (_, i) => i).filter((i) => i !== dead);
  const victim = byIdentity.get(owners[dead]!)!;
  const survivors = alive.map((i) => byIdentity.get(owners[i]!)!);
  const before = await Promise.all(survivors.map(async (h) => (await shares(h)).length));
  victim.kill('SIGKILL');
  t.deepEqual(
    await waitFor(
      async () => {
        const p = await published();
        return alive.every((i) => p[i] === '2') ? p : undefined;
      },
      { what: 'the survivors’ Leases publishing 2' },
    ),
    Array.from({ length: SHARDS }, (_, i) => (i === dead ? '3' : '2')),
    'the survivors publish 2; the dead holder’s Lease still says 3',
  );
  t.is(await holders[dead]!(), owners[dead], `shard ${dead}'s Lease still names the dead holder (nobody took it)`);
  for (const [i, h] of survivors.entries()) {
    const after = await waitFor(
      async () => ((await shares(h)).slice(before[i]).some((s) => s.k === 2) ? (await shares(h)).slice(before[i]) : undefined),
      {
        what: `k = 2 in ${h.logPath}`,
      },
    );
    t.deepEqual(ks(after), [2], `${h.logPath}: from 3 straight to 2 after the kill, never lower`);
    t.deepEqual(
      after.find((s) => s.k === 2),
      { k: 2, qps: QPS / 2, burst: QPS / 2 },
      `${h.logPath}: budget/2`,
    );
  }

  // Clean up through the survivors (the Service's finalizer), then stop them: SIGTERM releases and exits 0.
  await core.deleteNamespacedService({ name: 's0', namespace });
  t.deepEqual((await settledLbs(core, state, { namespace, clusterName: CLUSTER, live: [], gone: ['s0'] })).lbs, []);
  for (const h of survivors) {
    h.kill('SIGTERM');
    t.is(await h.exited, 0, `${h.logPath} exits 0 on SIGTERM`);
  }
  for (const h of hosts) t.is(await forbiddenInLog(h.logPath), 0, `no 403 in ${h.logPath} (shipped RBAC)`);
});
