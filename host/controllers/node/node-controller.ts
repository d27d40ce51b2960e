/**
 * The cloud node controller (upstream kubernetes/cloud-provider
 * controllers/node): initializes Nodes that the kubelet registered with the
 * taint node.cloudprovider.kubernetes.io/uninitialized, and keeps their
 * addresses current.
 *
 * For a tainted node: InstanceMetadata (coalesced into batch calls when the
 * provider supports them, each also prefetching the other nodes still to
 * initialize: metadata-batcher.ts) → status.addresses → providerID, instance type,
 * zone and region labels (GA and beta) and the provider's extra labels, with
 * the taint removed in the same conditional write. Any failure keeps the
 * taint, emits a Warning event and retries with backoff.
 *
 * Differences from upstream, on purpose: addresses are written before the
 * taint is removed (so a schedulable node always has them); the periodic
 * address refresh uses one batch call per 500 nodes; it refreshes only nodes
 * whose providerID belongs to this provider (upstream also rewrites nodes it
 * never initialized, which made addresses flap in kubernetes/kubernetes#109793);
 * a Node this provider does not own (host/ownership: another provider's
 * providerID prefix, or no providerID and no matching node selector) is never
 * initialized or relabelled and never sent to the provider, not even as a
 * batch companion; one two providers claim gets a Warning
 * `NodeOwnershipConflict` and is left alone (upstream initializes every
 * tainted Node).
 */
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { type CoreV1Api } from '../../kube/api.js';
import type { Histogram } from 'prom-client';
import type { Instances, InstanceMetadata, NodeAddress, NodeRef } from '../../cloud.js';
import { InstanceNotFoundError, InvalidCloudResponseError } from '../../errors.js';
import type { EventRecorder } from '../../kube/events.js';
import type { InformerView } from '../../kube/shard-view.js';
import { patchNode, patchNodeConditionally, patchNodeStatus } from '../../kube/patch.js';
import { WorkQueue, runWorkers } from '../../kube/workqueue.js';
import type { Registry } from 'prom-client';
import { errorMessage, type Logger } from '../../log.js';
import { every } from '../../util/every.js';
import { Progress } from '../../util/progress.js';
import { mapLimit } from '../../util/map-limit.js';
import { Annotations, Controllers, EventReasons, Taints } from '../../names.js';
import { defaultOwnership, OwnershipGate, type OwnershipSource } from '../../ownership/gate.js';
import { hasTaint, nodeAddresses, toNodeRef } from '../node-ref.js';
import { addressesChanged, desiredAddresses } from './addresses.js';
import { initLabels, reconcileLabels } from './labels.js';
import { MetadataBatcher } from './metadata-batcher.js';

export interface NodeControllerMetrics {
  taintRemovalDelay?: Histogram;
  initialSyncDelay?: Histogram;
  initDuration?: Histogram;
}

export interface NodeControllerOptions {
  core: CoreV1Api;
  /** This replica's Nodes (its shard with --shard-count, kube/shard-view.ts). */
  nodes: InformerView<V1Node>;
  instances: Instances;
  /** The provider name in providerIDs ("<name>://..."). */
  providerName: string;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  metrics?: NodeControllerMetrics;
  /** --concurrent-node-syncs. */
  workers: number;
  /** --node-status-update-frequency. */
  statusUpdateFrequencyMs: number;
  /** --concurrent-node-status-updates (resolved: > 0). */
  statusUpdateConcurrency: number;
  /** Whose Nodes these are (host/ownership); default: `<providerName>://` and every Node without a providerID. */
  ownership?: OwnershipSource;
  /** The `provider` label of the work queue's metrics: the provider's name with several providers, else absent (upstream's series). */
  metricsProvider?: string;
}

/** A node the cloud node controller has yet to initialize. */
const uninitialized = (node: V1Node): boolean => hasTaint(node, Taints.UNINITIALIZED);

export class CloudNodeController {
  private readonly queue: WorkQueue<string>;
  private readonly batcher: MetadataBatcher;
  private readonly log: Logger;
  /** When the first initialization attempt of each tainted node started (ms). */
  private readonly firstAttempt = new Map<string, number>();
  /** The address loop: a stuck loop fails readiness after three periods and a minute. */
  private readonly statusProgress: Progress;
  private readonly ownership: OwnershipGate;
  /** Name → uid of the Nodes last seen with the uninitialized taint (insertion order); each is re-read from the cache before use. */
  private readonly tainted = new Map<string, string | undefined>();

