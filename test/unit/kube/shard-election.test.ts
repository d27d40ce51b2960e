/**
 * ShardCampaign (--shard-index=auto: membership from the shard Leases)
 * against in-memory Leases with the API server's optimistic concurrency
 * (memory-lease.ts), real timers and short durations. End to end against
 * kube-apiserver: test/integration/ha/shard-leases.test.ts.
 */
import test from 'ava';
import { LeaderElector } from '../../../host/kube/leader-election.js';
import { ShardCampaign } from '../../../host/kube/shard-election.js';
import { createLogger } from '../../../host/log.js';
import { waitFor } from '../../helpers/wait.js';
import { MemoryLease, MemoryLeaseLock } from './memory-lease.js';

const log = createLogger({ verbosity: 0, destination: { write: () => true } as never });
// Long enough that a loaded machine's event-loop stalls never cost a holder its renewal (the file shares the CPU with the suite).
const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 };

interface Term {
  shard: number;
  from: number;
  until?: number;
}

/** A replica campaigning for `leases`; `reason.text` makes it resign and stay out. */
function replica(leases: MemoryLease[], identity: string) {
  const net = { cut: false };
  const reason: { text?: string } = {};
  const electors = leases.map(
    (l, i) => new LeaderElector({ lock: new MemoryLeaseLock(l, net, `shard-${i}`), identity, log, ...TIMING, releaseReason: () => reason.text }),
  );
  const campaign = new ShardCampaign({ electors, retryPeriodMs: TIMING.retryPeriodMs, log, campaignBlocker: () => reason.text });
  const stop = new AbortController();
  const terms: Term[] = [];
  const outcome = campaign.run(stop.signal, async (leading, shard) => {
    const term: Term = { shard, from: Date.now() };
    terms.push(term);
    await new Promise<void>((r) => (leading.aborted ? r() : leading.addEventListener('abort', () => r(), { once: true })));
    term.until = Date.now();
  });
  return { identity, net, reason, electors, campaign, stop, terms, outcome };
}
type Replica = ReturnType<typeof replica>;

const leasesOf = (n: number) => Array.from({ length: n }, () => new MemoryLease());
const serving = (rs: Replica[]) => rs.filter((r) => r.campaign.shard !== undefined);
const stopAll = async (rs: Replica[]) => {
  for (const r of rs) r.stop.abort();
  await Promise.all(rs.map((r) => r.outcome));
};

/** Counts moments at which two replicas may act on one shard (both fenced open on it). */
function overlapSampler(rs: Replica[]): { stop: () => number } {
  let overlaps = 0;
  const timer = setInterval(() => {
    const open = rs.filter((r) => r.campaign.holdsFreshLease()).map((r) => r.campaign.shard);
    if (new Set(open).size !== open.length) overlaps++;
  }, 5);
  return {
    stop: () => {
      clearInterval(timer);
      return overlaps;
    },
  };
}

test('N + 1 replicas for N shard Leases: every shard served by exactly one, the last stands by with its fence closed', async (t) => {
  const leases = leasesOf(2);
  const rs = ['a', 'b', 'c'].map((id) => replica(leases, id));
  const sampler = overlapSampler(rs);
  await waitFor(() => serving(rs).length === 2, { what: 'two replicas serving' });
  // A few rounds of the standby's campaign: it never serves while both holders renew.
  await new Promise((r) => setTimeout(r, 3 * TIMING.leaseDurationMs));
  const [standby, ...more] = rs.filter((r) => r.campaign.shard === undefined);
  t.truthy(standby);
  t.deepEqual(more, []);
  t.deepEqual(
    serving(rs)
      .map((r) => r.campaign.shard)
      .sort(),
    [0, 1],
    'distinct shards',
  );
  for (const r of serving(rs)) {
    t.true(r.campaign.holdsFreshLease(), `${r.identity} fenced open`);
    t.is(leases[r.campaign.shard!]!.record?.holderIdentity, r.identity, `${r.identity} holds its shard's Lease`);
    t.deepEqual(
      r.terms.map((x) => x.shard),
      [r.campaign.shard],
      `${r.identity}: one term, of its shard`,
    );
  }
  t.false(standby!.campaign.holdsFreshLease(), 'the standby is fenced');
  t.false(standby!.campaign.isLeader());
  t.is(standby!.campaign.freshLeaseRemainingMs(), 0);
  t.deepEqual(standby!.terms, [], 'the standby ran nothing');
  t.is(sampler.stop(), 0, 'never two replicas fenced open on one shard');
  await stopAll(rs);
  t.deepEqual(
    leases.map((l) => l.record?.holderIdentity),
    ['', ''],
    'both released on stop',
  );
});

