/**
 * An in-memory Lease with the API server's optimistic concurrency
 * (resourceVersion; 409 on a create of an existing Lease or a stale update),
 * for the LeaderElector's unit tests (leader-election, shard-election,
 * plugin-lease-guard). The end-to-end tests against kube-apiserver are in
 * test/integration/ha/.
 */
import type { LeaseLock, LeaseRecord, ObservedLease } from '../../../host/kube/leader-election.js';

/** The stored Lease: its record, its resourceVersion, and every write in order (holder, time). */
export class MemoryLease {
  record?: LeaseRecord;
  annotations?: Record<string, string>;
  version = 0;
  writes: { holder: string; at: number }[] = [];
}

/**
 * One candidate's view of `lease`, as KubeLeaseLock is of a real one. While
 * `net.cut` every call fails, like a partition: share one `net` among a
 * replica's locks to cut the replica off from all its Leases at once. A call
 * whose signal has aborted fails, as a request tied to it would.
 */
export class MemoryLeaseLock implements LeaseLock {
  /** Reads of the Lease so far. */
  gets = 0;
  constructor(
    private readonly lease: MemoryLease,
    readonly net: { cut: boolean } = { cut: false },
    private readonly name = 'lease',
  ) {}
  describe() {
    return `mem/${this.name}`;
  }
  private check(signal: AbortSignal) {
    if (this.net.cut) throw new Error('connection refused');
    if (signal.aborted) throw new Error('aborted');
  }
  async get(signal: AbortSignal): Promise<ObservedLease | undefined> {
    this.check(signal);
    this.gets++;
    const l = this.lease;
    return l.record
      ? { record: structuredClone(l.record), resourceVersion: String(l.version), annotations: l.annotations && { ...l.annotations } }
      : undefined;
  }
  async create(record: LeaseRecord, signal: AbortSignal, annotations?: Readonly<Record<string, string>>): Promise<string> {
    this.check(signal);
    if (this.lease.record) throw new Error('409 already exists');
    return this.write(record, annotations);
  }
  async update(record: LeaseRecord, rv: string, signal: AbortSignal, annotations?: Readonly<Record<string, string>>): Promise<string> {
    this.check(signal);
    if (String(this.lease.version) !== rv) throw new Error('409 conflict');
    return this.write(record, annotations);
  }
  /** A replace, as the API server's: the annotations written are the Lease's from now on. */
  private write(record: LeaseRecord, annotations?: Readonly<Record<string, string>>): string {
    this.lease.record = structuredClone(record);
    this.lease.annotations = annotations && { ...annotations };
    this.lease.version++;
    this.lease.writes.push({ holder: record.holderIdentity, at: Date.now() });
    return String(this.lease.version);
  }
}
