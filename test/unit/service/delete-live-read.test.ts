/**
 * The service controller's own delete paths (host/controllers/service/
 * service-controller.ts) never delete a load balancer on the cache's word
 * alone (issue 29, item 5): the cache says the Service is being deleted, or
 * no longer wants a load balancer, and a live GET decides. A fake informer
 * holds the cached Service; the live answer is the test's.
 */
import test from 'ava';
import type { KubernetesObject, V1Node, V1Service } from '@kubernetes/client-node';
import type { LoadBalancers, ServiceRef } from '../../../host/cloud-load-balancers.js';
import type { LiveServiceReads } from '../../../host/controllers/service/live-read.js';
import { ServiceController } from '../../../host/controllers/service/service-controller.js';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { silentLogger } from '../../../host/log.js';

const FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';

const svc = (o: { deleting?: boolean; type?: string; uid?: string } = {}): V1Service => ({
  metadata: {
    name: 'web',
    namespace: 'ns',
    uid: o.uid ?? 'uid-web',
    finalizers: [FINALIZER],
    ...(o.deleting ? { deletionTimestamp: new Date('2026-01-01T00:00:00Z') } : {}),
  },
  spec: { type: o.type ?? 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP', nodePort: 30080 }] },
});

/** Runs one sync of ns/web with `cached` in the cache and `live` from the API server; what was deleted, and how the sync ended. */
async function syncWith(cached: V1Service, live: V1Service | undefined): Promise<{ deleted: string[]; error?: string; decided: boolean[] }> {
  const deleted: string[] = [];
  const decided: boolean[] = [];
  const informer = <T extends KubernetesObject>(items: T[]) =>
    ({
      get: () => items[0],
      list: () => items,
      mutationCount: () => 0,
      addEventHandler: () => undefined,
      hasSynced: () => true,
    }) as unknown as Informer<T>;
  const lbs = {
    canList: false,
    batchEnsure: false,
    batchHosts: false,
    ensureLoadBalancerDeleted: async (_c: string, ref: ServiceRef) => void deleted.push(ref.uid),
  } as unknown as LoadBalancers;
  const reads: LiveServiceReads = { read: async () => live, decided: (_p, _live, keeps) => void decided.push(!keeps) };
  const core = { patchNamespacedService: async () => ({}), patchNamespacedServiceStatus: async () => ({}) } as unknown as CoreV1Api;
  const controller = new ServiceController({
    core,
    services: informer([cached]),
    nodes: informer<V1Node>([]),
    providers: [{ name: 'p', lbs }],
    clusterName: 'c',
    clusterUid: 'uid-c',
    recorder: { event: () => undefined } as unknown as EventRecorder,
    log: silentLogger(),
    workers: 1,
    resyncPeriodMs: 0,
    reads,
  });
  try {
    await controller.sync('ns/web');
    return { deleted, decided };
  } catch (err) {
    return { deleted, decided, error: (err as Error).name };
  }
}

test('the finalizer path deletes only when the live Service confirms the cache', async (t) => {
  const rows = [];
  for (const [what, cached, live] of [
    ['cache: deleting; live: deleting', svc({ deleting: true }), svc({ deleting: true })],
    ['cache: deleting; live: gone', svc({ deleting: true }), undefined],
    ['cache: ClusterIP; live: ClusterIP', svc({ type: 'ClusterIP' }), svc({ type: 'ClusterIP' })],
    ['cache: deleting; live: recreated (another uid)', svc({ deleting: true }), svc({ uid: 'uid-new' })],
    ['cache: deleting; live: wants its load balancer (stale cache)', svc({ deleting: true }), svc()],
    ['cache: ClusterIP; live: LoadBalancer again (stale cache)', svc({ type: 'ClusterIP' }), svc()],
  ] as const) {
    const r = await syncWith(cached, live);
    rows.push([what, r.deleted, r.decided, r.error ?? 'ok']);
  }
  t.deepEqual(rows, [
    ['cache: deleting; live: deleting', ['uid-web'], [true], 'ok'],
    ['cache: deleting; live: gone', ['uid-web'], [true], 'ok'],
    ['cache: ClusterIP; live: ClusterIP', ['uid-web'], [true], 'ok'],
    ['cache: deleting; live: recreated (another uid)', ['uid-web'], [true], 'ok'],
    ['cache: deleting; live: wants its load balancer (stale cache)', [], [false], 'StaleCacheError'],
    ['cache: ClusterIP; live: LoadBalancer again (stale cache)', [], [false], 'StaleCacheError'],
  ]);
});
