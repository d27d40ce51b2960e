/**
 * Leader election over a coordination.k8s.io/v1 Lease, with client-go's
 * semantics (tools/leaderelection; client-node ships no elector):
 *
 * - Candidates try to acquire every retry period × [1, 2.2) (JitterUntil with
 *   factor 1.2). A lease held by another identity may be taken only after a
 *   full lease duration has passed, measured on the LOCAL monotonic clock
 *   from the moment this process first observed the current record (so clock
 *   skew between replicas does not matter; clock rate skew does).
 * - The leader renews every retry period; each renewal is retried every
 *   retry period until it succeeds or the renew deadline passes, and then
 *   leadership is lost (the host exits, as upstream). A renewal that finds
 *   another holder loses at once (client-go retries until the deadline).
 *   The renew deadline is shorter than the lease duration, so a leader gives
 *   up before anyone else may take over.
 * - Fencing (beyond client-go): {@link LeaderElector.holdsFreshLease} is the
 *   gate every Kubernetes write and cloud mutation of the host asks right
 *   before it leaves the process. It measures from the moment the last
 *   successful renewal was SENT, not when its answer came back: another
 *   replica may take over one lease duration after it saw that renewal, and
 *   it cannot have seen it before it was sent. See {@link freshLeaseWindowMs}.
 * - Release (on a requested stop, after the guarded work stopped) clears the
 *   holder and sets a 1 s lease, so a candidate takes over within about one
 *   retry period.
 * - Resign (beyond client-go; `releaseReason`, kube/plugin-lease-guard.ts): a
 *   leader that is told to give up closes its fence at once, stops the
 *   guarded work, releases the lease and becomes a candidate again; a
 *   candidate does not try to acquire while `campaignBlocker` names a reason.
 * - Updates carry the resourceVersion read, so two candidates racing for an
 *   expired lease cannot both win (the loser gets 409 Conflict).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { V1Lease, V1MicroTime } from '@kubernetes/client-node';
import type { CallOptions, CoordinationV1Api } from './api.js';
import { errorMessage, type Logger } from '../log.js';
import { sleep } from './backoff.js';
import { isNotFound } from './client.js';

/** client-go's JitterFactor. */
export const JITTER_FACTOR = 1.2;

/** Upstream's leader healthz tolerance (controller-manager: NewLeaderHealthzAdaptor(20s)). */
const LEADER_HEALTHZ_TOLERANCE_MS = 20_000;

/** Share of the lease duration that is always kept as a safety margin by {@link freshLeaseWindowMs}. */
const MIN_FENCE_MARGIN_FRACTION = 0.1;

/**
 * How long after a successful acquire/renew was SENT this process counts as
 * holding a fresh lease: the renew deadline, but never more than 90% of the
 * lease duration. Another replica takes over at the earliest one lease
 * duration after it observed the renewal, which it cannot have done before
 * the renewal was sent; the margin (lease duration − window, at least 10% of
 * it: 5 s at the defaults 15 s/10 s) covers a write that passed the check
 * still travelling to the API server and the replicas' clocks running at
 * slightly different rates. A renewal that took 8 s to return leaves
 * window − 8 s of freshness (2 s at the defaults), not a full window.
 */
export function freshLeaseWindowMs(t: Pick<LeaderElectionTiming, 'leaseDurationMs' | 'renewDeadlineMs'>): number {
  return Math.min(t.renewDeadlineMs, t.leaseDurationMs * (1 - MIN_FENCE_MARGIN_FRACTION));
}

/** The fields of a Lease that hold the election record. */
export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime?: Date;
  renewTime?: Date;
  leaseTransitions: number;
}

/** A record as read, with the version to update it at. */
export interface ObservedLease {
  record: LeaseRecord;
  resourceVersion: string;
  /** The Lease's annotations at that version (none: undefined). */
  annotations?: Readonly<Record<string, string>>;
}

/**
 * The lock object. Implementations throw on any failure; `create` and
 * `update` must fail (409) when someone else wrote first. `annotations` is
 * the Lease's whole annotation map after the write (undefined: none); the
 * elector passes the ones it read at `resourceVersion` with its own merged
 * in, so annotations of others are kept.
 */
