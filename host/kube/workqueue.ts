/**
 * A work queue with the semantics of k8s.io/client-go/util/workqueue's
 * TypedRateLimitingInterface (queue + delaying queue + rate limiting), and the
 * controller worker loop (`processNextWorkItem`) that drives it.
 *
 * Guarantees, as upstream:
 *  - an item is queued at most once: adding an item that is already waiting is a no-op;
 *  - an item is handed to at most one worker at a time: adding an item while it
 *    is being processed marks it dirty, and `done(item)` queues it again, once;
 *  - items are handed out in FIFO order.
 *
 * Items are compared with SameValueZero (Set/Map semantics), so use strings
 * (object keys, see keys.ts) or other primitives.
 */
import type { Span } from '@opentelemetry/api';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { contextWith, runIn, SpanKind, startSpan, STATUS_ERROR } from '../../sdk/tracing.js';
import { errorMessage, type Logger } from '../log.js';
import { boundInc, boundObserve, registeredMetric, type BoundInc, type BoundObserve } from './metrics.js';
import { defaultControllerRateLimiter, type RateLimiter } from './ratelimiter.js';

/** Result of {@link WorkQueue.get}: the next item, or `shutdown` once the queue is shut down and empty. */
export type GetResult<T> = { item: T; shutdown: false } | { shutdown: true };

/** Options of a {@link WorkQueue}. */
export interface WorkQueueOptions<T> {
  /** Queue name, the `name` label of the metrics; with `provider` and `provisioner`, unique per registry. Default `''`. */
  name?: string;
  /**
   * The provider this queue works for, the `provider` label of its metrics:
   * set only when the host runs several providers (one queue per provider,
   * same `name`), so a one-provider host's series are exactly upstream's.
   */
  provider?: string;
  /**
   * The StorageClass provisioner (CSI driver name) this volume queue works
   * for, the `provisioner` label of its metrics: set only when the host runs
   * more than one instance of a volume controller (same `name`), so a host
   * serving one provisioner keeps its series exactly as before.
   */
  provisioner?: string;
  /** Limiter used by {@link WorkQueue.addRateLimited}. Default: {@link defaultControllerRateLimiter}. */
  rateLimiter?: RateLimiter<T>;
  /** Where to publish the `workqueue_*` metrics; none are kept when absent. */
  registry?: Registry;
}

/** Longest delay setTimeout accepts (2^31 - 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Upstream histogram buckets for queue/work durations: 1e-8 s to 10 s, ×10 each. */
const DURATION_BUCKETS_SECONDS = Array.from({ length: 10 }, (_, i) => 1e-8 * 10 ** i);

/**
 * The label names of every `workqueue_*` family: upstream's `name`;
 * `provider`, set only on the queues of a host with several providers; and
 * `provisioner`, set only on the volume queues of a host running several
 * volume instances (a series without them is exposed exactly as upstream's).
 */
const LABEL_NAMES = ['name', 'provider', 'provisioner'];
type QueueLabel = 'name' | 'provider' | 'provisioner';

/** The queues publishing into each registry, for the in-flight gauges computed at scrape time. */
const queuesByRegistry = new WeakMap<Registry, Set<QueueMetrics<unknown>>>();

/**
 * A gauge per queue computed when scraped (client-go updates the same two
 * every 500 ms from a timer; computing on scrape needs none).
 */
function inFlightGauge(registry: Registry, name: string, help: string, value: (q: QueueMetrics<unknown>, now: number) => number): void {
  registeredMetric(
    registry,
    name,
    Gauge,
    () =>
      new Gauge({
        name,
        help,
        labelNames: LABEL_NAMES,
        registers: [registry],
        collect() {
          const now = performance.now();
          for (const q of queuesByRegistry.get(registry) ?? []) this.set(q.labels, value(q, now));
        },
      }),
  );
}

/** Per-queue view of the upstream `workqueue_*` metric families. */
class QueueMetrics<T> {
  private readonly depth: Gauge.Internal<QueueLabel>;
  // Bound once (metrics.ts): observed per item, without prom-client hashing the labels each time.
  private readonly adds: BoundInc;
  private readonly queueDuration: BoundObserve;
  private readonly workDuration: BoundObserve;
  private readonly retries: BoundInc;
  /** When each dirty item was first added, in ms (performance.now). */
  private readonly addTimes = new Map<T, number>();
  /** When each in-flight item was handed out, in ms (performance.now). */
  private readonly startTimes = new Map<T, number>();

