/**
 * ccm_live_reads_total (issue 29, item 5): one counter for every
 * controller's live reads, labelled controller, resource and outcome; the
 * per-controller counters it replaced are gone. The controllers' own tests
 * check which outcome each read gets (lifecycle.test.ts, routes.test.ts,
 * provisioner-safety.test.ts, attacher-repair.test.ts); here: the family,
 * its labels, and the Service reads of the load balancer delete paths.
 */
import test from 'ava';
import type { V1Service } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { CoreV1Api } from '../../../host/kube/api.js';
import { ApiError } from '../../../host/kube/rest.js';
import { liveReadCounter } from '../../../host/controllers/live-reads.js';
import { liveServiceReads, type LiveReadPath } from '../../../host/controllers/service/live-read.js';
import { LiveReadOutcomes } from '../../../host/names.js';

/** Every sample of ccm_live_reads_total as `controller resource outcome value`, sorted. */
async function samples(registry: Registry): Promise<string[]> {
  const m = registry.getSingleMetric('ccm_live_reads_total');
  if (!m) return [];
  return (await m.get()).values.map((v) => `${v.labels.controller} ${v.labels.resource} ${v.labels.outcome} ${v.value}`).sort();
}

const REPLACED = [
  'ccm_deletion_live_reads_total',
  'ccm_node_lifecycle_live_reads_total',
  'ccm_route_live_reads_total',
  'ccm_nodeipam_live_reads_total',
  'ccm_service_live_reads_total',
];

test('every controller counts into the one family, under its own controller and resource labels', async (t) => {
  const registry = new Registry();
  const counts = [
    liveReadCounter('cloud-node-lifecycle-controller', 'nodes', registry),
    liveReadCounter('node-route-controller', 'nodes', registry),
    liveReadCounter('node-ipam-controller', 'nodes', registry),
    liveReadCounter('volume-attacher-controller', 'volumeattachments', registry),
  ];
  counts[0]!(LiveReadOutcomes.CONFIRMED);
  counts[0]!(LiveReadOutcomes.CONFIRMED);
  counts[1]!(LiveReadOutcomes.GONE);
  counts[2]!(LiveReadOutcomes.CHANGED);
  counts[3]!(LiveReadOutcomes.ERROR);
  t.deepEqual(await samples(registry), [
    'cloud-node-lifecycle-controller nodes confirmed 2',
    'node-ipam-controller nodes changed 1',
    'node-route-controller nodes gone 1',
    'volume-attacher-controller volumeattachments error 1',
  ]);
  const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
  t.deepEqual(names, ['ccm_live_reads_total'], 'one family; none of the replaced names');
  t.false(
    REPLACED.some((n) => names.includes(n)),
    'the old per-controller names are not registered',
  );
});

test('the help text names every outcome', async (t) => {
  const registry = new Registry();
  liveReadCounter('x', 'nodes', registry)(LiveReadOutcomes.CONFIRMED);
  const text = await registry.getSingleMetricAsString('ccm_live_reads_total');
  for (const o of Object.values(LiveReadOutcomes)) t.regex(text, new RegExp(`^# HELP .*\\b${o}\\b`, 'm'), o);
});

test('without a registry a count is a no-op', (t) => {
  t.notThrows(() => liveReadCounter('x', 'nodes')(LiveReadOutcomes.GONE));
});

const svc = (uid: string): V1Service => ({ metadata: { name: 'web', namespace: 'ns', uid }, spec: { type: 'LoadBalancer' } });

// The Service GET before a load balancer is deleted: the sweep's reads apart from the controller's own.
const serviceCases: { what: string; path: LiveReadPath; answer: V1Service | Error; keeps: boolean; want: string }[] = [
  {
    what: 'sweep, Service gone',
    path: 'sweep',
    answer: new ApiError(404, {}, 'GET', '/x'),
    keeps: false,
    want: 'service-lb-orphan-sweep services gone 1',
  },
  { what: 'sweep, Service still wants it', path: 'sweep', answer: svc('u1'), keeps: true, want: 'service-lb-orphan-sweep services changed 1' },
  { what: 'finalizer, delete confirmed', path: 'finalizer', answer: svc('u2'), keeps: false, want: 'service-lb-controller services confirmed 1' },
  {
    what: 'finalizer, read failed',
    path: 'finalizer',
    answer: new Error('connection reset'),
    keeps: false,
    want: 'service-lb-controller services error 1',
  },
];
for (const c of serviceCases) {
  test(`Service live read: ${c.what} → ${c.want}`, async (t) => {
    const registry = new Registry();
    const core = {
      readNamespacedService: async () => {
        if (c.answer instanceof Error) throw c.answer;
        return c.answer;
      },
    } as unknown as CoreV1Api;
    const reads = liveServiceReads(core, registry);
    let live: V1Service | undefined;
    try {
      live = await reads.read(c.path, 'ns', 'web');
    } catch {
      t.deepEqual(await samples(registry), [c.want]);
      return;
    }
    reads.decided(c.path, live, c.keeps);
    t.deepEqual(await samples(registry), [c.want], 'counted once');
  });
}
