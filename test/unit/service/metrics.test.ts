/** Upstream's service_controller_* metrics: names, buckets, and one family per registry however many controllers use it. */
import test from 'ava';
import { Registry } from 'prom-client';
import { serviceMetrics } from '../../../host/controller-metrics.js';

test('upstream names and 1..16384 s buckets; shared by controllers on one registry', async (t) => {
  const registry = new Registry();
  const a = serviceMetrics(registry);
  const b = serviceMetrics(registry);
  a.loadBalancerSyncs.inc(3);
  b.loadBalancerSyncs.inc(2);
  a.nodeSyncErrors.inc();
  a.nodeSyncLatency.observe(1.5);
  b.updateHostLatency.observe(0.2);
  const text = await registry.metrics();
  t.regex(text, /^service_controller_loadbalancer_sync_total 5$/m);
  t.regex(text, /^service_controller_nodesync_error_total 1$/m);
  for (const name of ['service_controller_nodesync_latency_seconds', 'service_controller_update_loadbalancer_host_latency_seconds']) {
    const les = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}`, 'gm'))].map((x) => x[1]);
    t.deepEqual(les, [...Array.from({ length: 15 }, (_, i) => String(2 ** i)), '+Inf'], name);
  }
  t.regex(text, /^service_controller_nodesync_latency_seconds_count 1$/m);
});
