/**
 * The live read before a load balancer is deleted: the cache never decides a
 * deletion alone (a frozen or lagging informer would otherwise delete the
 * load balancer of a Service that still wants it). One GET of the Service;
 * each is counted in ccm_live_reads_total (controller: the service
 * controller for its own deletions, the orphan sweep for the sweep's).
 */
import type { V1Service } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { CoreV1Api } from '../../kube/api.js';
import { isNotFound } from '../../kube/client.js';
import { LiveReaders, LiveReadOutcomes } from '../../names.js';
import { liveReadCounter } from '../live-reads.js';
import { classOf } from '../../lb-classes.js';
import { hasLbFinalizer, isLoadBalancer } from './predicates.js';

/** Which deletion a read confirms: the orphan sweep, or the controller's own (finalizer or gone Service). */
export type LiveReadPath = 'sweep' | 'finalizer';

/** Live Service reads before a deletion, counted. */
export interface LiveServiceReads {
  /** The Service as the API server has it now; undefined when it does not exist. Rejects on any other error (counted as error). */
  read(path: LiveReadPath, namespace: string, name: string): Promise<V1Service | undefined>;
  /**
   * Records what a read returned (`live`, undefined when gone) decided:
   * `keeps` when the live Service still holds its load balancer (nothing is
   * deleted: the cache was behind), else the delete goes ahead.
   */
  decided(path: LiveReadPath, live: V1Service | undefined, keeps: boolean): void;
}

/** LiveServiceReads over `core`, counted on `registry` when given. */
export function liveServiceReads(core: CoreV1Api, registry?: Registry): LiveServiceReads {
  const count = {
    sweep: liveReadCounter(LiveReaders.LB_ORPHAN_SWEEP, 'services', registry),
    finalizer: liveReadCounter(LiveReaders.SERVICE_LB, 'services', registry),
  };
  return {
    async read(path, namespace, name) {
      try {
        return await core.readNamespacedService({ namespace, name });
      } catch (err) {
        if (isNotFound(err)) return undefined;
        count[path](LiveReadOutcomes.ERROR);
        throw err;
      }
    },
    decided(path, live, keeps) {
      count[path](live === undefined ? LiveReadOutcomes.GONE : keeps ? LiveReadOutcomes.CHANGED : LiveReadOutcomes.CONFIRMED);
    },
  };
}

/**
 * Whether the live Service `live` still holds the load balancer made for
 * `uid` as the sweep sees it: the same object, a LoadBalancer of ANY class,
 * or still carrying the cleanup finalizer (the controller's own cleanup is
 * due). A Service that merely has another class is never an orphan: a class
 * change is cleaned up by the controller, through the maker it recorded.
 */
export function liveKeepsForSweep(live: V1Service | undefined, uid: string): boolean {
  return live !== undefined && live.metadata?.uid === uid && (isLoadBalancer(live) || hasLbFinalizer(live));
}

/**
 * Whether the live Service `live` still wants the load balancer made for
 * `uid` and class `cls` ('' = none) as the controller's delete paths see it:
 * the same object, a LoadBalancer of that class, not being deleted.
 */
export function liveKeepsForController(live: V1Service | undefined, uid: string, cls: string): boolean {
  return (
    live !== undefined &&
    live.metadata?.uid === uid &&
    isLoadBalancer(live) &&
    classOf(live) === cls &&
    (live.metadata?.deletionTimestamp ?? undefined) === undefined
  );
}
