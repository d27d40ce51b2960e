/**
 * The node IPAM controller (upstream nodeipam with the RangeAllocator; in
 * upstream's CCM it is the optional "node-ipam-controller", alias
 * "nodeipam"): gives every Node without spec.podCIDRs one range per
 * --cluster-cidr entry, of --node-cidr-mask-size(-ipv4/-ipv6), and frees a
 * Node's ranges when it is deleted.
 *
 * - Start: waits for the Node cache, then records every Node's podCIDRs
 *   before the first allocation (this is how allocations survive a restart).
 * - sync(name): Node gone → release; Node with podCIDRs → record them
 *   (overlaps with another Node's range or ranges outside --cluster-cidr get
 *   a Warning `PodCIDRConflict`; nothing is changed on the Node); Node
 *   without → allocate and write spec.podCIDR + spec.podCIDRs in one patch.
 * Both events below are Warnings: the node has no pod network meanwhile
 * (upstream emits them as Normal; docs/differences-from-upstream.md).
 * - No free range → Warning `CIDRNotAvailable`; the node waits and is retried
 *   as soon as any range is released (and every minute).
 * - Write failure → Warning `CIDRAssignmentFailed`, retry with backoff. The
 *   range is released only on a definite failure (isDefiniteFailure: a 4xx
 *   refusal, nothing written); when the outcome is unknown (no answer, a
 *   timeout, a 5xx) it stays reserved for the node and the retry first
 *   re-reads the Node: ranges written → recorded; none → the same range is
 *   written again, never a second one (finding 6).
 * - Node gone from the cache → released only when a live GET answers 404: a
 *   Node relabelled out of --node-selector keeps its range (finding 5). spec.podCIDRs can only be set once (the API server
 *   refuses changes), so a Node someone else gave ranges meanwhile is left
 *   as it is.
 */
import type { V1Node } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import { isNotFound } from '../../kube/client.js';
import { ApiError } from '../../kube/rest.js';
import { liveReadCounter, type LiveReadCount } from '../live-reads.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { patchNode } from '../../kube/patch.js';
import { WorkQueue, runWorkers } from '../../kube/workqueue.js';
import { errorMessage, type Logger } from '../../log.js';
import { Controllers, EventReasons, LiveReadOutcomes } from '../../names.js';
import type { Cidr } from '../../util/cidr.js';
import { podCidrsOf } from '../node-ref.js';
import { RangeAllocator } from './range-allocator.js';
import { RepeatFilter } from '../../util/repeat-filter.js';

/** Nodes waiting for a free range are retried at least this often. */
const EXHAUSTED_RETRY_MS = 60_000;
/** Concurrent node syncs (each is one API patch at most). */
const WORKERS = 8;

export interface IpamControllerOptions {
  core: CoreV1Api;
  nodes: Informer<V1Node>;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  clusterCidrs: readonly Cidr[];
  maskSizes: readonly number[];
}

/**
 * Whether a failed write certainly changed nothing: the API server answered
 * with a 4xx refusal (400 bad request, 401/403, 404 gone, 409 conflict, 422
 * invalid, 429 throttled...), except 408 (request timeout). Anything else (no
 * answer, a reset connection, a 5xx such as a 504 server timeout) may have
 * been applied.
 */
export function isDefiniteFailure(err: unknown): boolean {
  return err instanceof ApiError && err.code >= 400 && err.code < 500 && err.code !== 408;
}

export class IpamController {
  readonly allocator: RangeAllocator;
  private readonly queue: WorkQueue<string>;
  /** Nodes we gave ranges to whose update the cache has not shown yet (name → uid). */
  private readonly written = new Map<string, string>();
  /** Nodes waiting for a free range. */
  private readonly waiting = new Set<string>();
  /** Nodes whose pod CIDR write had an unknown outcome: the range stays theirs until a live read tells (name → uid, ranges). */
  private readonly unsure = new Map<string, { uid: string; cidrs: string[] }>();
  private readonly liveRead: LiveReadCount;
  /** Last problem reported per node (not repeated). */
  private readonly reported = new RepeatFilter();

  constructor(private readonly o: IpamControllerOptions) {
    this.allocator = new RangeAllocator(o.clusterCidrs, o.maskSizes);
    this.queue = new WorkQueue<string>({ name: 'nodeipam', registry: o.registry });
    this.liveRead = liveReadCounter(Controllers.NODE_IPAM, 'nodes', o.registry);
    const enqueue = (n: V1Node) => n.metadata?.name && this.queue.add(n.metadata.name);
    o.nodes.addEventHandler({ onAdd: enqueue, onUpdate: (_old, n) => enqueue(n), onDelete: enqueue });
  }

  async run(signal: AbortSignal): Promise<void> {
    this.o.log.info(
      { clusterCidrs: this.o.clusterCidrs.map((c) => c.text), maskSizes: this.o.maskSizes },
      'Starting node IPAM controller (RangeAllocator)',
    );
    if (!(await this.o.nodes.waitForSync(signal))) return;
    // Recover what is in use before handing anything out.
    let recovered = 0;
    for (const node of this.o.nodes.list()) {
      const cidrs = podCidrsOf(node);
      if (cidrs.length === 0) continue;
      this.record(node, cidrs);
      recovered++;
    }
    this.o.log.info({ nodes: recovered, used: this.allocator.sets.map((s) => `${s.used}/${s.size}`) }, 'recorded pod CIDRs of existing nodes');
    await runWorkers(this.queue, WORKERS, (name) => this.sync(name), { log: this.o.log, signal });
    this.o.log.info('Shutting down node IPAM controller');
  }