  constructor(private readonly o: NodeControllerOptions) {
    this.statusProgress = new Progress(3 * o.statusUpdateFrequencyMs + 60_000);
    this.log = o.log;
    this.ownership = new OwnershipGate({
      ...(o.ownership ?? defaultOwnership(() => o.providerName)),
      controller: Controllers.CLOUD_NODE,
      recorder: o.recorder,
      log: o.log,
      registry: o.registry,
    });
    this.queue = new WorkQueue<string>({ name: 'Nodes', provider: o.metricsProvider, registry: o.registry });
    // Every lookup also asks for the other nodes still waiting for initialization.
    this.batcher = new MetadataBatcher(o.instances, { companions: (skip) => this.taintedCompanions(skip) });
    o.nodes.addEventHandler({
      onAdd: (n) => {
        this.track(n, true);
        this.enqueue(n);
      },
      onUpdate: (_old, n) => {
        this.track(n, true);
        this.enqueue(n);
      },
      onDelete: (n) => {
        this.track(n, false);
        this.enqueue(n);
      },
    });
  }

  /**
   * Keeps {@link tainted} (an index, like client-go's indexers: no reconciling here). `present` is false
   * for a deleted Node.
   */
  private track(node: V1Node, present: boolean): void {
    const name = node.metadata?.name;
    if (!name) return;
    if (present && uninitialized(node)) this.tainted.set(name, node.metadata?.uid);
    else this.tainted.delete(name);
  }

  /**
   * The batch companions: owned Nodes still tainted, read from the cache, produced lazily (the batcher
   * stops at a call's room). Walks the tainted index, not every Node: listing every Node for every
   * batched lookup made initializing N nodes cost N² (about 1 % of the host's CPU at 300 nodes).
   */
  private *taintedCompanions(skip: (name: string, uid: string | undefined) => boolean): Generator<NodeRef> {
    for (const [name, uid] of this.tainted) {
      // One the batcher has asked for lately is passed over before it is even read.
      if (skip(name, uid)) continue;
      const node = this.o.nodes.get(name);
      if (node && uninitialized(node) && this.ownership.owns(node)) yield toNodeRef(node);
    }
  }

  private enqueue(node: V1Node): void {
    const name = node.metadata?.name;
    if (name) this.queue.add(name);
  }

  /** Requeues every tainted node, e.g. when the plugin becomes ready again after an outage. */
  requeueTainted(): void {
    for (const n of this.o.nodes.list()) if (uninitialized(n)) this.enqueue(n);
  }

  /** Healthy while the address loop keeps running (a stuck loop fails /healthz). */
  healthy(): boolean {
    return this.statusProgress.healthy();
  }

  /** Runs until `signal` aborts: waits for the node cache, then workers and the address loop. */
  async run(signal: AbortSignal): Promise<void> {
    this.log.info({ workers: this.o.workers }, 'Starting cloud node controller');
    if (!(await this.o.nodes.waitForSync(signal))) return;
    this.statusProgress.mark();
    const loop = this.statusLoop(signal);
    await runWorkers(this.queue, this.o.workers, (name) => this.sync(name), { log: this.log, signal });
    await loop;
    this.log.info('Shutting down cloud node controller');
  }

  /** Level-triggered reconcile of one node by name; a rejection requeues it. */
  async sync(name: string): Promise<void> {
    const node = this.o.nodes.get(name);
    if (!node) {
      this.firstAttempt.delete(name);
      this.ownership.forget(name);
      return;
    }
    // Not this provider's Node (another's, nobody's, or claimed twice): nothing is asked or written.
    if (!this.ownership.admit(node)) {
      this.firstAttempt.delete(name);
      return;
    }
    if (!uninitialized(node)) {
      await this.reconcileNodeLabels(node);
      return;
    }
    if (!this.firstAttempt.has(name)) this.firstAttempt.set(name, Date.now());
    try {
      await this.initialize(node);
    } catch (err) {
      this.reportFailure(node, err);
      throw err;
    }
  }

  private async initialize(cached: V1Node): Promise<void> {
    const name = cached.metadata!.name!;
    const meta = await this.batcher.get(toNodeRef(cached));
    const current = nodeAddresses(cached);
    const provided = cached.metadata?.annotations?.[Annotations.PROVIDED_NODE_IP];
    // As upstream at init: the provided node IP must be among the cloud's own addresses (throws, also when it
    // reports none); the kubelet's Hostname address, which desiredAddresses keeps, does not vouch for it.
    if (provided !== undefined) desiredAddresses(meta.nodeAddresses, [], provided);
    const addresses = desiredAddresses(meta.nodeAddresses, current, provided);
    let base = cached;
    // No cloud addresses: the kubelet's stay, as upstream (and the refresh below) leave them.
    if (meta.nodeAddresses.length > 0 && addressesChanged(addresses, current)) {
      // The answer carries the new resourceVersion: the conditional patch below
      // starts from it instead of from the (now stale) cached node.
      base = await patchNodeStatus(this.o.core, name, { status: { addresses } }, 'merge');
    }
    const done = await this.removeTaintWithMetadata(base, meta);
    if (!done) return;
    const created = Date.parse(String(cached.metadata?.creationTimestamp ?? ''));
    const now = Date.now();
    if (!Number.isNaN(created)) {
      this.o.metrics?.taintRemovalDelay?.observe((now - created) / 1000);
      this.o.metrics?.initialSyncDelay?.observe((now - created) / 1000);
    }
    const first = this.firstAttempt.get(name);
    if (first !== undefined) this.o.metrics?.initDuration?.observe((now - first) / 1000);
    this.firstAttempt.delete(name);
    this.log.info({ node: name, providerID: meta.providerId || cached.spec?.providerID }, 'initialized node');
    this.o.recorder.event(cached, 'Normal', EventReasons.SYNCED, 'Node synced successfully');
  }

