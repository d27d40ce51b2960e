/** createHostMetrics: names, help text, buckets and the small recording helpers. */
import test from 'ava';
import { createHostMetrics, managedControllerName, MetricNames, observePluginRpc, setControllerRunning } from '../../../host/metrics.js';
import { Controllers } from '../../../host/names.js';

test('every host metric is registered with help text', async (t) => {
  const { registry } = createHostMetrics({ defaultMetrics: false });
  const metrics = await registry.getMetricsAsJSON();
  const byName = new Map(metrics.map((m) => [m.name, m]));
  for (const name of Object.values(MetricNames)) {
    const m = byName.get(name);
    if (!m) return t.fail(`${name} not registered`);
    t.true(m.help.length > 10, `${name} help`);
  }
});

test('default process metrics are on unless disabled', async (t) => {
  t.regex(await createHostMetrics().registry.metrics(), /^process_resident_memory_bytes /m);
  t.notRegex(await createHostMetrics({ defaultMetrics: false }).registry.metrics(), /process_resident_memory_bytes/);
});

test('observePluginRpc records duration always and errors for non-OK codes', async (t) => {
  const m = createHostMetrics({ defaultMetrics: false });
  observePluginRpc(m, { plugin: 'local', method: 'InstanceMetadata', code: 'OK' }, 0.002);
  observePluginRpc(m, { plugin: 'local', method: 'InstanceMetadata', code: 'UNAVAILABLE' }, 0.5);
  const text = await m.registry.metrics();
  t.regex(text, /ccm_plugin_rpc_duration_seconds_bucket\{le="0.0005",plugin="local",method="InstanceMetadata",code="OK"\} 0/);
  t.regex(text, /ccm_plugin_rpc_duration_seconds_bucket\{le="60",plugin="local",method="InstanceMetadata",code="OK"\} 1/);
  t.regex(text, /ccm_plugin_rpc_errors_total\{plugin="local",method="InstanceMetadata",code="UNAVAILABLE"\} 1/);
  t.notRegex(text, /ccm_plugin_rpc_errors_total\{[^}]*code="OK"\}/);
});

test('upstream node delay histograms use buckets 1..1024', async (t) => {
  const text = await createHostMetrics({ defaultMetrics: false }).registry.metrics();
  for (const name of [MetricNames.TAINT_REMOVAL_DELAY, MetricNames.INITIAL_NODE_SYNC_DELAY]) {
    const les = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}`, 'gm'))].map((x) => x[1]);
    t.deepEqual(les, ['1', '4', '16', '64', '256', '1024', '+Inf'], name);
  }
});

test('running_managed_controllers uses upstream short names', async (t) => {
  const m = createHostMetrics({ defaultMetrics: false });
  t.is(managedControllerName(Controllers.SERVICE_LB), 'service');
  t.is(managedControllerName(Controllers.NODE_ROUTE), 'route');
  setControllerRunning(m, Controllers.CLOUD_NODE_LIFECYCLE, true);
  setControllerRunning(m, Controllers.NODE_ROUTE, false);
  const text = await m.registry.metrics();
  t.regex(text, /running_managed_controllers\{manager="cloud-controller-manager",name="cloud-node-lifecycle"\} 1/);
  t.regex(text, /running_managed_controllers\{manager="cloud-controller-manager",name="route"\} 0/);
});

test('two hosts in one process keep separate registries', (t) => {
  const a = createHostMetrics();
  const b = createHostMetrics();
  a.pluginRestarts.inc({ plugin: 'x' });
  t.not(a.registry, b.registry);
  t.not(a.pluginRestarts, b.pluginRestarts);
});

test('kubernetes_build_info is 1, labelled with this build as upstream labels its', async (t) => {
  const text = await createHostMetrics({ defaultMetrics: false }).registry.metrics();
  const line = /^kubernetes_build_info\{([^}]*)\} 1$/m.exec(text);
  if (!line) return t.fail('no kubernetes_build_info 1');
  for (const label of ['major', 'minor', 'git_version', 'git_commit', 'git_tree_state', 'build_date', 'go_version', 'compiler', 'platform'])
    t.regex(line[1]!, new RegExp(`\\b${label}="`));
  t.regex(line[1]!, /git_version="v\d+\.\d+\.\d+/);
});
