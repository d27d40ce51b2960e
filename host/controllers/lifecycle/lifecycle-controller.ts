/**
 * The cloud node lifecycle controller (upstream kubernetes/cloud-provider
 * controllers/nodelifecycle): a periodic pass, every --node-monitor-period
 * (sliding), over the Nodes in the cache.
 *
 * - Ready node → the shutdown taint is removed if present; no cloud call.
 * - NotReady node (Ready False, Unknown or missing) → its instance's status:
 *   - gone → Normal event `DeletingNode` and the Node is deleted;
 *   - exists and shut down → taint node.cloudprovider.kubernetes.io/shutdown (NoSchedule);
 *   - exists and running → the shutdown taint is removed if present.
 *   - an error of any kind (UNAVAILABLE, DEADLINE_EXCEEDED, RATE_LIMITED,
 *     an invalid answer, ...) → nothing happens to that node this pass: an
 *     error never deletes a Node. INSTANCE_NOT_FOUND is "gone" everywhere
 *     (host/plugin/grpc-cloud.ts maps it).
 *
 * Differences from upstream, on purpose:
 * - only Nodes this provider owns (host/ownership: its providerID prefixes,
 *   or no providerID and its node selector) are looked at: any other Node,
 *   Ready or not (another provider's prefix, or no owner at all), gets no
 *   cloud call and is never deleted, tainted or untainted: it is not this
 *   provider's to judge, and a provider answering "not found" for an id it
 *   cannot read must not delete it. A Node two providers claim gets a
 *   Warning `NodeOwnershipConflict` and is left alone too;
 * - one batch status lookup per pass for all NotReady nodes (paged at 500 by
 *   Instances.instancesStatus) instead of two calls per node; providers
 *   without the batch RPC get single calls with bounded concurrency;
 * - each node is handled at most once per pass (names are de-duplicated and
 *   passes never overlap);
 * - --node-deletion-grace-period > 0: a node is deleted only after its
 *   instance was reported gone on two consecutive checks, the first at least
 *   the grace period ago (a check that errors neither counts nor resets;
 *   "exists", Ready, or a new Node UID resets);
 * - the cache never decides a deletion alone: each Node about to be deleted
 *   is read fresh from the API server first (counted in
 *   ccm_live_reads_total) and deleted only if it is still
 *   the same Node (uid, providerID) and still NotReady;
 * - the delete carries the fresh object's UID and resourceVersion as
 *   preconditions, so a Node that was recreated or changed since that read
 *   is not deleted (it is checked again on the next pass);
 * - the shutdown taint is also removed from a NotReady node whose instance
 *   is running again (upstream removes it only once the node is Ready);
 * - a mass-deletion brake (deletion-brake.ts): at most --node-deletion-limit
 *   deletions per --node-deletion-limit-window. Nodes beyond it are held
 *   back (Warning event `DeletingNodeHeldBack` once per node, one log line,
 *   metrics) and deleted on a later pass, oldest hold first, if their
 *   instance is still reported gone when the window allows. The count lives
 *   in the cluster (deletion-ledger.ts), read fresh before each deletion
 *   and written (reserved) before it, so a restart or a new leader does not
 *   reset it; when it cannot be read or written, no Node is deleted. With
 *   --shard-count the brake is one for the cluster: every shard reserves in
 *   the same record and a percentage is of every shard's Nodes
 *   (`clusterNodes`), so N shards delete no more than one replica would.
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import { lifecycleMetrics, type LifecycleMetrics } from '../../controller-metrics.js';
import { liveReadCounter, type LiveReadCount } from '../live-reads.js';
import type { Instances, StatusResult } from '../../cloud.js';
import { isConflict, isNotFound } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import type { InformerView } from '../../kube/shard-view.js';
import { errorMessage, type Logger } from '../../log.js';
import { every } from '../../util/every.js';
import { Progress } from '../../util/progress.js';
import { Controllers, EventReasons, LiveReadOutcomes, NodeConditions, Taints } from '../../names.js';
import { mapLimit } from '../../util/map-limit.js';
import { formatGoDuration } from '../../config/values.js';
import { toNodeRef } from '../node-ref.js';
import { setTaint } from './taint.js';
import { hasTaint } from '../node-ref.js';
import { DeletionBrake, type DeletionLedger, type DeletionLimit } from './deletion-brake.js';
import { defaultOwnership, OwnershipGate, type OwnershipSource } from '../../ownership/gate.js';

/** API writes (taints, deletes) in flight at once during a pass. */
const WRITE_CONCURRENCY = 16;

