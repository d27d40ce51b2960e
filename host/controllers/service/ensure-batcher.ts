/**
 * Coalesces EnsureLoadBalancer calls into EnsureLoadBalancers batch calls
 * (when the provider has CAPABILITY_LOAD_BALANCER_BATCH_ENSURE), so creating
 * N load balancers costs about N/MAX_COMPANIONS cloud calls instead of N,
 * whatever the number of service workers (the node controller's
 * metadata-batcher.ts does the same for instance metadata):
 *  - ensures made at the same moment by concurrent workers with the same
 *    backend set share one call (an ensure waits at most `maxWaitMs` for
 *    company);
 *  - each call also carries `companions`: Services still queued whose ensure
 *    can be done now, chosen (and locked, and given their finalizer) by the
 *    controller. Their results are kept for `resultTtlMs`; the worker that
 *    later syncs one of them finds the result at hand instead of calling the
 *    cloud again, if it would send the very same request (same Service
 *    fields, uid included, and the same backend set). So one worker drains
 *    the queue at the API server's pace, not at cloud latency × Services.
 * A kept result is used once, never after its TTL. A companion is asked for
 * at most once per TTL (whatever came of it). A call of one Service with no
 * companion is sent as a plain EnsureLoadBalancer.
 */
import type { NodeRef } from '../../cloud.js';
import { MAX_BATCH_ENSURE, type LbStatus, type LoadBalancers, type ServiceRef } from '../../cloud-load-balancers.js';
import { errorMessage, type Logger } from '../../log.js';

/** One Service's ensure as a worker sends it. */
export interface EnsureWork {
  /** The Service's queue key (namespace/name). */
  key: string;
  ref: ServiceRef;
  nodes: NodeRef[];
  /** backendSetKey of `nodes`: calls are shared only by ensures with the same backend set. */
  nodesSig: string;
}

/** A Service the controller adds to a call; `release` is called once the call is over (its lock). */
export interface Companion {
  key: string;
  ref: ServiceRef;
  release(): void;
}

/**
 * Picks at most `room` companions for a call whose backend set is `nodesSig`,
 * none for which `skip(key)` holds. Each returned companion must be ready for
 * its ensure exactly as a worker's own sync would be (locked, finalizer
 * written, tracked for deletion).
 */
export type CompanionSource = (room: number, nodesSig: string, skip: (key: string) => boolean) => Promise<Companion[]>;

/** How long a companion's result (and its "recently asked") lasts, by default. */
const RESULT_TTL_MS = 30_000;
/** Companions per call at most: bounds how long workers wait on a call being prepared. */
const MAX_COMPANIONS = 200;

interface Pending {
  work: EnsureWork;
  resolve: (s: LbStatus) => void;
  reject: (e: Error) => void;
}

interface Kept {
  sig: string;
  status?: LbStatus;
  error?: Error;
  at: number;
}

/**
 * Everything of a request that decides its result, as one comparable string.
 * The Service's current status is left out: it is what an earlier ensure
 * answered, not what the load balancer should be, and it changes when the
 * host writes that answer.
 */
function requestSig(ref: ServiceRef, nodesSig: string): string {
  const sorted = (m: Record<string, string>) => Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([
    { ...ref, status: undefined, annotations: sorted(ref.annotations), labels: sorted(ref.labels), selector: ref.selector && sorted(ref.selector) },
    nodesSig,
  ]);
}

export class EnsureBatcher {
  private pending: Pending[] = [];
  private timer?: NodeJS.Timeout;
  /** Companions' results by key, until a worker takes them or they expire. */
  private readonly kept = new Map<string, Kept>();
  /** When each key was last sent as a companion (ms). */
  private readonly askedAt = new Map<string, number>();
  private readonly companions: CompanionSource;
  private readonly maxWaitMs: number;
  private readonly resultTtlMs: number;
  private readonly maxCompanions: number;
  private readonly now: () => number;

