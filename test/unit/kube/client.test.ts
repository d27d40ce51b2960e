import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { Counter, Histogram, Registry } from 'prom-client';
import { isConflict, isGoneOrReplaced, isNotFound, makeClients } from '../../../host/kube/client.js';
import { currentCluster, loadKubeConfig, type LoadKubeConfigOptions } from '../../../host/kube/kubeconfig.js';
import { ApiError } from '../../../host/kube/rest.js';
import { startCaptureServer } from './capture-server.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-client-test-'));
test.after.always(() => fs.rmSync(tmp, { recursive: true, force: true }));

function kubeconfigFile(name: string, server: string): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{ name: ${name}, cluster: { server: "${server}" } }]`,
      `users: [{ name: ${name}, user: { token: t } }]`,
      `contexts: [{ name: ${name}, context: { cluster: ${name}, user: ${name} } }]`,
      `current-context: ${name}`,
    ].join('\n'),
  );
  return file;
}

const fileA = kubeconfigFile('a', 'https://a.example:6443');
const kubeconfigData = (server: string) => loadKubeConfig({ kubeconfig: kubeconfigFile('plain', server) });
const fileB = kubeconfigFile('b', 'https://b.example:6443');
const saRoot = path.join(tmp, 'sa');
fs.mkdirSync(path.join(saRoot, 'var/run/secrets/kubernetes.io/serviceaccount'), { recursive: true });
fs.writeFileSync(path.join(saRoot, 'var/run/secrets/kubernetes.io/serviceaccount/token'), 'sa-token');

const ENV_KEYS = ['KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT'] as const;

const loadTable: {
  name: string;
  env: Partial<Record<(typeof ENV_KEYS)[number], string>>;
  opts: LoadKubeConfigOptions;
  want: string | RegExp;
}[] = [
  { name: '--kubeconfig', env: {}, opts: { kubeconfig: fileA }, want: 'https://a.example:6443' },
  { name: 'KUBECONFIG', env: { KUBECONFIG: fileB }, opts: {}, want: 'https://b.example:6443' },
  {
    name: 'KUBECONFIG list: first file context wins',
    env: { KUBECONFIG: `${fileB}${path.delimiter}${fileA}` },
    opts: {},
    want: 'https://b.example:6443',
  },
  { name: '--kubeconfig beats KUBECONFIG', env: { KUBECONFIG: fileB }, opts: { kubeconfig: fileA }, want: 'https://a.example:6443' },
  { name: '--master overrides the server', env: {}, opts: { kubeconfig: fileA, master: 'https://m.example' }, want: 'https://m.example' },
  {
    name: 'in-cluster',
    env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' },
    opts: { inClusterPathPrefix: saRoot },
    want: 'https://10.0.0.1:443',
  },
  {
    name: 'KUBECONFIG beats in-cluster',
    env: { KUBECONFIG: fileB, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' },
    opts: { inClusterPathPrefix: saRoot },
    want: 'https://b.example:6443',
  },
  {
    name: 'in-cluster needs the token file',
    env: { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' },
    opts: { inClusterPathPrefix: path.join(tmp, 'nowhere') },
    want: /pass --kubeconfig/,
  },
  { name: '--master alone', env: {}, opts: { master: 'http://127.0.0.1:8080' }, want: 'http://127.0.0.1:8080' },
  { name: 'nothing', env: {}, opts: { inClusterPathPrefix: path.join(tmp, 'nowhere') }, want: /pass --kubeconfig/ },
  { name: 'missing file', env: {}, opts: { kubeconfig: path.join(tmp, 'missing') }, want: /cannot load kubeconfig .*missing from --kubeconfig/ },
];

for (const { name, env, opts, want } of loadTable) {
  test.serial(`loadKubeConfig: ${name}`, (t) => {
    const saved = ENV_KEYS.map((k) => process.env[k]);
    try {
      for (const k of ENV_KEYS) {
        if (env[k] === undefined) delete process.env[k];
        else process.env[k] = env[k];
      }
      if (typeof want === 'string') t.is(currentCluster(loadKubeConfig(opts))?.server, want);
      else t.throws(() => loadKubeConfig(opts), { message: want });
    } finally {
      ENV_KEYS.forEach((k, i) => {
        if (saved[i] === undefined) delete process.env[k];
        else process.env[k] = saved[i];
      });
    }
  });
}

test('makeClients: a request that gets no response is counted as <error>', async (t) => {
  const server = await startCaptureServer(() => ({ status: 200, body: {} }));
  const url = server.url;
  await server.close();
  const registry = new Registry();
  const { core } = makeClients(kubeconfigData(url), { userAgent: 'ccm-test', registry });
  await t.throwsAsync(core.readNode({ name: 'n1' }), { code: 'ECONNREFUSED' });
  const counted = (await (registry.getSingleMetric('rest_client_requests_total') as Counter).get()).values;
  t.deepEqual(
    counted.map((v) => [v.labels.code, v.labels.method, v.value]),
    [['<error>', 'GET', 1]],
  );
});

test('makeClients: every client shares the limiter, sends user agent and credentials, is counted', async (t) => {
  const server = await startCaptureServer((req) =>
    req.url.startsWith('/api/v1/nodes')
      ? { status: 200, body: { kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [] } }
      : { status: 200, body: { kind: 'LeaseList', apiVersion: 'coordination.k8s.io/v1', metadata: {}, items: [] } },
  );
  t.teardown(() => server.close());
  const registry = new Registry();
  const clients = makeClients(server.kubeConfig('tok'), { qps: 2, burst: 1, userAgent: 'ccm-test/1.0', registry });
  await Promise.all([clients.core.listNode({}), clients.coordination.listNamespacedLease({ namespace: 'kube-system' }), clients.core.listNode({})]);
  t.is(server.requests.length, 3);
  for (const r of server.requests) {
    t.is(r.headers['user-agent'], 'ccm-test/1.0');
    t.is(r.headers.authorization, 'Bearer tok');
  }
  const counted = (await (registry.getSingleMetric('rest_client_requests_total') as Counter).get()).values;
  t.deepEqual(
    counted.map((v) => [v.labels.code, v.labels.method, v.labels.host, v.value]),
    [['200', 'GET', new URL(server.url).host, 3]],
  );
  // client-go's histograms, one observation per request; the limiter's waits are what it computed:
  // 3 requests at 2 qps with burst 1, sent at once, wait 0, 0.5 and 1 s (1.5 s in all; less by however late
  // each arrived). Clients with a limiter each would wait at most 0.5 s in all (two of the three share one),
  // so anything above 1 s shows one shared bucket, with a margin no loaded machine eats.
  const observed = async (name: string) => {
    const values = (await (registry.getSingleMetric(name) as Histogram).get()).values;
    const of = (suffix: string) =>
      values.find((v) => v.metricName === name + suffix && v.labels.verb === 'GET' && v.labels.host === new URL(server.url).host)?.value;
    return { count: of('_count'), sum: of('_sum') ?? NaN };
  };
  for (const name of ['rest_client_request_duration_seconds', 'rest_client_request_size_bytes', 'rest_client_response_size_bytes']) {
    t.is((await observed(name)).count, 3, name);
  }
  const waited = await observed('rest_client_rate_limiter_duration_seconds');
  t.is(waited.count, 3);
  t.true(waited.sum > 1 && waited.sum <= 1.5 + 1e-6, `waits of 0, 0.5 and 1 s: ${waited.sum} s`);
  t.is((await observed('rest_client_request_size_bytes')).sum, 0, 'GETs carry no body');
});

const statusTable: { status: number; conflict: boolean; notFound: boolean }[] = [
  { status: 404, conflict: false, notFound: true },
  { status: 409, conflict: true, notFound: false },
  { status: 500, conflict: false, notFound: false },
];
for (const { status, conflict, notFound } of statusTable) {
  test(`isConflict/isNotFound: HTTP ${status}`, async (t) => {
    const server = await startCaptureServer(() => ({ status, body: { kind: 'Status', apiVersion: 'v1', code: status } }));
    t.teardown(() => server.close());
    const { core } = makeClients(server.kubeConfig(), { userAgent: 'ccm-test' });
    const err = await t.throwsAsync(core.readNode({ name: 'n1' }));
    t.true(err instanceof ApiError);
    t.is(isConflict(err), conflict);
    t.is(isNotFound(err), notFound);
  });
}

const uidCause = {
  kind: 'Status',
  apiVersion: 'v1',
  code: 422,
  reason: 'Invalid',
  details: { causes: [{ reason: 'FieldValueInvalid', field: 'metadata.uid' }] },
};
const otherCause = {
  kind: 'Status',
  apiVersion: 'v1',
  code: 422,
  reason: 'Invalid',
  details: { causes: [{ reason: 'FieldValueForbidden', field: 'status.loadBalancer.ingress' }] },
};
const goneTable: { name: string; status: number; body: object; gone: boolean }[] = [
  { name: '404', status: 404, body: { kind: 'Status', apiVersion: 'v1', code: 404 }, gone: true },
  { name: '422 on metadata.uid (name taken by another object)', status: 422, body: uidCause, gone: true },
  { name: '422 on another field', status: 422, body: otherCause, gone: false },
  { name: '409', status: 409, body: { kind: 'Status', apiVersion: 'v1', code: 409 }, gone: false },
];
for (const { name, status, body, gone } of goneTable) {
  test(`isGoneOrReplaced: ${name}`, async (t) => {
    const server = await startCaptureServer(() => ({ status, body }));
    t.teardown(() => server.close());
    const { core } = makeClients(server.kubeConfig(), { userAgent: 'ccm-test' });
    t.is(isGoneOrReplaced(await t.throwsAsync(core.readNode({ name: 'n1' }))), gone);
  });
}

test('isConflict/isNotFound: other values are neither', (t) => {
  for (const v of [undefined, null, new Error('x'), { code: 404 }, 'nope']) {
    t.false(isConflict(v));
    t.false(isNotFound(v));
  }
});

test.serial('loadKubeConfig: a plain-HTTP --master is allowed (skipTLSVerify), an https one keeps verification', (t) => {
  t.true(currentCluster(loadKubeConfig({ kubeconfig: fileA, master: 'http://127.0.0.1:8080' }))?.skipTLSVerify);
  t.falsy(currentCluster(loadKubeConfig({ kubeconfig: fileA, master: 'https://m.example' }))?.skipTLSVerify);
});