  /**
   * One conditional merge patch (resourceVersion precondition) that sets
   * providerID and labels and drops the taint; on conflict re-reads the node
   * from the API server and tries again. Returns false when the node no
   * longer needs it (taint already gone or node deleted).
   */
  private removeTaintWithMetadata(cached: V1Node, meta: InstanceMetadata): Promise<boolean> {
    const name = cached.metadata!.name!;
    return patchNodeConditionally(
      this.o.core,
      cached,
      (node) => {
        if (!hasTaint(node, Taints.UNINITIALIZED)) return undefined;
        const plan = initLabels(node.metadata?.labels ?? {}, meta);
        for (const s of plan.skipped) this.log.warn({ node: name, label: s.key, why: s.why }, 'not applying provider label');
        const taints: V1Taint[] = (node.spec?.taints ?? []).filter((t) => t.key !== Taints.UNINITIALIZED);
        const spec: Record<string, unknown> = { taints };
        if (!node.spec?.providerID && meta.providerId) spec.providerID = meta.providerId;
        return { metadata: { labels: plan.set }, spec };
      },
      (attempt) => this.log.debug({ node: name, attempt }, 'node changed while initializing it; re-reading'),
    );
  }

  private async reconcileNodeLabels(node: V1Node): Promise<void> {
    const set = reconcileLabels(node.metadata?.labels ?? {});
    if (Object.keys(set).length === 0) return;
    await patchNode(this.o.core, node.metadata!.name!, { metadata: { labels: set } }, 'merge');
  }

  private reportFailure(node: V1Node, err: unknown): void {
    const name = node.metadata?.name;
    let reason: string = EventReasons.FAILED_TO_SYNC_NODE;
    let message = `failed to initialize node: ${errorMessage(err)}`;
    if (err instanceof InvalidCloudResponseError) reason = EventReasons.INVALID_CLOUD_RESPONSE;
    if (err instanceof InstanceNotFoundError) {
      message = `the cloud provider has no instance for node ${name}; the node keeps the ${Taints.UNINITIALIZED} taint until it has one`;
    }
    this.o.recorder.event(node, 'Warning', reason, message);
  }

  /**
   * The address refresh loop: one pass over initialized nodes at once (as
   * upstream, so addresses changed while the host was down are not a period
   * late), then one every period (sliding).
   */
  private statusLoop(signal: AbortSignal): Promise<void> {
    return every(this.o.statusUpdateFrequencyMs, signal, async () => {
      try {
        await this.updateNodeStatus();
      } catch (err) {
        this.log.warn({ err: errorMessage(err) }, 'node address refresh failed');
      }
      this.statusProgress.mark();
    });
  }

  /** One address refresh pass; errors per node are logged and skipped until the next pass. */
  async updateNodeStatus(): Promise<void> {
    // Initialized Nodes with a providerID this provider owns: the batch carries no other provider's Node.
    const nodes = this.o.nodes.list().filter((n) => !uninitialized(n) && (n.spec?.providerID ?? '') !== '' && this.ownership.owns(n));
    if (nodes.length === 0) return;
    const results = await this.o.instances.instancesMetadata(nodes.map(toNodeRef));
    const writes: { name: string; addresses: NodeAddress[] }[] = [];
    nodes.forEach((node, i) => {
      const r = results[i]!;
      const name = node.metadata!.name!;
      if (!r.metadata) {
        this.log.info({ node: name, err: errorMessage(r.error) }, 'skipping address refresh for node');
        return;
      }
      if (r.metadata.nodeAddresses.length === 0) return; // never clear addresses
      const current = nodeAddresses(node);
      try {
        const desired = desiredAddresses(r.metadata.nodeAddresses, current, node.metadata?.annotations?.[Annotations.PROVIDED_NODE_IP]);
        if (addressesChanged(desired, current)) writes.push({ name, addresses: desired });
      } catch (err) {
        this.log.warn({ node: name, err: errorMessage(err) }, 'skipping address refresh for node');
      }
    });
    await mapLimit(writes, this.o.statusUpdateConcurrency, async ({ name, addresses }) => {
      try {
        await patchNodeStatus(this.o.core, name, { status: { addresses } }, 'merge');
        this.log.info({ node: name }, 'updated node addresses');
      } catch (err) {
        this.log.warn({ node: name, err: errorMessage(err) }, 'failed to update node addresses');
      }
    });
  }
}
