/**
 * A shared-informer-like cache of one resource, modelled on client-go's
 * Reflector + SharedIndexInformer: list, then watch from the list's
 * resourceVersion, keep the last-seen object per key, and tell handlers about
 * adds, updates (with the previous object) and deletes.
 *
 * Unlike client-node's own informer (which stops for good after a list or
 * watch error, and reports updates without the old object), this one never
 * gives up: after any list or watch error, including 410 Gone, it waits with
 * exponential backoff (800 ms doubling to 30 s, jittered, as the upstream
 * reflector), relists, and emits the add/update/delete differences between
 * its cache and the new list, so handlers see everything that changed while
 * it was disconnected. Each
 * watch asks the server to end it after 5-10 min (`timeoutSeconds`, as the
 * reflector does), which also recycles connections that died silently; a
 * watch that ends that way is resumed from the last resourceVersion without
 * relisting.
 *
 * Liveness: a watch that delivers nothing (no event, no bookmark) for
 * {@link WATCH_LIVENESS_TIMEOUT_MS} is taken for dead (a half-open or
 * black-holed connection delivers nothing and never ends): it is aborted,
 * {@link Informer.hasSynced} turns false, and the informer relists over a new
 * connection; it is synced again once the relist is applied. The watch asks
 * for bookmarks, which kube-apiserver sends about once a minute on an idle
 * watch, so a live watch never stays quiet that long. An event that cannot be
 * applied (the transform or the key throws) ends the watch the same way, and
 * the resourceVersion stays at the last event applied, so nothing is skipped.
 *
 * With `resyncPeriodMs`, every cached object is also handed to `onUpdate`
 * (as old and new) once per period, as client-go's resync.
 *
 * Objects handed out (to handlers, `list`, `get`) are the cache's own: callers
 * must not mutate them; copy first (`structuredClone`) to build a patch.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { errorMessage, type Logger } from '../log.js';
import { Backoff, sleep } from './backoff.js';
import { keyOf } from './keys.js';
import { ApiError, type RestClient } from './rest.js';
import { watch } from './watch.js';

/** First delay before relisting after an error, in ms (upstream reflector: 800 ms). */
const INFORMER_INITIAL_BACKOFF_MS = 800;
/** Longest delay before relisting after errors, in ms (upstream reflector: 30 s). */
const INFORMER_MAX_BACKOFF_MS = 30_000;
/** A watch that ends cleanly sooner than this without delivering events counts as a failure, in ms. */
const MIN_HEALTHY_WATCH_MS = 1000;
/**
 * A watch that delivers no event or bookmark for this long is aborted and the
 * informer relists, in ms. kube-apiserver sends a bookmark to an idle watch
 * about every 60 s (seen at 60, 120 and 180 s on idle watches of the test
 * control plane, v1.34; and one 2 s before timeoutSeconds ends the watch), so
 * this is two and a half of its periods: a dead connection is noticed within
 * 2.5 min, a live one never trips it. (client-go has no such check: over HTTP/2
 * its transport pings a connection idle for 30 s and drops it after 15 s more.)
 */
export const WATCH_LIVENESS_TIMEOUT_MS = 150_000;
/** Server-side watch timeout is drawn from [MIN, 2*MIN), in seconds (upstream reflector: 5 min). */
const MIN_WATCH_TIMEOUT_S = 300;

/** What a list function returns (a client-node `V1NodeList` etc. fits). */
export interface ListResult<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
  /** e.g. `NodeList`; used to fill in `kind` on items, which list responses omit. */
  kind?: string;
  /** e.g. `v1`; used to fill in `apiVersion` on items. */
  apiVersion?: string;
}

/** Callbacks for cache changes; each runs synchronously, errors are logged and swallowed. */
export interface InformerHandler<T> {
  /** An object appeared (also called for every cached object when the handler is added). */
  onAdd?(obj: T): void;
  /** An object's resourceVersion changed; `oldObj` is the previously cached version. */
  onUpdate?(oldObj: T, newObj: T): void;
  /** An object disappeared; `obj` is its last known state. */
  onDelete?(obj: T): void;
}