export interface LeaseLock {
  /** The record, or undefined when the Lease does not exist. */
  get(signal: AbortSignal): Promise<ObservedLease | undefined>;
  /** Creates the Lease; returns the new resourceVersion. */
  create(record: LeaseRecord, signal: AbortSignal, annotations?: Readonly<Record<string, string>>): Promise<string>;
  /** Replaces the record (and the annotations) if the Lease is still at `resourceVersion`; returns the new one. */
  update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal, annotations?: Readonly<Record<string, string>>): Promise<string>;
  /** `namespace/name`, for logs. */
  describe(): string;
}

/** Timing of the election; see the module comment. Validated by the config. */
export interface LeaderElectionTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * client-go's checks, as one-line problems (empty when valid): all > 0,
 * lease duration > renew deadline > retry period × JITTER_FACTOR.
 */
export function leaderElectionProblems(t: LeaderElectionTiming): string[] {
  const out: string[] = [];
  if (!(t.leaseDurationMs > 0) || !(t.renewDeadlineMs > 0) || !(t.retryPeriodMs > 0))
    out.push('lease duration, renew deadline and retry period must all be greater than 0');
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) out.push('lease duration must be greater than the renew deadline');
  if (!(t.renewDeadlineMs > t.retryPeriodMs * JITTER_FACTOR)) out.push(`renew deadline must be greater than retry period × ${JITTER_FACTOR}`);
  return out;
}

/** `hostname_uuid`, so two processes on one machine never share an identity (as upstream). */
export function newLeaderIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

export interface LeaderElectorOptions extends LeaderElectionTiming {
  lock: LeaseLock;
  identity: string;
  log: Logger;
  /** Monotonic milliseconds (tests replace it). Default performance.now. */
  now?: () => number;
  /** Wall clock for the record's timestamps. Default `new Date()`. */
  wallNow?: () => Date;
  /** Randomness for the acquire jitter, in [0, 1). */
  random?: () => number;
  /** Asked by the leader before each renewal: a reason makes it resign (stop the work, release, campaign again). */
  releaseReason?: () => string | undefined;
  /** Asked before each acquire attempt: a reason skips the attempt (the candidate stays out of the election). */
  campaignBlocker?: () => string | undefined;
  /** Told after each successful acquire and renewal of this leader (e.g. to renew the provider controllers' lease). Must not throw. */
  onRenewed?: () => void;
  /** Told each time the holder seen changes ('' when released or unknown); `run`'s argument replaces it. Must not throw. */
  onNewLeader?: (identity: string) => void;
  /**
   * This elector's own annotations, asked for every acquire and renewal
   * write (e.g. the cloud budget share, kube/budget-share.ts): merged over
   * the annotations of the version written to, so others' are kept; a key
   * mapped to undefined is removed (a value a previous holder wrote is never
   * taken over). A release keeps the annotations as they are. Must not throw.
   */
  annotations?: () => Readonly<Record<string, string | undefined>>;
}

/** How a run of the elector ended. */
export type ElectionOutcome =
  /** Stopped (signal) before ever leading. */
  | 'stopped'
  /** Led, then the signal asked to stop; the lease was released (or: stopped as a candidate after resigning). */
  | 'released'
  /** Led, then could not renew within the renew deadline. */
  | 'lost';

/**
 * One candidate. `run` acquires, calls `onStartedLeading` with a signal that
 * aborts when leadership ends, renews until the run signal aborts or renewal
 * fails, and resolves with how it ended. Single use.
 */
export class LeaderElector {
  private observed?: ObservedLease;
  /** Local monotonic time at which `observed` was first seen (or written). */
  private observedAt = 0;
  /**
   * Local monotonic time at which the last acquire/renew that succeeded was
   * sent (-Infinity: none). Only this process's own successful writes set
   * it: a record of ours that is merely read (e.g. a renewal whose answer was
   * lost) never makes the lease fresh.
   */
  private renewSentAt = -Infinity;
  private readonly freshWindowMs: number;
  private readonly now: () => number;
  private readonly wallNow: () => Date;
  private readonly random: () => number;
  private readonly log: Logger;
  private leaderNotified = '';
  /** Resigned and not leading since: the fence is closed and the renewal check is moot even if the release failed. */
  private resigned = false;

