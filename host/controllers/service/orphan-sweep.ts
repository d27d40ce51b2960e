/**
 * The orphan sweep (not in upstream): every --lb-orphan-sweep-period, the
 * load balancers the provider lists for this cluster name
 * (ListLoadBalancers) are compared with the Services in the informer cache,
 * and those whose Service uid no longer exists, or whose Service no longer
 * wants a load balancer and carries no cleanup finalizer, are deleted.
 *
 * Such orphans arise where no controller can see a deletion: a finalizer
 * removed by hand while no host runs, a namespace deleted with the host down
 * and its finalizers cleared, or a Service removed despite its finalizer.
 *
 * Safety:
 *  - only with the Services informer synced, and only load balancers the
 *    provider lists for this --cluster-name (an entry naming another cluster
 *    rejects the whole listing);
 *  - with --watch-namespace, only load balancers made for Services of that
 *    namespace (this host cannot see the others);
 *  - a load balancer is deleted only when it was an orphan on two sweeps at
 *    least --lb-orphan-grace-period apart (0: on the first), re-checked under
 *    the Service key's lock, and never while the controller itself is working
 *    on that uid;
 *  - --lb-orphan-sweep-dry-run only reports.
 */
import type { V1Service } from '@kubernetes/client-node';
import type { Counter, Registry } from 'prom-client';
import { orphanSweepMetrics } from '../../controller-metrics.js';
import type { LbSummary, LoadBalancers, ServiceRef } from '../../cloud-load-balancers.js';
import type { EventRecorder } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { errorMessage, type Logger } from '../../log.js';
import { EventReasons } from '../../names.js';
import type { KeyedMutex } from '../../util/keyed-mutex.js';
import { hasLbFinalizer, wantsLoadBalancer } from './predicates.js';

/** --lb-orphan-sweep-* settings. */
export interface OrphanSweepSettings {
  /** --lb-orphan-sweep-period; 0 disables the sweep. */
  periodMs: number;
  /** --lb-orphan-grace-period. */
  graceMs: number;
  /** --lb-orphan-sweep-dry-run. */
  dryRun: boolean;
  /** --watch-namespace ('' = every namespace). */
  namespace: string;
}

export interface OrphanSweepOptions extends OrphanSweepSettings {
  lbs: LoadBalancers;
  clusterName: string;
  services: Informer<V1Service>;
  /** The service controller's per-key lock. */
  lock: KeyedMutex<string>;
  /** Uids the service controller is working on or has queued (never swept). */
  busyUids: () => Set<string>;
  recorder: EventRecorder;
  log: Logger;
  registry?: Registry;
  now?: () => number;
}

/** What one sweep found and did. */
export interface SweepReport {
  listed: number;
  orphans: number;
  deleted: string[];
  /** Orphans only reported (dry run). */
  reported: string[];
  failed: number;
}

export class OrphanSweeper {
  /** uid → when it was first seen as an orphan (ms). */
  private readonly since = new Map<string, number>();
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
    return !svc || (!wantsLoadBalancer(svc) && !hasLbFinalizer(svc));
  }

  /** One sweep. Rejects when the listing fails (nothing is deleted then). */
  async sweep(): Promise<SweepReport> {
    const report: SweepReport = { listed: 0, orphans: 0, deleted: [], reported: [], failed: 0 };
    if (!this.o.services.hasSynced()) return report;
    const listed = await this.o.lbs.listLoadBalancers(this.o.clusterName);
    report.listed = listed.length;
    const busy = this.o.busyUids();
    const orphans = listed.filter((lb) => this.isOrphan(lb, busy));
    report.orphans = orphans.length;
    const now = this.now();
    const current = new Set(orphans.map((lb) => lb.serviceUid));
    for (const uid of this.since.keys()) if (!current.has(uid)) this.since.delete(uid);
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
      try {
        const deleted = await this.o.lock.run(`${lb.serviceNamespace}/${lb.serviceName}`, async () => {
          if (!this.isOrphan(lb, this.o.busyUids())) return false; // the controller or a new Service claimed it meanwhile
          await this.o.lbs.ensureLoadBalancerDeleted(this.o.clusterName, orphanRef(lb));
          return true;
        });
        if (!deleted) continue;
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
    return report;
  }
}

/** What EnsureLoadBalancerDeleted needs: the load balancer is identified by cluster name and uid. */
function orphanRef(lb: LbSummary): ServiceRef {
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