/** Options of an {@link Informer}. */
export interface InformerOptions<T = KubernetesObject> {
  log: Logger;
  /** Label selector for the watch; the list function must apply the same one. */
  labelSelector?: string;
  /** Field selector for the watch; the list function must apply the same one. */
  fieldSelector?: string;
  /** Source of randomness for backoff jitter and watch timeouts (tests). Default Math.random. */
  random?: () => number;
  /**
   * Applied to every object (listed or watched) before it is cached or handed
   * to handlers, e.g. to drop fields nobody reads (client-go's SetTransform).
   * May change and return its argument; must keep name and namespace.
   */
  transform?: (obj: T) => T;
  /**
   * `transform` drops `metadata.managedFields`: watch events are then parsed without them (watch.ts
   * withoutManagedFields), so the objects arrive without the key at all.
   */
  dropsManagedFields?: boolean;
  /**
   * Every this many milliseconds after the first sync, each cached object is
   * handed to `onUpdate` as both old and new object (client-go's resync), so
   * level-triggered controllers look at every object again. 0 or absent: never.
   */
  resyncPeriodMs?: number;
  /** Liveness bound of each watch in ms; default {@link WATCH_LIVENESS_TIMEOUT_MS}. Shorter in tests. */
  watchLivenessTimeoutMs?: number;
}

/** How one watch connection ended. */
type WatchOutcome =
  | { kind: 'stopped' }
  | { kind: 'closed' }
  | { kind: 'expired' }
  | { kind: 'failed'; err: string; code?: number }
  /** Nothing arrived within the liveness bound, or an event could not be applied: the cache may be behind. */
  | { kind: 'stale'; err: string };

/**
 * Keeps a cache of the objects at `path` (e.g. `/api/v1/nodes`) current and
 * notifies handlers of changes. Keys are `name` or `namespace/name` (keys.ts).
 */
export class Informer<T extends KubernetesObject> {
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly random: () => number;
  private readonly handlers: InformerHandler<T>[] = [];
  private cache = new Map<string, T>();
  /** Bumped by every change of the cache (see mutationCount). */
  private mutations = 0;
  private resourceVersion = '';
  private synced = false;
  private readonly syncWaiters = new Set<() => void>();
  private stopper: AbortController | undefined;
  private running: Promise<void> | undefined;

  /**
   * `listFn` lists the resource at `path` (with the same selectors as
   * `opts`), e.g. `() => core.listNode({})` for `/api/v1/nodes`. Nothing
   * happens until {@link Informer.start}.
   */
  constructor(
    private readonly rest: RestClient,
    private readonly path: string,
    private readonly listFn: () => Promise<ListResult<T>>,
    private readonly opts: InformerOptions<T>,
  ) {
    this.log = opts.log.child({ resource: path });
    this.random = opts.random ?? Math.random;
    this.backoff = new Backoff({
      initialMs: INFORMER_INITIAL_BACKOFF_MS,
      maxMs: INFORMER_MAX_BACKOFF_MS,
      factor: 2,
      jitter: 1,
      random: this.random,
    });
  }

  /**
   * Registers `handler`. Like client-go's AddEventHandler, it immediately
   * receives `onAdd` for every object already cached.
   */
  addEventHandler(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
    for (const obj of this.cache.values()) this.call(handler, 'onAdd', obj);
  }

  /** Starts listing and watching in the background. No-op if already running. */
  start(): void {
    if (this.running) return;
    const stopper = new AbortController();
    this.stopper = stopper;
    this.running = Promise.all([this.run(stopper.signal), this.resyncLoop(stopper.signal)]).then(() => undefined);
  }

  /**
   * Stops watching and resolves once the background loop has exited (no
   * handler is called afterwards). The cache keeps its last contents;
   * {@link Informer.start} may be called again.
   */
  async stop(): Promise<void> {
    this.stopper?.abort();
    await this.running;
    this.running = undefined;
    this.stopper = undefined;
  }