  constructor(private readonly o: LeaderElectorOptions) {
    const problems = leaderElectionProblems(o);
    if (problems.length > 0) throw new Error(`invalid leader election settings: ${problems.join('; ')}`);
    this.now = o.now ?? (() => performance.now());
    this.wallNow = o.wallNow ?? (() => new Date());
    this.random = o.random ?? Math.random;
    this.freshWindowMs = freshLeaseWindowMs(o);
    this.log = o.log.child({ lease: o.lock.describe(), identity: o.identity });
    this.onNewLeader = o.onNewLeader;
  }

  /** `namespace/name` of the Lease. */
  get lease(): string {
    return this.o.lock.describe();
  }

  get identity(): string {
    return this.o.identity;
  }

  /** Whether the last record this process saw or wrote names it as holder. */
  isLeader(): boolean {
    return this.observed?.record.holderIdentity === this.o.identity;
  }

  /**
   * The fence: whether this process leads AND its last successful
   * acquire/renew was sent less than {@link freshLeaseWindowMs} ago. Past
   * that point another replica may soon take over, so no write may leave
   * this process any more. Pure clock arithmetic, no I/O: cheap enough to
   * ask right before every request, and right after a SIGSTOP/SIGCONT (the
   * monotonic clock kept running) it already answers false.
   */
  holdsFreshLease(): boolean {
    return this.isLeader() && !this.resigned && this.now() < this.renewSentAt + this.freshWindowMs;
  }

  /**
   * How long the fence stays open from now without another renewal (0 when
   * closed): what this leader can vouch for, e.g. as the lease it grants the
   * provider's own controllers (ConfigureRequest.controllers_lease).
   */
  freshLeaseRemainingMs(): number {
    return this.holdsFreshLease() ? Math.max(0, this.renewSentAt + this.freshWindowMs - this.now()) : 0;
  }

  /** Whether the last record seen names another replica as holder. */
  private heldByAnother(): boolean {
    const holder = this.currentLeader;
    return holder !== '' && holder !== this.o.identity;
  }

  /** Holder of the last record seen ('' when released or unknown). */
  get currentLeader(): string {
    return this.observed?.record.holderIdentity ?? '';
  }

  /**
   * The /healthz check (upstream HealthzAdaptor): throws when this process
   * leads but has not renewed for longer than the lease duration plus
   * `toleranceMs`, i.e. its renew loop is stuck.
   */
  check(toleranceMs = LEADER_HEALTHZ_TOLERANCE_MS): void {
    if (!this.isLeader() || this.resigned) return;
    const overdue = this.now() - (this.observedAt + this.o.leaseDurationMs + toleranceMs);
    if (overdue > 0) throw new Error(`failed to renew leadership on lease ${this.o.lock.describe()} (overdue by ${Math.round(overdue)}ms)`);
  }

  /**
   * Runs the election until `signal` aborts or leadership is lost.
   * `onStartedLeading(leading)` runs once leadership is acquired; `leading`
   * aborts the moment leadership ends (lost, or stop requested). The lease is
   * released only after `onStartedLeading`'s promise settles, so the guarded
   * work has stopped before anyone else can start. A leader that resigns
   * (`releaseReason`) releases the same way and campaigns again: a later
   * term calls `onStartedLeading` again.
   */
  async run(
    signal: AbortSignal,
    onStartedLeading: (leading: AbortSignal) => Promise<void>,
    onNewLeader?: (identity: string) => void,
  ): Promise<ElectionOutcome> {
    if (onNewLeader) this.onNewLeader = onNewLeader;
    for (let terms = 0; ; terms++) {
      if (!(await this.acquire(signal))) return terms === 0 ? 'stopped' : 'released';
      const ended = await this.lead(signal, onStartedLeading);
      if (ended === 'lost') return 'lost';
      if (ended === 'stopped') return 'released';
    }
  }