const SHUTDOWN_TAINT: V1Taint = { key: Taints.SHUTDOWN, effect: 'NoSchedule' };

export interface LifecycleControllerOptions {
  core: CoreV1Api;
  /** This replica's Nodes (its shard with --shard-count, kube/shard-view.ts). */
  nodes: InformerView<V1Node>;
  /**
   * Every Node of the cluster (all shards; under --node-selector): what a
   * percentage --node-deletion-limit is of, since the brake is one for all
   * shards. Default `nodes`.
   */
  clusterNodes?: InformerView<V1Node>;
  instances: Instances;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  /** --node-monitor-period. */
  periodMs: number;
  /** --node-deletion-grace-period; 0 = delete on the first "gone" (upstream). */
  deletionGraceMs: number;
  /** --node-deletion-limit; null = no brake (upstream). */
  deletionLimit: DeletionLimit | null;
  /** --node-deletion-limit-window. */
  deletionLimitWindowMs: number;
  /** Where the brake counts the deletions inside the window (deletion-ledger.ts); unused when deletionLimit is null. */
  deletionLedger: DeletionLedger;
  /** The provider name of providerIDs ("<name>://…"): the default ownership. */
  providerName: () => string;
  /** Whose Nodes these are (host/ownership); default: `<providerName>://` and every Node without a providerID. */
  ownership?: OwnershipSource;
  /** The `provider` label of this controller's metrics: the provider's name with several providers, else absent (series as before). */
  metricsProvider?: string;
  /** Clock (tests). */
  now?: () => number;
}

/** What one pass saw and did (logged at debug, returned for tests). */
export interface TickReport {
  nodes: number;
  notReady: number;
  deleted: string[];
  tainted: string[];
  untainted: string[];
  /** Nodes whose instance is gone but whose deletion the brake held back this pass. */
  heldBack: string[];
  /** Nodes whose status lookup failed (nothing was done to them). */
  errors: number;
  /** Nodes about to be deleted that the live read did not confirm (gone, re-created, Ready again, read failed). */
  unconfirmed: string[];
  /** The brake's record could not be read or written: no Node was deleted this pass. */
  recordFailed: boolean;
  /** The whole status lookup failed (nothing was done to NotReady nodes). */
  lookupFailed: boolean;
  /** Nodes left alone because this provider does not own them (another's, nobody's, or claimed twice). */
  foreign: string[];
  durationMs: number;
}

/** Ready condition status: True only counts as Ready (False, Unknown and missing do not). */
function isNodeReady(node: V1Node): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === NodeConditions.READY && c.status === 'True');
}

interface GoneRecord {
  uid: string;
  firstGoneAt: number;
  checks: number;
}

export class NodeLifecycleController {
  private readonly now: () => number;
  /** NotReady nodes whose instance was reported gone, while the grace period runs. */
  private readonly gone = new Map<string, GoneRecord>();
  /** Completed passes: stuck, it fails readiness after ten periods and two minutes. */
  private readonly progress: Progress;
  private readonly metrics?: LifecycleMetrics;
  private readonly brake: DeletionBrake;
  /** Nodes held back by the brake → when they were first held back (oldest go first). */
  private readonly heldSince = new Map<string, number>();
  private readonly liveRead: LiveReadCount;
  private readonly ownership: OwnershipGate;

  constructor(private readonly o: LifecycleControllerOptions) {
    this.progress = new Progress(10 * o.periodMs + 120_000);
    this.now = o.now ?? Date.now;
    this.brake = new DeletionBrake(o.deletionLimit, o.deletionLimitWindowMs, o.deletionLedger, this.now);
    this.metrics = o.registry ? lifecycleMetrics(o.registry, o.metricsProvider) : undefined;
    this.liveRead = liveReadCounter(Controllers.CLOUD_NODE_LIFECYCLE, 'nodes', o.registry);
    this.ownership = new OwnershipGate({
      ...(o.ownership ?? defaultOwnership(o.providerName)),
      controller: Controllers.CLOUD_NODE_LIFECYCLE,
      recorder: o.recorder,
      log: o.log,
      registry: o.registry,
    });
  }