test('fewer replicas than shards: the one replica serves shard 0 (which runs the cluster-wide controllers)', async (t) => {
  const leases = leasesOf(3);
  const r = replica(leases, 'a');
  await waitFor(() => r.campaign.shard !== undefined, { what: 'a serves' });
  t.is(r.campaign.shard, 0);
  t.is(leases[1]!.record, undefined, 'shard 1 Lease never taken');
  await stopAll([r]);
});

test('a serving replica cut off loses its shard ("lost"); the standby takes that shard once its Lease expired, never both fenced open; the other shard stays put', async (t) => {
  const leases = leasesOf(2);
  const rs = ['a', 'b', 'c'].map((id) => replica(leases, id));
  await waitFor(() => serving(rs).length === 2, { what: 'two replicas serving' });
  const standby = rs.find((r) => r.campaign.shard === undefined)!;
  const victim = serving(rs).find((r) => r.campaign.shard === 0)!;
  const other = serving(rs).find((r) => r.campaign.shard === 1)!;
  const sampler = overlapSampler(rs);
  victim.net.cut = true;
  t.is(await victim.outcome, 'lost');
  t.false(victim.campaign.holdsFreshLease(), 'the cut-off replica no longer acts');
  await waitFor(() => standby.campaign.shard === 0, { what: 'the standby takes shard 0' });
  // The safety property is the fence (sampled), not when the lost term's stop ran: that can run late on a loaded machine.
  t.is(sampler.stop(), 0, 'never two replicas fenced open on one shard');
  t.is(leases[0]!.record?.holderIdentity, standby.identity);
  t.is(leases[0]!.record?.leaseTransitions, 1);
  t.is(other.campaign.shard, 1, 'the other shard stays with its holder');
  t.deepEqual(
    other.terms.map((x) => x.shard),
    [1],
  );
  await stopAll([standby, other]);
});

test('a resign (e.g. an unready plugin) releases the shard, stays out while the reason holds, and campaigns again when it clears', async (t) => {
  const leases = leasesOf(2);
  const rs = ['a', 'b', 'c'].map((id) => replica(leases, id));
  await waitFor(() => serving(rs).length === 2, { what: 'two replicas serving' });
  const standby = rs.find((r) => r.campaign.shard === undefined)!;
  const resigner = serving(rs).find((r) => r.campaign.shard === 1)!;
  resigner.reason.text = 'plugin unready';
  await waitFor(() => standby.campaign.shard === 1, { what: 'the standby takes shard 1' });
  t.is(resigner.campaign.shard, undefined);
  t.false(resigner.campaign.holdsFreshLease());
  t.true(standby.terms[0]!.from >= resigner.terms[0]!.until!, "the standby's term starts after the resigned term ended");
  // The reason clears: it campaigns again, and with both shards held it stands by.
  resigner.reason.text = undefined;
  await new Promise((r) => setTimeout(r, 3 * TIMING.leaseDurationMs));
  t.is(resigner.campaign.shard, undefined, 'both shards held: it stands by');
  t.is(resigner.terms.length, 1);
  // The holder of shard 0 stops (releases): the former resigner takes it.
  const zero = rs.find((r) => r.campaign.shard === 0)!;
  zero.stop.abort();
  t.is(await zero.outcome, 'released');
  await waitFor(() => resigner.campaign.shard === 0, { what: 'the former resigner takes shard 0' });
  t.deepEqual(
    resigner.terms.map((x) => x.shard),
    [1, 0],
  );
  await stopAll([standby, resigner]);
});

test('a stop while standing by resolves "stopped" and leaves the held Leases alone', async (t) => {
  const leases = leasesOf(2);
  const rs = ['a', 'b'].map((id) => replica(leases, id));
  await waitFor(() => serving(rs).length === 2, { what: 'two replicas serving' });
  const c = replica(leases, 'c');
  await new Promise((r) => setTimeout(r, 2 * TIMING.retryPeriodMs));
  c.stop.abort();
  t.is(await c.outcome, 'stopped');
  t.deepEqual(leases.map((l) => l.record?.holderIdentity).sort(), ['a', 'b']);
  await stopAll(rs);
});

test('an elector refuses to lead a Lease it does not hold, and a campaign needs at least two shards', async (t) => {
  const lease = new MemoryLease();
  const elector = new LeaderElector({ lock: new MemoryLeaseLock(lease, { cut: false }, 'x'), identity: 'a', log, ...TIMING });
  await t.throwsAsync(
    elector.lead(new AbortController().signal, async () => undefined),
    { message: /whose holder is not this process/ },
  );
  t.is(lease.record, undefined, 'nothing written');
  t.throws(() => new ShardCampaign({ electors: [elector], retryPeriodMs: 100, log }), { message: /at least 2/ });
});
