/**
 * Shared informers (client-go's SharedInformerFactory): one cache per
 * resource for the whole host, created on first use by any controller and
 * started together once every controller has registered its handlers. The
 * host's scoping flags apply here: `--node-selector` to Nodes and
 * `--watch-namespace` to namespaced resources. The caches keep objects
 * without fields no controller reads (cache-transforms.ts). Watches go over keep-alive
 * connections of the clients' pool (its watch agent, apart from requests).
 * Every informer of a factory resyncs with the same period, drawn once in
 * [--min-resync-period, 2 × --min-resync-period), as upstream's factory.
 */
import type { KubernetesObject, V1Node } from '@kubernetes/client-node';
import type { Logger } from '../log.js';
import { dropManagedFields, slimNode } from './cache-transforms.js';
import type { KubeClients } from './client.js';
import { Informer, type ListResult } from './informer.js';

export interface InformerFactoryOptions {
  /** Lists go through these clients; watches through their REST client, on its pool's watch connections. */
  clients: KubeClients;
  log: Logger;
  /** Label selector for Nodes; '' = all. */
  nodeSelector: string;
  /** Namespace for namespaced resources; '' = all. */
  namespace: string;
  /** --min-resync-period in ms; 0 or absent: informers never resync. */
  minResyncPeriodMs?: number;
  /** Source of randomness for the resync period (tests). Default Math.random. */
  random?: () => number;
}

/** Upstream's ResyncPeriod: `minMs` × [1, 2), so that replicas and restarts do not resync in lock-step. */
export function resyncPeriodMs(minMs: number, random: () => number = Math.random): number {
  return minMs > 0 ? Math.floor(minMs * (1 + random())) : 0;
}

/** Arguments a resource's list function receives: the selectors the watch uses too. */
export interface ListArgs {
  labelSelector?: string;
  namespace?: string;
}

/** How to list and watch one resource. */
export interface ResourceSpec<T extends KubernetesObject> {
  /** Cache key and log name, e.g. "services". */
  name: string;
  /** Watch path for all namespaces / cluster-scoped, e.g. `/api/v1/services`. */
  path: string;
  /** Watch path inside one namespace, e.g. (ns) => `/api/v1/namespaces/${ns}/services`; absent for cluster-scoped resources. */
  namespacedPath?: (namespace: string) => string;
  /** Lists with the same scope as the watch. */
  list(clients: KubeClients, args: ListArgs): Promise<ListResult<T>>;
  /** Whether `--node-selector` applies (Nodes only). */
  nodeScoped?: boolean;
  /** A fixed label selector of the list and the watch (e.g. EndpointSlices of Services); not with nodeScoped. */
  labelSelector?: string;
  /** What the cache keeps of each object (cache-transforms.ts); default: all but managedFields. */
  transform?: (obj: T) => T;
}

export class InformerFactory {
  private readonly informers = new Map<string, Informer<KubernetesObject>>();
  private started = false;
  /** Resync period of every informer of this factory, in ms (0: none). */
  readonly resyncPeriodMs: number;

  constructor(private readonly o: InformerFactoryOptions) {
    this.resyncPeriodMs = resyncPeriodMs(o.minResyncPeriodMs ?? 0, o.random);
  }

  /** The shared informer of `spec.name`, created on first use. Handlers added after start() still get every cached object. */
  for<T extends KubernetesObject>(spec: ResourceSpec<T>): Informer<T> {
    const existing = this.informers.get(spec.name);
    if (existing) return existing as unknown as Informer<T>;
    const labelSelector = spec.nodeScoped && this.o.nodeSelector ? this.o.nodeSelector : spec.labelSelector;
    const namespace = spec.namespacedPath && this.o.namespace ? this.o.namespace : undefined;
    const path = namespace ? spec.namespacedPath!(namespace) : spec.path;
    const args: ListArgs = { labelSelector, namespace };
    const transform = spec.transform ?? dropManagedFields;
    const informer = new Informer<T>(this.o.clients.rest, path, () => spec.list(this.o.clients, args), {
      log: this.o.log.child({ informer: spec.name }),
      labelSelector,
      transform,
      dropsManagedFields: DROPS_MANAGED_FIELDS.has(transform),
      resyncPeriodMs: this.resyncPeriodMs,
    });
    this.informers.set(spec.name, informer as unknown as Informer<KubernetesObject>);
    if (this.started) informer.start();
    return informer;
  }

  /** The Nodes informer (scoped by --node-selector). */
  nodes(): Informer<V1Node> {
    return this.for(NODES);
  }

  /** Starts every informer created so far, and any created later. */
  start(): void {
    this.started = true;
    for (const i of this.informers.values()) i.start();
  }

  /**
   * Whether the factory has started and every informer has completed its first list. Not before start():
   * controllers create their informers while they start, so an empty set then means "not yet", not "synced".
   */
  hasSynced(): boolean {
    return this.started && [...this.informers.values()].every((i) => i.hasSynced());
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}

/** The transforms that drop `metadata.managedFields` (cache-transforms.ts). */
const DROPS_MANAGED_FIELDS = new Set<unknown>([dropManagedFields, slimNode]);

const NODES: ResourceSpec<V1Node> = {
  name: 'nodes',
  path: '/api/v1/nodes',
  nodeScoped: true,
  list: (c, a) => c.core.listNode({ labelSelector: a.labelSelector }),
  transform: slimNode,
};