  /**
   * One term, right after {@link tryAcquire} won the lease: runs
   * `onStartedLeading` with a signal that aborts when the term ends, renews
   * until `signal` aborts ('stopped'), a renewal fails ('lost': not released,
   * the caller exits) or `releaseReason` names a reason ('resigned'). After
   * 'stopped' and 'resigned' the work has settled and the lease is released.
   * Refuses (throws) when the last record seen does not name this process:
   * renewing would then be acquiring, outside any campaign.
   */
  async lead(signal: AbortSignal, onStartedLeading: (leading: AbortSignal) => Promise<void>): Promise<'stopped' | 'lost' | 'resigned'> {
    if (!this.isLeader()) throw new Error(`lead() on ${this.o.lock.describe()}, whose holder is not this process`);
    this.resigned = false;
    const leading = new AbortController();
    const work = onStartedLeading(leading.signal).catch((err) => this.log.error({ err: errorMessage(err) }, 'leader work failed'));
    const ended = await this.renew(signal);
    leading.abort(new Error(ended === 'lost' ? 'leadership lost' : ended === 'stopped' ? 'stopping' : 'resigning'));
    if (ended === 'lost') {
      this.log.error({}, 'leader election lost');
      return 'lost';
    }
    await work;
    await this.release();
    return ended;
  }

  /** Told each time the holder seen changes ('' when released or unknown): options.onNewLeader, or run's argument. Must not throw. */
  onNewLeader?: (identity: string) => void;

  /**
   * Tries every retry period × [1, 1 + JITTER_FACTOR) until it leads (true)
   * or `signal` aborts (false); skips the attempts while `campaignBlocker`
   * names a reason.
   */
  private async acquire(signal: AbortSignal): Promise<boolean> {
    this.log.info({}, 'attempting to acquire leader lease');
    let blocked = false;
    while (!signal.aborted) {
      const blocker = this.o.campaignBlocker?.();
      // One line per change, not per attempt (the reason's wording changes with the plugin's state).
      if (!!blocker !== blocked) {
        if (blocker) this.log.warn({ reason: blocker }, 'not campaigning for the leader lease');
        else this.log.info({}, 'campaigning for the leader lease again');
        blocked = !!blocker;
      }
      if (blocker) {
        await sleep(this.o.retryPeriodMs, signal);
        continue;
      }
      if (await this.tryAcquire(signal)) return true;
      await sleep(this.o.retryPeriodMs * (1 + this.random() * JITTER_FACTOR), signal);
    }
    return false;
  }

  /**
   * One acquire attempt, bounded by the renew deadline (client-go's
   * tryAcquireOrRenew): true when this process holds the lease afterwards
   * (then `onRenewed` was told; {@link lead} runs the term). A lease held by
   * another replica is taken only once it expired as measured here, so a
   * campaign must ask every retry period to see it expire. Never throws.
   */
  async tryAcquire(signal: AbortSignal): Promise<boolean> {
    const ok = await this.tryAcquireOrRenew(AbortSignal.any([signal, AbortSignal.timeout(this.o.renewDeadlineMs)]));
    this.reportTransition();
    if (ok) {
      this.log.info({}, 'successfully acquired lease');
      this.o.onRenewed?.();
    }
    return ok;
  }

  /**
   * Renews every retry period until `signal` aborts ('stopped'), a renewal
   * does not succeed within the renew deadline ('lost'), or `releaseReason`
   * names a reason ('resigned': the fence is closed before this returns).
   */
  private async renew(signal: AbortSignal): Promise<'stopped' | 'lost' | 'resigned'> {
    while (!signal.aborted) {
      const resign = this.o.releaseReason?.();
      if (resign) {
        // No write may leave the process from now on, whatever the lease still says.
        this.resigned = true;
        this.log.warn({ reason: resign }, 'giving up the leader lease: stopping the controllers, then releasing it');
        return 'resigned';
      }
      const deadline = this.now() + this.o.renewDeadlineMs;
      const attempt = AbortSignal.any([signal, AbortSignal.timeout(this.o.renewDeadlineMs)]);
      let ok: boolean;
      for (;;) {
        ok = await this.tryAcquireOrRenew(attempt);
        // Another replica holds the lease now (e.g. this one was paused past it): lost for certain,
        // no point retrying until the renew deadline (client-go does).
        if (ok || attempt.aborted || this.now() >= deadline || this.heldByAnother()) break;
        await sleep(Math.min(this.o.retryPeriodMs, Math.max(0, deadline - this.now())), attempt);
        if (attempt.aborted) break;
      }
      this.reportTransition();
      if (signal.aborted) return 'stopped';
      if (!ok) {
        if (this.heldByAnother()) this.log.warn({ leader: this.currentLeader }, 'lease taken over by another replica');
        else this.log.warn({ renewDeadlineMs: this.o.renewDeadlineMs }, 'failed to renew lease within the renew deadline');
        return 'lost';
      }
      this.o.onRenewed?.();
      await sleep(this.o.retryPeriodMs, signal);
    }
    return 'stopped';
  }