  /** This queue's series: `name`, and `provider`/`provisioner` when given. */
  readonly labels: Partial<Record<QueueLabel, string>>;

  constructor(registry: Registry, name: string, provider: string | undefined, provisioner: string | undefined) {
    const labels: Partial<Record<QueueLabel, string>> = {
      name,
      ...(provider === undefined ? {} : { provider }),
      ...(provisioner === undefined ? {} : { provisioner }),
    };
    this.labels = labels;
    const registers = [registry];
    let queues = queuesByRegistry.get(registry);
    if (!queues) queuesByRegistry.set(registry, (queues = new Set()));
    queues.add(this as QueueMetrics<unknown>);
    inFlightGauge(
      registry,
      'workqueue_unfinished_work_seconds',
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      (q, now) => q.unfinishedSeconds(now),
    );
    inFlightGauge(
      registry,
      'workqueue_longest_running_processor_seconds',
      'How many seconds has the longest running processor for workqueue been running.',
      (q, now) => q.longestRunningSeconds(now),
    );
    this.depth = registeredMetric(
      registry,
      'workqueue_depth',
      Gauge,
      () => new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: LABEL_NAMES, registers }),
    ).labels(labels);
    this.adds = boundInc(
      registeredMetric(
        registry,
        'workqueue_adds_total',
        Counter,
        () => new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: LABEL_NAMES, registers }),
      ),
      labels,
    );
    this.queueDuration = boundObserve(
      registeredMetric(
        registry,
        'workqueue_queue_duration_seconds',
        Histogram,
        () =>
          new Histogram({
            name: 'workqueue_queue_duration_seconds',
            help: 'How long in seconds an item stays in workqueue before being requested.',
            labelNames: LABEL_NAMES,
            buckets: DURATION_BUCKETS_SECONDS,
            registers,
          }),
      ),
      labels,
    );
    this.workDuration = boundObserve(
      registeredMetric(
        registry,
        'workqueue_work_duration_seconds',
        Histogram,
        () =>
          new Histogram({
            name: 'workqueue_work_duration_seconds',
            help: 'How long in seconds processing an item from workqueue takes.',
            labelNames: LABEL_NAMES,
            buckets: DURATION_BUCKETS_SECONDS,
            registers,
          }),
      ),
      labels,
    );
    this.retries = boundInc(
      registeredMetric(
        registry,
        'workqueue_retries_total',
        Counter,
        () =>
          new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: LABEL_NAMES, registers }),
      ),
      labels,
    );
  }

  add(item: T): void {
    this.adds();
    this.depth.inc();
    if (!this.addTimes.has(item)) this.addTimes.set(item, performance.now());
  }

  /** Records the hand-out; returns how long `item` waited in the queue, in ms (undefined when unknown). */
  get(item: T): number | undefined {
    const now = performance.now();
    this.depth.dec();
    this.startTimes.set(item, now);
    const added = this.addTimes.get(item);
    if (added === undefined) return undefined;
    this.queueDuration((now - added) / 1000);
    this.addTimes.delete(item);
    return now - added;
  }

  done(item: T): void {
    const started = this.startTimes.get(item);
    if (started !== undefined) {
      this.workDuration((performance.now() - started) / 1000);
      this.startTimes.delete(item);
    }
  }

  retry(): void {
    this.retries();
  }

  /** Seconds the items being processed now have been processed, together. */
  unfinishedSeconds(now: number): number {
    let total = 0;
    for (const started of this.startTimes.values()) total += now - started;
    return total / 1000;
  }

  /** Seconds the oldest item being processed now has been processed (0 when none). */
  longestRunningSeconds(now: number): number {
    let oldest = now;
    for (const started of this.startTimes.values()) oldest = Math.min(oldest, started);
    return (now - oldest) / 1000;
  }
}

/** An item scheduled by {@link WorkQueue.addAfter}. */
interface Delayed<T> {
  item: T;
  /** performance.now() time at which it is added. */
  readyAt: number;
}

