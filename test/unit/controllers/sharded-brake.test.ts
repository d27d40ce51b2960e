/**
 * The node deletion brake across shards (--shard-count; docs/design/sharding.md,
 * "The deletion brake and the fence") with fakes: every shard reserves in one
 * record and a percentage is of every shard's Nodes, so the shards together
 * delete no more per window than one replica would. Neither a racing shard
 * (the conditional write) nor a Node cache that still holds another shard's
 * deleted Nodes (a lagging watch) raises the limit; a release never moves
 * another shard's deletion earlier.
 */
import test from 'ava';
import type { V1Lease, V1Node } from '@kubernetes/client-node';
import type { CoordinationV1Api, CoreV1Api } from '../../../host/kube/api.js';
import { ApiError } from '../../../host/kube/rest.js';
import type { Instances, NodeRef } from '../../../host/cloud.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { shardView } from '../../../host/kube/shard-view.js';
import { createLogger } from '../../../host/log.js';
import { Writable } from 'node:stream';
import { NodeLifecycleController } from '../../../host/controllers/lifecycle/lifecycle-controller.js';
import { LeaseDeletionLedger } from '../../../host/controllers/lifecycle/deletion-ledger.js';
import { DeletionBrake, MemoryDeletionLedger, type DeletionEntry, type DeletionLimit } from '../../../host/controllers/lifecycle/deletion-brake.js';

const WINDOW = 60_000;
const NOW = 100_000;
const silent = createLogger({ verbosity: 0, destination: new Writable({ write: (_c, _e, cb) => cb() }) });

/** A small seeded PRNG (mulberry32), so each interleaving can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One Lease store with resourceVersion checks as the API server does them;
 * each call first yields a random number of turns, so two shards' reads and
 * writes interleave differently for each seed.
 */
function racingLeaseApi(random: () => number) {
  let lease: V1Lease | undefined;
  let rv = 1;
  let conflicts = 0;
  const turns = async () => {
    for (let i = Math.floor(random() * 4); i > 0; i--) await new Promise<void>((r) => setImmediate(r));
  };
  const api = {
    async readNamespacedLease() {
      await turns();
      if (!lease) throw new ApiError(404, {}, 'GET', '/leases');
      return structuredClone(lease);
    },
    async createNamespacedLease(p: { body: V1Lease }) {
      await turns();
      if (lease) {
        conflicts++;
        throw new ApiError(409, {}, 'POST', '/leases');
      }
      lease = { ...structuredClone(p.body), metadata: { ...p.body.metadata, resourceVersion: String(++rv) } };
      return lease;
    },
    async replaceNamespacedLease(p: { body: V1Lease }) {
      await turns();
      if (p.body.metadata?.resourceVersion !== lease?.metadata?.resourceVersion) {
        conflicts++;
        throw new ApiError(409, {}, 'PUT', '/leases');
      }
      lease = { ...structuredClone(p.body), metadata: { ...p.body.metadata, resourceVersion: String(++rv) } };
      return lease;
    },
  } as unknown as CoordinationV1Api;
  return { api, conflicts: () => conflicts };
}

/** The one record every shard of the CCM writes: the unsharded lock and the node selector. */
const sharedLedger = (api: CoordinationV1Api, now: () => number) =>
  new LeaseDeletionLedger(
    api,
    'kube-system',
    'cloud-controller-manager-node-deletions',
    { lock: 'kube-system/cloud-controller-manager', nodeSelector: '' },
    WINDOW,
    now,
  );

