/**
 * The service (load balancer) controller, upstream kubernetes/cloud-provider
 * controllers/service: gives every Service of type LoadBalancer whose
 * loadBalancerClass one of its providers serves a cloud load balancer from
 * that provider, keeps its backends equal to the eligible Nodes, and deletes
 * it when the Service goes away or stops wanting one.
 *
 * Load balancers by class (host/lb-classes.ts, lb-owner.ts): a Service no
 * provider serves is left alone (no finalizer, event or status write), as
 * upstream leaves every classed Service. The provider that made a load
 * balancer is recorded on the Service with the finalizer; a Service whose
 * class or type changes is cleaned up by that provider (then, if another of
 * our providers serves its new class, ensured by that one). Node-set
 * fan-out, the periodic re-ensure and the orphan sweep run per provider, each
 * over the Services it serves.
 *
 * Guarantees:
 *  - the finalizer service.kubernetes.io/load-balancer-cleanup is written
 *    before any cloud call that could create something, and removed only after
 *    EnsureLoadBalancerDeleted succeeded (or answered ImplementedElsewhere,
 *    as upstream: another controller owns it): a Service never finishes deleting
 *    while its load balancer exists, and (since deletion waits for us) no load
 *    balancer outlives its Service, across crashes and restarts;
 *  - status.loadBalancer.ingress is validated and written (status
 *    subresource) only when it changed;
 *  - one Service is never worked on by two workers, and a node-set change
 *    never overlaps a Service's own sync (per-Service lock);
 *  - the finalizer alone is not trusted: kube-apiserver can remove a Service
 *    whose finalizer was added after its DELETE read the object
 *    (kubernetes/kubernetes#77988). So every deletion of a Service that wants
 *    or had a load balancer is queued with the uid it had (even while its
 *    first ensure is in flight), and a Service found gone right after an
 *    ensure (404 or another uid on the status write) gets the load balancer
 *    just made for it deleted at once.
 *
 * Better than upstream, on purpose: several workers by default; ensures
 * use the provider's batch ensure (ensure-batcher.ts: concurrent ensures
 * share a call, and each call also ensures queued Services ahead of their
 * sync, whose worker then only writes the status); node-set changes use the
 * provider's batch host update (one call for every affected load balancer);
 * a periodic re-ensure (--lb-resync-period) repairs load balancers deleted
 * or changed behind the controller's back; a node's IP
 * address change updates backends too (upstream only reacts to eligibility
 * and providerID); an orphan sweep (orphan-sweep.ts) deletes load balancers
 * whose Service is gone in ways no controller can see.
 */
