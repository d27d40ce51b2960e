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
 * - one batch status lookup per pass for all NotReady nodes (paged at 500 by
 *   Instances.instancesStatus) instead of two calls per node; providers
 *   without the batch RPC get single calls with bounded concurrency;
 * - each node is handled at most once per pass (names are de-duplicated and
 *   passes never overlap);
 * - --node-deletion-grace-period > 0: a node is deleted only after its
 *   instance was reported gone on two consecutive checks, the first at least
 *   the grace period ago (a check that errors neither counts nor resets;
 *   "exists", Ready, or a new Node UID resets);
 * - the delete carries UID and resourceVersion preconditions, so a Node that
 *   was recreated or changed since the check is not deleted (it is checked
 *   again on the next pass);
 * - the shutdown taint is also removed from a NotReady node whose instance
 *   is running again (upstream removes it only once the node is Ready).
 */
import type { CoreV1Api, V1Node, V1Taint } from '@kubernetes/client-node';
import { Gauge, Histogram, type Registry } from 'prom-client';
import type { Instances, StatusResult } from '../../cloud.js';
import { sleep } from '../../kube/backoff.js';
import { isConflict, isNotFound } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { errorMessage, type Logger } from '../../log.js';
import { EventReasons, NodeConditions, Taints } from '../../names.js';
import { mapLimit } from '../../util/map-limit.js';
import { toNodeRef } from '../node-ref.js';
import { hasTaint, setTaint } from './taint.js';

/** API writes (taints, deletes) in flight at once during a pass. */
const WRITE_CONCURRENCY = 16;

export const SHUTDOWN_TAINT: V1Taint = { key: Taints.SHUTDOWN, effect: 'NoSchedule' };

export interface LifecycleControllerOptions {
  core: CoreV1Api;
  nodes: Informer<V1Node>;
  instances: Instances;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  /** --node-monitor-period. */
  periodMs: number;
  /** --node-deletion-grace-period; 0 = delete on the first "gone" (upstream). */
  deletionGraceMs: number;
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
  /** Nodes whose status lookup failed (nothing was done to them). */
  errors: number;
  /** The whole status lookup failed (nothing was done to NotReady nodes). */
  lookupFailed: boolean;
  durationMs: number;
}

