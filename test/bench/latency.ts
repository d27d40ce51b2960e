/**
 * Per-object latency the way SIG Scalability's ClusterLoader2 measures it
 * (its ServiceCreationLatency measurement: per Service, the time of each
 * phase, then percentiles of the transitions between them), observed by a
 * watch in the bench process:
 * - Services: `create_to_assigned_loadbalancer`, from the Service's creation
 *   to the first event that shows `status.loadBalancer.ingress`;
 * - Nodes: node-init, from the Node's creation to the first event without
 *   the `node.cloudprovider.kubernetes.io/uninitialized` taint.
 *
 * Both ends are the bench process's clock when the watch delivered the event
 * (ClusterLoader2 takes the start from `metadata.creationTimestamp`, which has
 * one-second resolution, and the end from its own clock, as here). The watch
 * is opened before the first create, so the ADDED event is the creation as
 * this process saw it; an object already past its phase when first seen (a
 * relist after the watch expired) counts from that moment and is reported as
 * `relisted`.
 */
import { CoreV1Api, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { percentile } from './stats.js';
import { initialized } from './nodes.js';

export interface LatencySummary {
  /** Objects that reached the phase (each one latency). */
  count: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Percentiles of `ms` (any order); NaN for an empty list. */
export function summarize(ms: number[]): LatencySummary {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    count: sorted.length,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

interface ListResponse {
  metadata?: { resourceVersion?: string };
  items?: KubernetesObject[];
}

/** A phase test: whether `obj`, as one watch event delivered it, shows the phase. */
export type PhaseTest<T> = (obj: T) => boolean;

/**
 * Watches `path` (a collection, e.g. `/api/v1/nodes`) and records, per
 * object (namespace/name), the bench clock when each phase was first seen:
 * `created` when the object was first seen, `deleted` at its DELETED event,
 * and each of `phases` at the first event where its test held. Phases the
 * watch cannot see (e.g. a load balancer answering) are set with mark().
 * start() resolves once the watch is open; stop() ends it. A watch the API
 * server ends is reopened from the last resourceVersion seen; a 410 Gone
 * relists.
 */
export class PhaseWatch<T extends KubernetesObject> {
  private readonly times = new Map<string, Map<string, number>>();
  private readonly counts = new Map<string, number>();
  private resourceVersion = '';
  private abort?: AbortController;
  private stopped = false;
  /** Times the watch was reopened after the API server ended it, and relists after 410 Gone. */
  reopened = 0;
  relisted = 0;

  constructor(
    private readonly kc: KubeConfig,
    private readonly path: string,
    private readonly labelSelector: string | undefined,
    private readonly phases: Record<string, PhaseTest<T>>,
    /** The same collection as one LIST (its items and resourceVersion), e.g. CoreV1Api.listNode. */
    private readonly lister: () => Promise<ListResponse>,
    /** Called for every object an event (or the first LIST) delivers, after its phases are recorded. */
    private readonly onObject?: (key: string, obj: T, type: 'ADDED' | 'MODIFIED' | 'DELETED') => void,
  ) {}

  async start(): Promise<void> {
    await this.list();
    await this.open();
  }

  /** Objects that reached `phase` so far. */
  count(phase: string): number {
    return this.counts.get(phase) ?? 0;
  }

  /** When `key` reached `phase` (bench clock, ms), if it has. */
  at(key: string, phase: string): number | undefined {
    return this.times.get(key)?.get(phase);
  }

  /** Records `phase` for `key` at `now` unless it was recorded before; false if it was. */
  mark(key: string, phase: string, now: number): boolean {
    let t = this.times.get(key);
    if (!t) this.times.set(key, (t = new Map()));
    if (t.has(phase)) return false;
    t.set(phase, now);
    this.counts.set(phase, this.count(phase) + 1);
    return true;
  }

  /** Milliseconds from `from` to `to`, per object that reached both (ClusterLoader2's transition). */
  between(from: string, to: string): number[] {
    const out: number[] = [];
    for (const t of this.times.values()) {
      const a = t.get(from);
      const b = t.get(to);
      if (a !== undefined && b !== undefined) out.push(b - a);
    }
    return out;
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  /** Records what one watch event (or a listed item, as ADDED) shows, at `now`. */
  handle(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T, now: number): void {
    const key = obj.metadata?.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata!.name!;
    this.mark(key, 'created', now);
    for (const [phase, test] of Object.entries(this.phases)) if (!this.at(key, phase) && test(obj)) this.mark(key, phase, now);
    if (type === 'DELETED') this.mark(key, 'deleted', now);
    if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
    this.onObject?.(key, obj, type);
  }

  private async list(): Promise<void> {
    const body = await this.lister();
    const now = Date.now();
    for (const item of body.items ?? []) this.handle('ADDED', item as T, now);
    this.resourceVersion = body.metadata?.resourceVersion ?? this.resourceVersion;
  }

  private async open(): Promise<void> {
    const query: Record<string, string | boolean> = { resourceVersion: this.resourceVersion, allowWatchBookmarks: true };
    if (this.labelSelector) query.labelSelector = this.labelSelector;
    this.abort = await new Watch(this.kc).watch(
      this.path,
      query,
      (phase: string, obj: T & { code?: number }) => {
        if (phase === 'ERROR') {
          if (obj.code === 410) this.resourceVersion = '';
          return;
        }
        if (phase === 'BOOKMARK') {
          if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
          return;
        }
        if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED') this.handle(phase, obj, Date.now());
      },
      (err: unknown) => {
        if (this.stopped || (err as Error | undefined)?.name === 'AbortError') return;
        void this.reopen();
      },
    );
  }

  private async reopen(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        if (!this.resourceVersion) {
          this.relisted++;
          await this.list();
        }
        this.reopened++;
        await this.open();
        return;
      } catch {
        await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** attempt)));
      }
    }
  }
}