/**
 * client-go's rate-limiting work queue. See the module comment for the
 * dedupe/exclusivity guarantees. Every item handed out by {@link WorkQueue.get}
 * must be released with {@link WorkQueue.done}.
 */
export class WorkQueue<T = string> {
  /** Items waiting to be handed out, FIFO; never contains duplicates or in-flight items. */
  private readonly queue: T[] = [];
  /** Items that need processing: everything in `queue`, plus in-flight items added again. */
  private readonly dirty = new Set<T>();
  /** Items handed out and not yet done. */
  private readonly processing = new Set<T>();
  /** Pending `get` calls, oldest first. */
  private readonly getters: ((r: GetResult<T>) => void)[] = [];
  /** `addAfter` items ordered by readyAt (ties in call order); at most one entry per item. */
  private readonly waiting: Delayed<T>[] = [];
  private readonly waitingByItem = new Map<T, Delayed<T>>();
  private waitTimer: NodeJS.Timeout | undefined;
  private shuttingDown = false;
  /** Resolvers of `shutDownWithDrain` calls waiting for `processing` to empty. */
  private readonly drainers: (() => void)[] = [];
  private readonly rateLimiter: RateLimiter<T>;
  private readonly metrics: QueueMetrics<T> | undefined;
  /** How long each in-flight item waited in the queue, in ms (kept only with metrics): the sync span's attribute. */
  private readonly waitedMs = new Map<T, number>();
  /** The queue's `name` (metrics label, and the sync span's name: `<name>.sync`). */
  readonly name: string;
  /** The provider this queue works for, when the host runs several (see {@link WorkQueueOptions.provider}). */
  readonly provider: string | undefined;

  /** Creates an empty queue; see {@link WorkQueueOptions}. */
  constructor(opts: WorkQueueOptions<T> = {}) {
    this.name = opts.name ?? '';
    this.provider = opts.provider;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter<T>();
    this.metrics = opts.registry ? new QueueMetrics<T>(opts.registry, opts.name ?? '', opts.provider, opts.provisioner) : undefined;
  }