// What a shard may still delete, given the record (other shards' deletions) and the Nodes its cache holds now.
const arithmetic: { what: string; limit: DeletionLimit; entries: DeletionEntry[]; nodes: number; bound: number; allowance: number }[] = [
  { what: 'nothing deleted in the window: 10 % of 200', limit: { percent: 10 }, entries: [], nodes: 200, bound: 20, allowance: 20 },
  {
    what: 'another shard deleted 20 of 200; this cache has seen them go',
    limit: { percent: 10 },
    entries: [{ at: 90_000, count: 20, nodes: 200 }],
    nodes: 180,
    bound: 20,
    allowance: 0,
  },
  {
    what: 'another shard deleted 20 of 200; this cache still holds them (its watch lags): 10 % of 200, not of 220',
    limit: { percent: 10 },
    entries: [{ at: 90_000, count: 20, nodes: 200 }],
    nodes: 200,
    bound: 20,
    allowance: 0,
  },
  {
    what: 'two shards deleted 5 each of 200, this cache holds all 200',
    limit: { percent: 10 },
    entries: [
      { at: 80_000, count: 5, nodes: 200 },
      { at: 90_000, count: 5, nodes: 200 },
    ],
    nodes: 200,
    bound: 20,
    allowance: 10,
  },
  {
    what: '30 Nodes joined after 20 of 200 were deleted: counted, once the cache holds more than any reservation saw',
    limit: { percent: 10 },
    entries: [{ at: 90_000, count: 20, nodes: 200 }],
    nodes: 210,
    bound: 21,
    allowance: 1,
  },
  {
    what: 'a record of an older host (no Node count): only the Nodes seen now',
    limit: { percent: 10 },
    entries: [{ at: 90_000, count: 20 }],
    nodes: 180,
    bound: 18,
    allowance: 0,
  },
  {
    what: 'deletions past the window neither count nor cap',
    limit: { percent: 10 },
    entries: [{ at: 30_000, count: 20, nodes: 1000 }],
    nodes: 180,
    bound: 18,
    allowance: 18,
  },
  {
    what: 'the floor once for the cluster: 5 of 12 deleted by one shard, the other sees all 12',
    limit: { percent: 10 },
    entries: [{ at: 90_000, count: 5, nodes: 12 }],
    nodes: 12,
    bound: 5,
    allowance: 0,
  },
  {
    what: 'the floor once for the cluster: 5 of 12 deleted by one shard, the other sees the 7 left',
    limit: { percent: 10 },
    entries: [{ at: 90_000, count: 5, nodes: 12 }],
    nodes: 7,
    bound: 5,
    allowance: 0,
  },
  {
    what: 'a count is a count, whatever the Nodes',
    limit: { count: 3 },
    entries: [{ at: 90_000, count: 2, nodes: 10 }],
    nodes: 1000,
    bound: 3,
    allowance: 1,
  },
];
for (const row of arithmetic) {
  test(`shared record: ${row.what}`, async (t) => {
    const ledger = new MemoryDeletionLedger();
    ledger.entries = row.entries;
    const brake = new DeletionBrake(row.limit, WINDOW, ledger, () => NOW);
    t.deepEqual(await brake.allowance(row.nodes), { granted: row.allowance, bound: row.bound });
    const r = await brake.reserve(1000, row.nodes);
    t.is(r.granted, row.allowance, 'a reservation gets what the allowance said');
  });
}

const raceRows: { nodes: number; want: number }[] = [
  { nodes: 12, want: 5 },
  { nodes: 100, want: 10 },
  { nodes: 250, want: 25 },
];
for (const row of raceRows) {
  test(`two shards racing on one Lease record reserve ${row.want} of ${row.nodes} Nodes at 10 % together, whatever the interleaving`, async (t) => {
    let conflicts = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const random = rng(seed);
      const lease = racingLeaseApi(random);
      // Each shard sees every Node but the ones it deleted itself (its own watch is quick, the other's
      // deletions not yet seen): the worst case for counting a Node twice.
      const shard = async () => {
        const brake = new DeletionBrake(
          { percent: 10 },
          WINDOW,
          sharedLedger(lease.api, () => NOW),
          () => NOW,
        );
        let mine = 0;
        for (;;) {
          const r = await brake.reserve(1 + Math.floor(random() * 4), row.nodes - mine);
          if (r.granted === 0) return mine;
          mine += r.granted;
        }
      };
      const [a, b] = await Promise.all([shard(), shard()]);
      t.is(a + b, row.want, `seed ${seed}: the shards reserved ${a} + ${b}`);
      const record = await sharedLedger(lease.api, () => NOW).read();
      t.is(
        record.entries.reduce((n, e) => n + e.count, 0),
        row.want,
        `seed ${seed}: the record holds what was granted`,
      );
      conflicts += lease.conflicts();
    }
    t.true(conflicts > 0, 'the shards did race (conditional writes refused)');
  });
}

