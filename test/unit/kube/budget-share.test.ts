/**
 * The cloud budget split by live shard membership (host/kube/budget-share.ts):
 * the rule as a table, the read of the shard Leases (expiry on the reader's
 * own clock, the own Lease first), and the elector's own annotations on its
 * writes (leader-election.ts). Many replicas over in-memory Leases:
 * budget-share-sim.test.ts; the share's buckets and hold: cloud-budget.test.ts.
 */
import test from 'ava';
import { nextShare, parseShares, ShardLeaseReader, HELD, type Membership, type ShareState } from '../../../host/kube/budget-share.js';
import { LeaderElector } from '../../../host/kube/leader-election.js';
import { createLogger } from '../../../host/log.js';
import { CLOUD_BUDGET_SHARES_ANNOTATION as KEY } from '../../../host/names.js';
import { MemoryLease, MemoryLeaseLock } from './memory-lease.js';

const log = createLogger({ verbosity: 0, destination: { write: () => true } as never });
const signal = new AbortController().signal;

/** Each row: N shards, the share before, what one read found (undefined: the read failed), the share after. */
const rules: { name: string; shards: number; from: ShareState; read?: Membership; want: ShareState }[] = [
  // A joiner: held until its own floor is written and every other live Lease makes room.
  { name: 'joiner, first read: held, publishes L', shards: 3, from: HELD, read: { others: [2] }, want: { publish: 2 } },
  { name: 'joiner, own floor written, the other at L: takes L', shards: 3, from: HELD, read: { own: 2, others: [2] }, want: { k: 2, publish: 2 } },
  {
    name: 'joiner while the others still spend budget/2: held',
    shards: 3,
    from: HELD,
    read: { own: 3, others: [2, 2] },
    want: { publish: 3 },
  },
  {
    name: 'joiner after one other raised, one not yet: held',
    shards: 3,
    from: HELD,
    read: { own: 3, others: [3, 2] },
    want: { publish: 3 },
  },
  { name: 'joiner once both others raised: takes 3', shards: 3, from: HELD, read: { own: 3, others: [3, 3] }, want: { k: 3, publish: 3 } },
  // A join seen by a serving replica: it spends less at once.
  {
    name: 'a join raises k to L at once',
    shards: 3,
    from: { k: 2, publish: 2 },
    read: { own: 2, others: [2, undefined] },
    want: { k: 3, publish: 3 },
  },
  {
    name: 'two joins at once: straight to L',
    shards: 4,
    from: { k: 2, publish: 2 },
    read: { own: 2, others: [2, undefined, undefined] },
    want: { k: 4, publish: 4 },
  },
  // A leave: spending more takes two reads, the lower floor written in between.
  {
    name: 'a leave: k kept, the lower floor published first',
    shards: 3,
    from: { k: 3, publish: 3 },
    read: { own: 3, others: [3] },
    want: { k: 3, publish: 2 },
  },
  {
    name: 'a leave, floor written, the other at 2: k = 2',
    shards: 3,
    from: { k: 3, publish: 2 },
    read: { own: 2, others: [2] },
    want: { k: 2, publish: 2 },
  },
  {
    name: 'a leave, floor written, the other still at 3: k = 2 (1/2 + 1/3 <= 1)',
    shards: 3,
    from: { k: 3, publish: 2 },
    read: { own: 2, others: [3] },
    want: { k: 2, publish: 2 },
  },
  {
    name: 'a leave, but another live Lease publishes a lower floor than L: k kept',
    shards: 4,
    from: { k: 4, publish: 3 },
    read: { own: 3, others: [2, 3] },
    want: { k: 4, publish: 3 },
  },
  {
    name: 'lowering part of the way: to the own floor',
    shards: 4,
    from: { k: 4, publish: 4 },
    read: { own: 3, others: [4] },
    want: { k: 3, publish: 2 },
  },
  {
    name: 'alone: the whole budget, once the floor 1 is written',
    shards: 4,
    from: { k: 2, publish: 1 },
    read: { own: 1, others: [] },
    want: { k: 1, publish: 1 },
  },
  // Older hosts (no annotation) spend budget/N: counted as N.
  {
    name: 'an older host beside: counted as N',
    shards: 3,
    from: { k: 3, publish: 2 },
    read: { own: 2, others: [undefined] },
    want: { k: 2, publish: 2 },
  },
  { name: 'a joiner beside an older host', shards: 3, from: HELD, read: { own: 2, others: [undefined] }, want: { k: 2, publish: 2 } },
  {
    name: 'two older hosts: the joiner takes 3',
    shards: 3,
    from: HELD,
    read: { own: 3, others: [undefined, undefined] },
    want: { k: 3, publish: 3 },
  },
  // Bounds: 1 <= k <= N, whatever the Leases say.
  { name: 'never above N', shards: 2, from: { k: 2, publish: 2 }, read: { own: 2, others: [2, 2, 2] }, want: { k: 2, publish: 2 } },
  { name: 'a floor above N counts as N', shards: 3, from: HELD, read: { own: 9, others: [9, 9] }, want: { k: 3, publish: 3 } },
  // A failed read changes nothing: never lower.
  { name: 'read failed: k kept', shards: 3, from: { k: 3, publish: 2 }, want: { k: 3, publish: 2 } },
  { name: 'read failed: held stays held', shards: 3, from: HELD, want: HELD },
];