  /** Healthy while passes keep completing. */
  healthy(): boolean {
    return this.progress.healthy();
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info(
      {
        periodMs: this.o.periodMs,
        deletionGraceMs: this.o.deletionGraceMs,
        deletionLimit: this.o.deletionLimit,
        deletionLimitWindowMs: this.o.deletionLimitWindowMs,
      },
      'Starting cloud node lifecycle controller',
    );
    if (!(await this.o.nodes.waitForSync(signal))) return;
    this.progress.mark();
    // Sliding period, as upstream's wait.Until: passes never overlap.
    await every(this.o.periodMs, signal, async () => {
      try {
        const r = await this.tick();
        this.o.log.debug(
          { ...r, deleted: r.deleted.length, tainted: r.tainted.length, untainted: r.untainted.length, heldBack: r.heldBack.length },
          'node lifecycle pass',
        );
      } catch (err) {
        this.o.log.warn({ err: errorMessage(err) }, 'node lifecycle pass failed');
      }
      this.progress.mark();
    });
    this.o.log.info('Shutting down cloud node lifecycle controller');
  }

  /** One pass over the cached nodes. */
  async tick(): Promise<TickReport> {
    const started = this.now();
    const report: TickReport = {
      nodes: 0,
      notReady: 0,
      deleted: [],
      tainted: [],
      untainted: [],
      heldBack: [],
      errors: 0,
      unconfirmed: [],
      recordFailed: false,
      lookupFailed: false,
      foreign: [],
      durationMs: 0,
    };
    const byName = new Map<string, V1Node>();
    for (const n of this.o.nodes.list()) {
      const name = n.metadata?.name;
      if (name && !byName.has(name)) byName.set(name, n);
    }
    report.nodes = byName.size;
    for (const name of this.gone.keys()) if (!byName.has(name)) this.gone.delete(name);
    for (const name of this.heldSince.keys()) if (!byName.has(name)) this.heldSince.delete(name);
    this.ownership.retain(new Set(byName.keys()));

    const writes: (() => Promise<void>)[] = [];
    const notReady: V1Node[] = [];
    for (const node of byName.values()) {
      const name = node.metadata!.name!;
      if (!this.ownership.admit(node)) {
        // Not this provider's Node: never asked about, so never deleted, tainted or untainted by this host.
        this.forget(name);
        report.foreign.push(name);
        continue;
      }
      if (isNodeReady(node)) {
        this.forget(name);
        if (hasTaint(node, Taints.SHUTDOWN)) writes.push(() => this.untaint(node, report));
        continue;
      }
      notReady.push(node);
    }
    report.notReady = notReady.length;
    this.metrics?.notReady.set(notReady.length);

    if (notReady.length > 0) {
      let results: StatusResult[] | undefined;
      try {
        results = await this.o.instances.instancesStatus(notReady.map(toNodeRef));
      } catch (err) {
        report.lookupFailed = true;
        this.o.log.warn({ nodes: notReady.length, err: errorMessage(err) }, 'instance status lookup failed; no NotReady node is changed this pass');
      }
      const doomed: V1Node[] = [];
      results?.forEach((r, i) => {
        const node = notReady[i]!;
        const write = this.decide(node, r, started, report);
        if (write === 'delete') doomed.push(node);
        else if (write) writes.push(write);
      });
      if (doomed.length > 0) writes.push(() => this.deleteGone(doomed, this.clusterNodeCount(byName.size), started, report));
    }
    await mapLimit(writes, WRITE_CONCURRENCY, (w) => w());
    this.metrics?.heldBack.set(report.heldBack.length);
    report.durationMs = this.now() - started;
    this.metrics?.passDuration.observe(report.durationMs / 1000);
    return report;
  }

  /** The Nodes a percentage limit is of: every shard's (`clusterNodes`), else this pass's `seen` (one replica: the same Nodes). */
  private clusterNodeCount(seen: number): number {
    if (!this.o.clusterNodes) return seen;
    return new Set(this.o.clusterNodes.list().map((n) => n.metadata?.name)).size;
  }

  /** The node's instance is not gone (or the node is Ready): no grace period or hold runs for it. */
  private forget(name: string): void {
    this.gone.delete(name);
    this.heldSince.delete(name);
  }

