/**
 * LeaderElector against an in-memory Lease with the API server's optimistic
 * concurrency (resourceVersion; 409 on a stale write: memory-lease.ts), with
 * real timers and short durations. The end-to-end tests against
 * kube-apiserver are in test/integration/ha/.
 */
import test from 'ava';
import { LeaderElector, freshLeaseWindowMs, leaderElectionProblems, type LeaseRecord } from '../../../host/kube/leader-election.js';
import { createLogger } from '../../../host/log.js';
import { waitFor } from '../../helpers/wait.js';
import { MemoryLease, MemoryLeaseLock } from './memory-lease.js';

const log = createLogger({ verbosity: 0, destination: { write: () => true } as never });
const TIMING = { leaseDurationMs: 900, renewDeadlineMs: 600, retryPeriodMs: 100 };

function candidate(lease: MemoryLease, identity: string) {
  const lock = new MemoryLeaseLock(lease);
  const elector = new LeaderElector({ lock, identity, log, ...TIMING });
  const stop = new AbortController();
  let leadingSince: number | undefined;
  let leadingUntil: number | undefined;
  const outcome = elector.run(stop.signal, async (leading) => {
    leadingSince = Date.now();
    await new Promise<void>((r) => leading.addEventListener('abort', () => r(), { once: true }));
    leadingUntil = Date.now();
  });
  return {
    lock,
    elector,
    stop,
    outcome,
    get leadingSince() {
      return leadingSince;
    },
    get leadingUntil() {
      return leadingUntil;
    },
  };
}

test('validation mirrors client-go', (t) => {
  t.deepEqual(leaderElectionProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), []);
  t.true(
    leaderElectionProblems({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }).some((p) =>
      p.includes('lease duration must be greater'),
    ),
  );
  t.true(
    leaderElectionProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 2_400, retryPeriodMs: 2_000 }).some((p) => p.includes('retry period × 1.2')),
  );
  t.true(leaderElectionProblems({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 0 }).some((p) => p.includes('greater than 0')));
  t.throws(
    () =>
      new LeaderElector({
        lock: new MemoryLeaseLock(new MemoryLease()),
        identity: 'x',
        log,
        leaseDurationMs: 1,
        renewDeadlineMs: 2,
        retryPeriodMs: 1,
      }),
    {
      message: /invalid leader election settings/,
    },
  );
});

test('a lone candidate creates the lease, leads, renews, and releases on stop', async (t) => {
  const lease = new MemoryLease();
  const a = candidate(lease, 'a');
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  t.is(lease.record?.holderIdentity, 'a');
  t.is(lease.record?.leaseTransitions, 0);
  const writes = lease.writes.length;
  await waitFor(() => lease.writes.length >= writes + 3, { what: 'renewals' });
  t.true(a.elector.holdsFreshLease());
  t.notThrows(() => a.elector.check());
  a.stop.abort();
  t.is(await a.outcome, 'released');
  t.is(lease.record?.holderIdentity, '', 'holder cleared');
  t.is(lease.record?.leaseDurationSeconds, 1);
  t.truthy(a.leadingUntil);
});

test('two candidates: exactly one leads; after a release the other takes over and transitions count', async (t) => {
  const lease = new MemoryLease();
  const a = candidate(lease, 'a');
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  const b = candidate(lease, 'b');
  // b keeps trying for a while but never leads while a renews.
  await new Promise((r) => setTimeout(r, 3 * TIMING.leaseDurationMs));
  t.false(b.elector.isLeader());
  t.is(b.leadingSince, undefined);
  t.is(b.elector.currentLeader, 'a');
  a.stop.abort();
  t.is(await a.outcome, 'released');
  await waitFor(() => b.elector.isLeader(), { what: 'b leads' });
  t.true(b.leadingSince! >= a.leadingUntil!, 'b starts only after a stopped');
  t.is(lease.record?.leaseTransitions, 1);
  b.stop.abort();
  await b.outcome;
});

test('a leader cut off from the lock loses leadership after the renew deadline; the other takes over only after the lease expires, never overlapping', async (t) => {
  const lease = new MemoryLease();
  const a = candidate(lease, 'a');
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  const b = candidate(lease, 'b');
  await new Promise((r) => setTimeout(r, 300));
  // Sample "may act" on both sides while the partition plays out.
  let overlaps = 0;
  const sampler = setInterval(() => {
    if (a.elector.holdsFreshLease() && b.elector.holdsFreshLease()) overlaps++;
  }, 5);
  a.lock.net.cut = true;
  t.is(await a.outcome, 'lost');
  t.false(a.elector.holdsFreshLease(), 'a no longer acts');
  await waitFor(() => b.elector.isLeader(), { what: 'b takes over' });
  clearInterval(sampler);
  t.is(overlaps, 0);
  t.true(b.leadingSince! >= a.leadingUntil!);
  t.is(lease.record?.holderIdentity, 'b');
  b.stop.abort();
  await b.outcome;
});

test('the healthz check fails when the leader has not renewed for lease duration + tolerance', async (t) => {
  let now = 0;
  const lease = new MemoryLease();
  const lock = new MemoryLeaseLock(lease);
  const elector = new LeaderElector({ lock, identity: 'a', log, ...TIMING, now: () => now });
  const stop = new AbortController();
  const run = elector.run(stop.signal, async () => undefined);
  await waitFor(() => elector.isLeader(), { what: 'leads' });
  t.notThrows(() => elector.check(1000));
  now += TIMING.leaseDurationMs + 1001;
  t.throws(() => elector.check(1000), { message: /failed to renew leadership on lease mem\/lease/ });
  t.false(elector.holdsFreshLease());
  stop.abort();
  await run;
});

