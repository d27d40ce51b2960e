/** The metric names a PromQL expression of the monitoring bundle selects (test/helpers/monitoring.ts), which the integration tests look up on a host's /metrics. */
import test from 'ava';
import { isExposed, metricNames } from '../../helpers/monitoring.js';

const CASES: { expr: string; names: string[] }[] = [
  { expr: 'ccm_plugin_ready == 0', names: ['ccm_plugin_ready'] },
  { expr: 'max by (namespace, pod, plugin) (ccm_plugin_ready{job="x"}) == 0', names: ['ccm_plugin_ready'] },
  { expr: 'increase(ccm_plugin_restarts_total{job="x"}[15m]) > 2', names: ['ccm_plugin_restarts_total'] },
  {
    expr: 'sum by (a) (rate(x_errors_total{job="x"}[10m]))\n  / sum by (a) (rate(x_seconds_count{job="x"}[10m])) > 0.25',
    names: ['x_errors_total', 'x_seconds_count'],
  },
  { expr: 'histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket{job="x"}[$__rate_interval])))', names: ['x_seconds_bucket'] },
  { expr: 'absent(up{job="x"} == 1)', names: ['up'] },
  { expr: 'a{outcome=~"dry_run|failed"} and on (pod) b unless ignoring (x) c offset 5m', names: ['a', 'b', 'c'] },
];
for (const c of CASES) test(`metricNames: ${c.expr.replace(/\s+/g, ' ')}`, (t) => t.deepEqual(metricNames(c.expr), c.names));

test('isExposed: a histogram sample belongs to its family', (t) => {
  const exposed = new Set(['x_seconds', 'y_total']);
  t.true(isExposed('x_seconds_bucket', exposed));
  t.true(isExposed('x_seconds_count', exposed));
  t.true(isExposed('y_total', exposed));
  t.false(isExposed('y', exposed));
  t.false(isExposed('z_seconds_bucket', exposed));
});
