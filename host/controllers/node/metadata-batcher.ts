/**
 * Coalesces the InstanceMetadata lookups that concurrent node workers make at
 * the same moment into one batch call (when the provider has batch RPCs), so
 * that initializing N nodes with W workers costs about N/W cloud calls
 * instead of N. Lookups wait at most `maxWaitMs` for company.
 */
import type { InstanceMetadata, Instances, NodeRef } from '../../cloud.js';
import { MAX_BATCH_NODES } from '../../cloud.js';

interface Pending {
  node: NodeRef;
  resolve: (m: InstanceMetadata) => void;
  reject: (e: Error) => void;
}

export class MetadataBatcher {
  private pending: Pending[] = [];
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly instances: Instances,
    private readonly maxWaitMs = 2,
  ) {}

  /** Same contract as Instances.instanceMetadata. */
  get(node: NodeRef): Promise<InstanceMetadata> {
    if (!this.instances.batched) return this.instances.instanceMetadata(node);
    return new Promise((resolve, reject) => {
      this.pending.push({ node, resolve, reject });
      if (this.pending.length >= MAX_BATCH_NODES) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.maxWaitMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    this.instances.instancesMetadata(batch.map((p) => p.node)).then(
      (results) =>
        batch.forEach((p, i) => {
          const r = results[i];
          if (r?.metadata) p.resolve(r.metadata);
          else p.reject(r?.error ?? new Error('no result for node'));
        }),
      (err: Error) => batch.forEach((p) => p.reject(err)),
    );
  }
}