test('a stop before leading resolves "stopped" without touching a held lease', async (t) => {
  const lease = new MemoryLease();
  const a = candidate(lease, 'a');
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  const b = candidate(lease, 'b');
  await new Promise((r) => setTimeout(r, 250));
  b.stop.abort();
  t.is(await b.outcome, 'stopped');
  t.is(lease.record?.holderIdentity, 'a');
  a.stop.abort();
  await a.outcome;
});

test('the fresh-lease window: the renew deadline, at most 90% of the lease duration', (t) => {
  const table: { leaseDurationMs: number; renewDeadlineMs: number; windowMs: number }[] = [
    { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, windowMs: 10_000 }, // upstream defaults: 5 s margin
    { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, windowMs: 4_000 },
    { leaseDurationMs: 15_000, renewDeadlineMs: 14_900, windowMs: 13_500 }, // never less than a 10% margin
  ];
  for (const { windowMs, ...timing } of table) t.is(freshLeaseWindowMs(timing), windowMs, JSON.stringify(timing));
});

/** A lock whose renewals (updates after the first write) wait until the test answers them. */
class SlowRenewalLock extends MemoryLeaseLock {
  pending?: { answer: () => void; sentAt: number };
  /** false: updates are answered at once (the release at the end). */
  hold = true;
  constructor(
    lease: MemoryLease,
    private readonly clock: () => number,
  ) {
    super(lease);
  }
  override async update(record: LeaseRecord, rv: string, signal: AbortSignal): Promise<string> {
    const sentAt = this.clock();
    if (this.hold)
      await new Promise<void>((resolve, reject) => {
        this.pending = { answer: resolve, sentAt };
        signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
      });
    this.pending = undefined;
    return super.update(record, rv, signal);
  }
}

test('freshness counts from when the renewal was SENT: sent at t0, answered at t0+8s, the lease is fresh until t0 + window, not answer + window', async (t) => {
  const timing = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 20 };
  const window = freshLeaseWindowMs(timing);
  let now = 0;
  const lock = new SlowRenewalLock(new MemoryLease(), () => now);
  const elector = new LeaderElector({ lock, identity: 'a', log, ...timing, now: () => now });
  const stop = new AbortController();
  const t0 = 1_000;
  // Acquired (create) at 0; the clock moves to t0 before the first renewal is sent.
  const run = elector.run(stop.signal, async () => void (now = t0));
  await waitFor(() => lock.pending !== undefined, { what: 'a renewal in flight' });
  t.is(lock.pending!.sentAt, t0);
  now = t0 + 8_000;
  lock.pending!.answer();
  // Answered: the elector goes on to its next renewal (sent now, left unanswered).
  await waitFor(() => lock.pending?.sentAt === t0 + 8_000, { what: 'renewal answered' });
  const fresh: Record<string, boolean> = {};
  for (const at of [t0 + 8_000, t0 + window - 1, t0 + window, t0 + 8_000 + window - 1, t0 + timing.leaseDurationMs]) {
    now = at;
    fresh[`t0+${at - t0}ms`] = elector.holdsFreshLease();
  }
  t.deepEqual(fresh, {
    't0+8000ms': true,
    [`t0+${window - 1}ms`]: true,
    [`t0+${window}ms`]: false, // the old rule (from the answer) said fresh until t0+18s
    [`t0+${8_000 + window - 1}ms`]: false,
    't0+15000ms': false,
  });
  t.true(elector.isLeader(), 'still the holder of record: only the fence says no');
  // What the leader can grant the provider's own controllers (ConfigureRequest.controllers_lease): the fence's rest.
  const remaining: Record<string, number> = {};
  for (const at of [t0 + 8_000, t0 + window - 1, t0 + window]) {
    now = at;
    remaining[`t0+${at - t0}ms`] = elector.freshLeaseRemainingMs();
  }
  t.deepEqual(remaining, { 't0+8000ms': window - 8_000, [`t0+${window - 1}ms`]: 1, [`t0+${window}ms`]: 0 });
  lock.hold = false;
  lock.pending?.answer();
  stop.abort();
  await run;
});

test('a leader whose lease another replica took (it was paused past it) loses on the renewal that reads it, without retrying until the renew deadline', async (t) => {
  const lease = new MemoryLease();
  const a = candidate(lease, 'a');
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  const gets = a.lock.gets;
  // What a successor's takeover leaves: another holder, a new version.
  lease.record = { ...lease.record!, holderIdentity: 'b', leaseTransitions: lease.record!.leaseTransitions + 1 };
  lease.version++;
  t.is(await a.outcome, 'lost');
  t.is(a.lock.gets - gets, 1, 'one read of the lease, then lost');
  t.false(a.elector.holdsFreshLease());
  t.is(lease.record.holderIdentity, 'b', 'the lease is left to its holder');
});

test('onRenewed is told after the acquire and after every renewal, only while leading', async (t) => {
  const lease = new MemoryLease();
  let told = 0;
  const elector = new LeaderElector({ lock: new MemoryLeaseLock(lease), identity: 'a', log, ...TIMING, onRenewed: () => told++ });
  const stop = new AbortController();
  const run = elector.run(stop.signal, async (leading) => {
    await new Promise<void>((r) => leading.addEventListener('abort', () => r(), { once: true }));
  });
  await waitFor(() => lease.writes.length >= 4, { what: 'an acquire and three renewals' });
  stop.abort();
  await run;
  // The release clears the holder, so these are the acquire and the renewals; the last renewal may
  // still have been on its way back at the stop (written, not told).
  const ours = lease.writes.filter((w) => w.holder === 'a').length;
  t.true(told >= ours - 1 && told <= ours, `told ${told} times for ${ours} writes of the holder`);
  t.is(elector.freshLeaseRemainingMs(), 0, 'released: nothing to vouch for');
});