  /**
   * Whether a list has been applied to the cache (and its adds delivered) and
   * the cache is not known to be behind: false from the start until the first
   * list, and again from a stalled watch (or an event that could not be
   * applied) until the relist that follows is applied. Consumers that act on
   * the cache's completeness (the orphan sweep) check it before each pass.
   */
  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * Resolves `true` once {@link Informer.hasSynced}, or `false` if `signal`
   * aborts or `timeoutMs` elapses first (never, when both are omitted).
   */
  waitForSync(signal?: AbortSignal, timeoutMs?: number): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (result: boolean): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.syncWaiters.delete(onSync);
        resolve(result);
      };
      const onSync = (): void => finish(true);
      const onAbort = (): void => finish(false);
      this.syncWaiters.add(onSync);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) timer = setTimeout(() => finish(false), timeoutMs);
    });
  }

  /**
   * A number that changes whenever the cache does (an object added, updated
   * or deleted, a relist): a value derived from {@link Informer.list} is
   * still current while this number is unchanged. Lets a consumer that asks
   * the same question of every cached object on each sync (the service
   * controller's eligible Nodes) compute it once per change instead.
   */
  mutationCount(): number {
    return this.mutations;
  }

  /** Every cached object, in no particular order. Do not mutate them. */
  list(): T[] {
    return Array.from(this.cache.values());
  }

  /** The cached object with key `key` (`name` or `namespace/name`). Do not mutate it. */
  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  /** List/watch loop; returns when `signal` aborts. */
  private async run(signal: AbortSignal): Promise<void> {
    let needList = true;
    while (!signal.aborted) {
      if (needList) {
        try {
          await this.relist(signal);
          needList = false;
        } catch (err) {
          if (signal.aborted) return;
          const delayMs = this.backoff.next();
          this.log.info({ err: errorMessage(err), delayMs }, 'list failed; retrying after backoff');
          await sleep(delayMs, signal);
          continue;
        }
      }
      const outcome = await this.watchOnce(signal);
      switch (outcome.kind) {
        case 'stopped':
          return;
        case 'closed':
          this.backoff.reset();
          this.log.debug({ resourceVersion: this.resourceVersion }, 'watch closed; resuming');
          break;
        case 'expired': {
          needList = true;
          const delayMs = this.backoff.next();
          this.log.info({ resourceVersion: this.resourceVersion, delayMs }, 'watch expired; relisting after backoff');
          await sleep(delayMs, signal);
          break;
        }
        case 'failed': {
          needList = true;
          const delayMs = this.backoff.next();
          this.log.info({ err: outcome.err, code: outcome.code, delayMs }, 'watch failed; relisting after backoff');
          await sleep(delayMs, signal);
          break;
        }
        case 'stale': {
          needList = true;
          this.synced = false;
          const delayMs = this.backoff.next();
          this.log.warn({ err: outcome.err, resourceVersion: this.resourceVersion, delayMs }, 'cache may be behind; not synced until relisted');
          await sleep(delayMs, signal);
          break;
        }
      }
    }
  }

  /** Hands every cached object to onUpdate every resyncPeriodMs once synced; returns when `signal` aborts. */
  private async resyncLoop(signal: AbortSignal): Promise<void> {
    const periodMs = this.opts.resyncPeriodMs ?? 0;
    if (!(periodMs > 0)) return;
    while (await sleep(periodMs, signal)) {
      if (!this.synced) continue;
      this.log.debug({ items: this.cache.size }, 'resync');
      for (const obj of [...this.cache.values()]) this.emit('onUpdate', obj, obj);
    }
  }

  /** Lists, replaces the cache, and emits the differences. Throws on list errors. */
  private async relist(signal: AbortSignal): Promise<void> {
    const list = await this.listFn();
    if (signal.aborted) return;
    const itemKind = list.kind?.endsWith('List') ? list.kind.slice(0, -'List'.length) : undefined;
    const fresh = new Map<string, T>();
    const transform = this.opts.transform;
    for (const listed of list.items) {
      const item = transform ? transform(listed) : listed;
      item.kind ??= itemKind;
      item.apiVersion ??= list.apiVersion;
      fresh.set(keyOf(item), item);
    }
    const old = this.cache;
    this.cache = fresh;
    this.mutations++;
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    for (const [key, obj] of old) {
      if (!fresh.has(key)) this.emit('onDelete', obj);
    }
    for (const [key, obj] of fresh) {
      const prev = old.get(key);
      if (!prev) this.emit('onAdd', obj);
      else if (prev.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit('onUpdate', prev, obj);
    }
    this.log.debug({ items: fresh.size, resourceVersion: this.resourceVersion }, 'listed');
    if (!this.synced) {
      this.synced = true;
      for (const notify of [...this.syncWaiters]) notify();
    }
  }

  /** Runs one watch from the current resourceVersion, applying its events, until it ends. */
  private async watchOnce(signal: AbortSignal): Promise<WatchOutcome> {
    const startedAt = performance.now();
    let events = 0;
    let status: { code?: number; message?: string } | undefined;
    let stale: string | undefined;
    const connection = new AbortController();
    const livenessMs = this.opts.watchLivenessTimeoutMs ?? WATCH_LIVENESS_TIMEOUT_MS;
    let liveness: NodeJS.Timeout | undefined;
    // (Re)armed when the watch starts and on every event, bookmarks included.
    const arm = (): void => {
      clearTimeout(liveness);
      liveness = setTimeout(() => {
        stale ??= `no event or bookmark for ${livenessMs / 1000} s`;
        connection.abort();
      }, livenessMs);
    };
    arm();
    const onStop = (): void => connection.abort();
    signal.addEventListener('abort', onStop, { once: true });
    // stop() may have run between the list and here; 'abort' does not fire again.
    if (signal.aborted) connection.abort();
    this.log.debug({ resourceVersion: this.resourceVersion }, 'watch starting');
    const query = {
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: Math.floor(MIN_WATCH_TIMEOUT_S * (1 + this.random())),
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
    };
    const onEvent = (phase: string, obj: unknown): void => {
      if (signal.aborted || status || stale) return;
      arm();
      if (phase === 'ERROR') {
        status = (obj ?? {}) as { code?: number; message?: string };
        connection.abort();
        return;
      }
      const failure = this.apply(phase, obj as T);
      if (failure !== undefined) {
        stale = `${phase} event could not be applied: ${failure}`;
        connection.abort();
        return;
      }
      events++;
      this.backoff.reset();
    };
    const err = await watch(this.rest, this.path, query, onEvent, connection.signal, { skipManagedFields: this.opts.dropsManagedFields }).then(
      () => undefined,
      (e: unknown) => e ?? new Error('watch failed'),
    );
    clearTimeout(liveness);
    signal.removeEventListener('abort', onStop);
    if (signal.aborted) return { kind: 'stopped' };
    if (stale) return { kind: 'stale', err: stale };
    if (status) {
      return status.code === 410 ? { kind: 'expired' } : { kind: 'failed', err: status.message ?? 'watch error event', code: status.code };
    }
    if (err) {
      const code = statusCodeOf(err);
      return code === 410 ? { kind: 'expired' } : { kind: 'failed', err: errorMessage(err), code };
    }
    if (events === 0 && performance.now() - startedAt < MIN_HEALTHY_WATCH_MS) {
      return { kind: 'failed', err: 'watch ended immediately' };
    }
    return { kind: 'closed' };
  }

  /**
   * Applies one watch event to the cache, notifies handlers and advances the
   * resourceVersion to the event's. Returns undefined when applied (or an
   * unknown type, ignored), else why not: then neither the cache nor the
   * resourceVersion changed, so a relist or a watch from the resourceVersion
   * gets the event again. (Handler errors are the handlers'; they do not count.)
   */
  private apply(phase: string, watched: T): string | undefined {
    let obj = watched;
    try {
      if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED') obj = this.opts.transform?.(watched) ?? watched;
      if (phase === 'ADDED' || phase === 'MODIFIED') {
        const key = keyOf(obj);
        const prev = this.cache.get(key);
        this.cache.set(key, obj);
        this.mutations++;
        if (!prev) this.emit('onAdd', obj);
        else if (prev.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit('onUpdate', prev, obj);
      } else if (phase === 'DELETED') {
        const key = keyOf(obj);
        const prev = this.cache.get(key);
        this.cache.delete(key);
        this.mutations++;
        if (prev) this.emit('onDelete', obj);
      } else if (phase !== 'BOOKMARK') {
        return undefined;
      }
    } catch (err) {
      return errorMessage(err);
    }
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    return undefined;
  }

  private emit(event: 'onAdd' | 'onDelete', obj: T): void;
  private emit(event: 'onUpdate', oldObj: T, newObj: T): void;
  private emit(event: keyof InformerHandler<T>, a: T, b?: T): void {
    for (const handler of this.handlers) this.call(handler, event, a, b);
  }

  /** Calls one handler callback, logging (not propagating) what it throws. */
  private call(handler: InformerHandler<T>, event: keyof InformerHandler<T>, a: T, b?: T): void {
    try {
      if (event === 'onUpdate') handler.onUpdate?.(a, b as T);
      else handler[event]?.(a);
    } catch (err) {
      this.log.error({ event, key: safeKey(a), err: errorMessage(err) }, 'informer handler failed');
    }
  }
}

/** HTTP status carried by an API error (a refused watch or list). */
function statusCodeOf(err: unknown): number | undefined {
  return err instanceof ApiError ? err.code : undefined;
}

/** keyOf for logging: never throws. */
function safeKey(obj: KubernetesObject): string | undefined {
  try {
    return keyOf(obj);
  } catch {
    return undefined;
  }
}