test("a release gives back from its own reservation or older, never from a newer entry (another shard's)", async (t) => {
  const ledger = new MemoryDeletionLedger();
  let now = 10_000;
  const a = new DeletionBrake({ count: 5 }, WINDOW, ledger, () => now);
  const b = new DeletionBrake({ count: 5 }, WINDOW, ledger, () => now);
  const mine = await a.reserve(2, 10);
  now = 20_000;
  await b.reserve(2, 10);
  await a.release(1, mine.at);
  t.deepEqual(
    ledger.entries.map((e) => [e.at, e.count]),
    [
      [10_000, 1],
      [20_000, 2],
    ],
    "the other shard's later deletions stay counted at their own time",
  );
});

function mkNode(name: string): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
    spec: {},
    status: { conditions: [{ type: 'Ready', status: 'False' }] },
  };
}

/**
 * Two lifecycle controllers, shards 0 and 1 of 2, over one Node cache that
 * never sees a deletion (both watches lag) and one Lease record; every
 * instance is gone. Returns what each deleted and held back.
 */
async function twoShards(count: number, limit: DeletionLimit, seed: number) {
  const nodes = Array.from({ length: count }, (_, i) => mkNode(`n${String(i).padStart(3, '0')}`));
  const existing = new Set(nodes.map((n) => n.metadata!.name!));
  const informer = {
    list: () => nodes,
    get: (k: string) => nodes.find((n) => n.metadata!.name === k),
    addEventHandler: () => undefined,
    hasSynced: () => true,
    waitForSync: async () => true,
  } as unknown as Informer<V1Node>;
  const lease = racingLeaseApi(rng(seed));
  const deleted: string[][] = [[], []];
  const held: string[] = [];
  const controllers = [0, 1].map((index) => {
    const core = {
      async readNode(req: { name: string }) {
        if (!existing.has(req.name)) throw new ApiError(404, {}, 'GET', '/api/v1/nodes');
        return structuredClone(nodes.find((n) => n.metadata!.name === req.name)!);
      },
      async deleteNode(req: { name: string }) {
        existing.delete(req.name);
        deleted[index]!.push(req.name);
        return {};
      },
      async patchNode() {
        return {};
      },
    } as unknown as CoreV1Api;
    return new NodeLifecycleController({
      core,
      nodes: shardView(informer, { count: 2, index }),
      clusterNodes: informer,
      instances: {
        batched: true,
        instancesStatus: async (refs: NodeRef[]) => refs.map((r) => ({ nodeName: r.name, exists: false })),
      } as unknown as Instances,
      providerName: () => 'mycloud',
      recorder: {
        event: (o: V1Node, _t: string, reason: string) => (reason === 'DeletingNodeHeldBack' ? held.push(o.metadata!.name!) : undefined),
      } as unknown as EventRecorder,
      log: silent,
      periodMs: 1000,
      deletionGraceMs: 0,
      deletionLimit: limit,
      deletionLimitWindowMs: WINDOW,
      deletionLedger: sharedLedger(lease.api, () => NOW),
      now: () => NOW,
    });
  });
  // Two passes each, at once: the second sees the other shard's reservations in the record, its cache still all Nodes.
  for (let pass = 0; pass < 2; pass++) await Promise.all(controllers.map((c) => c.tick()));
  return { deleted, held, names: nodes.map((n) => n.metadata!.name!) };
}

const clusterRows: { nodes: number; limit: DeletionLimit; want: number }[] = [
  { nodes: 12, limit: { percent: 10 }, want: 5 },
  { nodes: 100, limit: { percent: 10 }, want: 10 },
  { nodes: 300, limit: { percent: 10 }, want: 30 },
  { nodes: 40, limit: { count: 7 }, want: 7 },
];
for (const row of clusterRows) {
  test(`two shards, ${row.nodes} Nodes all gone, limit ${JSON.stringify(row.limit)}: ${row.want} deleted in the cluster, the rest held back`, async (t) => {
    for (let seed = 1; seed <= 10; seed++) {
      const { deleted, held, names } = await twoShards(row.nodes, row.limit, seed);
      const total = deleted[0]!.length + deleted[1]!.length;
      t.is(total, row.want, `seed ${seed}: shard 0 deleted ${deleted[0]!.length}, shard 1 ${deleted[1]!.length}`);
      const gone = new Set([...deleted[0]!, ...deleted[1]!]);
      t.deepEqual(
        names.filter((n) => !gone.has(n) && !held.includes(n)),
        [],
        `seed ${seed}: every other Node held back with a Warning`,
      );
    }
  });
}
