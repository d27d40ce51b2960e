/**
 * The route controller waits while its node cache is known to be behind
 * (host/kube/informer.ts: a stalled watch being relisted reports not synced):
 * a reconcile from such a cache would delete the routes of every node it
 * misses. Fakes only: an informer whose hasSynced the test sets, a batched
 * route table that counts its reconciles (each starts with a listing).
 */
import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import type { Routes } from '../../../host/cloud-routes.js';
import { RouteController } from '../../../host/controllers/route/route-controller.js';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { silentLogger } from '../../../host/log.js';
import { parseCidr } from '../../../host/util/cidr.js';
import { waitFor } from '../../helpers/wait.js';

test('route controller: no reconcile while the node cache is not synced; reconciles again once it is', async (t) => {
  let synced = false;
  let syncChecks = 0;
  const nodes = {
    addEventHandler: () => undefined,
    waitForSync: async () => true,
    hasSynced: () => {
      syncChecks++;
      return synced;
    },
    list: (): V1Node[] => [],
  } as unknown as Informer<V1Node>;
  const reconciles: number[] = [];
  const routes = {
    batched: true,
    listRoutes: async () => {
      reconciles.push(0);
      return [];
    },
    reconcileRoutes: async () => ({ created: [], deleted: [], failed: [] }),
  } as unknown as Routes;
  const c = new RouteController({
    core: {} as CoreV1Api,
    nodes,
    routes,
    recorder: { event: () => undefined } as unknown as EventRecorder,
    log: silentLogger(),
    clusterName: 'gate',
    clusterCidrs: [parseCidr('10.244.0.0/16')!],
    periodMs: 20,
  });
  const stop = new AbortController();
  const running = c.run(stop.signal);
  t.teardown(async () => {
    stop.abort();
    await running;
  });
  // Five passes of the worker, each either postponed (a sync check) or a reconcile.
  await waitFor(() => syncChecks + reconciles.length >= 5, { what: 'five passes of the worker', timeoutMs: 10_000, intervalMs: 10 });
  t.deepEqual(reconciles, [], 'no reconcile (which would have removed every route of the cluster CIDR) from a cache that is behind');
  synced = true;
  await waitFor(() => reconciles.length >= 1, { what: 'a reconcile once synced', timeoutMs: 10_000, intervalMs: 10 });
  t.pass();
});
