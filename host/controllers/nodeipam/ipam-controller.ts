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
 * (upstream emits them as Normal; README differences).
 * - No free range → Warning `CIDRNotAvailable`; the node waits and is retried
 *   as soon as any range is released (and every minute).
 * - Write failure → the range is released, Warning `CIDRAssignmentFailed`,
 *   retry with backoff. spec.podCIDRs can only be set once (the API server
 *   refuses changes), so a Node someone else gave ranges meanwhile is left
 *   as it is.
 */
import type { V1Node } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Registry } from 'prom-client';
import { isNotFound } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { patchNode } from '../../kube/patch.js';
import { WorkQueue, runWorkers } from '../../kube/workqueue.js';
import { errorMessage, type Logger } from '../../log.js';
import { EventReasons } from '../../names.js';
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

export class IpamController {
  readonly allocator: RangeAllocator;
  private readonly queue: WorkQueue<string>;
  /** Nodes we gave ranges to whose update the cache has not shown yet (name → uid). */
  private readonly written = new Map<string, string>();
  /** Nodes waiting for a free range. */
  private readonly waiting = new Set<string>();
  /** Last problem reported per node (not repeated). */
  private readonly reported = new RepeatFilter();

  constructor(private readonly o: IpamControllerOptions) {
    this.allocator = new RangeAllocator(o.clusterCidrs, o.maskSizes);
    this.queue = new WorkQueue<string>({ name: 'nodeipam', registry: o.registry });
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
      this.forget(name);
      return;
    }
    const uid = node.metadata?.uid ?? '';
    const cidrs = podCidrsOf(node);
    if (cidrs.length > 0) {
      this.written.delete(name);
      this.waiting.delete(name);
      const held = this.allocator.holding(name);
      if (!held || held.uid !== uid || held.cidrs.join(',') !== cidrs.join(',')) this.record(node, cidrs);
      return;
    }
    if (this.written.get(name) === uid) return; // our patch is on its way into the cache
    const got = this.allocator.allocate(name, uid);
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
      this.reported.clear(name);
      this.o.log.info({ node: name, podCIDRs: got }, 'allocated pod CIDRs');
    } catch (err) {
      this.allocator.release(name);
      if (isNotFound(err)) return;
      this.report(node, EventReasons.CIDR_ASSIGNMENT_FAILED, `Node ${name} status is now: CIDRAssignmentFailed (${errorMessage(err)})`);
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