  /**
   * Deletes nodes whose instance is gone, within the brake: a fresh read of
   * the brake's record gives the allowance (held longest first; the rest are
   * held back), a live GET confirms each candidate, the confirmed ones are
   * reserved in the record (a fresh read and a conditional write: other
   * shards and replicas reserve in the same record), and only what was
   * reserved is deleted. A record that cannot be read or written deletes
   * nothing this pass. `nodes`: what a percentage limit is of.
   */
  private async deleteGone(doomed: V1Node[], nodes: number, now: number, report: TickReport): Promise<void> {
    const since = (n: V1Node) => this.heldSince.get(n.metadata!.name!) ?? now;
    const ordered = [...doomed].sort((a, b) => since(a) - since(b) || a.metadata!.name!.localeCompare(b.metadata!.name!));
    let allowance;
    try {
      allowance = await this.brake.allowance(nodes);
    } catch (err) {
      this.recordFailed(err, ordered.length, report);
      return;
    }
    const candidates = ordered.slice(0, allowance.granted);
    this.holdBack(ordered.slice(candidates.length), allowance.bound, doomed.length, now, report);
    const confirmed = (await mapLimit(candidates, WRITE_CONCURRENCY, (n) => this.confirm(n, report))).filter((n) => n !== undefined);
    if (confirmed.length === 0) return;
    let reservation;
    try {
      reservation = await this.brake.reserve(confirmed.length, nodes);
    } catch (err) {
      this.recordFailed(err, confirmed.length, report);
      return;
    }
    const go = confirmed.slice(0, reservation.granted);
    // Another writer (a replica that still thought it led) used the window meanwhile.
    this.holdBack(confirmed.slice(go.length), reservation.bound, doomed.length, now, report);
    const deleted = await mapLimit(go, WRITE_CONCURRENCY, (n) => this.deleteNode(n, report));
    const unused = deleted.filter((ok) => !ok).length;
    if (unused > 0) {
      // Best effort: left counted, they only hold back more.
      await this.brake
        .release(unused, reservation.at)
        .catch((err: unknown) =>
          this.o.log.info({ count: unused, err: errorMessage(err) }, 'could not give back reserved node deletions that did not happen'),
        );
    }
  }

  private recordFailed(err: unknown, nodes: number, report: TickReport): void {
    report.recordFailed = true;
    this.metrics?.ledgerFailures.inc();
    this.o.log.warn(
      { nodes, record: this.o.deletionLedger.describe(), err: errorMessage(err) },
      'cannot read or write the node deletion record (--node-deletion-limit); no node is deleted this pass',
    );
  }

  /**
   * A live GET of a node about to be deleted: the fresh object when it is
   * still the same Node (uid, providerID), still NotReady and still this provider's, else undefined
   * (nothing is done; the next pass decides again from the cache).
   */
  private async confirm(node: V1Node, report: TickReport): Promise<V1Node | undefined> {
    const name = node.metadata!.name!;
    let fresh: V1Node;
    try {
      fresh = await this.o.core.readNode({ name });
    } catch (err) {
      this.liveRead(isNotFound(err) ? LiveReadOutcomes.GONE : LiveReadOutcomes.ERROR);
      report.unconfirmed.push(name);
      if (isNotFound(err)) this.forget(name);
      else this.o.log.info({ node: name, err: errorMessage(err) }, 'cannot read the node before deleting it; checking it again next pass');
      return undefined;
    }
    const why =
      fresh.metadata?.uid !== node.metadata?.uid
        ? 'it was re-created (another uid)'
        : (fresh.spec?.providerID ?? '') !== (node.spec?.providerID ?? '')
          ? 'its providerID changed'
          : isNodeReady(fresh)
            ? 'it is Ready'
            : !this.ownership.owns(fresh)
              ? "it is no longer this provider's (its labels or the declarations changed)"
              : undefined;
    this.liveRead(why === undefined ? LiveReadOutcomes.CONFIRMED : LiveReadOutcomes.CHANGED);
    if (why === undefined) return fresh;
    report.unconfirmed.push(name);
    this.forget(name);
    this.o.log.info({ node: name, reason: why }, 'not deleting node: the live read differs from the cache; checking it again next pass');
    return undefined;
  }