/**
 * One transition, created → `reached`, of the objects of a collection: how
 * many were seen, how many reached it, and the latencies.
 */
export class TransitionWatch<T extends KubernetesObject> extends PhaseWatch<T> {
  constructor(kc: KubeConfig, path: string, labelSelector: string | undefined, reached: PhaseTest<T>, lister: () => Promise<ListResponse>) {
    super(kc, path, labelSelector, { reached }, lister);
  }

  /** Objects seen so far, and how many reached the phase. */
  get seen(): number {
    return this.count('created');
  }
  get done(): number {
    return this.count('reached');
  }

  /** Milliseconds from first seen to phase reached, per object that reached it. */
  latenciesMs(): number[] {
    return this.between('created', 'reached');
  }
}

/** Node-init latency: Nodes matching `labelSelector`, created → uninitialized taint gone. */
export function nodeInitWatch(kc: KubeConfig, labelSelector: string) {
  return new TransitionWatch<{ metadata?: { name?: string }; spec?: { taints?: { key: string }[] } }>(
    kc,
    '/api/v1/nodes',
    labelSelector,
    initialized,
    () => kc.makeApiClient(CoreV1Api).listNode({ labelSelector }),
  );
}

/** ClusterLoader2's create_to_assigned_loadbalancer: Services of `namespace`, created → first ingress. */
export function lbAssignWatch(kc: KubeConfig, namespace: string) {
  return new TransitionWatch<{ metadata?: { name?: string }; status?: { loadBalancer?: { ingress?: unknown[] } } }>(
    kc,
    `/api/v1/namespaces/${namespace}/services`,
    undefined,
    (s) => (s.status?.loadBalancer?.ingress?.length ?? 0) > 0,
    () => kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace }),
  );
}

const sec = (ms: number) => (Number.isNaN(ms) ? '—' : (ms / 1000).toFixed(2));

/**
 * Table rows `| <what> p50/p90/p99 (s) | <label> | ours | upstream | ratio |`
 * for the latency summary each side's figures carry.
 */
export function latencyRows<F>(results: { label: string; ours: F; upstream: F }[], what: string, pick: (f: F) => LatencySummary): string {
  const rows: string[] = [];
  for (const [p, key] of [
    ['p50', 'p50Ms'],
    ['p90', 'p90Ms'],
    ['p99', 'p99Ms'],
  ] as const) {
    for (const { label, ours, upstream } of results) {
      const o = pick(ours)[key];
      const u = pick(upstream)[key];
      rows.push(`| ${what} ${p} (s) | ${label} | **${sec(o)}** | ${sec(u)} | ${u > 0 ? `${(o / u).toFixed(2)}×` : '—'} |`);
    }
  }
  return rows.join('\n');
}