for (const r of rules) {
  test(`rule: ${r.name}`, (t) => {
    t.deepEqual(nextShare(r.shards, r.from, r.read), r.want);
  });
}

test('the published value: a decimal integer of 1 or more, anything else absent', (t) => {
  const rows: [string | undefined, number | undefined][] = [
    ['3', 3],
    ['1', 1],
    [undefined, undefined],
    ['0', undefined],
    ['-2', undefined],
    ['2.5', undefined],
    ['03', undefined],
    ['', undefined],
    ['many', undefined],
  ];
  for (const [raw, want] of rows) t.is(parseShares(raw === undefined ? {} : { [KEY]: raw }), want, JSON.stringify(raw));
});

/** Writes a record straight into an in-memory Lease. */
function hold(lease: MemoryLease, holder: string, shares?: string, durationS = 10): void {
  lease.record = { holderIdentity: holder, leaseDurationSeconds: durationS, leaseTransitions: 0, renewTime: new Date(0) };
  lease.annotations = shares === undefined ? { other: 'x' } : { other: 'x', [KEY]: shares };
  lease.version++;
}

test('reader: own Lease first; live = held and not expired on its own clock since it saw the version change', async (t) => {
  const leases = [new MemoryLease(), new MemoryLease(), new MemoryLease(), new MemoryLease()];
  let now = 0;
  const order: number[] = [];
  const locks = leases.map((l, i) => {
    const lock = new MemoryLeaseLock(l, undefined, `shard-${i}`);
    const get = lock.get.bind(lock);
    lock.get = (s) => (order.push(i), get(s));
    return lock;
  });
  const reader = new ShardLeaseReader({ locks, identity: 'me', now: () => now });
  hold(leases[2]!, 'me', '3');
  hold(leases[0]!, 'a', '2');
  hold(leases[1]!, '', '2'); // released: not live
  // leases[3] never created: not live
  t.deepEqual(await reader.read(2, signal), { own: 3, others: [2] });
  t.deepEqual(order, [2, 0, 1, 3], 'own Lease first');
  // Shard 0's holder stops renewing: live until 10 s after this reader first saw that version (renewTime is 1970).
  now = 9_999;
  t.deepEqual(await reader.read(2, signal), { own: 3, others: [2] });
  now = 10_000;
  t.deepEqual(await reader.read(2, signal), { own: 3, others: [] });
  // A renewal (new version) is live again, from when it is seen.
  hold(leases[0]!, 'a');
  t.deepEqual(await reader.read(2, signal), { own: 3, others: [undefined] });
});

test('reader: a failed read and an own Lease that names another replica reject (the caller keeps k)', async (t) => {
  const leases = [new MemoryLease(), new MemoryLease()];
  const net = { cut: false };
  const reader = new ShardLeaseReader({ locks: leases.map((l) => new MemoryLeaseLock(l, net)), identity: 'me', now: () => 0 });
  hold(leases[0]!, 'me', '2');
  hold(leases[1]!, 'b', '2');
  net.cut = true;
  await t.throwsAsync(reader.read(0, signal), { message: /connection refused/ });
  net.cut = false;
  await t.throwsAsync(reader.read(1, signal), { message: /does not name this replica/ });
});

test('elector: its own annotations go with every acquire and renewal, others are kept, a previous holder’s value is removed, a release keeps them', async (t) => {
  const lease = new MemoryLease();
  hold(lease, 'old', '2', 1);
  const mine: { shares?: string } = {};
  let now = 0;
  const elector = new LeaderElector({
    lock: new MemoryLeaseLock(lease),
    identity: 'me',
    log,
    leaseDurationMs: 3000,
    renewDeadlineMs: 2000,
    retryPeriodMs: 200,
    now: () => now,
    annotations: () => ({ [KEY]: mine.shares }),
  });
  t.false(await elector.tryAcquire(signal), 'the old holder’s Lease has not expired yet');
  now = 1000;
  t.true(await elector.tryAcquire(signal));
  t.deepEqual(lease.annotations, { other: 'x' }, 'acquired: the old holder’s value removed, the other annotation kept');
  mine.shares = '3';
  t.true(await elector.tryAcquire(signal), 'renewed');
  t.deepEqual(lease.annotations, { other: 'x', [KEY]: '3' });
  // Someone else adds an annotation between renewals (the renewal's fast path then conflicts and re-reads).
  lease.annotations = { ...lease.annotations, added: 'y' };
  lease.version++;
  mine.shares = '2';
  t.true(await elector.tryAcquire(signal));
  t.deepEqual(lease.annotations, { other: 'x', added: 'y', [KEY]: '2' });
  const stop = new AbortController();
  stop.abort();
  t.is(await elector.lead(stop.signal, async () => undefined), 'stopped');
  t.is(lease.record?.holderIdentity, '', 'released');
  t.deepEqual(lease.annotations, { other: 'x', added: 'y', [KEY]: '2' }, 'a release keeps the annotations');
});
