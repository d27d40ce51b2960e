/**
 * --plugin-unready-lease-release-timeout: the decision as a table, the guard
 * over a supervisor's state changes on a fake clock, and two LeaderElectors
 * sharing an in-memory Lease (memory-lease.ts; real timers, short durations): a leader whose
 * plugin turns unready resigns (fence closed before the release) and the
 * other replica takes over; the one that resigned holds off until its plugin
 * is ready again. The end-to-end test with real hosts and wedged sidecars is
 * test/integration/ha/wedged-provider.test.ts.
 */
import test from 'ava';
import { EventEmitter } from 'node:events';
import { LeaderElector } from '../../../host/kube/leader-election.js';
import {
  AnyProviderReady,
  PluginLeaseGuard,
  pluginLeaseAction,
  type PluginLeaseAction,
  type PluginLeaseInput,
} from '../../../host/kube/plugin-lease-guard.js';
import { createLogger } from '../../../host/log.js';
import type { PluginState } from '../../../host/plugin/supervisor.js';
import { waitFor } from '../../helpers/wait.js';
import { MemoryLease, MemoryLeaseLock } from './memory-lease.js';

const log = createLogger({ verbosity: 0, destination: { write: () => true } as never });

const DECISIONS: [string, PluginLeaseInput, PluginLeaseAction][] = [
  ['leader, plugin ready', { leading: true, ready: true, unreadyForMs: 0, timeoutMs: 60_000 }, 'keep'],
  ['leader, plugin unready within the bound', { leading: true, ready: false, unreadyForMs: 59_999, timeoutMs: 60_000 }, 'keep'],
  ['leader, plugin unready for exactly the bound', { leading: true, ready: false, unreadyForMs: 60_000, timeoutMs: 60_000 }, 'release'],
  ['leader, plugin unready past the bound', { leading: true, ready: false, unreadyForMs: 600_000, timeoutMs: 60_000 }, 'release'],
  ['leader, plugin unready past the bound, guard disabled (0)', { leading: true, ready: false, unreadyForMs: 600_000, timeoutMs: 0 }, 'keep'],
  ['candidate, plugin ready', { leading: false, ready: true, unreadyForMs: 0, timeoutMs: 60_000 }, 'campaign'],
  ['candidate, plugin unready (just now)', { leading: false, ready: false, unreadyForMs: 0, timeoutMs: 60_000 }, 'hold-off'],
  ['candidate, plugin unready for long', { leading: false, ready: false, unreadyForMs: 600_000, timeoutMs: 60_000 }, 'hold-off'],
  ['candidate, plugin unready, guard disabled (0)', { leading: false, ready: false, unreadyForMs: 600_000, timeoutMs: 0 }, 'campaign'],
];

for (const [what, input, want] of DECISIONS) {
  test(`decision: ${what} → ${want}`, (t) => {
    t.is(pluginLeaseAction(input), want);
  });
}

/** A supervisor's readiness: its state and 'state' events. */
class FakePlugin extends EventEmitter {
  constructor(public state: PluginState = 'ready') {
    super();
  }
  set(s: PluginState): void {
    this.state = s;
    this.emit('state', s);
  }
}

