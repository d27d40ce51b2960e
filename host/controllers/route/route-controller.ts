/**
 * The route controller (upstream kubernetes/cloud-provider controllers/route):
 * keeps one cloud route per node pod CIDR and reports the outcome in the
 * Node condition NetworkUnavailable.
 *
 * A reconcile runs every --route-reconciliation-period (fixed rate, as
 * upstream's NonSlidingUntil) and when a Node is added or deleted or its pod
 * CIDRs or addresses change, as upstream's watch-based route controller
 * (KEP-5237, v1.35): all triggers share one queue key, and node events go
 * through a token bucket of one reconcile per MIN_EVENT_INTERVAL_MS whose
 * wait is capped at that interval, so a stream of node events costs one
 * reconcile at once and then at most one per 10 s. A failed reconcile is
 * retried with backoff. Each reconcile is counted in upstream v1.37's
 * `route_controller_route_sync_total{trigger,outcome}`: trigger node_change
 * when a node event arrived since the last one started (one queue key here,
 * two in upstream), else periodic.
 *
 * One reconcile: ListRoutes (all pages) → plan (plan.ts) → every deletion the
 * plan proposes is confirmed by a live GET of the route's Node (confirm.ts:
 * only routes of Nodes that are gone, or whose pod CIDRs really changed, are
 * deleted; routes of Nodes outside --node-selector are kept) → with the
 * provider's batch ReconcileRoutes, one call when it would delete exactly the
 * confirmed routes and no --node-selector is set; else deletes, then
 * creates, each with at most ROUTE_CONCURRENCY calls in flight → per node
 * with pod CIDRs, NetworkUnavailable False/RouteCreated when all its routes
 * exist, else True/NoRouteCreated (patched only when the status differs, as
 * upstream: a network plugin's own reason, e.g. CalicoIsUp, is kept); a node
 * without pod CIDRs that a cloud route points to gets True/NoRouteCreated
 * too, as upstream. A pod CIDR that gets no route (outside --cluster-cidr,
 * conflicting, invalid) or a route that could not be
 * created emits Warning `FailedToCreateRoute` on the Node.
 *
 * Not upstream (host/ownership, KEP-5778): only Nodes this provider owns are
 * planned; any other Node (another provider's, nobody's, or claimed by two:
 * Warning `NodeOwnershipConflict`) gets no route and no NetworkUnavailable
 * write, and a route pointing to it is kept (a live read finds it outside the
 * owned set: why node_exists). The batch ReconcileRoutes, which deletes every
 * route it is not given, is not used while such a Node exists.
 */
import type { V1Node, V1NodeCondition } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import { routeMetrics } from '../../controller-metrics.js';
import { liveReadCounter, type LiveReadCount } from '../live-reads.js';
import type { CloudRoute, DesiredRoute, RouteReconcileResult, Routes } from '../../cloud-routes.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { isNotFound } from '../../kube/client.js';
import { patchNodeStatus } from '../../kube/patch.js';
import { BucketRateLimiter, ItemExponentialRateLimiter } from '../../kube/ratelimiter.js';
import { WorkQueue, runWorkers } from '../../kube/workqueue.js';
import { errorMessage, type Logger } from '../../log.js';
import { every } from '../../util/every.js';
import { Progress } from '../../util/progress.js';
import { RepeatFilter } from '../../util/repeat-filter.js';
import { Controllers, EventReasons, LiveReadOutcomes, NetworkReasons, NodeConditions } from '../../names.js';
import { parseCidr, type Cidr } from '../../util/cidr.js';
import { mapLimit } from '../../util/map-limit.js';
import { nodeAddresses, podCidrsOf } from '../node-ref.js';
import { planRoutes, type NodeProblem, type PlanNode } from './plan.js';
import { OwnershipGate, type OwnershipSource } from '../../ownership/gate.js';
import { confirmRouteDeletion, type LiveNode } from './confirm.js';

