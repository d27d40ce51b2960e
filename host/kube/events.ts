/**
 * core/v1 Event recording, modelled on client-go's record.EventRecorder:
 * user-facing notes about an object (`kubectl describe` shows them).
 * Recording is fire-and-forget; repeats are aggregated into one Event whose
 * `count`/`lastTimestamp` are bumped, as client-go's EventCorrelator does
 * (simplified: exact repeats only, no similar-message folding or spam filter).
 */
import os from 'node:os';
import type { CoreV1Event, KubernetesObject, V1ObjectReference } from '@kubernetes/client-node';
import { type CoreV1Api } from './api.js';
import { errorMessage, type Logger } from '../log.js';
import { isNotFound } from './client.js';
import { redact } from '../redact.js';
import { sanitizeMessage } from './message-text.js';
import { patchEvent } from './patch.js';

/** Event severity, as in core/v1 (`Normal` for information, `Warning` for problems). */
export type EventType = 'Normal' | 'Warning';

/** Repeats within this window update the existing Event instead of creating one, in ms (10 min, as upstream). */
const EVENT_AGGREGATION_WINDOW_MS = 10 * 60 * 1000;
/** Events accepted but not yet written beyond which new ones are dropped (upstream's queue size). */
const MAX_PENDING_EVENTS = 1000;
/** Distinct (object, type, reason, message) combinations remembered for aggregation (upstream's LRU size). */
const MAX_AGGREGATION_ENTRIES = 4096;
/** Namespace of Events about cluster-scoped objects (e.g. Nodes), as upstream. */
const CLUSTER_SCOPED_EVENT_NAMESPACE = 'default';

/** Options of an {@link EventRecorder}. */
export interface EventRecorderOptions {
  /**
   * Who reports: `source.component` and `reportingComponent`, e.g.
   * `cloud-node-controller`. Must be a Kubernetes qualified name.
   */
  component: string;
  /** `source.host` and `reportingInstance`. Default os.hostname(). */
  host?: string;
  /** Failures and drops are logged at debug. */
  log: Logger;
}

/** What the recorder remembers about an Event it wrote. */
interface Aggregate {
  namespace: string;
  name: string;
  count: number;
  firstTimestamp: Date;
  /** Date.now() of the last occurrence. */
  lastSeenMs: number;
}

/**
 * Writes core/v1 Events about objects. {@link EventRecorder.event} returns at
 * once; writes happen in the background, in order per (object, type, reason,
 * message), and failures are only logged.
 */
export class EventRecorder {
  private readonly component: string;
  private readonly host: string;
  private readonly log: Logger;
  /** Aggregation state by aggregation key; Map order is least recently used first. */
  private readonly aggregates = new Map<string, Aggregate>();
  /** Tail of the write chain of each aggregation key with writes in progress. */
  private readonly chains = new Map<string, Promise<void>>();
  private pending = 0;
  /** Last nanosecond timestamp used in an Event name, to keep names unique. */
  private lastNameNanos = 0n;

  /** `core` is used to create and patch Events. */
  constructor(
    private readonly core: CoreV1Api,
    opts: EventRecorderOptions,
  ) {
    this.component = opts.component;
    this.host = opts.host ?? os.hostname();
    this.log = opts.log;
  }

