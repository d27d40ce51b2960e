/**
 * Whom the host asks, against the real API server. The cluster
 * authentication lookup at start (ConfigMap
 * kube-system/extension-apiserver-authentication), by a host whose identity
 * may not read it: upstream refuses to start (with what to bind),
 * `--authentication-tolerate-lookup-failure` starts anyway,
 * `--authentication-skip-lookup` does not look. And
 * `--authentication-kubeconfig` / `--authorization-kubeconfig` replace the
 * host's own connection for TokenReview / SubjectAccessReview.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubeConfig } from '@kubernetes/client-node';
import { startHost, type HostHandle } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { freePorts } from '../controlplane/probe.js';
import { httpsRequest } from '../helpers/https.js';
import { logFile } from '../helpers/log-file.js';
import { scraperToken } from '../helpers/scraper.js';
import { hostKubeConfig, serviceAccountKubeConfig } from '../helpers/service-account.js';
import { ALLOW_SIMULATION_FLAG } from '../helpers/localcloud.js';

/** A ServiceAccount with no rights beyond every authenticated user's (unique in the suite). */
const SA = { namespace: 'kube-system', name: 'ccm-test-secure-lookup' };

const test = anyTest as TestFn<{ kc: KubeConfig; dir: string; kcFile: string }>;

test.before(async (t) => {
  const admin = await testKubeConfig();
  await KubernetesObjectApi.makeApiClient(admin).patch(
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...SA } },
    undefined,
    undefined,
    'ccm-tests',
    true,
    PatchStrategy.ServerSideApply,
  );
  const kc = await serviceAccountKubeConfig(admin, SA);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-secure-lookup-'));
  const kcFile = join(dir, 'no-rights.kubeconfig');
  await writeFile(kcFile, kc.exportConfig(), { mode: 0o600 });
  t.context = { kc, dir, kcFile };
});

test.after.always(async () => {
  await (
    await testKubeConfig()
  )
    .makeApiClient(CoreV1Api)
    .deleteNamespacedServiceAccount(SA)
    .catch(() => undefined);
});

/** Starts a host as the no-rights ServiceAccount (or `kubeConfig`) with a secure port. */
async function start(t: { context: { kc: KubeConfig; dir: string } }, name: string, flags: string[], kubeConfig = t.context.kc) {
  const [port] = await freePorts(1);
  const parsed = parseHostArgs([
    '--cloud-provider=local',
    '--cluster-name=secure-lookup',
    // Given, since this identity may not read the kube-system Namespace either: the test is about the ConfigMap lookup.
    '--cluster-uid=secure-lookup-uid',
    '--leader-elect=false',
    '--controllers=',
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    `--plugin-env=LOCALCLOUD_STATE_DIR=${join(t.context.dir, name, 'cloud')}`,
    ALLOW_SIMULATION_FLAG,
    ...flags,
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  const log = createLogger({ verbosity: 2, destination: logFile(join(t.context.dir, `${name}.log`)) });
  const host = await startHost(parsed.config, { log, kubeConfig });
  return { host, port: port! };
}

/** 403 answers the host met (rest_client_requests_total). */
async function forbidden(host: HostHandle): Promise<number> {
  const metric = await host.metrics.registry.getSingleMetric('rest_client_requests_total')?.get();
  return (metric?.values ?? []).filter((v) => v.labels.code === '403').length;
}

test('without the reader Role the host does not start, and says what to bind', async (t) => {
  await t.throwsAsync(start(t, 'strict', []), {
    message:
      /cannot read ConfigMap kube-system\/extension-apiserver-authentication: .*403.*Role extension-apiserver-authentication-reader .*--authentication-tolerate-lookup-failure/,
  });
});

test('--authentication-tolerate-lookup-failure starts anyway and serves /healthz', async (t) => {
  const { host, port } = await start(t, 'tolerate', ['--authentication-tolerate-lookup-failure']);
  t.teardown(() => host.stop());
  t.is((await httpsRequest(`https://127.0.0.1:${port}/healthz`, { insecure: true })).status, 200);
  t.true((await forbidden(host)) > 0, 'the lookup was tried');
});

test('--authentication-skip-lookup does not read the ConfigMap', async (t) => {
  const { host, port } = await start(t, 'skip', ['--authentication-skip-lookup']);
  t.teardown(() => host.stop());
  t.is((await httpsRequest(`https://127.0.0.1:${port}/healthz`, { insecure: true })).status, 200);
  t.is(await forbidden(host), 0);
});

test('--authentication-kubeconfig is who reviews tokens: one that may not makes every token unauthorized', async (t) => {
  const { host, port } = await start(
    t,
    'authn-kc',
    ['--authentication-skip-lookup', `--authentication-kubeconfig=${t.context.kcFile}`],
    // The shipped ServiceAccount, which may review tokens and access: only the flag's kubeconfig lacks the right.
    await hostKubeConfig(),
  );
  t.teardown(() => host.stop());
  t.is((await httpsRequest(`https://127.0.0.1:${port}/metrics`, { insecure: true, token: await scraperToken() })).status, 401);
});

test('--authorization-kubeconfig is who reviews access: one that may not makes decisions fail (500), not allow', async (t) => {
  const { host, port } = await start(
    t,
    'authz-kc',
    ['--authentication-skip-lookup', `--authorization-kubeconfig=${t.context.kcFile}`],
    // The shipped ServiceAccount, which may review tokens and access: only the flag's kubeconfig lacks the right.
    await hostKubeConfig(),
  );
  t.teardown(() => host.stop());
  const r = await httpsRequest(`https://127.0.0.1:${port}/metrics`, { insecure: true, token: await scraperToken() });
  t.is(r.status, 500, r.body);
  t.regex((JSON.parse(r.body) as { message: string }).message, /authorization failed: .*403/);
  t.is((await httpsRequest(`https://127.0.0.1:${port}/healthz`, { insecure: true })).status, 200, 'always-allowed paths need no review');
});