/** Route creates/deletes in flight at once (upstream: 200). */
const ROUTE_CONCURRENCY = 32;
/** Condition patches in flight at once (the client's QPS limit is the real bound). */
const PATCH_CONCURRENCY = 32;
/** Above this many routes, single calls are used even when the provider has the batch RPC (message size). */
const MAX_BATCH_ROUTES = 10_000;
/** The same Warning for the same node is repeated at most this often. */
const EVENT_REPEAT_MS = 5 * 60_000;
/** Node events trigger a reconcile at most this often (upstream's minRouteResyncInterval, KEP-5237). */
const MIN_EVENT_INTERVAL_MS = 10_000;
const KEY = 'routes';
/** A Node found to exist outside the cache is read again after this many periods (its route is kept meanwhile). */
const OUTSIDE_RECHECK_PERIODS = 30;

export interface RouteControllerOptions {
  core: CoreV1Api;
  nodes: Informer<V1Node>;
  routes: Routes;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  clusterName: string;
  /** Parsed --cluster-cidr (1 or 2). */
  clusterCidrs: readonly Cidr[];
  /** --route-reconciliation-period. */
  periodMs: number;
  /** --node-selector is set: the cache holds only some Nodes, so the batch call (which deletes all it is not given) is not used. */
  nodesScoped?: boolean;
  /** Whose Nodes these are (host/ownership); default: every Node. */
  ownership?: OwnershipSource;
}

/** What one reconcile did (returned for tests, logged). */
export interface ReconcileReport {
  mode: 'batch' | 'single';
  created: number;
  deleted: number;
  failed: number;
  conditionsPatched: number;
}