  /** Holds back `held` (a Warning event once per node, one log line, the metrics). */
  private holdBack(held: V1Node[], bound: number, candidates: number, now: number, report: TickReport): void {
    if (held.length === 0) return;
    const window = formatGoDuration(this.brake.windowMs);
    const fresh: string[] = [];
    for (const node of held) {
      const name = node.metadata!.name!;
      report.heldBack.push(name);
      if (this.heldSince.has(name)) continue;
      this.heldSince.set(name, now);
      fresh.push(name);
      this.o.recorder.event(
        node,
        'Warning',
        EventReasons.DELETING_NODE_HELD_BACK,
        `Not deleting node ${name} yet although its instance does not exist in the cloud provider: at most ${bound} nodes are deleted per ${window} (--node-deletion-limit); it is deleted on a later pass if its instance is still gone`,
      );
    }
    this.metrics?.heldBackTotal.inc(held.length);
    if (fresh.length > 0) {
      this.o.log.warn(
        {
          heldBack: held.length,
          newlyHeldBack: fresh.length,
          nodes: fresh.slice(0, 10),
          limit: bound,
          windowMs: this.brake.windowMs,
          candidates,
          record: this.o.deletionLedger.describe(),
        },
        'node deletion limit reached: holding back deletions of nodes whose instance is reported gone; check the cloud provider if this is unexpected',
      );
    }
  }

  /** What to do about one NotReady node given its instance status; undefined = nothing. */
  private decide(node: V1Node, r: StatusResult, now: number, report: TickReport): (() => Promise<void>) | 'delete' | undefined {
    const name = node.metadata!.name!;
    const uid = node.metadata?.uid ?? '';
    if (r.error || r.exists === undefined) {
      report.errors++;
      this.o.log.info(
        { node: name, err: errorMessage(r.error) },
        'cannot tell whether the instance of a NotReady node exists; checking again next pass',
      );
      return undefined;
    }
    if (r.exists) {
      this.forget(name);
      if (r.shutdown) return hasTaint(node, Taints.SHUTDOWN) ? undefined : () => this.taint(node, report);
      return hasTaint(node, Taints.SHUTDOWN) ? () => this.untaint(node, report) : undefined;
    }
    if (this.o.deletionGraceMs > 0) {
      const rec = this.gone.get(name);
      if (!rec || rec.uid !== uid) {
        this.gone.set(name, { uid, firstGoneAt: now, checks: 1 });
        this.o.log.info(
          { node: name, graceMs: this.o.deletionGraceMs },
          'instance of a NotReady node is gone; deleting the node after the grace period if it stays gone',
        );
        return undefined;
      }
      rec.checks++;
      if (rec.checks < 2 || now - rec.firstGoneAt < this.o.deletionGraceMs) return undefined;
    }
    return 'delete';
  }

  /** Deletes `node` (the fresh object) with its uid and resourceVersion as preconditions; true when it was deleted. */
  private async deleteNode(node: V1Node, report: TickReport): Promise<boolean> {
    const name = node.metadata!.name!;
    this.o.log.info({ node: name }, 'deleting node: its instance does not exist in the cloud provider');
    this.o.recorder.event(node, 'Normal', EventReasons.DELETING_NODE, `Deleting node ${name} because it does not exist in the cloud provider`);
    try {
      await this.o.core.deleteNode({ name, body: { preconditions: { uid: node.metadata?.uid, resourceVersion: node.metadata?.resourceVersion } } });
      this.forget(name);
      report.deleted.push(name);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (isConflict(err)) {
        this.o.log.info({ node: name }, 'node changed since it was checked; checking it again next pass');
        return false;
      }
      this.o.log.warn({ node: name, err: errorMessage(err) }, 'failed to delete node');
      this.o.recorder.event(node, 'Warning', EventReasons.DELETING_NODE_FAILED, `Error deleting node ${name}: ${errorMessage(err)}`);
      return false;
    }
  }

  private async taint(node: V1Node, report: TickReport): Promise<void> {
    const name = node.metadata!.name!;
    try {
      if (await setTaint(this.o.core, node, SHUTDOWN_TAINT, true)) {
        report.tainted.push(name);
        this.o.log.info({ node: name }, 'instance is shut down; added the shutdown taint');
      }
    } catch (err) {
      this.o.log.warn({ node: name, err: errorMessage(err) }, 'failed to add the shutdown taint');
    }
  }

  private async untaint(node: V1Node, report: TickReport): Promise<void> {
    const name = node.metadata!.name!;
    try {
      if (await setTaint(this.o.core, node, SHUTDOWN_TAINT, false)) {
        report.untainted.push(name);
        this.o.log.info({ node: name }, 'node is Ready or its instance runs; removed the shutdown taint');
      }
    } catch (err) {
      this.o.log.warn({ node: name, err: errorMessage(err) }, 'failed to remove the shutdown taint');
    }
  }
}
