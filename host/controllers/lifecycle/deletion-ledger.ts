/**
 * The node deletion brake's record in the cluster: an annotation on a Lease
 * (`cloud-controller-manager-node-deletions`, in the leader election's
 * namespace), so the count of deletions inside the window survives a host
 * restart and a leader change. A Lease because the host may already create
 * Leases there, and RBAC limits get/update to this one name.
 *
 * One annotation per brake: its key hashes the leader election lock and the
 * --node-selector, so CCMs that shard the Nodes by selector (or run under
 * their own lock) keep their own count, and replicas of one CCM share one,
 * as do the shards of one CCM with --shard-count (the lock is then the
 * unsharded --leader-elect-resource-name, not the shard's Lease: one count
 * for the cluster). Its value is JSON: who it is for, the window, and the
 * deletions (`{"at": RFC 3339, "count": n, "nodes": n}`, times rounded up;
 * `nodes` is the Node count the limit was of, absent in records of older
 * hosts, which read and keep only `at` and `count`). Other annotations,
 * the spec and labels of the Lease are kept by every write; an annotation of
 * this kind whose deletions are all past its own window is dropped.
 */
import { createHash } from 'node:crypto';
import type { V1Lease } from '@kubernetes/client-node';
import type { CoordinationV1Api } from '../../kube/api.js';
import { isConflict, isNotFound } from '../../kube/client.js';
import { NODE_DELETIONS_ANNOTATION_PREFIX } from '../../names.js';
import type { DeletionEntry, DeletionLedger, LedgerSnapshot } from './deletion-brake.js';

/** One brake's annotation value. */
interface RecordValue {
  /** The lock and node selector this count is for (for people; the key is its hash). */
  for: string;
  windowMs: number;
  deletions: { at: string; count: number; nodes?: number }[];
}

export class LeaseDeletionLedger implements DeletionLedger {
  private readonly key: string;
  private readonly owner: string;

  constructor(
    private readonly api: CoordinationV1Api,
    private readonly namespace: string,
    private readonly name: string,
    /**
     * The leader election lock (`namespace/name`) and --node-selector this
     * count belongs to, and with several providers the provider (each has its
     * own count; absent with one, so its key is as before).
     */
    scope: { lock: string; nodeSelector: string; provider?: string },
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    const of = scope.provider === undefined ? '' : `, provider ${scope.provider}`;
    this.owner = `lock ${scope.lock}, node selector ${JSON.stringify(scope.nodeSelector)}${of}`;
    const hashed = `${scope.lock}\n${scope.nodeSelector}${scope.provider === undefined ? '' : `\n${scope.provider}`}`;
    const hash = createHash('sha256').update(hashed).digest('hex').slice(0, 16);
    this.key = `${NODE_DELETIONS_ANNOTATION_PREFIX}${hash}`;
  }

  describe(): string {
    return `Lease ${this.namespace}/${this.name}, annotation ${this.key}`;
  }

  /** A fresh GET of the Lease (never a cache). Throws on any failure, and when the annotation cannot be read. */
  async read(): Promise<LedgerSnapshot> {
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name: this.name, namespace: this.namespace });
    } catch (err) {
      if (isNotFound(err)) return { entries: [], version: undefined };
      throw err;
    }
    const text = lease.metadata?.annotations?.[this.key];
    return { entries: text === undefined ? [] : parseEntries(text, this.describe()), version: lease };
  }

  /** Creates the Lease (version undefined) or replaces it at the resourceVersion read; a 409 means someone wrote first. */
  async write(entries: DeletionEntry[], version: unknown): Promise<void> {
    const base = version as V1Lease | undefined;
    const annotations = { ...(base?.metadata?.annotations ?? {}) };
    for (const [k, v] of Object.entries(annotations))
      if (k.startsWith(NODE_DELETIONS_ANNOTATION_PREFIX) && expired(v, this.now())) delete annotations[k];
    if (entries.length === 0) delete annotations[this.key];
    else annotations[this.key] = JSON.stringify(this.value(entries));
    if (!base) {
      await this.api.createNamespacedLease({
        namespace: this.namespace,
        body: {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: this.namespace, annotations },
          spec: {},
        },
      });
      return;
    }
    // The whole object as read, so nothing else on it is lost; its resourceVersion makes the write conditional.
    await this.api.replaceNamespacedLease({
      name: this.name,
      namespace: this.namespace,
      body: { ...base, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { ...base.metadata, annotations } },
    });
  }

  /** 409: another writer changed (or created) the Lease first. */
  isConflict(err: unknown): boolean {
    return isConflict(err);
  }

  private value(entries: DeletionEntry[]): RecordValue {
    return {
      for: this.owner,
      windowMs: this.windowMs,
      deletions: entries.map((e) => ({
        at: new Date(e.at).toISOString(),
        count: e.count,
        ...(e.nodes === undefined ? {} : { nodes: e.nodes }),
      })),
    };
  }
}

/** The entries of an annotation value; throws (the brake then deletes nothing) when it is not one. */
function parseEntries(text: string, where: string): DeletionEntry[] {
  const fail = (): never => {
    throw new Error(`the node deletion record (${where}) is unreadable; no Node is deleted until it is fixed or the annotation removed`);
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return fail();
  }
  const deletions = (v as Partial<RecordValue> | null)?.deletions;
  if (!Array.isArray(deletions)) return fail();
  return deletions.map((d: unknown) => {
    const { at, count, nodes } = (d ?? {}) as { at?: unknown; count?: unknown; nodes?: unknown };
    const ms = typeof at === 'string' ? Date.parse(at) : NaN;
    if (!Number.isFinite(ms) || !isCount(count) || (nodes !== undefined && !isCount(nodes))) return fail();
    return nodes === undefined ? { at: ms, count } : { at: ms, count, nodes };
  });
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

/** Whether a brake's annotation value (any scope) has no deletion left inside its own window; unreadable values are kept. */
function expired(text: string, now: number): boolean {
  try {
    const v = JSON.parse(text) as RecordValue;
    if (typeof v.windowMs !== 'number' || !(v.windowMs > 0) || !Array.isArray(v.deletions)) return false;
    return v.deletions.every((d) => Date.parse(d.at) <= now - v.windowMs);
  } catch {
    return false;
  }
}
