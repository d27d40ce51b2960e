/**
 * The monitoring bundle (deploy/components/monitoring, docs/monitoring.md):
 *   - the PrometheusRule's groups pass Prometheus's own rule checker
 *     (`promtool check rules`, promtool built from its Go module, see
 *     test/helpers/promtool.ts), and the alerts' unit tests
 *     (test/fixtures/monitoring/alerts.test.yaml) pass `promtool test rules`;
 *   - the component renders (the real kustomize) with each flavour, and its
 *     Service, ServiceMonitor and dashboard ConfigMap point at what the
 *     flavour ships;
 *   - every metric the alerts and the dashboard query is one a running host
 *     serves on /metrics (the provider process's are checked against the
 *     bridged AWS provider, in test/integration/providers/aws-bridge.test.ts).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  dumpYaml,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Deployment,
  type V1Service,
} from '@kubernetes/client-node';
import { execa } from 'execa';
import { exposedNames } from '../../../host/plugin/validate-metrics.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost } from '../../helpers/host.js';
import { renderKustomization } from '../../helpers/kustomize.js';
import { DEPLOY_DIR, OVERLAYS, localDemoDir } from '../../helpers/manifests.js';
import {
  MONITORING_DIR,
  bundleMetrics,
  dashboard,
  fromProviderProcess,
  isExposed,
  ruleGroups,
  SCRAPE_METRICS,
  type Dashboard,
} from '../../helpers/monitoring.js';
import { promtoolBinary } from '../../helpers/promtool.js';
import { grantLease } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';

const UNIT_TESTS = fileURLToPath(new URL('../../../../test/fixtures/monitoring/alerts.test.yaml', import.meta.url));

/** What the issue asks the alerts to cover, and the alert that does. */
const REQUIRED_ALERTS: { what: string; alert: string }[] = [
  { what: 'plugin down', alert: 'CloudControllerManagerPluginDown' },
  { what: 'plugin restarting', alert: 'CloudControllerManagerPluginRestarting' },
  { what: 'sync errors', alert: 'CloudControllerManagerSyncErrors' },
  { what: 'deletion brake engaged', alert: 'CloudControllerManagerDeletionBrakeEngaged' },
  { what: 'orphans found', alert: 'CloudControllerManagerOrphanLoadBalancers' },
  { what: 'lease lost', alert: 'CloudControllerManagerLeaseLost' },
  { what: 'no leader', alert: 'CloudControllerManagerNoLeader' },
];

/** A directory with the rules as a promtool rule file (rules.yaml) and the unit tests beside it. */
async function ruleDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-promtool-'));
  await writeFile(join(dir, 'rules.yaml'), dumpYaml(await ruleGroups()));
  await copyFile(UNIT_TESTS, join(dir, 'alerts.test.yaml'));
  return dir;
}

test('the alerts pass `promtool check rules` and their unit tests pass `promtool test rules`', async (t) => {
  const promtool = await promtoolBinary();
  const dir = await ruleDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const check = await execa(promtool, ['check', 'rules', 'rules.yaml'], { cwd: dir, reject: false, all: true });
  t.is(check.exitCode, 0, check.all);
  const alerts = (await ruleGroups()).groups.flatMap((g) => g.rules.map((r) => r.alert));
  t.regex(check.all ?? '', new RegExp(`SUCCESS: ${alerts.length} rules found`));
  for (const r of REQUIRED_ALERTS) t.true(alerts.includes(r.alert), `${r.what}: ${r.alert}`);
  const unit = await execa(promtool, ['test', 'rules', 'alerts.test.yaml'], { cwd: dir, reject: false, all: true });
  t.is(unit.exitCode, 0, unit.all);
  t.regex(unit.all ?? '', /SUCCESS/);
});