function networkCondition(node: V1Node): V1NodeCondition | undefined {
  return (node.status?.conditions ?? []).find((c) => c.type === NodeConditions.NETWORK_UNAVAILABLE);
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export class RouteController {
  private readonly queue: WorkQueue<string>;
  private readonly log: Logger;
  private readonly metrics?: ReturnType<typeof routeMetrics>;
  /** A node event arrived since the last reconcile started: the next one counts as trigger node_change (upstream's key), else periodic. */
  private nodeChanged = false;
  private readonly liveRead: LiveReadCount;
  /** Nodes a live read found outside the cache (another shard's, or relabelled), by name: when. */
  private readonly outside = new Map<string, number>();
  /** Routes kept after a live read, with why: logged once per why. */
  private readonly kept = new RepeatFilter(EVENT_REPEAT_MS);
  /** Last Warning per node: message and time, to avoid repeating it every reconcile. */
  private readonly warned = new RepeatFilter(EVENT_REPEAT_MS);
  /** One token per MIN_EVENT_INTERVAL_MS, burst 1: the first event of a quiet spell reconciles at once. */
  private readonly eventBucket = new BucketRateLimiter(1000 / MIN_EVENT_INTERVAL_MS, 1);
  /** Successful reconciles: a cloud outage fails readiness after 30 periods and 5 minutes. */
  private readonly progress: Progress;
  private readonly ownership?: OwnershipGate;

  constructor(private readonly o: RouteControllerOptions) {
    this.progress = new Progress(30 * o.periodMs + 300_000);
    this.log = o.log;
    this.ownership = o.ownership
      ? new OwnershipGate({ ...o.ownership, controller: Controllers.NODE_ROUTE, recorder: o.recorder, log: o.log, registry: o.registry })
      : undefined;
    // A failed reconcile is retried after 1 s, doubling up to the period (the ticker adds the key every period anyway).
    this.queue = new WorkQueue<string>({
      name: 'Routes',
      registry: o.registry,
      rateLimiter: new ItemExponentialRateLimiter<string>(1000, Math.max(1000, o.periodMs)),
    });
    this.metrics = o.registry ? routeMetrics(o.registry) : undefined;
    this.liveRead = liveReadCounter(Controllers.NODE_ROUTE, 'nodes', o.registry);
    o.nodes.addEventHandler({
      onAdd: () => this.nodeEvent(),
      onDelete: () => this.nodeEvent(),
      onUpdate: (old, cur) => {
        const addrs = (n: V1Node) => nodeAddresses(n).map((a) => `${a.type}=${a.address}`);
        if (!sameList(podCidrsOf(old), podCidrsOf(cur)) || !sameList(addrs(old), addrs(cur))) this.nodeEvent();
      },
    });
  }

  /**
   * Queues a reconcile after the bucket's wait, capped at the interval (upstream's
   * WithMaxWaitRateLimiter): the bucket's debt grows with each event, the wait does not.
   */
  private nodeEvent(): void {
    this.nodeChanged = true;
    this.queue.addAfter(KEY, Math.min(MIN_EVENT_INTERVAL_MS, this.eventBucket.when()));
  }

  /** Healthy while reconciles keep succeeding now and then (a cloud outage makes it unhealthy after a while). */
  healthy(): boolean {
    return this.progress.healthy();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.log.info(
      { periodMs: this.o.periodMs, batched: this.o.routes.batched, clusterCidrs: this.o.clusterCidrs.map((c) => c.text) },
      'Starting route controller',
    );
    if (!(await this.o.nodes.waitForSync(signal))) return;
    this.progress.mark();
    // Fixed rate, as upstream's NonSlidingUntil: the period does not include the reconcile.
    const ticker = every(this.o.periodMs, signal, () => this.queue.add(KEY), { fixedRate: true });
    // Triggers arriving during a reconcile are kept by the queue (one more reconcile follows).
    await runWorkers(
      this.queue,
      1,
      async () => {
        // A cache known to be behind (its watch stalled; relisting) lacks nodes added meanwhile, and a
        // reconcile would delete their routes: wait for the relist (its node events and the ticker queue again).
        if (!this.o.nodes.hasSynced()) {
          this.log.info('node cache not synced (relisting); route reconcile postponed');
          return;
        }
        const trigger = this.nodeChanged ? 'node_change' : 'periodic';
        this.nodeChanged = false;
        let outcome = 'error';
        try {
          const r = await this.reconcile();
          outcome = r.failed > 0 ? 'error' : r.created + r.deleted > 0 ? 'changed' : 'noop';
        } finally {
          this.metrics?.syncs.inc({ outcome, trigger });
        }
      },
      { log: this.log, signal },
    );
    await ticker;
    this.log.info('Shutting down route controller');
  }

  /**
   * Live GETs of the target Nodes of the routes the plan would delete (one per
   * node, at most PATCH_CONCURRENCY at once), then the verdict of confirm.ts
   * for each. Never throws: a failed read keeps the route.
   */
  private async confirmDeletions(toDelete: readonly CloudRoute[], byName: ReadonlyMap<string, V1Node>): Promise<CloudRoute[]> {
    const targets = new Set(toDelete.map((r) => r.targetNode).filter((n) => n !== ''));
    const now = Date.now();
    for (const [name, at] of this.outside)
      if (!targets.has(name) || byName.has(name) || now - at >= OUTSIDE_RECHECK_PERIODS * this.o.periodMs) this.outside.delete(name);
    const live = new Map<string, LiveNode>();
    // A Node seen outside the cache lately is not read again each reconcile (other shards' nodes would cost a GET each).
    await mapLimit(
      [...targets].filter((n) => !this.outside.has(n)),
      PATCH_CONCURRENCY,
      async (name) => {
        try {
          live.set(name, { state: 'exists', node: await this.o.core.readNode({ name }) });
        } catch (err) {
          live.set(name, isNotFound(err) ? { state: 'gone' } : { state: 'error', error: errorMessage(err) });
        }
      },
    );
    const confirmed: CloudRoute[] = [];
    for (const route of toDelete) {
      if (this.outside.has(route.targetNode)) {
        this.metrics?.keptRoutes.inc({ why: 'node_exists' });
        continue;
      }
      const l = route.targetNode ? live.get(route.targetNode) : undefined;
      const v = confirmRouteDeletion(route, byName.get(route.targetNode), l);
      if (v.why === 'node_exists' && !byName.has(route.targetNode)) this.outside.set(route.targetNode, now);
      if (v.delete) {
        confirmed.push(route);
        continue;
      }
      this.metrics?.keptRoutes.inc({ why: v.why });
      const fields = { route: route.name, destination: route.destinationCidr, node: route.targetNode, why: v.why };
      if (this.kept.admit(`${route.targetNode}\u0000${route.destinationCidr}`, v.why))
        this.log.info(
          l?.state === 'error' ? { ...fields, err: l.error } : fields,
          v.why === 'node_exists'
            ? "route kept: its node exists but is not in this host's Node cache (outside --node-selector, not this provider's, or the cache is behind)"
            : 'route kept: the live read does not confirm its deletion',
        );
    }
    // One count per read: a Node that exists confirms when one of its routes goes, else it changed under the cache.
    const deletedFor = new Set(confirmed.map((r) => r.targetNode));
    for (const [name, l] of live)
      this.liveRead(
        l.state === 'gone'
          ? LiveReadOutcomes.GONE
          : l.state === 'error'
            ? LiveReadOutcomes.ERROR
            : deletedFor.has(name)
              ? LiveReadOutcomes.CONFIRMED
              : LiveReadOutcomes.CHANGED,
      );
    if (confirmed.length === 0 && toDelete.length > 0 && byName.size === 0 && this.o.nodesScoped && this.kept.admit('', 'no node in the cache'))
      this.log.warn(
        { routes: toDelete.length },
        '--node-selector matches no Node in the cache while routes point to existing nodes: nothing is deleted (check the selector)',
      );
    return confirmed;
  }

  /** One full reconcile; rejects when the cloud could not be read or the batch call failed. */
  async reconcile(): Promise<ReconcileReport> {
    const all = this.o.nodes.list();
    this.ownership?.retain(new Set(all.map((n) => n.metadata!.name!)));
    // Only this provider's Nodes are planned; the others are as if outside the cache (their routes are kept).
    const cached = this.ownership ? all.filter((n) => this.ownership!.admit(n)) : all;
    const foreignNodes = all.length - cached.length;
    const byName = new Map(cached.map((n) => [n.metadata!.name!, n]));
    const planNodes: PlanNode[] = cached.map((n) => ({
      name: n.metadata!.name!,
      createdMs: Date.parse(String(n.metadata?.creationTimestamp ?? '')) || 0,
      podCidrs: podCidrsOf(n),
      addresses: nodeAddresses(n),
    }));
    // The routes are always listed: no deletion is decided by the cache alone, not even the batch call's (item 5).
    const existing = await this.o.routes.listRoutes(this.o.clusterName);
    const plan = planRoutes(planNodes, existing, this.o.clusterCidrs);
    const toDelete = await this.confirmDeletions(plan.toDelete, byName);
    // The limit counts routes (two per node on dual-stack), not nodes.
    const routeCount = [...plan.desired.values()].reduce((n, routes) => n + routes.length, 0);
    // The batch call deletes every route it is not given: only when it would delete exactly the confirmed
    // routes, and never with --node-selector (another host's routes, created after our listing, are not in our plan).
    const useBatch =
      this.o.routes.batched &&
      routeCount <= MAX_BATCH_ROUTES &&
      !this.o.nodesScoped &&
      foreignNodes === 0 &&
      toDelete.length === plan.toDelete.length;

    const failures = new Map<string, string[]>();
    const fail = (route: DesiredRoute, err: unknown) => {
      failures.set(route.targetNode, [...(failures.get(route.targetNode) ?? []), `${route.destinationCidr}: ${errorMessage(err)}`]);
    };
    const report: ReconcileReport = { mode: useBatch ? 'batch' : 'single', created: 0, deleted: 0, failed: 0, conditionsPatched: 0 };
    let batchResult: RouteReconcileResult | undefined;
    if (useBatch) {
      const desired = [...plan.desired.values()].flat();
      const r = await this.o.routes.reconcileRoutes(
        this.o.clusterName,
        desired,
        this.o.clusterCidrs.map((c) => c.text),
      );
      batchResult = r;
      report.created = r.created.length;
      report.deleted = r.deleted.length;
      for (const f of r.failed) fail(f.route, f.error);
    } else {
      await mapLimit(toDelete, ROUTE_CONCURRENCY, async (route) => {
        try {
          await this.o.routes.deleteRoute(this.o.clusterName, route);
          report.deleted++;
          this.log.info(
            { route: route.name, destination: route.destinationCidr, node: route.targetNode, blackhole: route.blackhole },
            'deleted route',
          );
        } catch (err) {
          this.log.warn({ route: route.name, destination: route.destinationCidr, err: errorMessage(err) }, 'failed to delete route');
        }
      });
      const uids = new Map(cached.map((n) => [n.metadata!.name!, n.metadata?.uid ?? '']));
      await mapLimit(plan.toCreate, ROUTE_CONCURRENCY, async (route) => {
        try {
          // Upstream's name hint is the node UID.
          await this.o.routes.createRoute(this.o.clusterName, uids.get(route.targetNode) || route.targetNode, route);
          report.created++;
        } catch (err) {
          fail(route, err);
        }
      });
    }
    report.failed = [...failures.values()].reduce((n, l) => n + l.length, 0);
    // Nodes without pod CIDRs that a route points to (upstream: every listed route, whatever its CIDR).
    const routedWithoutCidrs = new Set<string>();
    const seen = [...(existing ?? []), ...(batchResult?.deleted ?? []), ...(batchResult?.failed.map((f) => f.route) ?? [])];
    for (const r of seen) if (r.targetNode && !plan.desired.has(r.targetNode)) routedWithoutCidrs.add(r.targetNode);

    const patches: { node: V1Node; ok: boolean }[] = [];
    for (const [name, routes] of plan.desired) {
      const node = byName.get(name)!;
      const problems = plan.problems.get(name) ?? [];
      const failed = failures.get(name) ?? [];
      this.warn(node, problems, failed);
      const ok = failed.length === 0 && problems.length === 0 && routes.length > 0;
      const cond = networkCondition(node);
      const want = ok ? { status: 'False', reason: NetworkReasons.ROUTE_CREATED } : { status: 'True', reason: NetworkReasons.NO_ROUTE_CREATED };
      // Status only, as upstream: a network plugin's own reason (e.g. CalicoIsUp with False) is left alone, not fought over.
      if (cond?.status !== want.status) patches.push({ node, ok });
    }
    for (const name of routedWithoutCidrs) {
      const node = byName.get(name);
      if (!node) continue;
      const cond = networkCondition(node);
      if (cond?.status !== 'True') patches.push({ node, ok: false });
    }
    await mapLimit(patches, PATCH_CONCURRENCY, async ({ node, ok }) => {
      // Decided from the cache as it was before the cloud calls: a network plugin may have set the status since.
      const now = this.o.nodes.get(node.metadata!.name!);
      if (now && networkCondition(now)?.status === (ok ? 'False' : 'True')) return;
      if (await this.setCondition(node, ok)) report.conditionsPatched++;
    });
    if (report.created || report.deleted || report.failed || report.conditionsPatched) this.log.info({ ...report }, 'reconciled routes');
    this.progress.mark();
    return report;
  }

  /** Warning events for pod CIDRs without a route; the same message is repeated at most every EVENT_REPEAT_MS. */
  private warn(node: V1Node, problems: NodeProblem[], failed: string[]): void {
    const name = node.metadata!.name!;
    if (problems.length === 0 && failed.length === 0) {
      this.warned.clear(name);
      return;
    }
    const conflict = problems.some((p) => p.reason === 'conflict');
    const reason = conflict ? EventReasons.POD_CIDR_CONFLICT : EventReasons.FAILED_TO_CREATE_ROUTE;
    const message = [...problems.map((p) => p.message), ...failed.map((f) => `Could not create route ${f}`)].join('; ');
    if (!this.warned.admit(name, message)) return;
    this.log.warn({ node: name, reason, problem: message }, 'node has pod CIDRs without a route');
    this.o.recorder.event(node, 'Warning', reason, message.length > 1000 ? message.slice(0, 1000) + '…' : message);
  }

  /** Strategic-merge patch of the NetworkUnavailable condition (merged by type). Returns false when the node is gone. */
  private async setCondition(node: V1Node, ok: boolean): Promise<boolean> {
    const name = node.metadata!.name!;
    const now = new Date().toISOString();
    const condition = ok
      ? {
          type: NodeConditions.NETWORK_UNAVAILABLE,
          status: 'False',
          reason: NetworkReasons.ROUTE_CREATED,
          message: 'RouteController created a route',
        }
      : {
          type: NodeConditions.NETWORK_UNAVAILABLE,
          status: 'True',
          reason: NetworkReasons.NO_ROUTE_CREATED,
          message: 'RouteController failed to create a route',
        };
    try {
      await patchNodeStatus(
        this.o.core,
        name,
        { status: { conditions: [{ ...condition, lastTransitionTime: now, lastHeartbeatTime: now }] } },
        'strategic',
      );
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      this.log.warn({ node: name, err: errorMessage(err) }, 'failed to update the NetworkUnavailable condition');
      return false;
    }
  }
}

/** Parses already-validated --cluster-cidr values. */
export function parseClusterCidrs(texts: readonly string[]): Cidr[] {
  return texts.map((t) => parseCidr(t)).filter((c): c is Cidr => c !== undefined);
}