  /**
   * Records that `reason` (UpperCamelCase, machine-readable) happened to `obj`,
   * with a human-readable `message` (secrets redacted, made one line and
   * truncated to MAX_MESSAGE_BYTES, see message-text.ts). `obj` needs `kind`, `apiVersion` and
   * `metadata.name` (objects from informer caches have them); Events
   * about objects without a namespace go to `default`. A repeat of the same
   * (object uid, type, reason, message) within
   * {@link EVENT_AGGREGATION_WINDOW_MS} increments the existing Event's count.
   * Never throws; drops the event (debug log) when it cannot be built or when
   * {@link MAX_PENDING_EVENTS} writes are already pending.
   */
  event(obj: KubernetesObject, type: EventType, reason: string, rawMessage: string): void {
    // Every Event passes here: secrets out, then one line, bounded (plugin error text is part of many messages).
    const message = sanitizeMessage(redact(rawMessage));
    const meta = obj.metadata;
    if (!obj.kind || !meta?.name) {
      this.log.debug({ kind: obj.kind, name: meta?.name, reason }, 'event dropped: object lacks kind or name');
      return;
    }
    if (this.pending >= MAX_PENDING_EVENTS) {
      this.log.debug({ kind: obj.kind, name: meta.name, reason }, 'event dropped: too many pending events');
      return;
    }
    const ref: V1ObjectReference = {
      kind: obj.kind,
      apiVersion: obj.apiVersion,
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
    };
    const key = JSON.stringify([ref.kind, ref.namespace ?? '', ref.name, ref.uid ?? '', type, reason, message]);
    const now = new Date();
    this.pending++;
    const write = (this.chains.get(key) ?? Promise.resolve())
      .then(() => this.write(key, ref, type, reason, message, now))
      .catch((err: unknown) => {
        this.log.debug({ kind: ref.kind, name: ref.name, namespace: ref.namespace, reason, err: errorMessage(err) }, 'event write failed');
      })
      .finally(() => {
        this.pending--;
        if (this.chains.get(key) === write) this.chains.delete(key);
      });
    this.chains.set(key, write);
  }

  /** Resolves once every event accepted so far has been written (or has failed). */
  async flush(): Promise<void> {
    while (this.chains.size > 0) await Promise.all(this.chains.values());
  }

  /** Patches the aggregated Event for `key` if recent, else creates a new one. Throws on API errors. */
  private async write(key: string, ref: V1ObjectReference, type: EventType, reason: string, message: string, now: Date): Promise<void> {
    const prev = this.aggregates.get(key);
    if (prev && now.getTime() - prev.lastSeenMs <= EVENT_AGGREGATION_WINDOW_MS) {
      const next: Aggregate = { ...prev, count: prev.count + 1, lastSeenMs: now.getTime() };
      try {
        await patchEvent(this.core, prev.namespace, prev.name, { count: next.count, lastTimestamp: now.toISOString() }, 'merge');
        this.remember(key, next);
        return;
      } catch (err) {
        // The Event expired (TTL) or was deleted: write it anew, keeping the tally.
        if (!isNotFound(err)) throw err;
        await this.create(key, ref, type, reason, message, next);
        return;
      }
    }
    const namespace = ref.namespace || CLUSTER_SCOPED_EVENT_NAMESPACE;
    await this.create(key, ref, type, reason, message, {
      namespace,
      name: '',
      count: 1,
      firstTimestamp: now,
      lastSeenMs: now.getTime(),
    });
  }

  /** Creates an Event with `agg`'s count and timestamps under a fresh name and remembers it. */
  private async create(key: string, ref: V1ObjectReference, type: EventType, reason: string, message: string, agg: Aggregate): Promise<void> {
    const name = `${ref.name}.${this.nameSuffix()}`;
    const body: CoreV1Event = {
      metadata: { name, namespace: agg.namespace },
      involvedObject: ref,
      type,
      reason,
      message,
      source: { component: this.component, host: this.host },
      reportingComponent: this.component,
      reportingInstance: this.host,
      firstTimestamp: agg.firstTimestamp,
      lastTimestamp: new Date(agg.lastSeenMs),
      count: agg.count,
    };
    // Nothing of the answer is read (the name is ours).
    await this.core.createNamespacedEvent({ namespace: agg.namespace, body }, { discardAnswer: true });
    this.remember(key, { ...agg, name });
  }

  /** Stores `agg` as most recently used, evicting the least recently used beyond the bound. */
  private remember(key: string, agg: Aggregate): void {
    this.aggregates.delete(key);
    this.aggregates.set(key, agg);
    if (this.aggregates.size > MAX_AGGREGATION_ENTRIES) {
      const oldest = this.aggregates.keys().next().value as string;
      this.aggregates.delete(oldest);
    }
  }

  /** Upstream's `%x` of UnixNano, made strictly increasing so names never collide. */
  private nameSuffix(): string {
    let nanos = BigInt(Date.now()) * 1_000_000n;
    if (nanos <= this.lastNameNanos) nanos = this.lastNameNanos + 1n;
    this.lastNameNanos = nanos;
    return nanos.toString(16);
  }
}