  /**
   * Marks `item` as needing processing. No-op after shutdown or if it is
   * already queued. If it is being processed, it is queued again once
   * {@link WorkQueue.done} is called for it; otherwise it is queued now (or
   * handed straight to a waiting {@link WorkQueue.get}).
   */
  add(item: T): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    this.metrics?.add(item);
    this.dirty.add(item);
    if (this.processing.has(item)) return;
    this.queue.push(item);
    this.wakeGetter();
  }

  /**
   * Adds `item` after `delayMs` milliseconds (now if <= 0). No-op after
   * shutdown. If `item` is already scheduled, the earlier of the two times
   * wins. Scheduled items are dropped by {@link WorkQueue.shutDown}. Counts
   * as a retry in `workqueue_retries_total`, as upstream.
   */
  addAfter(item: T, delayMs: number): void {
    if (this.shuttingDown) return;
    this.metrics?.retry();
    if (!(delayMs > 0)) {
      this.add(item);
      return;
    }
    const readyAt = performance.now() + delayMs;
    const existing = this.waitingByItem.get(item);
    if (existing) {
      if (existing.readyAt <= readyAt) return;
      this.waiting.splice(this.waiting.indexOf(existing), 1);
    }
    const entry: Delayed<T> = { item, readyAt };
    this.waiting.splice(this.insertionIndex(readyAt), 0, entry);
    this.waitingByItem.set(item, entry);
    if (this.waiting[0] === entry) this.armWaitTimer();
  }

  /** Adds `item` after the delay the rate limiter assigns to its next requeue. */
  addRateLimited(item: T): void {
    this.addAfter(item, this.rateLimiter.when(item));
  }

  /**
   * Like {@link WorkQueue.addRateLimited} (the requeue counts in the rate
   * limiter's history), but waits at least `minMs`. Returns the delay used.
   */
  addRateLimitedAtLeast(item: T, minMs: number): number {
    const delayMs = Math.max(minMs, this.rateLimiter.when(item));
    this.addAfter(item, delayMs);
    return delayMs;
  }

  /** Clears `item`'s rate-limiter history (call after it was processed successfully). Does not dequeue it. */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  /** How many times `item` has been rate-limited since it was last forgotten. */
  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }

  /**
   * Waits for the next item and marks it in-flight; the caller must call
   * {@link WorkQueue.done} with it. After shutdown, items still queued are
   * handed out first; then (and for calls already waiting) resolves
   * `{ shutdown: true }`.
   */
  get(): Promise<GetResult<T>> {
    if (this.queue.length > 0) return Promise.resolve(this.take());
    if (this.shuttingDown) return Promise.resolve({ shutdown: true });
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /**
   * Marks `item` as no longer in-flight. If it was added while in flight, it
   * is queued again now. No-op for items that are not in flight.
   */
  done(item: T): void {
    if (!this.processing.delete(item)) return;
    this.metrics?.done(item);
    this.waitedMs.delete(item);
    if (this.dirty.has(item)) {
      this.queue.push(item);
      this.wakeGetter();
    }
    if (this.processing.size === 0) {
      for (const resolve of this.drainers.splice(0)) resolve();
    }
  }

  /** How long in-flight `item` waited in the queue before it was handed out, in ms; undefined without metrics. */
  queueWaitMs(item: T): number | undefined {
    return this.waitedMs.get(item);
  }

  /** Number of items waiting to be handed out (not counting in-flight or delayed items). */
  len(): number {
    return this.queue.length;
  }

  /** Up to `limit` items waiting to be handed out, in the order they will be (not in-flight or delayed ones). */
  peek(limit: number): T[] {
    return this.queue.slice(0, limit);
  }

  /** Whether {@link WorkQueue.shutDown} or {@link WorkQueue.shutDownWithDrain} was called. */
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /**
   * Stops accepting items and drops delayed ones. Waiting `get`s resolve
   * `{ shutdown: true }`; later `get`s still receive already-queued items
   * until the queue is empty. Idempotent.
   */
  shutDown(): void {
    this.shuttingDown = true;
    clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
    this.waiting.length = 0;
    this.waitingByItem.clear();
    for (const resolve of this.getters.splice(0)) resolve({ shutdown: true });
  }

  /**
   * {@link WorkQueue.shutDown}, then resolves once no item is in flight (every
   * handed-out item was passed to `done`). As upstream, it does not wait for
   * items that are queued but not yet handed out.
   */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainers.push(resolve));
  }

  /** Moves the head of the queue to in-flight. Precondition: queue not empty. */
  private take(): GetResult<T> {
    const item = this.queue.shift() as T;
    this.processing.add(item);
    this.dirty.delete(item);
    const waited = this.metrics?.get(item);
    if (waited !== undefined) this.waitedMs.set(item, waited);
    return { item, shutdown: false };
  }

  /** Hands the head of the queue to the oldest waiting `get`, if any. */
  private wakeGetter(): void {
    const resolve = this.getters.shift();
    if (resolve) resolve(this.take());
  }

  /** Index after every waiting entry with readyAt <= `readyAt` (keeps ties FIFO). */
  private insertionIndex(readyAt: number): number {
    let lo = 0;
    let hi = this.waiting.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.waiting[mid]!.readyAt <= readyAt) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** (Re)schedules the single timer for the earliest delayed item. */
  private armWaitTimer(): void {
    clearTimeout(this.waitTimer);
    const head = this.waiting[0];
    if (!head) {
      this.waitTimer = undefined;
      return;
    }
    // Longer timeouts overflow to 1 ms in Node; releaseReady re-arms for the rest.
    this.waitTimer = setTimeout(() => this.releaseReady(), Math.min(MAX_TIMER_MS, Math.max(0, head.readyAt - performance.now())));
  }

  /** Adds every delayed item whose time has come, then re-arms the timer. */
  private releaseReady(): void {
    const now = performance.now();
    while (this.waiting.length > 0 && this.waiting[0]!.readyAt <= now) {
      const { item } = this.waiting.shift()!;
      this.waitingByItem.delete(item);
      this.add(item);
    }
    this.armWaitTimer();
  }
}

/** Options of {@link runWorkers}. */
export interface RunWorkersOptions {
  /** Receives one line per failed item (constant messages, item in `key`). */
  log: Logger;
  /** When aborted, the queue is shut down and workers exit after their current item. */
  signal?: AbortSignal;
}