  async sync(name: string): Promise<void> {
    const node = this.o.nodes.get(name);
    if (!node) {
      // Leaving the cache is not deletion: a Node relabelled out of --node-selector arrives as DELETED.
      // Its ranges are released only when a live GET says it is gone (finding 5).
      const live = await this.readLive(name, false);
      if (live === 'gone') this.forget(name);
      else if (this.allocator.holding(name)) {
        this.o.log.info({ node: name }, 'node left the Node cache but still exists (outside --node-selector?): its pod CIDR range stays reserved');
        // Its deletion will not reach this cache: look again now and then, so the range is freed once it is gone.
        this.queue.addAfter(name, EXHAUSTED_RETRY_MS);
      }
      return;
    }
    const uid = node.metadata?.uid ?? '';
    const cidrs = podCidrsOf(node);
    if (cidrs.length > 0) {
      this.written.delete(name);
      this.waiting.delete(name);
      this.unsure.delete(name);
      const held = this.allocator.holding(name);
      if (!held || held.uid !== uid || held.cidrs.join(',') !== cidrs.join(',')) this.record(node, cidrs);
      return;
    }
    if (this.written.get(name) === uid) return; // our patch is on its way into the cache
    let got: string[] | undefined;
    const unsure = this.unsure.get(name);
    if (unsure?.uid === uid) {
      // An earlier write's outcome is unknown: learn it before anything else (finding 6).
      const live = await this.readLive(name, true);
      if (live === 'gone') return this.forget(name);
      if (live.metadata?.uid === uid && podCidrsOf(live).length > 0) {
        this.unsure.delete(name);
        this.record(live, podCidrsOf(live));
        this.o.log.info({ node: name, podCIDRs: podCidrsOf(live) }, 'the earlier pod CIDR write was applied');
        return;
      }
      if (live.metadata?.uid === uid) got = unsure.cidrs; // not applied: the same range again, never a second one
    }
    if (!got) {
      this.unsure.delete(name);
      got = this.allocator.allocate(name, uid);
    }
    if (!got) {
      this.waiting.add(name);
      this.report(
        node,
        EventReasons.CIDR_NOT_AVAILABLE,
        `Node ${name} status is now: CIDRNotAvailable (no free pod CIDR range left in --cluster-cidr ${this.o.clusterCidrs.map((c) => c.text).join(',')})`,
      );
      this.queue.addAfter(name, EXHAUSTED_RETRY_MS);
      return;
    }
    this.waiting.delete(name);
    try {
      await patchNode(this.o.core, name, { metadata: { uid }, spec: { podCIDR: got[0], podCIDRs: got } }, 'strategic');
      this.written.set(name, uid);
      this.unsure.delete(name);
      this.reported.clear(name);
      this.o.log.info({ node: name, podCIDRs: got }, 'allocated pod CIDRs');
    } catch (err) {
      if (isDefiniteFailure(err)) {
        this.unsure.delete(name);
        this.allocator.release(name);
        if (isNotFound(err)) return;
      } else {
        // The API server may have applied it (a lost response, a timeout): the range stays reserved
        // for this node and the next sync re-reads the Node (upstream keeps it on a server timeout).
        this.unsure.set(name, { uid, cidrs: got });
      }
      this.report(node, EventReasons.CIDR_ASSIGNMENT_FAILED, `Node ${name} status is now: CIDRAssignmentFailed (${errorMessage(err)})`);
      throw err;
    }
  }

  /**
   * A live GET of the Node, counted; 'gone' only on 404; other errors throw
   * (the sync is retried). `cached`: whether the cache holds the Node (an
   * existing Node then confirms it; one the cache lost is a change).
   */
  private async readLive(name: string, cached: boolean): Promise<V1Node | 'gone'> {
    try {
      const node = await this.o.core.readNode({ name });
      this.liveRead(cached ? LiveReadOutcomes.CONFIRMED : LiveReadOutcomes.CHANGED);
      return node;
    } catch (err) {
      this.liveRead(isNotFound(err) ? LiveReadOutcomes.GONE : LiveReadOutcomes.ERROR);
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  /** Records a node's own podCIDRs; a problem becomes a Warning (once per distinct problem). */
  private record(node: V1Node, cidrs: string[]): void {
    const name = node.metadata!.name!;
    const problems = this.allocator.occupy(name, node.metadata?.uid ?? '', cidrs);
    if (problems.length)
      this.report(
        node,
        EventReasons.POD_CIDR_CONFLICT,
        `Node ${name}: ${problems.join('; ')}; the ranges are kept as they are and not handed out to other nodes`,
      );
    else this.reported.clear(name);
  }

  private forget(name: string): void {
    this.written.delete(name);
    this.unsure.delete(name);
    this.waiting.delete(name);
    this.reported.clear(name);
    if (this.allocator.release(name) > 0) {
      for (const w of this.waiting) this.queue.add(w);
    }
  }

  private report(node: V1Node, reason: string, message: string): void {
    const name = node.metadata!.name!;
    if (!this.reported.admit(name, message)) return;
    this.o.log.warn({ node: name, reason, problem: message }, 'node pod CIDR problem');
    this.o.recorder.event(node, 'Warning', reason, message);
  }
}
