/**
 * Alpha sharding (--shard-count / --shard-index, docs/design/sharding.md):
 * the part of a shared informer one shard serves. Every replica still lists
 * and watches everything (the informer stays shared: the cluster-wide
 * controllers of shard 0 and the service controller's backend Nodes need all
 * of it); a sharded controller sees only the objects whose uid hashes to its
 * shard, in its handlers and in `list`/`get`, so it never enqueues, reads or
 * acts on another shard's object. A uid never changes, so an object never
 * moves between shards while it exists (a Service deleted and created again
 * under the same name gets a new uid and may land elsewhere: its old load
 * balancer is the old uid's, cleaned up by the old shard).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Informer, InformerHandler } from './informer.js';

/** What a controller reads from an informer: the whole informer or one shard of it. */
export type InformerView<T extends KubernetesObject> = Pick<Informer<T>, 'addEventHandler' | 'hasSynced' | 'waitForSync' | 'list' | 'get'>;

/** This replica's shard: `index` of `count` (count 1 = everything). */
export interface ShardSpec {
  readonly count: number;
  readonly index: number;
}

/**
 * The shard of a uid: 32-bit FNV-1a of its text, modulo `count`. Stable
 * across processes and versions (every replica must agree): do not change it
 * without a migration, since a changed hash moves objects between shards.
 */
export function shardOfUid(uid: string, count: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < uid.length; i++) {
    h ^= uid.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

/**
 * Whether `obj` belongs to `shard`. An object without a uid (never the case
 * for what the API server returns) belongs to shard 0, so it is served once.
 */
export function inShard(obj: KubernetesObject, shard: ShardSpec): boolean {
  if (shard.count <= 1) return true;
  const uid = obj.metadata?.uid ?? '';
  return (uid === '' ? 0 : shardOfUid(uid, shard.count)) === shard.index;
}

/** `informer` itself without sharding, else the view of `shard`'s objects. */
export function shardView<T extends KubernetesObject>(informer: Informer<T>, shard: ShardSpec): InformerView<T> {
  if (shard.count <= 1) return informer;
  const mine = (o: T | undefined): o is T => o !== undefined && inShard(o, shard);
  return {
    addEventHandler(handler: InformerHandler<T>): void {
      informer.addEventHandler({
        onAdd: handler.onAdd && ((o) => (mine(o) ? handler.onAdd!(o) : undefined)),
        // Old and new are one object (one uid) unless the name was deleted and created again between two
        // looks (a relist): then the old one leaves its shard and the new one enters its own.
        onUpdate: (a, b) => {
          if (mine(a) && mine(b)) handler.onUpdate?.(a, b);
          else if (mine(a)) handler.onDelete?.(a);
          else if (mine(b)) handler.onAdd?.(b);
        },
        onDelete: handler.onDelete && ((o) => (mine(o) ? handler.onDelete!(o) : undefined)),
      });
    },
    hasSynced: () => informer.hasSynced(),
    waitForSync: (signal, timeoutMs) => informer.waitForSync(signal, timeoutMs),
    list: () => informer.list().filter(mine),
    get: (key) => {
      const o = informer.get(key);
      return mine(o) ? o : undefined;
    },
  };
}