  constructor(
    private readonly lbs: LoadBalancers,
    private readonly clusterName: string,
    private readonly log: Logger,
    opts: {
      companions?: CompanionSource;
      /** How long an ensure waits for company (default 2 ms). */
      maxWaitMs?: number;
      resultTtlMs?: number;
      maxCompanions?: number;
      now?: () => number;
    } = {},
  ) {
    this.companions = opts.companions ?? (async () => []);
    this.maxWaitMs = opts.maxWaitMs ?? 2;
    this.resultTtlMs = opts.resultTtlMs ?? RESULT_TTL_MS;
    this.maxCompanions = Math.min(opts.maxCompanions ?? MAX_COMPANIONS, MAX_BATCH_ENSURE - 1);
    this.now = opts.now ?? Date.now;
  }

  /** Same contract as LoadBalancers.ensureLoadBalancer. */
  ensure(work: EnsureWork): Promise<LbStatus> {
    if (!this.lbs.batchEnsure) return this.lbs.ensureLoadBalancer(this.clusterName, work.ref, work.nodes);
    const hit = this.kept.get(work.key);
    if (hit) {
      this.kept.delete(work.key);
      if (this.now() - hit.at < this.resultTtlMs && hit.sig === requestSig(work.ref, work.nodesSig)) {
        return hit.error ? Promise.reject(hit.error) : Promise.resolve(hit.status!);
      }
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ work, resolve, reject });
      if (this.pending.length >= MAX_BATCH_ENSURE) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.maxWaitMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const groups = new Map<string, Pending[]>();
    for (const p of this.pending.splice(0)) {
      const g = groups.get(p.work.nodesSig);
      if (g) g.push(p);
      else groups.set(p.work.nodesSig, [p]);
    }
    for (const [nodesSig, batch] of groups) void this.call(nodesSig, batch);
  }

  private prune(): void {
    const now = this.now();
    for (const [key, at] of this.askedAt) if (now - at >= this.resultTtlMs) this.askedAt.delete(key);
    for (const [key, k] of this.kept) if (now - k.at >= this.resultTtlMs) this.kept.delete(key);
  }

  /** One call for `batch` (same backend set, at most MAX_BATCH_ENSURE) and its companions. */
  private async call(nodesSig: string, batch: Pending[]): Promise<void> {
    this.prune();
    const inCall = new Set(batch.map((p) => p.work.key));
    const room = Math.min(this.maxCompanions, MAX_BATCH_ENSURE - batch.length);
    let extra: Companion[] = [];
    try {
      if (room > 0)
        extra = (await this.companions(room, nodesSig, (key) => inCall.has(key) || this.kept.has(key) || this.askedAt.has(key))).slice(0, room);
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'choosing companion load balancers failed; the call carries only its own Services');
    }
    try {
      const nodes = batch[0]!.work.nodes;
      if (batch.length === 1 && extra.length === 0) {
        const w = batch[0]!.work;
        batch[0]!.resolve(await this.lbs.ensureLoadBalancer(this.clusterName, w.ref, nodes));
        return;
      }
      const asked = this.now();
      for (const c of extra) this.askedAt.set(c.key, asked);
      const results = await this.lbs.ensureLoadBalancers(this.clusterName, [...batch.map((p) => p.work.ref), ...extra.map((c) => c.ref)], nodes);
      batch.forEach((p, i) => {
        const r = results[i]!;
        if (r.error) p.reject(r.error);
        else p.resolve(r.status);
      });
      const at = this.now();
      extra.forEach((c, i) => {
        const r = results[batch.length + i]!;
        this.kept.set(c.key, { sig: requestSig(c.ref, nodesSig), status: r.status, error: r.error, at });
      });
      this.log.debug({ services: batch.length, companions: extra.length }, 'batch load balancer ensure');
    } catch (err) {
      // Nothing was answered: each worker handles the error as its own, companions are retried by their own syncs.
      for (const p of batch) p.reject(err as Error);
    } finally {
      for (const c of extra) c.release();
    }
  }
}