test('promtool is a real checker: a broken expression, a broken template and a failing unit test are refused', async (t) => {
  const promtool = await promtoolBinary();
  const dir = await ruleDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const CASES: { name: string; rules: string; args: string[] }[] = [
    {
      name: 'an expression that does not parse',
      rules: 'groups: [{name: g, rules: [{alert: A, expr: "sum by (pod (ccm_plugin_ready)"}]}]\n',
      args: ['check', 'rules', 'rules.yaml'],
    },
    {
      name: 'an annotation template that does not parse',
      rules: 'groups: [{name: g, rules: [{alert: A, expr: "ccm_plugin_ready == 0", annotations: {summary: "{{ $labels.pod "}}]}]\n',
      args: ['check', 'rules', 'rules.yaml'],
    },
    {
      // The unit tests against rules that never fire: every expected alert is missing.
      name: 'unit tests whose alerts do not fire',
      rules: dumpYaml({
        groups: (await ruleGroups()).groups.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, expr: 'vector(1) == 0' })) })),
      }),
      args: ['test', 'rules', 'alerts.test.yaml'],
    },
  ];
  for (const c of CASES) {
    await writeFile(join(dir, 'rules.yaml'), c.rules);
    const r = await execa(promtool, c.args, { cwd: dir, reject: false, all: true });
    t.not(r.exitCode, 0, `${c.name}: ${r.all}`);
  }
});

/** What the component is tested with: both flavours (their local demos) and a real provider's kustomization, relative to deploy/. */
const WITH_MONITORING = [...OVERLAYS.map(localDemoDir), 'providers/aws'];

/** `kustomize build` of a kustomization of one's own: `overlay` (relative to deploy/) with the monitoring component, as its header says to use it. */
async function renderWithMonitoring(overlay: string): Promise<KubernetesObject[]> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kustomization-'));
  try {
    await writeFile(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${relative(dir, join(DEPLOY_DIR, overlay))}`,
        'components:',
        `  - ${relative(dir, MONITORING_DIR)}`,
        '',
      ].join('\n'),
    );
    return await renderKustomization(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface ServiceMonitor extends KubernetesObject {
  spec: {
    jobLabel?: string;
    namespaceSelector?: { matchNames?: string[] };
    selector: { matchLabels: Record<string, string> };
    endpoints: { port: string; scheme: string; path: string; bearerTokenFile?: string }[];
  };
}

const matches = (selector: Record<string, string>, labels: Record<string, string> | undefined) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

test('with each flavour, the Service selects the pods and their metrics port, the ServiceMonitor the Service, and the dashboard is valid', async (t) => {
  for (const overlay of WITH_MONITORING) {
    const objects = await renderWithMonitoring(overlay);
    const one = <T extends KubernetesObject>(kind: string): T => {
      const found = objects.filter((o) => o.kind === kind);
      t.is(found.length, 1, `${overlay}: one ${kind}`);
      return found[0] as T;
    };
    const deployment = one<V1Deployment>('Deployment');
    const service = one<V1Service>('Service');
    const monitor = one<ServiceMonitor>('ServiceMonitor');
    const rule = one<KubernetesObject>('PrometheusRule');
    const configMap = one<V1ConfigMap>('ConfigMap');
    const pod = deployment.spec!.template;
    const host = pod.spec!.containers[0]!;
    const ns = deployment.metadata!.namespace;

    t.is(service.metadata?.namespace, ns, `${overlay}: the Service is beside the pods`);
    t.true(matches(service.spec!.selector!, pod.metadata!.labels), `${overlay}: the Service selects the pods`);
    const port = service.spec!.ports!.find((p) => p.name === monitor.spec.endpoints[0]!.port);
    t.truthy(port, `${overlay}: the ServiceMonitor's port is a port of the Service`);
    const target = host.ports?.find((p) => p.name === port?.targetPort);
    t.truthy(target, `${overlay}: the Service's targetPort names a port of the host container`);
    t.true(host.args!.includes(`--secure-port=${target?.containerPort}`), `${overlay}: that port is --secure-port, which serves /metrics`);
    t.is(port?.port, target?.containerPort, overlay);

    t.true(matches(monitor.spec.selector.matchLabels, service.metadata?.labels), `${overlay}: the ServiceMonitor selects the Service`);
    t.deepEqual(monitor.spec.namespaceSelector?.matchNames, [ns], overlay);
    t.like(monitor.spec.endpoints[0], { scheme: 'https', path: '/metrics' }, `${overlay}: --secure-port serves HTTPS only`);
    const job = service.metadata?.labels?.[monitor.spec.jobLabel ?? ''];
    t.is(job, 'cloud-controller-manager', `${overlay}: the job label the rules and the dashboard select`);

    t.is(rule.metadata?.namespace, ns, overlay);
    t.is(configMap.metadata?.labels?.grafana_dashboard, '1', `${overlay}: picked up by Grafana's dashboard sidecar`);
    const json = JSON.parse(configMap.data?.['dashboard.json'] ?? 'null') as Dashboard;
    t.deepEqual(json, await dashboard(), `${overlay}: the ConfigMap holds dashboard.json`);

    const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata?.name === 'cloud-controller-manager:metrics-reader') as
      (KubernetesObject & { rules: { nonResourceURLs?: string[]; verbs: string[] }[] }) | undefined;
    t.deepEqual(
      JSON.parse(JSON.stringify(role?.rules ?? null)),
      [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
      `${overlay}: a reader role for Prometheus, /metrics only`,
    );
  }
});