test('the guard counts unready time from when the plugin left ready, through backoff and starting, and forgets it once ready', (t) => {
  let now = 1000;
  const plugin = new FakePlugin();
  const guard = new PluginLeaseGuard(plugin, 'aws', 60_000, () => now);
  const steps: [string, () => void, { release?: RegExp; blocker?: RegExp; check?: RegExp }][] = [
    ['ready', () => undefined, {}],
    [
      'left ready (redial backoff)',
      () => plugin.set('backoff'),
      { blocker: /plugin aws is backoff/, check: /for 0s; the leader lease is released at 60s/ },
    ],
    ['starting again, 59 s later', () => ((now += 59_000), plugin.set('starting')), { blocker: /starting/, check: /for 59s/ }],
    [
      'backoff again, 60 s after leaving ready',
      () => ((now += 1_000), plugin.set('backoff')),
      { release: /plugin aws was backoff \(not ready\) for 60s, longer than --plugin-unready-lease-release-timeout=60s/, blocker: /backoff/ },
    ],
    ['ready again', () => plugin.set('ready'), {}],
    ['unready again: counts from zero', () => ((now += 1_000), plugin.set('backoff')), { blocker: /backoff/, check: /for 0s/ }],
  ];
  for (const [what, step, want] of steps) {
    step();
    const release = guard.releaseReason();
    if (want.release) t.regex(release ?? '', want.release, what);
    else t.is(release, undefined, what);
    const blocker = guard.campaignBlocker();
    if (want.blocker) t.regex(blocker ?? '', want.blocker, what);
    else t.is(blocker, undefined, what);
    if (want.check) t.throws(() => guard.check(true), { message: want.check }, what);
    else if (!want.release) t.notThrows(() => guard.check(true), what);
  }
});

test('after a release the readiness check of the replica says why it stays out of the election', (t) => {
  let now = 0;
  const plugin = new FakePlugin('ready');
  const guard = new PluginLeaseGuard(plugin, 'local', 5_000, () => now);
  plugin.set('backoff');
  now += 5_000;
  t.truthy(guard.releaseReason());
  t.throws(() => guard.check(false), {
    message:
      /^not campaigning for the leader lease while plugin local is backoff \(not ready\); gave up the leader lease because plugin local was backoff \(not ready\) for 5s, longer than --plugin-unready-lease-release-timeout=5s; campaigns again once it is ready$/,
  });
  plugin.set('ready');
  t.notThrows(() => guard.check(false));
});

test('several providers: one down for long keeps the lease and the candidacy; only all down past the bound release it', (t) => {
  let now = 0;
  const east = new FakePlugin('ready');
  const west = new FakePlugin('ready');
  const guard = PluginLeaseGuard.overProviders(
    new AnyProviderReady([
      { name: 'east', readiness: east },
      { name: 'west', readiness: west },
    ]),
    60_000,
    () => now,
  );
  const decide = () => ({ release: guard.releaseReason() ?? '', blocker: guard.campaignBlocker() ?? '' });
  const steps: [string, () => void, { release: string; blocker: string }][] = [
    ['both ready', () => undefined, { release: '', blocker: '' }],
    // One provider crash-looping on every replica must not stop the other's work anywhere (isolation).
    ['west down for ten minutes', () => (west.set('backoff'), (now += 600_000)), { release: '', blocker: '' }],
    ['east down too, just now', () => east.set('starting'), { release: '', blocker: 'every provider is not ready (east: starting, west: backoff)' }],
    [
      'both down past the bound',
      () => (now += 60_000),
      {
        release: 'every provider was not ready (east: starting, west: backoff) for 60s, longer than --plugin-unready-lease-release-timeout=60s',
        blocker: 'every provider is not ready (east: starting, west: backoff)',
      },
    ],
    ['east back', () => east.set('ready'), { release: '', blocker: '' }],
  ];
  for (const [what, step, want] of steps) {
    step();
    t.deepEqual(decide(), want, what);
  }
  west.set('backoff');
  east.set('backoff');
  now += 60_000;
  t.truthy(guard.releaseReason());
  t.throws(() => guard.check(false), {
    message:
      /^not campaigning for the leader lease while every provider is not ready \(east: backoff, west: backoff\); gave up the leader lease because every provider was not ready \(east: backoff, west: backoff\) for 60s, longer than --plugin-unready-lease-release-timeout=60s; campaigns again once one is ready$/,
  });
  west.set('ready');
  t.notThrows(() => guard.check(false));
  t.notThrows(() => guard.check(true));
});

test('disabled (0): never releases, never holds off, the check never fails', (t) => {
  let now = 0;
  const plugin = new FakePlugin('backoff');
  const guard = new PluginLeaseGuard(plugin, 'local', 0, () => now);
  now += 3_600_000;
  t.is(guard.releaseReason(), undefined);
  t.is(guard.campaignBlocker(), undefined);
  t.notThrows(() => guard.check(true));
  t.notThrows(() => guard.check(false));
});