  /** client-go tryAcquireOrRenew: true when this process holds the lease afterwards. */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const lock = this.o.lock;
    const now = this.now();
    const wall = this.wallNow();
    const desired: LeaseRecord = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.max(1, Math.floor(this.o.leaseDurationMs / 1000)),
      acquireTime: wall,
      renewTime: wall,
      leaseTransitions: 0,
    };
    // Fast path: still leading within the lease, renew on the version we wrote.
    if (this.isLeader() && this.observed && now < this.observedAt + this.o.leaseDurationMs) {
      const old = this.observed;
      const record = { ...desired, acquireTime: old.record.acquireTime, leaseTransitions: old.record.leaseTransitions };
      const annotations = this.withOwnAnnotations(old.annotations);
      try {
        const rv = await lock.update(record, old.resourceVersion, signal, annotations);
        this.setOwn({ record, resourceVersion: rv, annotations }, now);
        return true;
      } catch (err) {
        this.log.debug({ err: errorMessage(err) }, 'optimistic lease renewal failed; re-reading the lease');
      }
    }
    let current: ObservedLease | undefined;
    try {
      current = await lock.get(signal);
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'error retrieving lease');
      return false;
    }
    if (!current) {
      const sentAt = this.now();
      const annotations = this.withOwnAnnotations(undefined);
      try {
        const rv = await lock.create(desired, signal, annotations);
        this.setOwn({ record: desired, resourceVersion: rv, annotations }, sentAt);
        return true;
      } catch (err) {
        this.log.warn({ err: errorMessage(err) }, 'error creating lease');
        return false;
      }
    }
    if (current.resourceVersion !== this.observed?.resourceVersion) this.setObserved(current, this.now());
    const held = current.record.holderIdentity;
    const expiresAt = this.observedAt + current.record.leaseDurationSeconds * 1000;
    if (held !== '' && held !== this.o.identity && this.now() < expiresAt) {
      this.log.debug({ holder: held }, 'lease is held by another candidate and has not expired');
      return false;
    }
    const record: LeaseRecord =
      held === this.o.identity
        ? { ...desired, acquireTime: current.record.acquireTime, leaseTransitions: current.record.leaseTransitions }
        : { ...desired, leaseTransitions: current.record.leaseTransitions + 1 };
    const sentAt = this.now();
    const annotations = this.withOwnAnnotations(current.annotations);
    try {
      const rv = await lock.update(record, current.resourceVersion, signal, annotations);
      this.setOwn({ record, resourceVersion: rv, annotations }, sentAt);
      return true;
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'failed to update lease');
      return false;
    }
  }

  /** Gives the lease up (holder '', 1 s duration) if this process holds it. Bounded by the renew deadline; never throws. */
  private async release(): Promise<void> {
    const old = this.observed;
    if (!this.isLeader() || !old) return;
    const wall = this.wallNow();
    const record: LeaseRecord = {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: wall,
      renewTime: wall,
      leaseTransitions: old.record.leaseTransitions,
    };
    try {
      const rv = await this.o.lock.update(record, old.resourceVersion, AbortSignal.timeout(this.o.renewDeadlineMs), old.annotations);
      this.setObserved({ record, resourceVersion: rv, annotations: old.annotations }, this.now());
      this.log.info({}, 'released leader lease');
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'failed to release lease; another replica takes over when it expires');
    }
    this.reportTransition();
  }

  /** `base` (the annotations of the version written to) with `annotations()` merged in; undefined when empty. */
  private withOwnAnnotations(base: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | undefined {
    if (!this.o.annotations) return base;
    const out: Record<string, string> = { ...base };
    for (const [key, value] of Object.entries(this.o.annotations())) {
      if (value === undefined) delete out[key];
      else out[key] = value;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }

  private setObserved(o: ObservedLease, at: number): void {
    this.observed = o;
    this.observedAt = at;
  }

  /** Records a write of ours that succeeded, sent at `sentAt`: the lease is fresh from then on (see holdsFreshLease). */
  private setOwn(o: ObservedLease, sentAt: number): void {
    this.setObserved(o, sentAt);
    if (o.record.holderIdentity === this.o.identity) this.renewSentAt = sentAt;
  }

  private reportTransition(): void {
    const holder = this.currentLeader;
    if (holder === this.leaderNotified) return;
    this.leaderNotified = holder;
    if (holder !== '' && holder !== this.o.identity) this.log.info({ leader: holder }, 'new leader elected');
    this.onNewLeader?.(holder);
  }
}

/** A Lease in the API server, read and written through `api` (the host's limited clients). */
export class KubeLeaseLock implements LeaseLock {
  /**
   * The Lease as last read or written: an update carries its labels, owner references and spec fields this host
   * does not set (e.g. `strategy`, `preferredHolder`) back, as client-go's LeaseLock does, so a replace wipes only
   * what it means to write.
   */
  private last?: V1Lease;

  constructor(
    private readonly api: CoordinationV1Api,
    private readonly namespace: string,
    private readonly name: string,
  ) {}

  describe(): string {
    return `${this.namespace}/${this.name}`;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | undefined> {
    try {
      const lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace }, withSignal(signal));
      this.last = lease;
      return fromLease(lease);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async create(record: LeaseRecord, signal: AbortSignal, annotations?: Readonly<Record<string, string>>): Promise<string> {
    const lease = await this.api.createNamespacedLease(
      {
        namespace: this.namespace,
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: this.namespace, annotations: annotations && { ...annotations } },
          spec: toSpec(record),
        },
      },
      withSignal(signal),
    );
    this.last = lease;
    return lease.metadata?.resourceVersion ?? '';
  }

  async update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal, annotations?: Readonly<Record<string, string>>): Promise<string> {
    // The object this write replaces, when it is the version last seen here (the elector updates what it read).
    const base = this.last?.metadata?.resourceVersion === resourceVersion ? this.last : undefined;
    const lease = await this.api.replaceNamespacedLease(
      {
        name: this.name,
        namespace: this.namespace,
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          // A replace writes the whole object: the annotations read at resourceVersion go back with it, and the rest
          // of what was read (labels, owner references, other spec fields).
          metadata: {
            labels: base?.metadata?.labels,
            ownerReferences: base?.metadata?.ownerReferences,
            name: this.name,
            namespace: this.namespace,
            resourceVersion,
            annotations: annotations && { ...annotations },
          },
          spec: { ...base?.spec, ...toSpec(record) },
        },
      },
      withSignal(signal),
    );
    this.last = lease;
    return lease.metadata?.resourceVersion ?? '';
  }
}