/** Shortest requeue delay a provider's RetryInfo gets (docs/architecture.md, "Errors"): shorter ones, zero included, are raised to it. */
export const MIN_RETRY_AFTER_MS = 1000;
/** Longest requeue delay a provider's RetryInfo gets: longer ones are cut to it. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/**
 * The delay requested by an error carrying a numeric, non-negative
 * `retryAfterMs` property (a cloud provider RetryError), else undefined.
 */
function retryAfterMsOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('retryAfterMs' in err)) return undefined;
  const ms = err.retryAfterMs;
  return typeof ms === 'number' && ms >= 0 ? ms : undefined;
}

/** A provider's requested delay within [MIN_RETRY_AFTER_MS, MAX_RETRY_AFTER_MS]. */
export function clampRetryAfterMs(requestedMs: number): number {
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(MIN_RETRY_AFTER_MS, requestedMs));
}

/**
 * The `<queue name>.sync` span of one reconcile of `item` (a new trace:
 * reconciles are not children of each other): the key, the provider (when
 * the queue has one), how long the item waited in the queue and how many
 * times it was requeued before. A non-recording no-op when tracing is off
 * (nothing is computed then).
 */
function startSyncSpan<T>(queue: WorkQueue<T>, item: T): Span {
  const span = startSpan(`${queue.name || 'workqueue'}.sync`, { kind: SpanKind.INTERNAL, root: true });
  if (!span.isRecording()) return span;
  const waited = queue.queueWaitMs(item);
  span.setAttributes({
    'ccm.controller': queue.name,
    'ccm.key': String(item),
    'ccm.sync.retries': queue.numRequeues(item),
    ...(queue.provider === undefined ? {} : { 'ccm.provider': queue.provider }),
    ...(waited === undefined ? {} : { 'ccm.queue.wait_ms': Math.round(waited * 1000) / 1000 }),
  });
  return span;
}

/** The error's class name (the `error.type` convention), `Error` for plain ones. */
function errorType(err: unknown): string {
  return err instanceof Error ? err.constructor.name || 'Error' : typeof err;
}

/**
 * Runs `workers` concurrent copies of the upstream controller loop until the
 * queue is shut down (or `signal` aborts, which shuts it down): get an item,
 * `await handler(item)`, then on success `forget(item)`; on an error with a
 * numeric `retryAfterMs` `addRateLimitedAtLeast(item, clampRetryAfterMs(..))`
 * (the provider's delay within [MIN_RETRY_AFTER_MS, MAX_RETRY_AFTER_MS], and
 * never shorter than the rate limiter's, so a provider cannot make an item
 * spin nor park it for weeks); on any other error `addRateLimited(item)`;
 * always `done(item)`. Handler errors never escape. Resolves when every
 * worker has exited.
 */
export async function runWorkers<T>(
  queue: WorkQueue<T>,
  workers: number,
  handler: (item: T) => Promise<void>,
  opts: RunWorkersOptions,
): Promise<void> {
  const { log, signal } = opts;
  const onAbort = (): void => queue.shutDown();
  if (signal?.aborted) queue.shutDown();
  signal?.addEventListener('abort', onAbort, { once: true });
  const worker = async (): Promise<void> => {
    while (!signal?.aborted) {
      const next = await queue.get();
      if (next.shutdown) return;
      const { item } = next;
      // One span per reconcile, the root of its trace; a no-op object when tracing is off.
      const span = startSyncSpan(queue, item);
      try {
        await runIn(contextWith(span, undefined, true), () => handler(item));
        queue.forget(item);
        span.setAttribute('ccm.sync.outcome', 'success');
      } catch (err) {
        const requestedMs = retryAfterMsOf(err);
        if (span.isRecording()) {
          span.setAttributes({ 'ccm.sync.outcome': requestedMs !== undefined ? 'retry_after' : 'error', 'error.type': errorType(err) });
          span.setStatus({ code: STATUS_ERROR, message: errorMessage(err) });
        }
        if (requestedMs !== undefined) {
          const delayMs = queue.addRateLimitedAtLeast(item, clampRetryAfterMs(requestedMs));
          log.warn({ key: item, requestedMs, delayMs, err: errorMessage(err) }, 'requeue after retry delay');
        } else {
          log.error({ key: item, requeues: queue.numRequeues(item), err: errorMessage(err) }, 'requeue after error');
          queue.addRateLimited(item);
        }
      } finally {
        span.end();
        queue.done(item);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
