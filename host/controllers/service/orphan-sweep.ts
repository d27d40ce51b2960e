/**
 * The orphan sweep (not in upstream): every --lb-orphan-sweep-period, the
 * load balancers the provider lists for this cluster name
 * (ListLoadBalancers) are compared with the Services in the informer cache,
 * and those whose Service uid no longer exists, or whose Service is no longer
 * of type LoadBalancer and carries no cleanup finalizer, are deleted. With
 * several providers each has its own sweeper over its own listing. A Service
 * that is still a LoadBalancer, of whatever class, keeps its load balancer.
 *
 * Such orphans arise where no controller can see a deletion: a finalizer
 * removed by hand while no host runs, a namespace deleted with the host down
 * and its finalizers cleared, or a Service removed despite its finalizer.
 *
 * Safety:
 *  - only load balancers tagged with this cluster's UID (the kube-system
 *    Namespace's uid or --cluster-uid): two clusters may share a
 *    --cluster-name, and every load balancer of the other one looks orphaned
 *    from here. One of another UID (foreign) or of none (untagged: made
 *    before cluster UIDs) is never deleted; it is counted
 *    (ccm_orphan_load_balancers_total{outcome="foreign"|"untagged"}) and
 *    logged once;
 *  - only with the Services informer synced, and only load balancers the
 *    provider lists for this --cluster-name (an entry naming another cluster
 *    rejects the whole listing);
 *  - with --watch-namespace, only load balancers made for Services of that
 *    namespace (this host cannot see the others);
 *  - a load balancer is deleted only when it was an orphan on two sweeps at
 *    least --lb-orphan-grace-period apart (0: on the first), re-checked under
 *    the Service key's lock, never while the controller itself is working on
 *    that uid, and only after a live GET of the Service confirmed it (gone,
 *    another uid, or no longer wanting one without the finalizer);
 *  - at most --lb-orphan-sweep-limit deletions per sweep; the rest wait;
 *  - the delete carries the Service as the host last knew it (annotations
 *    such as a provider's "preserve" setting included), else what the
 *    provider listed;
 *  - --lb-orphan-sweep-dry-run only reports.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { Counter, Registry } from 'prom-client';
import { orphanSweepMetrics } from '../../controller-metrics.js';
import type { LbSummary, LoadBalancers, ServiceRef } from '../../cloud-load-balancers.js';
import type { EventRecorder } from '../../kube/events.js';
import type { InformerView } from '../../kube/shard-view.js';
import { errorMessage, type Logger } from '../../log.js';
import { EventReasons } from '../../names.js';
import type { KeyedMutex } from '../../util/keyed-mutex.js';
import { liveKeepsForSweep, type LiveServiceReads } from './live-read.js';
import { hasLbFinalizer, isLoadBalancer } from './predicates.js';
import { toServiceRef } from './service-ref.js';

/** --lb-orphan-sweep-* settings. */
export interface OrphanSweepSettings {
  /** --lb-orphan-sweep-period; 0 disables the sweep. */
  periodMs: number;
  /** --lb-orphan-grace-period. */
  graceMs: number;
  /** --lb-orphan-sweep-dry-run. */
  dryRun: boolean;
  /** --lb-orphan-sweep-limit: most deletions per sweep (at least 1). */
  limit: number;
  /** --watch-namespace ('' = every namespace). */
  namespace: string;
}

export interface OrphanSweepOptions extends OrphanSweepSettings {
  lbs: LoadBalancers;
  clusterName: string;
  /** This cluster's UID; only load balancers listed with it are deleted ('' deletes none). */
  clusterUid: string;
  services: InformerView<V1Service>;
  /** The service controller's per-key lock. */
  lock: KeyedMutex<string>;
  /** Uids the service controller is working on or has queued (never swept). */
  busyUids: () => Set<string>;
  /** The live read that confirms each deletion. */
  reads: LiveServiceReads;
  /** The last ServiceRef the host knew for a uid (LastKnownRefs), for the delete call. */
  lastKnownRef: (uid: string) => ServiceRef | undefined;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  now?: () => number;
}

/** What one sweep found and did. */
export interface SweepReport {
  listed: number;
  /** Orphans of this cluster's UID. */
  orphans: number;
  deleted: string[];
  /** Orphans only reported (dry run). */
  reported: string[];
  failed: number;
  /** Orphans left for the next sweep by --lb-orphan-sweep-limit. */
  deferred: number;
  /** Orphans the live read showed to be in use (the cache was stale): not deleted. */
  refuted: number;
  /** Would-be orphans tagged with another cluster UID, and with none: never deleted. */
  foreign: number;
  untagged: number;
}