const TIMING = { leaseDurationMs: 900, renewDeadlineMs: 600, retryPeriodMs: 50 };

function replica(lease: MemoryLease, identity: string, timeoutMs: number) {
  const plugin = new FakePlugin();
  const guard = new PluginLeaseGuard(plugin, 'local', timeoutMs);
  const elector = new LeaderElector({
    lock: new MemoryLeaseLock(lease),
    identity,
    log,
    ...TIMING,
    releaseReason: () => guard.releaseReason(),
    campaignBlocker: () => guard.campaignBlocker(),
  });
  const stop = new AbortController();
  const terms: { from: number; to?: number; freshAtEnd?: boolean }[] = [];
  const outcome = elector.run(stop.signal, async (leading) => {
    const term: (typeof terms)[number] = { from: Date.now() };
    terms.push(term);
    await new Promise<void>((r) => leading.addEventListener('abort', () => r(), { once: true }));
    // The guarded work sees the fence already closed when it is told to stop.
    term.freshAtEnd = elector.holdsFreshLease();
    term.to = Date.now();
  });
  return { plugin, guard, elector, stop, terms, outcome };
}

test('a leader whose plugin stays unready past the bound resigns (fence closed first), the other takes over, and the first campaigns again only once its plugin is ready', async (t) => {
  const lease = new MemoryLease();
  const a = replica(lease, 'a', 300);
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  const b = replica(lease, 'b', 300);
  await new Promise((r) => setTimeout(r, 4 * TIMING.retryPeriodMs));
  t.is(lease.record?.holderIdentity, 'a', 'b stands by while a is healthy');

  a.plugin.set('backoff');
  await waitFor(() => b.elector.isLeader(), { what: 'b takes over after a resigned' });
  t.is(a.terms.length, 1);
  t.false(a.terms[0]!.freshAtEnd, "a's fence was closed before its controllers were told to stop");
  t.false(a.elector.holdsFreshLease());
  t.false(a.elector.isLeader());
  // a's release is its last write of its term: cleared holder, then b.
  const releasedAt = lease.writes.findIndex((w) => w.holder === '');
  t.true(releasedAt > 0, 'a released the lease (holder cleared)');
  t.deepEqual([...new Set(lease.writes.slice(releasedAt + 1).map((w) => w.holder))], ['b']);

  // b's plugin turns unready too: b resigns, and a, still unready, does not take the released lease.
  b.plugin.set('backoff');
  await waitFor(() => lease.record?.holderIdentity === '', { what: 'b resigns too' });
  await new Promise((r) => setTimeout(r, 6 * TIMING.retryPeriodMs));
  t.is(lease.record?.holderIdentity, '', 'nobody with an unready plugin takes the lease');
  t.is(a.terms.length, 1);

  // a's provider restarted: it campaigns again and leads a second term.
  a.plugin.set('ready');
  await waitFor(() => a.elector.isLeader(), { what: 'a leads again once its plugin is ready' });
  t.is(a.terms.length, 2);
  a.stop.abort();
  b.stop.abort();
  t.is(await a.outcome, 'released');
  t.is(await b.outcome, 'released');
});

test('disabled (0): a leader with an unready plugin keeps the lease', async (t) => {
  const lease = new MemoryLease();
  const a = replica(lease, 'a', 0);
  await waitFor(() => a.elector.isLeader(), { what: 'a leads' });
  const b = replica(lease, 'b', 0);
  a.plugin.set('backoff');
  await new Promise((r) => setTimeout(r, 10 * TIMING.retryPeriodMs));
  t.is(lease.record?.holderIdentity, 'a');
  t.true(a.elector.holdsFreshLease());
  a.stop.abort();
  b.stop.abort();
  await Promise.all([a.outcome, b.outcome]);
});