/** Ready condition status: True only counts as Ready (False, Unknown and missing do not). */
export function isNodeReady(node: V1Node): boolean {
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
  private lastPassEnd = 0;
  private readonly tickDuration?: Histogram;
  private readonly notReadyGauge?: Gauge;

  constructor(private readonly o: LifecycleControllerOptions) {
    this.now = o.now ?? Date.now;
    if (o.registry) {
      this.tickDuration = new Histogram({
        name: 'ccm_node_lifecycle_pass_duration_seconds',
        help: 'Duration of one node lifecycle pass (status lookup and API writes).',
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers: [o.registry],
      });
      this.notReadyGauge = new Gauge({
        name: 'ccm_node_lifecycle_not_ready_nodes',
        help: 'NotReady nodes the last node lifecycle pass looked up in the cloud.',
        registers: [o.registry],
      });
    }
  }

  /** Healthy while passes keep completing. */
  healthy(): boolean {
    return this.lastPassEnd === 0 || Date.now() - this.lastPassEnd < 10 * this.o.periodMs + 120_000;
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info({ periodMs: this.o.periodMs, deletionGraceMs: this.o.deletionGraceMs }, 'Starting cloud node lifecycle controller');
    if (!(await this.o.nodes.waitForSync(signal))) return;
    this.lastPassEnd = Date.now();
    while (!signal.aborted) {
      try {
        const r = await this.tick();
        this.o.log.debug({ ...r, deleted: r.deleted.length, tainted: r.tainted.length, untainted: r.untainted.length }, 'node lifecycle pass');
      } catch (err) {
        this.o.log.warn({ err: errorMessage(err) }, 'node lifecycle pass failed');
      }
      this.lastPassEnd = Date.now();
      // Sliding period, as upstream's wait.Until: passes never overlap.
      if (!(await sleep(this.o.periodMs, signal))) break;
    }
    this.o.log.info('Shutting down cloud node lifecycle controller');
  }

  /** One pass over the cached nodes. */
  async tick(): Promise<TickReport> {
    const started = this.now();
    const report: TickReport = { nodes: 0, notReady: 0, deleted: [], tainted: [], untainted: [], errors: 0, lookupFailed: false, durationMs: 0 };
    const byName = new Map<string, V1Node>();
    for (const n of this.o.nodes.list()) {
      const name = n.metadata?.name;
      if (name && !byName.has(name)) byName.set(name, n);
    }
    report.nodes = byName.size;
    for (const name of this.gone.keys()) if (!byName.has(name)) this.gone.delete(name);

    const writes: (() => Promise<void>)[] = [];
    const notReady: V1Node[] = [];
    for (const node of byName.values()) {
      if (isNodeReady(node)) {
        this.gone.delete(node.metadata!.name!);
        if (hasTaint(node, Taints.SHUTDOWN)) writes.push(() => this.untaint(node, report));
      } else {
        notReady.push(node);
      }
    }
    report.notReady = notReady.length;
    this.notReadyGauge?.set(notReady.length);

    if (notReady.length > 0) {
      let results: StatusResult[] | undefined;
      try {
        results = await this.o.instances.instancesStatus(notReady.map(toNodeRef));
      } catch (err) {
        report.lookupFailed = true;
        this.o.log.warn({ nodes: notReady.length, err: errorMessage(err) }, 'instance status lookup failed; no NotReady node is changed this pass');
      }
      results?.forEach((r, i) => {
        const node = notReady[i]!;
        const write = this.decide(node, r, started, report);
        if (write) writes.push(write);
      });
    }
    await mapLimit(writes, WRITE_CONCURRENCY, (w) => w());
    report.durationMs = this.now() - started;
    this.tickDuration?.observe(report.durationMs / 1000);
    return report;
  }

  /** What to do about one NotReady node given its instance status; undefined = nothing. */
  private decide(node: V1Node, r: StatusResult, now: number, report: TickReport): (() => Promise<void>) | undefined {
    const name = node.metadata!.name!;
    const uid = node.metadata?.uid ?? '';
    if (r.error || r.exists === undefined) {
      report.errors++;
      this.o.log.info({ node: name, err: errorMessage(r.error) }, 'cannot tell whether the instance of a NotReady node exists; checking again next pass');
      return undefined;
    }
    if (r.exists) {
      this.gone.delete(name);
      if (r.shutdown) return hasTaint(node, Taints.SHUTDOWN) ? undefined : () => this.taint(node, report);
      return hasTaint(node, Taints.SHUTDOWN) ? () => this.untaint(node, report) : undefined;
    }
    if (this.o.deletionGraceMs > 0) {
      const rec = this.gone.get(name);
      if (!rec || rec.uid !== uid) {
        this.gone.set(name, { uid, firstGoneAt: now, checks: 1 });
        this.o.log.info({ node: name, graceMs: this.o.deletionGraceMs }, 'instance of a NotReady node is gone; deleting the node after the grace period if it stays gone');
        return undefined;
      }
      rec.checks++;
      if (rec.checks < 2 || now - rec.firstGoneAt < this.o.deletionGraceMs) return undefined;
    }
    return () => this.deleteNode(node, report);
  }

  private async deleteNode(node: V1Node, report: TickReport): Promise<void> {
    const name = node.metadata!.name!;
    this.o.log.info({ node: name }, 'deleting node: its instance does not exist in the cloud provider');
    this.o.recorder.event(node, 'Normal', EventReasons.DELETING_NODE, `Deleting node ${name} because it does not exist in the cloud provider`);
    try {
      await this.o.core.deleteNode({ name, body: { preconditions: { uid: node.metadata?.uid, resourceVersion: node.metadata?.resourceVersion } } });
      this.gone.delete(name);
      report.deleted.push(name);
    } catch (err) {
      if (isNotFound(err)) return;
      if (isConflict(err)) {
        this.o.log.info({ node: name }, 'node changed since it was checked; checking it again next pass');
        return;
      }
      this.o.log.warn({ node: name, err: errorMessage(err) }, 'failed to delete node');
      this.o.recorder.event(node, 'Warning', EventReasons.DELETING_NODE_FAILED, `Error deleting node ${name}: ${errorMessage(err)}`);
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