function toSpec(r: LeaseRecord): NonNullable<V1Lease['spec']> {
  // metav1.MicroTime on the wire: RFC 3339 with microseconds (the typed field says Date; raw JSON carries the string).
  const micro = (d: Date | undefined) => (d ? (d.toISOString().replace('Z', '000Z') as unknown as V1MicroTime) : undefined);
  return {
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    acquireTime: micro(r.acquireTime),
    renewTime: micro(r.renewTime),
    leaseTransitions: r.leaseTransitions,
  };
}

function fromLease(lease: V1Lease): ObservedLease {
  const s = lease.spec ?? {};
  const date = (v: unknown) => (v === undefined || v === null ? undefined : new Date(v as string | Date));
  return {
    resourceVersion: lease.metadata?.resourceVersion ?? '',
    annotations: lease.metadata?.annotations,
    record: {
      holderIdentity: s.holderIdentity ?? '',
      leaseDurationSeconds: s.leaseDurationSeconds ?? 0,
      acquireTime: date(s.acquireTime),
      renewTime: date(s.renewTime),
      leaseTransitions: s.leaseTransitions ?? 0,
    },
  };
}

/** Per-call option that ties the HTTP request to `signal`. */
function withSignal(signal: AbortSignal): CallOptions {
  return { signal };
}
