/**
 * Coalesces InstanceMetadata lookups into batch calls (when the provider has
 * batch RPCs), so that initializing N nodes costs about N/500 cloud calls
 * instead of N, whatever the number of node workers:
 *  - lookups made at the same moment by concurrent workers share one call
 *    (a lookup waits at most `maxWaitMs` for company);
 *  - each call also asks for the other nodes still waiting to be initialized
 *    (`companions`), and keeps their answers for `prefetchTtlMs`: a worker that
 *    comes to one of them finds its metadata at hand. So with one worker (the
 *    upstream default) node initialization is bounded by the API server, not
 *    by cloud latency × nodes.
 * A companion is asked for at most once per `prefetchTtlMs` (failed or not),
 * so nodes the cloud cannot answer for do not make every call bigger; an
 * answer is used once, and never after its TTL.
 *
 * Prefetched answers are keyed by node name AND uid: a Node deleted and
 * registered again under the same name (another instance, a new uid) within
 * the TTL must not get the old instance's answer, whose providerID is
 * immutable once written.
 */
import type { InstanceMetadata, Instances, NodeRef } from '../../cloud.js';
import { MAX_BATCH_NODES } from '../../cloud.js';

interface Pending {
  node: NodeRef;
  resolve: (m: InstanceMetadata) => void;
  reject: (e: Error) => void;
}

/** How long a prefetched answer (and a companion's "recently asked") lasts, by default. */
const PREFETCH_TTL_MS = 30_000;

/** A Node's identity for the prefetch cache: its name alone would match a Node re-registered under that name. */
function nodeKey(node: NodeRef): string {
  return keyOf(node.name, node.uid);
}

function keyOf(name: string, uid: string | undefined): string {
  return `${name}\u0000${uid ?? ''}`;
}

export class MetadataBatcher {
  private pending: Pending[] = [];
  private timer?: NodeJS.Timeout;
  /** Prefetched answers by node key (name and uid). */
  private readonly prefetched = new Map<string, { meta: InstanceMetadata; at: number }>();
  /** When each node (by key) was last asked for as a companion (ms). */
  private readonly askedAt = new Map<string, number>();

  private readonly companions: (skip: (name: string, uid: string | undefined) => boolean) => Iterable<NodeRef>;
  private readonly maxWaitMs: number;
  private readonly prefetchTtlMs: number;
  private readonly now: () => number;

  constructor(
    private readonly instances: Instances,
    opts: {
      /**
       * Other nodes worth looking up in the same call (e.g. the nodes still to initialize), in order of
       * preference; read only as far as the call has room, so a lazy iterable costs no more than that.
       * `skip` says which nodes the call would pass over anyway (in it already, asked for within the TTL,
       * or prefetched): a source may leave them out before building their NodeRef.
       */
      companions?: (skip: (name: string, uid: string | undefined) => boolean) => Iterable<NodeRef>;
      /** How long a lookup waits for company (default 2 ms). */
      maxWaitMs?: number;
      prefetchTtlMs?: number;
      now?: () => number;
    } = {},
  ) {
    this.companions = opts.companions ?? (() => []);
    this.maxWaitMs = opts.maxWaitMs ?? 2;
    this.prefetchTtlMs = opts.prefetchTtlMs ?? PREFETCH_TTL_MS;
    this.now = opts.now ?? Date.now;
  }

  /** Same contract as Instances.instanceMetadata. */
  get(node: NodeRef): Promise<InstanceMetadata> {
    if (!this.instances.batched) return this.instances.instanceMetadata(node);
    const hit = this.prefetched.get(nodeKey(node));
    if (hit) {
      this.prefetched.delete(nodeKey(node));
      if (this.now() - hit.at < this.prefetchTtlMs) return Promise.resolve(hit.meta);
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ node, resolve, reject });
      if (this.pending.length >= MAX_BATCH_NODES) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.maxWaitMs);
    });
  }

  /** Companions to add to a call for `batch`: not asked for within the TTL, not in the call already. */
  private extra(batch: Pending[]): NodeRef[] {
    const now = this.now();
    for (const [key, at] of this.askedAt) if (now - at >= this.prefetchTtlMs) this.askedAt.delete(key);
    for (const [key, p] of this.prefetched) if (now - p.at >= this.prefetchTtlMs) this.prefetched.delete(key);
    const room = MAX_BATCH_NODES - batch.length;
    const inCall = new Set(batch.map((p) => nodeKey(p.node)));
    for (const key of inCall) this.askedAt.set(key, now);
    const out: NodeRef[] = [];
    const skip = (name: string, uid: string | undefined): boolean => {
      const key = keyOf(name, uid);
      return inCall.has(key) || this.askedAt.has(key) || this.prefetched.has(key);
    };
    for (const n of this.companions(skip)) {
      if (out.length >= room) break;
      const key = nodeKey(n);
      if (inCall.has(key) || this.askedAt.has(key) || this.prefetched.has(key)) continue;
      inCall.add(key);
      out.push(n);
      this.askedAt.set(key, now);
    }
    return out;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const extra = this.extra(batch);
    this.instances.instancesMetadata([...batch.map((p) => p.node), ...extra]).then(
      (results) => {
        batch.forEach((p, i) => {
          const r = results[i];
          if (r?.metadata) p.resolve(r.metadata);
          else p.reject(r?.error ?? new Error('no result for node'));
        });
        const at = this.now();
        extra.forEach((n, i) => {
          const r = results[batch.length + i];
          if (r?.metadata) this.prefetched.set(nodeKey(n), { meta: r.metadata, at });
        });
      },
      (err: Error) => batch.forEach((p) => p.reject(err)),
    );
  }
}