test("the component's built-in kinds pass a server-side apply dry run (the Prometheus Operator's kinds need its CRDs, absent here)", async (t) => {
  const api = KubernetesObjectApi.makeApiClient(await testKubeConfig());
  const builtIn = (await renderWithMonitoring(localDemoDir('exec'))).filter(
    (o) => ['Service', 'ClusterRole', 'ConfigMap'].includes(o.kind ?? '') && /monitoring|metrics|dashboard/.test(o.metadata?.name ?? ''),
  );
  t.deepEqual(builtIn.map((o) => o.kind).sort(), ['ClusterRole', 'ConfigMap', 'Service']);
  for (const obj of builtIn) {
    const what = `${obj.kind}/${obj.metadata?.name}`;
    const out = await api
      .patch(obj, undefined, 'All', 'ccm-monitoring-test', true, PatchStrategy.ServerSideApply)
      .catch((err: { body?: unknown; message?: string }) => {
        t.fail(`${what}: ${JSON.stringify(err.body ?? err.message)}`);
        return undefined;
      });
    if (out) t.is(out.kind, obj.kind, what);
  }
});

test('the dashboard: unique panel ids, every panel queries the data source variable with unique refIds, and fits the grid', async (t) => {
  const d = await dashboard();
  t.truthy(d.uid);
  t.truthy(d.templating.list.find((v) => v.name === 'datasource' && v.type === 'datasource' && v.query === 'prometheus'));
  const ids = d.panels.map((p) => p.id);
  t.is(new Set(ids).size, ids.length, 'panel ids are unique');
  for (const p of d.panels) {
    t.true((p.targets?.length ?? 0) > 0, `${p.title}: has queries`);
    t.is(p.datasource?.uid, '${datasource}', p.title);
    const refIds = (p.targets ?? []).map((x) => x.refId);
    t.is(new Set(refIds).size, refIds.length, `${p.title}: refIds are unique`);
    for (const x of p.targets ?? []) t.regex(x.expr, /job="cloud-controller-manager"/, `${p.title}: ${x.expr} selects the job`);
    t.true(p.gridPos.x >= 0 && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24, `${p.title}: within the 24 columns`);
  }
});

test("every metric the alerts and the dashboard query is on a running host's /metrics", async (t) => {
  const uses = await bundleMetrics();
  const wanted = [...uses.keys()].filter((n) => !SCRAPE_METRICS.has(n) && !fromProviderProcess(n));
  t.true(wanted.length >= 15, `the bundle queries the host's metrics: ${wanted.join(', ')}`);

  const id = randomBytes(3).toString('hex');
  const namespace = `monitoring-${id}`;
  const admin = await testKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  t.teardown(() =>
    core.deleteNamespace({ name: namespace }).then(
      () => undefined,
      () => undefined,
    ),
  );
  await grantLease(admin, namespace, 'ccm');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-monitoring-'));
  // The controllers whose metrics the bundle queries, leader elected on a Lease of its own.
  const host = await startTestHost(dir, [
    '--controllers=cloud-node,cloud-node-lifecycle,service',
    `--node-selector=ccm-test=monitoring-${id}`,
    `--watch-namespace=${namespace}`,
    '--leader-elect=true',
    `--leader-elect-resource-namespace=${namespace}`,
    '--leader-elect-resource-name=ccm',
    '--lb-orphan-sweep-period=1m',
  ]);
  t.teardown(() => host.stop());
  // Leading, its controllers started: their metrics are registered as each starts.
  let missing: string[] = wanted;
  await waitFor(
    async () => {
      const exposed = exposedNames(await host.metrics.registry.metrics());
      missing = wanted.filter((n) => !isExposed(n, exposed));
      return missing.length === 0;
    },
    { what: 'every metric the bundle queries on the host', log: host.logPath },
  ).catch(() => undefined);
  t.deepEqual(
    missing.map((n) => `${n} (${uses.get(n)!.join(', ')})`),
    [],
    'queried by the bundle but not served by the host',
  );
});