/** Why a would-be orphan is not this cluster's to delete. */
type NotOurs = 'foreign' | 'untagged';

export class OrphanSweeper {
  /** uid → when it was first seen as an orphan (ms). */
  private readonly since = new Map<string, number>();
  /** Load balancer names already logged and counted as foreign or untagged (pruned to the last listing). */
  private readonly noticed = new Map<string, NotOurs>();
  private readonly counter?: Counter<'outcome'>;
  private readonly now: () => number;

  constructor(private readonly o: OrphanSweepOptions) {
    this.now = o.now ?? Date.now;
    this.counter = o.registry ? orphanSweepMetrics(o.registry).found : undefined;
  }

  /** The Service the load balancer was made for, if it still exists (a uid belongs to one namespace/name for life). */
  private owner(lb: LbSummary): V1Service | undefined {
    const svc = this.o.services.get(`${lb.serviceNamespace}/${lb.serviceName}`);
    return svc?.metadata?.uid === lb.serviceUid ? svc : undefined;
  }

  /** `busy`: the controller's uids (busyUids), taken once per sweep rather than per load balancer. */
  private isOrphan(lb: LbSummary, busy: Set<string>): boolean {
    if (this.o.namespace && lb.serviceNamespace !== this.o.namespace) return false;
    if (busy.has(lb.serviceUid)) return false;
    const svc = this.owner(lb);
    // A LoadBalancer Service of any class keeps its load balancer: one whose class
    // changed is the controller's to clean up (lb-owner.ts), never the sweep's.
    return !svc || (!isLoadBalancer(svc) && !hasLbFinalizer(svc));
  }

  /** undefined when the load balancer carries this cluster's UID. */
  private notOurs(lb: LbSummary): NotOurs | undefined {
    if (lb.clusterUid === '') return 'untagged';
    return this.o.clusterUid !== '' && lb.clusterUid === this.o.clusterUid ? undefined : 'foreign';
  }

  /** Logs and counts a load balancer that is not ours the first time it is seen. */
  private notice(lb: LbSummary, why: NotOurs): void {
    if (this.noticed.get(lb.name) === why) return;
    this.noticed.set(lb.name, why);
    this.counter?.inc({ outcome: why });
    const fields = {
      loadBalancer: lb.name,
      service: `${lb.serviceNamespace}/${lb.serviceName}`,
      uid: lb.serviceUid,
      clusterName: this.o.clusterName,
    };
    if (why === 'foreign')
      this.o.log.warn(
        { ...fields, theirClusterUid: lb.clusterUid, clusterUid: this.o.clusterUid },
        'load balancer of another cluster with the same --cluster-name: never deleted by the orphan sweep; give each cluster its own --cluster-name',
      );
    else
      this.o.log.warn(
        fields,
        'load balancer without a cluster UID (made before cluster UIDs): never deleted by the orphan sweep; an ensure of its Service tags it, else delete it by hand',
      );
  }