import type { V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import type { LoadBalancers, ServiceRef } from '../../cloud-load-balancers.js';
import { CloudCallError, DeferredError, ImplementedElsewhereError, NotImplementedError, RetryAfterError } from '../../errors.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import type { InformerView } from '../../kube/shard-view.js';
import { isGoneOrReplaced, isUnprocessable } from '../../kube/client.js';
import { keyOf } from '../../kube/keys.js';
import { patchService, patchServiceStatus } from '../../kube/patch.js';
import { ItemExponentialRateLimiter } from '../../kube/ratelimiter.js';
import { WorkQueue, clampRetryAfterMs, runWorkers } from '../../kube/workqueue.js';
import { errorMessage, type Logger } from '../../log.js';
import { every } from '../../util/every.js';
import { Annotations, Controllers, EventReasons, Finalizers, LiveReadOutcomes } from '../../names.js';
import { KeyedMutex } from '../../util/keyed-mutex.js';
import { mapLimit } from '../../util/map-limit.js';
import { toNodeRef } from '../node-ref.js';
import type { HostNodeOwnership } from '../../ownership/host.js';
import { lbBackendsOf, resolveNodeOwner } from '../../ownership/nodes.js';
import { deferralMetrics, serviceMetrics, type ServiceMetrics } from '../../controller-metrics.js';
import { liveReadCounter, type LiveReadCount } from '../live-reads.js';
import { classOf, LbClassResolver, type LbClassDeclaration } from '../../lb-classes.js';
import { backendSetKey, hasLbFinalizer, isBackendNode, isLoadBalancer, lbSpecSignature, needsUpdate, nodeUpdateNeedsSync } from './predicates.js';
import { conditionPatch, desiredConditions, entersDeferral, hasLbConditions, removalPatch, type LbOutcome } from './lb-conditions.js';
import {
  hasMakerAnnotations,
  makerAnnotations,
  needsMakerRecord,
  planFor,
  recordedMaker,
  withoutRecord,
  type LbMaker,
  type LbPlan,
} from './lb-owner.js';
import { EnsureBatcher, type Companion } from './ensure-batcher.js';
import { hostsUpdateFailedMessage, updateHostsInChunks } from './host-updates.js';
import { liveKeepsForController, liveServiceReads, type LiveServiceReads } from './live-read.js';
import { LastKnownRefs, OrphanSweeper, type OrphanSweepSettings } from './orphan-sweep.js';
import { ingressEqual, toServiceRef } from './service-ref.js';
import { podBackendsInput, podBackendsOf, serviceKeyOfSlice, sliceSignature, wantsPodBackends } from './pod-backends.js';

/** Upstream's per-item retry delays of the service and node queues. */
const MIN_RETRY_DELAY_MS = 5_000;
const MAX_RETRY_DELAY_MS = 300_000;
/**
 * Longest wait a provider's "not now" (DEFERRED) gets: its retry-after is
 * kept within [MIN_RETRY_AFTER_MS, this], so a deferred Service is never
 * retried later than a failing one would be (upstream's backoff cap).
 */
const MAX_DEFERRED_RETRY_MS = MAX_RETRY_DELAY_MS;
/** Services per batch host update call. */
const MAX_BATCH_SERVICES = 1000;
/** backendSetKey of no nodes. */
const EMPTY_BACKENDS = backendSetKey([]);

/** An empty backend set refused: --node-selector matches no Node while the cluster has Nodes (mayEmptyBackends). */
class EmptyBackendsRefusedError extends Error {
  constructor() {
    super(
      'refusing to remove every backend: --node-selector matches no Node while the cluster has Nodes (a mistyped selector?); the load balancer keeps its backends',
    );
    this.name = 'EmptyBackendsRefusedError';
  }
}

/** Whether the cloud may hold backends for a Service's load balancer: as recorded, else (after a restart) whether it has one at all. */
function mayHaveBackends(entry: Synced | undefined, svc: V1Service): boolean {
  return entry?.mayHaveBackends ?? (svc.status?.loadBalancer?.ingress ?? []).length > 0;
}

async function filterAsync<T>(items: readonly T[], keep: (item: T) => Promise<boolean>): Promise<T[]> {
  const out: T[] = [];
  for (const item of items) if (await keep(item)) out.push(item);
  return out;
}
/** Finalizer writes in flight at once while companions are prepared (the client's QPS limit meters them). */
const COMPANION_FINALIZER_CONCURRENCY = 16;
/** Queued keys looked at per companion slot (skipped ones included). */
const COMPANION_SCAN_FACTOR = 4;
/** --lb-orphan-sweep-limit's default, for callers that leave it out. */
const DEFAULT_SWEEP_LIMIT = 10;

/** The Service's spec cannot be turned into a load balancer (bad input); retried with backoff after a change. */
class InvalidServiceError extends Error {
  override name = 'InvalidServiceError';
}

/**
 * The Service's annotations do not fit the provider's schema
 * (GetProviderSchema): no cloud call was made; retried with backoff (a fixed
 * annotation is ensured on the next try).
 */
class InvalidAnnotationError extends InvalidServiceError {
  override name = 'InvalidAnnotationError';
}

/** The conditions' view of a failed ensure (a DeferredError never gets here). */
function failureOutcome(err: unknown): LbOutcome {
  const message = errorMessage(err);
  if (err instanceof RetryAfterError) return { kind: 'waiting', message, retryAfterMs: clampRetryAfterMs(err.retryAfterMs) };
  const unsupported =
    err instanceof InvalidServiceError ||
    err instanceof NotImplementedError ||
    (err instanceof CloudCallError && ['INVALID_ARGUMENT', 'OUT_OF_RANGE'].includes(err.code));
  return { kind: 'error', message, unsupported };
}

/** The live Service still wants the load balancer the cache said to delete: nothing deleted; retried with backoff (the cache catches up). */
class StaleCacheError extends Error {
  override name = 'StaleCacheError';
}

/**
 * One load-balancer provider of the controller: a name unique in the host
 * (recorded on the classed Services whose load balancers it makes, so it
 * must stay the same across restarts), its LoadBalancers facade, and the
 * classes it serves (default: its `lbs.classes`, else Services without a
 * class only).
 */
export interface LbProvider {
  name: string;
  lbs: LoadBalancers;
  classes?: LbClassDeclaration;
}

/** An LbProvider with its declaration resolved. */
interface Provider {
  name: string;
  lbs: LoadBalancers;
  classes: LbClassDeclaration;
  batcher: EnsureBatcher;
}

export interface ServiceControllerOptions {
  core: CoreV1Api;
  /** This replica's Services (its shard with --shard-count, kube/shard-view.ts). */
  services: InformerView<V1Service>;
  /** Every Service, for the orphan sweep (a load balancer is an orphan only if no shard has its Service); default `services`. */
  allServices?: InformerView<V1Service>;
  nodes: Informer<V1Node>;
  /**
   * The host's load-balancer providers (at least one). Their declarations
   * must pass lbClassProblems (the constructor throws otherwise): at most one
   * serves Services without a class, no class is served twice.
   */
  providers: readonly LbProvider[];
  clusterName: string;
  /** The cluster UID (RequestMeta.cluster_uid); the orphan sweep deletes only load balancers tagged with it. */
  clusterUid: string;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  /** --concurrent-service-syncs: service workers and the fan-out of single host updates. */
  workers: number;
  /** --lb-resync-period; 0 disables the periodic re-ensure. */
  resyncPeriodMs: number;
  /** --lb-orphan-sweep-*; one sweeper per provider that can list its load balancers; off when the period is 0. */
  orphanSweep?: Omit<OrphanSweepSettings, 'namespace' | 'limit'> & { namespace?: string; limit?: number };
  /** Live reads before deletions (default: GETs over `core`, counted on `registry`). */
  reads?: LiveServiceReads;
  /** --node-selector is set: an empty Node cache may be a mistyped selector (see mayEmptyBackends). */
  nodesScoped?: boolean;
  /**
   * The host's node ownership: with several providers, each load-balancer
   * provider gets only the eligible Nodes it owns and those nobody owns
   * (lbBackendsOf). Absent or one provider: every eligible Node, as upstream.
   */
  nodeOwnership?: HostNodeOwnership;
  /**
   * EndpointSlices of Services (pod-backends.ts), given when a provider
   * declares CAPABILITY_LOAD_BALANCER_POD_BACKENDS: that provider's
   * Services asking for pod backends get their endpoints in every ensure,
   * and an endpoint change re-ensures them. Absent: no pod backends at all.
   */
  endpointSlices?: Informer<V1EndpointSlice>;
}

/** A provider's backend Nodes and their backendSetKey, computed from the Node cache at `at` (Informer.mutationCount) and the ownership `declarations`. */
interface BackendSet {
  at: number;
  declarations: unknown;
  nodes: readonly V1Node[];
  key: string;
}

/** What the controller last did for a Service it ensured. */
interface Synced {
  ref: ServiceRef;
  /** The provider and class of the load balancer. */
  maker: LbMaker;
  specSig: string;
  /** Backend set the cloud has, or undefined when unknown (the last ensure failed). */
  nodesSig: string | undefined;
  /** Whether the cloud may hold backends for it (false only after an empty set was sent successfully); undefined: unknown. */
  mayHaveBackends?: boolean;
}

export class ServiceController {
  /**
   * The Service queue of each provider (isolation, issue 31 item 5): each
   * with its own workers, so a provider that fails or hangs (each call has
   * its deadline) occupies only its own. A Service is queued on the lane of
   * the provider its next sync calls first (laneOf). Every queue's metrics
   * are `name="service"`, with `provider` when there are several (one
   * provider: one queue, exactly as before).
   */
  private readonly lanes = new Map<string, WorkQueue<string>>();
  /** Node-set changes, keyed by provider name (one worker each): a provider's backend updates never wait for another's. */
  private readonly nodeQueue: WorkQueue<string>;
  /** Upstream's service_controller_* metrics; none without a registry. */
  private readonly metrics?: ServiceMetrics;
  /** ccm_cloud_deferred_total; none without a registry. */
  private readonly deferrals?: ReturnType<typeof deferralMetrics>['deferred'];
  /**
   * Uids of Services this controller wrote load-balancer conditions on
   * (in memory): a Service of a class no provider here serves that never got
   * our finalizer is cleared of them only when it is in here (the conditions
   * of a foreign class's controller are never touched).
   */
  private readonly conditioned = new Set<string>();
  /**
   * The spec signature (lbSpecSignature) each deferred Service was deferred
   * with: its retries with the same spec are quiet (no EnsuringLoadBalancer
   * event per retry). Dropped on any other outcome.
   */
  private readonly deferredSpec = new Map<string, string>();
  /**
   * By Service uid, the deprecation lines last reported with a Warning
   * DeprecatedLoadBalancerAnnotation: one Event per change of them, not one
   * per sync (resyncs re-ensure every Service).
   */
  private readonly deprecationsWarned = new Map<string, string>();
  /** The Node LIST before an empty backend set (mayEmptyBackends). */
  private readonly nodeLiveRead: LiveReadCount;
  private readonly lock = new KeyedMutex<string>();
  /** Services this controller ensured or is ensuring (upstream serviceCache + lastSyncedNodes). */
  private readonly synced = new Map<string, Synced>();
  /** backend(p)'s last answer per provider, with what it was computed from. */
  private readonly backendMemo = new Map<string, BackendSet>();
  /** Deleted Services that wanted or had a load balancer, by key, until their sync deleted it. */
  private readonly deleted = new Map<string, { ref: ServiceRef; maker: LbMaker }>();
  /**
   * Uids of deleting Services whose cleanup is done (load balancer deleted,
   * finalizer removed), until their deletion arrives: that deletion carries
   * the object as last stored, finalizer still on, and needs no second
   * EnsureLoadBalancerDeleted (upstream drops its cache entry after cleanup).
   */
  private readonly cleanedUp = new Set<string>();
  private readonly log: Logger;
  private readonly reads: LiveServiceReads;
  /** Deleted Services' last objects by uid, for the orphan sweep's delete call. */
  private readonly lastKnown = new LastKnownRefs();
  /** Which provider serves which Service. */
  private readonly classes: LbClassResolver<Provider>;
  /** One per provider that lists its load balancers, by provider name; empty when the sweep is off. */
  readonly sweepers = new Map<string, OrphanSweeper>();

  constructor(private readonly o: ServiceControllerOptions) {
    this.log = o.log;
    this.reads = o.reads ?? liveServiceReads(o.core, o.registry);
    this.nodeLiveRead = liveReadCounter(Controllers.SERVICE_LB, 'nodes', o.registry);
    if (o.providers.length === 0) throw new Error('the service controller needs at least one load-balancer provider');
    this.classes = new LbClassResolver(
      o.providers.map((lp): Provider => {
        const p: Provider = {
          name: lp.name,
          lbs: lp.lbs,
          classes: lp.classes ?? lp.lbs.classes ?? { classes: [], unclassed: true },
          batcher: undefined as unknown as EnsureBatcher,
        };
        p.batcher = new EnsureBatcher(lp.lbs, o.clusterName, o.log.child({ provider: lp.name }), {
          companions: (room, nodesSig, skip) => this.companions(p, room, nodesSig, skip),
        });
        return p;
      }),
    );
    const sweep = o.orphanSweep;
    for (const p of this.classes.providers) {
      if (!(sweep && sweep.periodMs > 0 && p.lbs.canList)) continue;
      this.sweepers.set(
        p.name,
        new OrphanSweeper({
          ...sweep,
          namespace: sweep.namespace ?? '',
          limit: sweep.limit ?? DEFAULT_SWEEP_LIMIT,
          lbs: p.lbs,
          clusterName: o.clusterName,
          clusterUid: o.clusterUid,
          reads: this.reads,
          lastKnownRef: (uid) => this.lastKnown.get(uid),
          services: o.allServices ?? o.services,
          lock: this.lock,
          busyUids: () => new Set([...[...this.synced.values()].map((s) => s.ref.uid), ...[...this.deleted.values()].map((d) => d.ref.uid)]),
          recorder: o.recorder,
          log: o.log.child({ provider: p.name }),
          registry: o.registry,
        }),
      );
    }
    if (o.registry) {
      this.metrics = serviceMetrics(o.registry);
      this.deferrals = deferralMetrics(o.registry).deferred;
    }
    const several = this.classes.providers.length > 1;
    for (const p of this.classes.providers)
      this.lanes.set(
        p.name,
        new WorkQueue<string>({
          name: 'service',
          ...(several ? { provider: p.name } : {}),
          registry: o.registry,
          rateLimiter: new ItemExponentialRateLimiter(MIN_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS),
        }),
      );
    this.nodeQueue = new WorkQueue<string>({
      name: 'node',
      registry: o.registry,
      rateLimiter: new ItemExponentialRateLimiter(MIN_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS),
    });
    // A Service no provider serves, without a load balancer of ours, is never
    // queued: upstream leaves every classed Service alone the same way.
    o.services.addEventHandler({
      onAdd: (s) => {
        if (this.ours(s)) this.enqueue(s);
      },
      onUpdate: (old, s) => {
        if (!this.ours(s) && !this.ours(old) && !this.synced.has(keyOf(s))) return;
        if (this.served(old) && !this.served(s)) this.lastKnown.remember(old);
        const unsettled =
          s.metadata?.deletionTimestamp || this.served(s) !== hasLbFinalizer(s) || hasMakerAnnotations(old) !== hasMakerAnnotations(s);
        if (needsUpdate(old, s) || unsettled || podBackendsInput(old) !== podBackendsInput(s)) this.enqueue(s);
      },
      // With the finalizer a deletion arrives as an update. This covers a finalizer
      // removed by hand, and a Service the API server removed although our finalizer
      // was on it (kubernetes/kubernetes#77988), also while its first ensure is in
      // flight: the ref keeps the uid the load balancer was made for.
      onDelete: (s) => {
        const key = keyOf(s);
        this.conditioned.delete(s.metadata?.uid ?? '');
        this.deferredSpec.delete(key);
        this.deprecationsWarned.delete(s.metadata?.uid ?? '');
        if (this.ours(s)) this.lastKnown.remember(s);
        if (this.cleanedUp.delete(s.metadata?.uid ?? '')) return;
        // The last object may carry no deletionTimestamp (deleted without our finalizer).
        const maker = recordedMaker(s, this.classes) ?? this.synced.get(key)?.maker;
        if (!maker) return;
        if (!this.classes.named(maker.provider)) {
          this.log.warn(
            { service: key, provider: maker.provider },
            'Service deleted; its load balancer was made by a provider this host does not run: not deleted',
          );
          return;
        }
        this.deleted.set(key, { ref: toServiceRef(s).ref, maker });
        this.laneOf(key).add(key);
      },
    });
    // Pod backends: a slice change re-ensures its Service (when that Service takes pod backends).
    o.endpointSlices?.addEventHandler({
      onAdd: (e) => this.slicesChanged(e),
      onDelete: (e) => this.slicesChanged(e),
      onUpdate: (old, e) => {
        if (sliceSignature(old) === sliceSignature(e)) return;
        this.slicesChanged(old);
        if (serviceKeyOfSlice(old) !== serviceKeyOfSlice(e)) this.slicesChanged(e);
      },
    });
    o.nodes.addEventHandler({
      onAdd: () => this.nodesChanged(),
      onDelete: () => this.nodesChanged(),
      onUpdate: (old, n) => {
        if (nodeUpdateNeedsSync(old, n) || this.ownerChanged(old, n)) this.nodesChanged();
      },
    });
  }

  /** With several providers, whether a Node's owner changed (a label its selector reads): the providers' backend sets change with it. */
  private ownerChanged(old: V1Node, cur: V1Node): boolean {
    const declarations = this.o.nodeOwnership?.declarations() ?? [];
    if (declarations.length <= 1) return false;
    return JSON.stringify(resolveNodeOwner(old, declarations)) !== JSON.stringify(resolveNodeOwner(cur, declarations));
  }

  private enqueue(svc: V1Service): void {
    const key = keyOf(svc);
    this.laneOf(key).add(key);
  }

  /**
   * The queue of the provider that the next sync of `key` calls first: the
   * maker of a deleted Service's load balancer (deleteGone runs first), else
   * the provider of the cached Service's plan (for a cleanup, the maker),
   * else the maker last tracked, else the first provider (a sync without
   * cloud calls). A Service whose plan moves to another provider may be on
   * two lanes at once: the per-Service lock keeps its syncs apart, and a
   * sync is level-triggered, so the second finds nothing left or redoes the same.
   */
  private laneOf(key: string): WorkQueue<string> {
    const svc = this.o.services.get(key);
    const plan = svc ? this.plan(svc) : undefined;
    const name =
      this.deleted.get(key)?.maker.provider ??
      (plan?.kind === 'ensure' || plan?.kind === 'cleanup' ? plan.provider.name : undefined) ??
      this.synced.get(key)?.maker.provider;
    return (name !== undefined ? this.lanes.get(name) : undefined) ?? this.lanes.values().next().value!;
  }

  /** Enqueues the Service of `slice` when its provider sends it pod backends. */
  private slicesChanged(slice: V1EndpointSlice): void {
    const key = serviceKeyOfSlice(slice);
    const svc = key === undefined ? undefined : this.o.services.get(key);
    if (svc && wantsPodBackends(svc) && this.classes.forService(svc)?.lbs.podBackends) this.enqueue(svc);
  }

  /**
   * The ServiceRef of `svc` for provider `p`: toServiceRef, plus its pod
   * backends (pod-backends.ts) when `p` takes them and the Service asks.
   */
  private refFor(svc: V1Service, p: Provider): ReturnType<typeof toServiceRef> {
    const out = toServiceRef(svc);
    const slices = this.o.endpointSlices;
    if (slices && p.lbs.podBackends && wantsPodBackends(svc)) {
      const key = keyOf(svc);
      out.ref.podBackends = podBackendsOf(
        svc,
        slices.list().filter((e) => serviceKeyOfSlice(e) === key),
      );
    }
    return out;
  }

  /** Every provider's load balancers may need their backends updated. */
  private nodesChanged(): void {
    for (const p of this.classes.providers) this.nodeQueue.add(p.name);
  }

  /** A LoadBalancer Service one of the providers serves. */
  private served(svc: V1Service): boolean {
    return this.classes.forService(svc) !== undefined;
  }

  /** Served, or carrying the cleanup finalizer (which the plan may still find not ours). */
  private ours(svc: V1Service): boolean {
    return this.served(svc) || hasLbFinalizer(svc);
  }

  /** The plan of a cached Service (lb-owner.ts). */
  private plan(svc: V1Service): LbPlan<Provider> {
    return planFor(svc, this.classes, this.synced.get(keyOf(svc))?.maker);
  }

  /**
   * Re-ensures every Service a provider serves and cleans up those that need
   * it (periodic drift repair; after a plugin restart): of every provider,
   * or only of the provider named `provider` (the one that restarted).
   */
  resyncAll(provider?: string): void {
    for (const s of this.o.services.list()) {
      const plan = this.plan(s);
      if (plan.kind !== 'ensure' && plan.kind !== 'cleanup') continue;
      if (provider === undefined || plan.provider.name === provider || (plan.kind === 'cleanup' && plan.then?.name === provider)) this.enqueue(s);
    }
  }

  /**
   * A provider restarted and may declare other Nodes: every provider's
   * backend set is compared again (the node workers; nothing is called for
   * a load balancer whose set is unchanged).
   */
  nodeOwnershipMayHaveChanged(): void {
    this.nodesChanged();
  }

  /** The providers' names and declarations, in the order given (for logs and the health report). */
  providers(): { name: string; classes: LbClassDeclaration }[] {
    return this.classes.providers.map((p) => ({ name: p.name, classes: p.classes }));
  }

  async run(signal: AbortSignal): Promise<void> {
    const sweep = this.o.orphanSweep;
    this.log.info(
      {
        workers: this.o.workers,
        resyncPeriodMs: this.o.resyncPeriodMs,
        orphanSweepPeriodMs: this.sweepers.size > 0 ? sweep?.periodMs : 0,
        orphanSweepDryRun: sweep?.dryRun ?? false,
        providers: this.classes.providers.map((p) => ({ name: p.name, classes: p.classes.classes, unclassed: p.classes.unclassed })),
      },
      'Starting service controller',
    );
    for (const p of this.classes.providers)
      if (sweep && sweep.periodMs > 0 && !this.sweepers.has(p.name))
        this.log.info(
          { provider: p.name },
          'orphan load balancer sweep off: the provider does not list its load balancers (no CAPABILITY_LOAD_BALANCER_LIST)',
        );
    if (!(await this.o.services.waitForSync(signal)) || !(await this.o.nodes.waitForSync(signal))) return;
    // An ensure before the slices are listed would send an empty endpoint set (no backends).
    if (this.o.endpointSlices && !(await this.o.endpointSlices.waitForSync(signal))) return;
    const resync = this.resyncLoop(signal);
    const sweeping = this.sweepLoop(signal);
    await Promise.all([
      ...[...this.lanes.values()].map((lane) => runWorkers(lane, this.o.workers, (key) => this.sync(key), { log: this.log, signal })),
      runWorkers(this.nodeQueue, this.classes.providers.length, (name) => this.syncNodes(name), { log: this.log, signal }),
    ]);
    await Promise.all([resync, sweeping]);
    this.log.info('Shutting down service controller');
  }

  /** One loop per provider's sweeper: a provider that fails or hangs delays only its own sweep. */
  private async sweepLoop(signal: AbortSignal): Promise<void> {
    await Promise.all(
      [...this.sweepers].map(([provider, sweeper]) =>
        // Not at once: the first sweep waits a period after the caches synced.
        every(
          this.o.orphanSweep!.periodMs,
          signal,
          async () => {
            try {
              const r = await sweeper.sweep();
              this.log.debug(
                { provider, listed: r.listed, orphans: r.orphans, deleted: r.deleted.length, reported: r.reported.length, failed: r.failed },
                'orphan load balancer sweep',
              );
            } catch (err) {
              this.log.warn({ provider, err: errorMessage(err) }, 'orphan load balancer sweep failed; nothing was deleted, retried next period');
            }
          },
          { delayFirst: true },
        ),
      ),
    );
  }

  private async resyncLoop(signal: AbortSignal): Promise<void> {
    if (!(this.o.resyncPeriodMs > 0)) return;
    // The first pass after a period: every Service was just synced once at start.
    await every(
      this.o.resyncPeriodMs,
      signal,
      () => {
        this.log.debug({}, 'periodic load balancer re-ensure');
        this.resyncAll();
      },
      { delayFirst: true },
    );
  }

  /**
   * Provider `p`'s backend nodes from the cache (the eligible ones it owns or
   * nobody owns; all of them with one provider) and their backendSetKey.
   * Computed once per change of the Node cache or of the ownership
   * declarations, not per call: an ensure asks two or three times, and at
   * 20,000 Nodes the predicate over every Node was most of the host's CPU
   * (docs/benchmarks.md, scale-large). Callers must not mutate the array.
   */
  private backend(p: Provider): BackendSet {
    const at = this.o.nodes.mutationCount();
    const declarations = this.o.nodeOwnership?.declarations();
    const memo = this.backendMemo.get(p.name);
    if (memo && memo.at === at && memo.declarations === declarations) return memo;
    const eligible = this.o.nodes.list().filter(isBackendNode);
    const nodes = declarations ? lbBackendsOf(eligible, p.name, declarations) : eligible;
    const fresh = { at, declarations, nodes, key: backendSetKey(nodes) };
    this.backendMemo.set(p.name, fresh);
    return fresh;
  }

  /**
   * Whether an empty Node cache under --node-selector may be what it seems
   * (issue 29, finding 5): without a selector, or with Nodes in the cache, or
   * for a load balancer not known to have backends, yes. Else a selector
   * matching no Node at all while the cluster has Nodes (one live LIST,
   * limit 1, counted) is more likely mistyped than true: the backends are
   * kept (the caller fails the sync: Warning event, retry with backoff).
   * Upstream has no --node-selector: an empty node list is sent as is.
   */
  private async mayEmptyBackends(svc: V1Service, entry: Synced | undefined): Promise<boolean> {
    if (!this.o.nodesScoped || this.o.nodes.list().length > 0 || !mayHaveBackends(entry, svc)) return true;
    try {
      const clusterNodes = await this.o.core.listNode({ limit: 1 });
      this.nodeLiveRead(clusterNodes.items.length > 0 ? LiveReadOutcomes.CHANGED : LiveReadOutcomes.CONFIRMED);
      return clusterNodes.items.length === 0;
    } catch (err) {
      this.nodeLiveRead(LiveReadOutcomes.ERROR);
      this.log.warn({ err: errorMessage(err) }, 'could not list Nodes to check an empty backend set; the backends are kept');
      return false;
    }
  }

  /**
   * Level-triggered reconcile of one Service key; a rejection requeues it
   * (RetryAfterError: after exactly its delay). A provider's "not now"
   * (DeferredError) is no rejection: recorded (conditions, one Normal event,
   * ccm_cloud_deferred_total) and requeued after its delay, without a
   * Warning event.
   */
  async sync(key: string): Promise<void> {
    await this.lock.run(key, async () => {
      const svc = this.o.services.get(key);
      // Load balancers of Services gone from under this name (deleted without our
      // finalizer, or deleted and recreated) go first.
      await this.deleteGone(key, svc?.metadata?.uid);
      if (!svc) return;
      const prev = this.synced.get(key);
      const plan = planFor(svc, this.classes, prev?.maker);
      try {
        switch (plan.kind) {
          case 'none':
            // Conditions we wrote on a Service that no longer wants a load balancer of ours (it never got the finalizer).
            if (hasLbConditions(svc) && (!isLoadBalancer(svc) || this.conditioned.has(svc.metadata?.uid ?? '')))
              await this.removeConditions(key, svc);
            return;
          case 'stuck':
            this.log.warn({ service: key, reason: plan.reason }, 'load balancer left alone');
            this.o.recorder.event(svc, 'Warning', EventReasons.LB_NOT_SERVED, `Load balancer left alone: ${plan.reason}`);
            return;
          case 'cleanup':
            await this.cleanup(key, svc, plan.provider, plan.maker, plan.keepStatus, plan.then !== undefined);
            // The Service changed to a class another of our providers serves: its
            // load balancer now, on the object as the cleanup left it.
            if (plan.then) await this.ensure(key, withoutRecord(svc), undefined, plan.then);
            return;
          case 'ensure':
            await this.ensure(key, svc, prev?.maker.provider === plan.provider.name ? prev : undefined, plan.provider);
        }
      } catch (err) {
        if (err instanceof ImplementedElsewhereError) {
          this.log.debug({ service: key }, 'load balancer is implemented elsewhere; skipping');
          return;
        }
        const entry = this.synced.get(key);
        if (entry) entry.nodesSig = undefined;
        // The conditions follow the ensure (also the one after a class change's cleanup).
        const ensuring = plan.kind === 'ensure' || (plan.kind === 'cleanup' && plan.then !== undefined);
        if (err instanceof DeferredError) {
          this.deferredSpec.set(key, lbSpecSignature(svc));
          await this.deferred(key, svc, err, ensuring);
          if (err.retryAfterMs !== undefined) return;
          // No delay given: the Service's backoff (runWorkers), still without a Warning.
          throw err;
        }
        this.deferredSpec.delete(key);
        if (ensuring) await this.writeConditions(key, svc, failureOutcome(err));
        if (err instanceof InvalidAnnotationError) this.o.recorder.event(svc, 'Warning', EventReasons.INVALID_LB_ANNOTATION, err.message);
        else this.o.recorder.event(svc, 'Warning', EventReasons.SYNC_LB_FAILED, `Error syncing load balancer: ${errorMessage(err)}`);
        throw err;
      }
    });
  }

  /**
   * A provider's "not now" for `svc`: counted, a Normal event when the
   * Service enters the deferral (or the provider's reason changes), the
   * conditions when `ensuring`, then the key requeued after the provider's
   * delay (kept within [MIN_RETRY_AFTER_MS, MAX_DEFERRED_RETRY_MS]); the
   * caller leaves a deferral without a delay to the backoff.
   */
  private async deferred(key: string, svc: V1Service, err: DeferredError, ensuring: boolean): Promise<void> {
    this.deferrals?.inc({ controller: Controllers.SERVICE_LB, reason: err.deferredReason });
    const delayMs = err.retryAfterMs === undefined ? undefined : Math.min(MAX_DEFERRED_RETRY_MS, clampRetryAfterMs(err.retryAfterMs));
    this.log.info(
      { service: key, reason: err.deferredReason, requestedMs: err.retryAfterMs, delayMs, err: err.message },
      'load balancer deferred by the provider; retried after its delay',
    );
    if (entersDeferral(svc, err.deferredReason))
      this.o.recorder.event(
        svc,
        'Normal',
        EventReasons.LB_DEFERRED,
        `Load balancer deferred by the provider (${err.deferredReason}): ${err.message}; retried ${delayMs === undefined ? 'with backoff' : `in ${Math.round(delayMs / 1000)}s`}`,
      );
    if (ensuring) await this.writeConditions(key, svc, { kind: 'deferred', reason: err.deferredReason, message: err.message, retryAfterMs: delayMs });
    if (delayMs !== undefined) this.laneOf(key).addAfter(key, delayMs);
  }

  /**
   * Writes the conditions `outcome` gives the cached `svc`, when they differ
   * from its own (a strategic merge of status.conditions by type: other
   * writers' conditions stay). Best effort: a failed write is logged, and
   * the next sync writes again.
   */
  private async writeConditions(key: string, svc: V1Service, outcome: LbOutcome): Promise<void> {
    const conditions = conditionPatch(svc, desiredConditions(svc, outcome), new Date());
    if (conditions.length === 0) return;
    const uid = svc.metadata?.uid ?? '';
    try {
      this.conditioned.add(uid);
      await patchServiceStatus(
        this.o.core,
        svc.metadata!.namespace!,
        svc.metadata!.name!,
        { metadata: { uid }, status: { conditions } },
        'strategic',
      );
    } catch (err) {
      if (!isGoneOrReplaced(err))
        this.log.warn({ service: key, err: errorMessage(err) }, 'could not write the load balancer conditions; written on the next sync');
    }
  }

  /**
   * Removes our conditions from a Service that no longer wants a load
   * balancer of ours (a JSON patch guarded by the uid and the conditions as
   * cached: one another writer changed is left to it). Best effort.
   */
  private async removeConditions(key: string, svc: V1Service): Promise<void> {
    const patch = removalPatch(svc);
    if (!patch) return;
    try {
      await patchServiceStatus(this.o.core, svc.metadata!.namespace!, svc.metadata!.name!, patch, 'json');
      this.conditioned.delete(svc.metadata?.uid ?? '');
      this.log.debug({ service: key }, 'load balancer conditions removed');
    } catch (err) {
      if (isUnprocessable(err) || isGoneOrReplaced(err)) {
        this.log.debug({ service: key }, 'load balancer conditions not removed: the Service or its conditions changed meanwhile');
        return;
      }
      this.log.warn({ service: key, err: errorMessage(err) }, 'could not remove the load balancer conditions');
    }
  }

  /**
   * Deletes the load balancers made for earlier objects under `key` (the last
   * ensured one and the last deleted one) whose uid is not `uid`. Their
   * bookkeeping is dropped only after the delete succeeded, so a failure is
   * retried with the right uid.
   */
  private async deleteGone(key: string, uid: string | undefined): Promise<void> {
    const prev = this.synced.get(key);
    if (prev && prev.ref.uid !== uid) {
      await this.confirmDeletion(prev.ref, prev.maker);
      await this.deleteLoadBalancer(undefined, prev.ref, prev.maker);
      this.synced.delete(key);
    }
    const tomb = this.deleted.get(key);
    if (tomb && tomb.ref.uid !== uid && tomb.ref.uid !== prev?.ref.uid) {
      await this.confirmDeletion(tomb.ref, tomb.maker);
      await this.deleteLoadBalancer(undefined, tomb.ref, tomb.maker);
    }
    this.deleted.delete(key);
  }

  /**
   * A Warning DeprecatedLoadBalancerAnnotation when the Service's deprecated
   * annotations (per the provider's schema) changed since the last one:
   * Warning because the user has something to change before the provider
   * drops the key, once per change so a resync is quiet.
   */
  private warnDeprecated(svc: V1Service, lines: readonly string[]): void {
    const uid = svc.metadata?.uid ?? '';
    const text = lines.join('; ');
    if ((this.deprecationsWarned.get(uid) ?? '') === text) return;
    if (text === '') {
      this.deprecationsWarned.delete(uid);
      return;
    }
    this.deprecationsWarned.set(uid, text);
    this.o.recorder.event(svc, 'Warning', EventReasons.DEPRECATED_LB_ANNOTATION, `Deprecated load balancer annotation: ${text}`);
  }

  /** `p` serves the Service; `prev` is what the controller last did with the same provider. */
  private async ensure(key: string, cached: V1Service, prev: Synced | undefined, p: Provider): Promise<void> {
    const { ref, problems } = this.refFor(cached, p);
    const maker: LbMaker = { provider: p.name, class: classOf(cached) };
    if (problems.length) throw new InvalidServiceError(`invalid Service for a load balancer: ${problems.join('; ')}`);
    // Before any write or cloud call: a bad annotation is the user's to fix, not the cloud's to refuse.
    const badAnnotations = p.lbs.annotationProblems?.(cached.metadata?.annotations) ?? [];
    if (badAnnotations.length) throw new InvalidAnnotationError(`Load balancer not ensured: ${badAnnotations.join('; ')}`);
    this.warnDeprecated(cached, p.lbs.annotationDeprecations?.(cached.metadata?.annotations) ?? []);
    const specSig = lbSpecSignature(cached);
    // A periodic re-ensure of an unchanged Service stays quiet unless it finds drift.
    const changed = !prev || prev.specSig !== specSig || !hasLbFinalizer(cached);
    // A retry after a deferral of the same spec is quiet too: its Normal LoadBalancerDeferred said it all.
    const announce = changed && this.deferredSpec.get(key) !== specSig;
    if (announce) this.o.recorder.event(cached, 'Normal', EventReasons.ENSURING_LB, 'Ensuring load balancer');
    if (!hasLbFinalizer(cached) || needsMakerRecord(cached, maker)) await this.addFinalizer(ref, maker);
    const { nodes, key: nodesSig } = this.backend(p);
    if (nodes.length === 0 && !(await this.mayEmptyBackends(cached, prev))) throw new EmptyBackendsRefusedError();
    // Until the call succeeds, the cloud may hold the old backends or the new ones.
    const mayHave = mayHaveBackends(prev, cached) || nodes.length > 0;
    if (nodes.length === 0 && announce) {
      this.o.recorder.event(cached, 'Warning', EventReasons.UNAVAILABLE_LB, 'There are no available nodes for LoadBalancer');
    }
    // Known before the call: a deletion that arrives while it is in flight (or
    // after it failed half-way) is queued with this uid.
    this.synced.set(key, { ref, maker, specSig: prev?.specSig ?? '', nodesSig: undefined, mayHaveBackends: mayHave });
    const status = await p.batcher.ensure({ key, ref, nodes: nodes.map(toNodeRef), nodesSig });
    this.synced.set(key, { ref, maker, specSig, nodesSig, mayHaveBackends: nodes.length > 0 });
    this.deferredSpec.delete(key);
    // The node set may have changed while the ensure was in flight; a node
    // sync that ran meanwhile skipped this Service (not ensured yet), so hand
    // the difference to the node worker (it waits for this Service's lock).
    if (this.backend(p).key !== nodesSig) this.nodeQueue.add(p.name);
    const statusChanged = !ingressEqual(cached.status?.loadBalancer?.ingress, status.ingress);
    // The conditions go in the same write as the address (none when nothing changed).
    const conditions = conditionPatch(cached, desiredConditions(cached, { kind: 'ensured', ingress: status.ingress }), new Date());
    if (statusChanged || conditions.length > 0) {
      try {
        if (conditions.length > 0) this.conditioned.add(ref.uid);
        // A strategic merge: status.conditions merge by type (other writers' stay); the ingress list is replaced.
        await patchServiceStatus(
          this.o.core,
          ref.namespace,
          ref.name,
          {
            metadata: { uid: ref.uid },
            status: {
              ...(statusChanged ? { loadBalancer: { ingress: status.ingress } } : {}),
              ...(conditions.length > 0 ? { conditions } : {}),
            },
          },
          'strategic',
        );
      } catch (err) {
        if (!isGoneOrReplaced(err)) throw err;
        // The Service went away while its load balancer was being made (its
        // deletion may not even reach this informer in time): delete it now.
        this.log.info({ service: key, uid: ref.uid }, 'Service gone while its load balancer was ensured; deleting the load balancer');
        await this.deleteLoadBalancer(undefined, ref, maker);
        this.synced.delete(key);
        if (this.deleted.get(key)?.ref.uid === ref.uid) this.deleted.delete(key);
        return;
      }
      if (statusChanged) this.log.info({ service: key, ingress: status.ingress.map((i) => i.ip ?? i.hostname) }, 'load balancer status updated');
    }
    if (changed || statusChanged) this.o.recorder.event(cached, 'Normal', EventReasons.ENSURED_LB, 'Ensured load balancer');
  }

  /**
   * Before any cloud call that may create something, in one write with the
   * maker's record (lb-owner.ts); the uid makes the API server refuse the
   * patch if the name now belongs to another Service.
   */
  private async addFinalizer(ref: ServiceRef, maker: LbMaker): Promise<void> {
    const annotations = makerAnnotations(maker);
    await patchService(
      this.o.core,
      ref.namespace,
      ref.name,
      { metadata: { uid: ref.uid, finalizers: [Finalizers.LB_CLEANUP], ...(annotations ? { annotations } : {}) } },
      'strategic',
    );
  }

  /**
   * Companions for a batch ensure (see ensure-batcher.ts): queued Services,
   * in queue order, whose sync would ensure them now with the backend set
   * `nodesSig`: in the cache, wanting a load balancer, valid, no earlier
   * object under the name waiting for its deletion, not locked by anyone.
   * Each is then prepared exactly as ensure() prepares its own Service before
   * the call: locked (released when the call is over), finalizer written
   * (a Service whose write fails is left to its own sync), tracked so that a
   * deletion during the call is queued with its uid. Its worker later syncs
   * it as usual (events, status write, the gone-after-ensure deletion) and
   * finds the result at hand.
   */
  private async companions(p: Provider, room: number, nodesSig: string, skip: (key: string) => boolean): Promise<Companion[]> {
    if (this.backend(p).key !== nodesSig) return [];
    const picked: { key: string; svc: V1Service; ref: ServiceRef; release: () => void }[] = [];
    for (const key of this.lanes.get(p.name)!.peek(room * COMPANION_SCAN_FACTOR)) {
      if (picked.length >= room) break;
      if (skip(key) || this.deleted.has(key)) continue;
      const svc = this.o.services.get(key);
      if (!svc || svc.metadata?.deletionTimestamp) continue;
      // Only Services this provider serves and made (or will make) the load balancer of.
      const plan = this.plan(svc);
      if (plan.kind !== 'ensure' || plan.provider !== p) continue;
      const prev = this.synced.get(key);
      if (prev && (prev.ref.uid !== svc.metadata?.uid || prev.maker.provider !== p.name)) continue;
      const { ref, problems } = this.refFor(svc, p);
      // Invalid input (also annotations the provider's schema refuses) is left to the Service's own sync, which reports it.
      if (problems.length || (p.lbs.annotationProblems?.(svc.metadata?.annotations) ?? []).length) continue;
      // An empty backend set for a load balancer that may have backends is left to its own sync (mayEmptyBackends).
      if (nodesSig === EMPTY_BACKENDS && this.o.nodesScoped && mayHaveBackends(prev, svc)) continue;
      const release = this.lock.tryAcquire(key);
      if (release) picked.push({ key, svc, ref, release });
    }
    const ready = await mapLimit(picked, COMPANION_FINALIZER_CONCURRENCY, async (c) => {
      const maker: LbMaker = { provider: p.name, class: classOf(c.svc) };
      if (hasLbFinalizer(c.svc) && !needsMakerRecord(c.svc, maker)) return { ...c, maker };
      try {
        await this.addFinalizer(c.ref, maker);
        return { ...c, maker };
      } catch (err) {
        c.release();
        this.log.debug({ service: c.key, err: errorMessage(err) }, 'companion left to its own sync: finalizer not written');
        return undefined;
      }
    });
    return ready
      .filter((c) => c !== undefined)
      .map((c) => {
        const prev = this.synced.get(c.key);
        this.synced.set(c.key, {
          ref: c.ref,
          maker: c.maker,
          specSig: prev?.specSig ?? '',
          nodesSig: undefined,
          mayHaveBackends: mayHaveBackends(prev, c.svc) || nodesSig !== EMPTY_BACKENDS,
        });
        return { key: c.key, ref: c.ref, release: c.release };
      });
  }

  /**
   * Deletes the load balancer `maker` made, with `p` (its maker), clears the
   * status (unless `keepStatus`), then removes the finalizer and the maker's
   * record (in this order).
   */
  private async cleanup(key: string, svc: V1Service, p: Provider, maker: LbMaker, keepStatus: boolean, handedOver = false): Promise<void> {
    const { ref } = toServiceRef(svc);
    await this.confirmDeletion(ref, maker);
    await this.deleteLoadBalancer(svc, ref, maker);
    this.synced.delete(key);
    // Our conditions go with the load balancer, unless another of our providers
    // takes the Service over (its ensure rewrites them); a deleting Service's go with it.
    if (!handedOver && !svc.metadata?.deletionTimestamp && hasLbConditions(svc)) await this.removeConditions(key, svc);
    // Both writes carry the uid: a Service recreated under the name is not touched.
    if (!keepStatus && !svc.metadata?.deletionTimestamp && (svc.status?.loadBalancer?.ingress ?? []).length > 0) {
      try {
        await patchServiceStatus(
          this.o.core,
          ref.namespace,
          ref.name,
          { metadata: { uid: ref.uid }, status: { loadBalancer: { ingress: null } } },
          'merge',
        );
      } catch (err) {
        if (!isGoneOrReplaced(err)) throw err;
      }
    }
    if (hasLbFinalizer(svc) || hasMakerAnnotations(svc)) {
      // Its deletion, carrying the finalizer as last stored, has nothing left to do
      // (marked before the write: the deletion may reach the informer before the answer).
      const deleting = svc.metadata?.deletionTimestamp !== undefined && svc.metadata.deletionTimestamp !== null && ref.uid !== '';
      if (deleting) this.cleanedUp.add(ref.uid);
      try {
        await patchService(
          this.o.core,
          ref.namespace,
          ref.name,
          {
            metadata: {
              uid: ref.uid,
              [`$deleteFromPrimitiveList/finalizers`]: [Finalizers.LB_CLEANUP],
              ...(hasMakerAnnotations(svc) ? { annotations: { [Annotations.LB_PROVIDER]: null, [Annotations.LB_CLASS]: null } } : {}),
            },
          },
          'strategic',
        );
      } catch (err) {
        if (deleting) this.cleanedUp.delete(ref.uid);
        if (!isGoneOrReplaced(err)) throw err;
      }
      this.log.info({ service: key }, 'load balancer cleanup finalizer removed');
    }
  }

  /**
   * The cache never decides a deletion alone: a live GET of the Service must
   * show it gone, under another uid, or no longer wanting the load balancer
   * `maker` made (another type or class, being deleted included). Else
   * StaleCacheError: nothing is deleted and the key is retried with backoff,
   * by when the cache has caught up.
   */
  private async confirmDeletion(ref: ServiceRef, maker: LbMaker): Promise<void> {
    const live = await this.reads.read('finalizer', ref.namespace, ref.name);
    const keeps = liveKeepsForController(live, ref.uid, maker.class);
    this.reads.decided('finalizer', live, keeps);
    if (keeps)
      throw new StaleCacheError(
        `not deleting the load balancer of ${ref.namespace}/${ref.name}: the API server's Service still wants it (the cache is behind); retried`,
      );
  }

  /**
   * EnsureLoadBalancerDeleted (idempotent), announced by events while the
   * Service exists. No GetLoadBalancer first (upstream asks): one cloud call
   * less to fail, and an unreadable status can never keep a load balancer alive.
   * `svc` is undefined once the Service is gone. Only `maker`'s provider is
   * called, with the ref as it made it (its class); a maker this host does
   * not run is refused (nothing deleted, the error retried: never reached
   * through planFor, which leaves such Services alone).
   */
  private async deleteLoadBalancer(svc: V1Service | undefined, ref: ServiceRef, maker: LbMaker): Promise<void> {
    const p = this.classes.named(maker.provider);
    if (!p)
      throw new Error(
        `not deleting the load balancer of ${ref.namespace}/${ref.name}: provider ${JSON.stringify(maker.provider)} made it, and this host does not run it`,
      );
    if (svc) this.o.recorder.event(svc, 'Normal', EventReasons.DELETING_LB, 'Deleting load balancer');
    try {
      await p.lbs.ensureLoadBalancerDeleted(this.o.clusterName, { ...ref, loadBalancerClass: maker.class });
      this.log.info({ service: `${ref.namespace}/${ref.name}`, uid: ref.uid, provider: p.name }, 'load balancer deleted');
    } catch (err) {
      if (!(err instanceof ImplementedElsewhereError)) throw err;
      // As upstream: another controller owns the load balancer; our finalizer must still go.
      this.log.debug({ service: `${ref.namespace}/${ref.name}`, uid: ref.uid }, 'load balancer is implemented elsewhere; nothing to delete');
    }
    if (svc) this.o.recorder.event(svc, 'Normal', EventReasons.DELETED_LB, 'Deleted load balancer');
  }

  /**
   * The node worker of provider `provider` (every provider when undefined):
   * brings each of its ensured load balancers whose backend set differs from
   * the eligible nodes up to date, with one batch call when the provider has
   * it, else one UpdateLoadBalancer per load balancer. Each provider has its
   * own node-queue key and worker, and locks only its own Services, so one
   * provider failing or slow never holds back another's. With several
   * providers, errors are thrown after every one had its turn.
   */
  async syncNodes(provider?: string): Promise<void> {
    const errors: unknown[] = [];
    for (const p of this.classes.providers) {
      if (provider !== undefined && p.name !== provider) continue;
      const started = performance.now();
      try {
        await this.syncNodesOnce(p);
      } catch (err) {
        errors.push(err);
      } finally {
        this.metrics?.nodeSyncLatency.observe((performance.now() - started) / 1000);
      }
    }
    if (errors.length) throw errors[0];
  }

  /** Stale load balancers of provider `p` (backend set unlike the eligible nodes'), brought up to date under their locks. */
  private async syncNodesOnce(p: Provider): Promise<void> {
    const stale = () => {
      const want = this.backend(p).key;
      return [...this.synced.entries()].filter(([key, s]) => {
        const svc = this.o.services.get(key);
        if (s.maker.provider !== p.name || s.nodesSig === undefined || s.nodesSig === want || svc === undefined) return false;
        const plan = this.plan(svc);
        return plan.kind === 'ensure' && plan.provider.name === s.maker.provider;
      });
    };
    const keys = stale().map(([k]) => k);
    if (keys.length === 0) return;
    await this.lock.runAll(keys, async () => {
      // Service syncs that ran while we waited for the locks may have covered some already.
      const todo = stale();
      if (todo.length > 0) await this.syncProviderNodes(p, todo);
    });
  }

  /** The backend update of one provider's stale load balancers (under their locks). */
  private async syncProviderNodes(p: Provider, stale: [string, Synced][]): Promise<void> {
    // No UpdateLoadBalancer for a Service whose annotations the provider's schema refuses: its own sync reports it (Warning, conditions) and retries.
    let todo = stale.filter(([key, s]) => {
      if ((p.lbs.annotationProblems?.(this.o.services.get(key)?.metadata?.annotations) ?? []).length === 0) return true;
      s.nodesSig = undefined;
      this.laneOf(key).add(key);
      return false;
    });
    if (todo.length === 0) return;
    const { nodes, key: sig } = this.backend(p);
    let refused: Error | undefined;
    if (nodes.length === 0) {
      const kept = await filterAsync(todo, async ([key, s]) => !(await this.mayEmptyBackends(this.o.services.get(key)!, s)));
      if (kept.length > 0) {
        refused = new EmptyBackendsRefusedError();
        this.log.warn({ provider: p.name, loadBalancers: kept.length }, refused.message);
        for (const [key] of kept) {
          const svc = this.o.services.get(key);
          if (svc) this.o.recorder.event(svc, 'Warning', EventReasons.UPDATE_LB_FAILED, refused.message);
        }
        todo = todo.filter((e) => !kept.includes(e));
      }
      if (todo.length === 0) throw refused!;
    }
    const refs = nodes.map(toNodeRef);
    if (nodes.length > 0) for (const [, s] of todo) s.mayHaveBackends = true;
    this.log.info({ provider: p.name, loadBalancers: todo.length, nodes: nodes.length, batch: p.lbs.batchHosts }, 'updating load balancer backends');
    const results: { key: string; error?: Error; callFailed?: true }[] = [];
    if (p.lbs.batchHosts) {
      const r = await updateHostsInChunks(
        p.lbs,
        this.o.clusterName,
        todo.map(([, s]) => s.ref),
        refs,
        MAX_BATCH_SERVICES,
        (seconds, n) => {
          for (let i = 0; i < n; i++) this.metrics?.updateHostLatency.observe(seconds);
        },
      );
      todo.forEach(([key], i) => results.push({ key, error: r[i]!.error, callFailed: r[i]!.callFailed }));
    } else {
      results.push(
        ...(await mapLimit(todo, this.o.workers, async ([key, s]) => {
          const callStarted = performance.now();
          try {
            await p.lbs.updateLoadBalancer(this.o.clusterName, s.ref, refs);
            return { key };
          } catch (error) {
            return { key, error: error as Error };
          } finally {
            this.metrics?.updateHostLatency.observe((performance.now() - callStarted) / 1000);
          }
        })),
      );
    }
    this.metrics?.loadBalancerSyncs.inc(todo.length);
    this.metrics?.nodeSyncErrors.inc(results.filter((r) => r.error && !(r.error instanceof ImplementedElsewhereError)).length);
    for (const { key, error, callFailed } of results) this.afterHostsUpdate(key, sig, nodes, error, callFailed);
    // Services of a call that failed as a whole (an outage) stay stale and are
    // retried together, one batch call again, by the node queue: on its
    // backoff, or after the call's RetryInfo (clamped, see runWorkers).
    // Upstream re-ensures each Service on its own.
    const callError = results.find((r) => r.callFailed)?.error ?? refused;
    if (callError) throw callError;
  }

  private afterHostsUpdate(key: string, sig: string, nodes: readonly V1Node[], error: Error | undefined, callFailed?: true): void {
    const entry = this.synced.get(key);
    const svc = this.o.services.get(key);
    if (!entry || !svc) return;
    if (!error || error instanceof ImplementedElsewhereError) {
      entry.nodesSig = sig;
      if (!error) entry.mayHaveBackends = nodes.length > 0;
      if (!error) {
        if (nodes.length === 0) this.o.recorder.event(svc, 'Warning', EventReasons.UNAVAILABLE_LB, 'There are no available nodes for LoadBalancer');
        else this.o.recorder.event(svc, 'Normal', EventReasons.UPDATED_LB, 'Updated load balancer with new hosts');
      }
      return;
    }
    // A load balancer gone (e.g. deleted behind our back) is no failure: EnsureLoadBalancer recreates it.
    const gone = !callFailed && error instanceof CloudCallError && error.code === 'NOT_FOUND';
    // "Not now" is a wait, not a failure: counted, no Warning (the ensure it leads to records it in the conditions).
    const deferred = error instanceof DeferredError;
    if (deferred) this.deferrals?.inc({ controller: Controllers.SERVICE_LB, reason: error.deferredReason });
    if (!gone && !deferred) {
      const message = hostsUpdateFailedMessage(
        nodes.map((n) => n.metadata?.name ?? ''),
        errorMessage(error),
      );
      this.o.recorder.event(svc, 'Warning', EventReasons.UPDATE_LB_FAILED, message);
    }
    // Still stale: the node queue retries the whole call (see syncNodesOnce).
    if (callFailed) return;
    entry.nodesSig = undefined;
    const lane = this.laneOf(key);
    if (gone) {
      lane.add(key);
      return;
    }
    // Retried through EnsureLoadBalancer (as upstream): after the provider's
    // delay (clamped as every RetryInfo, see runWorkers), else on the backoff.
    if (deferred && error.retryAfterMs !== undefined) {
      const delayMs = Math.min(MAX_DEFERRED_RETRY_MS, clampRetryAfterMs(error.retryAfterMs));
      lane.addAfter(key, delayMs);
      this.log.info(
        { service: key, reason: error.deferredReason, delayMs },
        'load balancer backends deferred by the provider; retried after its delay',
      );
    } else if (error instanceof RetryAfterError) {
      const delayMs = lane.addRateLimitedAtLeast(key, clampRetryAfterMs(error.retryAfterMs));
      this.log.warn({ service: key, requestedMs: error.retryAfterMs, delayMs }, 'load balancer backends to be retried after the provider delay');
    } else {
      lane.addRateLimited(key);
    }
  }
}