  /** One sweep. Rejects when the listing fails (nothing is deleted then). */
  async sweep(): Promise<SweepReport> {
    const report: SweepReport = { listed: 0, orphans: 0, deleted: [], reported: [], failed: 0, deferred: 0, refuted: 0, foreign: 0, untagged: 0 };
    if (!this.o.services.hasSynced()) return report;
    const listed = await this.o.lbs.listLoadBalancers(this.o.clusterName);
    report.listed = listed.length;
    const names = new Set(listed.map((lb) => lb.name));
    for (const name of this.noticed.keys()) if (!names.has(name)) this.noticed.delete(name);
    const busy = this.o.busyUids();
    const orphans: LbSummary[] = [];
    for (const lb of listed) {
      if (!this.isOrphan(lb, busy)) continue;
      const why = this.notOurs(lb);
      if (why === undefined) {
        orphans.push(lb);
        continue;
      }
      report[why]++;
      this.notice(lb, why);
    }
    report.orphans = orphans.length;
    const now = this.now();
    const current = new Set(orphans.map((lb) => lb.serviceUid));
    for (const uid of this.since.keys()) if (!current.has(uid)) this.since.delete(uid);
    let attempts = 0;
    for (const lb of orphans) {
      const first = this.since.get(lb.serviceUid);
      if (first === undefined) {
        this.since.set(lb.serviceUid, now);
        if (this.o.graceMs > 0) continue;
      } else if (now - first < this.o.graceMs) continue;
      const fields = { loadBalancer: lb.name, service: `${lb.serviceNamespace}/${lb.serviceName}`, uid: lb.serviceUid };
      if (this.o.dryRun) {
        this.o.log.warn(fields, 'orphaned load balancer found; not deleted (--lb-orphan-sweep-dry-run)');
        this.counter?.inc({ outcome: 'dry_run' });
        report.reported.push(lb.serviceUid);
        continue;
      }
      if (attempts >= this.o.limit) {
        report.deferred++;
        continue;
      }
      attempts++;
      try {
        const outcome = await this.o.lock.run(`${lb.serviceNamespace}/${lb.serviceName}`, () => this.deleteOne(lb));
        if (outcome === 'claimed') continue;
        if (outcome === 'refuted') {
          report.refuted++;
          this.since.delete(lb.serviceUid);
          this.o.log.warn(fields, 'orphan sweep: the Service still wants its load balancer (the cache is behind the API server); not deleted');
          continue;
        }
        this.since.delete(lb.serviceUid);
        this.o.log.info(fields, 'orphaned load balancer deleted');
        this.counter?.inc({ outcome: 'deleted' });
        report.deleted.push(lb.serviceUid);
        const svc = this.owner(lb);
        if (svc)
          this.o.recorder.event(svc, 'Normal', EventReasons.DELETED_LB, `Deleted orphaned load balancer ${lb.name}: the Service no longer wants one`);
      } catch (err) {
        this.o.log.warn({ ...fields, err: errorMessage(err) }, 'orphaned load balancer could not be deleted; retried on the next sweep');
        this.counter?.inc({ outcome: 'failed' });
        report.failed++;
      }
    }
    if (report.deferred > 0)
      this.o.log.info(
        { deleted: attempts, waiting: report.deferred, limit: this.o.limit },
        'orphan sweep reached --lb-orphan-sweep-limit; the other orphaned load balancers wait for the next sweep',
      );
    return report;
  }

  /** Under the Service key's lock: re-check, confirm with a live read, delete. */
  private async deleteOne(lb: LbSummary): Promise<'claimed' | 'refuted' | 'deleted'> {
    if (!this.isOrphan(lb, this.o.busyUids())) return 'claimed'; // the controller or a new Service claimed it meanwhile
    const live = await this.o.reads.read('sweep', lb.serviceNamespace, lb.serviceName);
    const keeps = liveKeepsForSweep(live, lb.serviceUid);
    this.o.reads.decided('sweep', live, keeps);
    if (keeps) return 'refuted';
    await this.o.lbs.ensureLoadBalancerDeleted(this.o.clusterName, this.refFor(lb, live));
    return 'deleted';
  }

  /**
   * The ServiceRef of the delete call: the Service as it is now when it still
   * exists (no longer wanting a load balancer), else the last object the host
   * knew for the uid, else what the provider listed (the host never saw it).
   */
  private refFor(lb: LbSummary, live: V1Service | undefined): ServiceRef {
    const current = live?.metadata?.uid === lb.serviceUid ? live : this.owner(lb);
    if (current) return toServiceRef(current).ref;
    return this.o.lastKnownRef(lb.serviceUid) ?? listedRef(lb);
  }
}

/**
 * The last ServiceRef the host knew for each uid, from the Service
 * informer's deletions and from updates that stopped wanting a load
 * balancer; bounded (the oldest entries go first).
 */
export class LastKnownRefs {
  private readonly refs = new Map<string, ServiceRef>();

  constructor(private readonly max = 4096) {}

  remember(svc: V1Service): void {
    const uid = svc.metadata?.uid;
    if (!uid) return;
    this.refs.delete(uid);
    this.refs.set(uid, toServiceRef(svc).ref);
    while (this.refs.size > this.max) this.refs.delete(this.refs.keys().next().value!);
  }

  get(uid: string): ServiceRef | undefined {
    return this.refs.get(uid);
  }

  get size(): number {
    return this.refs.size;
  }
}

/** A ServiceRef from what ListLoadBalancers reported, for a Service this host never saw: the load balancer is identified by cluster name and uid. */
export function listedRef(lb: LbSummary): ServiceRef {
  return {
    uid: lb.serviceUid,
    namespace: lb.serviceNamespace,
    name: lb.serviceName,
    annotations: {},
    labels: {},
    ports: [],
    loadBalancerIp: '',
    loadBalancerSourceRanges: [],
    ipFamilies: [],
    externalTrafficPolicy: 'Cluster',
    healthCheckNodePort: 0,
    sessionAffinity: 'None',
    sessionAffinityTimeoutSeconds: 0,
    loadBalancerClass: '',
  };
}
