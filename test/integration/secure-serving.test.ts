/**
 * Secure serving on --secure-port against the real API server, as upstream's
 * cloud-controller-manager: HTTPS with a self-signed certificate written to
 * --cert-dir; bearer tokens reviewed by the API server (TokenReview); client
 * certificates of --client-ca-file; a front proxy's identity headers trusted
 * with a certificate of --requestheader-client-ca-file; and every decision
 * not covered by the always-allowed paths (/healthz, /readyz, /livez) or
 * system:masters asked of the API server (SubjectAccessReview). The host runs
 * as the shipped ServiceAccount (deploy/base/rbac.yaml + rbac-delegated-auth.yaml).
 */
import anyTest, { type TestFn } from 'ava';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { testKubeConfig } from '../controlplane/shared.js';
import { freePorts } from '../controlplane/probe.js';
import { clientCert, testCa, type Pem } from '../helpers/certs.js';
import { startTestHost, type TestHost } from '../helpers/host.js';
import { httpsRequest, type HttpsOptions } from '../helpers/https.js';
import { scraperToken } from '../helpers/scraper.js';
import { waitFor } from '../helpers/wait.js';

/** Names of this file's objects (unique in the suite). */
const ID = 'ccm-test-secure-serving';
const CERT_USER = `${ID}-cert-user`;
const NO_ACCESS_SA = { namespace: 'kube-system', name: `${ID}-no-access` };

interface Ctx {
  host: TestHost;
  url: string;
  certDir: string;
  clientCa: Pem;
  proxyCa: Pem;
  noAccessToken: string;
}
const test = anyTest as TestFn<Ctx>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-secure-serving-'));
  const admin = await testKubeConfig();
  const api = KubernetesObjectApi.makeApiClient(admin);
  // CERT_USER may get /metrics; the no-access ServiceAccount may get nothing.
  const objects: KubernetesObject[] = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: ID },
      rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: ID },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ID },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: CERT_USER }],
    } as KubernetesObject,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...NO_ACCESS_SA } },
  ];
  for (const obj of objects) await api.patch(obj, undefined, undefined, 'ccm-tests', true, PatchStrategy.ServerSideApply);
  const tr = await admin
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccountToken({ ...NO_ACCESS_SA, body: { spec: { expirationSeconds: 3600, audiences: [] } } });

  const clientCa = await testCa(`${ID}-client-ca`);
  const proxyCa = await testCa(`${ID}-proxy-ca`);
  await writeFile(join(dir, 'client-ca.crt'), clientCa.cert);
  await writeFile(join(dir, 'proxy-ca.crt'), proxyCa.cert);
  const [port] = await freePorts(1);
  const certDir = join(dir, 'certs');
  const host = await startTestHost(dir, [
    `--secure-port=${port}`,
    `--cert-dir=${certDir}`,
    `--client-ca-file=${join(dir, 'client-ca.crt')}`,
    `--requestheader-client-ca-file=${join(dir, 'proxy-ca.crt')}`,
    '--requestheader-allowed-names=front-proxy',
    '--controllers=cloud-node',
    `--node-selector=${ID}=none`,
  ]);
  t.context = { host, url: `https://127.0.0.1:${port}`, certDir, clientCa, proxyCa, noAccessToken: tr.status!.token };
  // Ready (informers synced) before the cases run: the /readyz case is about who may ask, not about start-up timing.
  await waitFor(async () => (await httpsRequest(`${t.context.url}/readyz`, { insecure: true })).status === 200, {
    what: 'host ready',
    log: host.logPath,
  });
});

test.after.always(async () => {
  const admin = await testKubeConfig();
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.deleteClusterRoleBinding({ name: ID }).catch(() => undefined);
  await rbac.deleteClusterRole({ name: ID }).catch(() => undefined);
  await admin
    .makeApiClient(CoreV1Api)
    .deleteNamespacedServiceAccount(NO_ACCESS_SA)
    .catch(() => undefined);
});

test.after.always(async (t) => {
  await t.context.host?.stop();
});

test.serial("the self-signed certificate is written to --cert-dir with upstream's names and SANs, and verifies the server", async (t) => {
  const pem = await readFile(join(t.context.certDir, 'cloud-controller-manager.crt'), 'utf8');
  await readFile(join(t.context.certDir, 'cloud-controller-manager.key'), 'utf8');
  const cert = new X509Certificate(pem);
  t.is(cert.subjectAltName, 'DNS:localhost, IP Address:127.0.0.1');
  const r = await httpsRequest(`${t.context.url}/healthz`, { ca: pem });
  t.is(r.status, 200);
  t.is(r.body, 'ok');
});

/** Credentials a case presents: none, a token, a client certificate, or a front proxy's certificate and headers. */
type Who =
  | { anonymous: true; headers?: Record<string, string> }
  | { token: 'scraper' | 'no-access' | 'garbage' }
  | { cert: { ca: 'client' | 'proxy' | 'stranger'; cn: string; groups?: string[] }; headers?: Record<string, string> };

const CASES: { what: string; path: string; who: Who; status: number; body?: RegExp }[] = [
  { what: 'anonymous /healthz is allowed (always-allowed path)', path: '/healthz', who: { anonymous: true }, status: 200 },
  { what: 'anonymous /readyz is allowed (always-allowed path)', path: '/readyz', who: { anonymous: true }, status: 200 },
  {
    what: "anonymous /metrics is forbidden, with upstream's message",
    path: '/metrics',
    who: { anonymous: true },
    status: 403,
    body: /^forbidden: User "system:anonymous" cannot get path "\/metrics"$/,
  },
  { what: 'anonymous /healthz/ping is forbidden (always-allowed paths are exact)', path: '/healthz/ping', who: { anonymous: true }, status: 403 },
  { what: 'a token the API server rejects is unauthorized', path: '/healthz', who: { token: 'garbage' }, status: 401 },
  {
    what: 'a ServiceAccount token allowed get /metrics reads metrics',
    path: '/metrics',
    who: { token: 'scraper' },
    status: 200,
    body: /# TYPE rest_client_requests_total counter/,
  },
  {
    what: 'a ServiceAccount token without rights is forbidden',
    path: '/metrics',
    who: { token: 'no-access' },
    status: 403,
    body: /^forbidden: User "system:serviceaccount:kube-system:ccm-test-secure-serving-no-access" cannot get path "\/metrics"$/,
  },
  {
    what: 'a client certificate of --client-ca-file authenticates as its CN',
    path: '/metrics',
    who: { cert: { ca: 'client', cn: CERT_USER } },
    status: 200,
  },
  {
    what: 'a client certificate of another user is forbidden',
    path: '/metrics',
    who: { cert: { ca: 'client', cn: `${ID}-other` } },
    status: 403,
    body: new RegExp(`User "${ID}-other"`),
  },
  {
    what: 'a client certificate in group system:masters needs no review',
    path: '/metrics',
    who: { cert: { ca: 'client', cn: `${ID}-admin`, groups: ['system:masters'] } },
    status: 200,
  },
  { what: 'a client certificate of an unknown CA is unauthorized', path: '/metrics', who: { cert: { ca: 'stranger', cn: CERT_USER } }, status: 401 },
  {
    what: "a front proxy's headers are trusted",
    path: '/metrics',
    who: { cert: { ca: 'proxy', cn: 'front-proxy' }, headers: { 'X-Remote-User': CERT_USER } },
    status: 200,
  },
  {
    what: "a front proxy's user is authorized, not the proxy",
    path: '/metrics',
    who: { cert: { ca: 'proxy', cn: 'front-proxy' }, headers: { 'X-Remote-User': `${ID}-other` } },
    status: 403,
  },
  {
    what: 'a proxy certificate not in --requestheader-allowed-names is unauthorized',
    path: '/metrics',
    who: { cert: { ca: 'proxy', cn: 'not-the-proxy' }, headers: { 'X-Remote-User': CERT_USER } },
    status: 401,
  },
  {
    what: 'headers without a proxy certificate are ignored',
    path: '/metrics',
    who: { anonymous: true, headers: { 'X-Remote-User': CERT_USER, 'X-Remote-Group': 'system:masters' } },
    status: 403,
  }, // /statusz and /flagz (KEP-4827/4828): authorized as every other path, as in kube-controller-manager.
  {
    what: 'anonymous /statusz is forbidden',
    path: '/statusz',
    who: { anonymous: true },
    status: 403,
    body: /^forbidden: User "system:anonymous" cannot get path "\/statusz"$/,
  },
  { what: 'a user allowed only /metrics may not read /flagz', path: '/flagz', who: { cert: { ca: 'client', cn: CERT_USER } }, status: 403 },
  {
    what: '/statusz for system:masters: the component, its versions and paths, as text',
    path: '/statusz',
    who: { cert: { ca: 'client', cn: `${ID}-admin`, groups: ['system:masters'] } },
    status: 200,
    body: /^\ncloud-controller-manager statusz\nWarning: This endpoint is not meant to be machine parseable[^]*\nBinary version(: | |=|:) 0\.\d+\.\d+[^]*\nPaths(: | |=|:) \/flagz \/healthz \/livez \/metrics \/readyz \/statusz\n$/,
  },
  {
    what: '/flagz for system:masters: every flag with its effective value',
    path: '/flagz',
    who: { cert: { ca: 'client', cn: `${ID}-admin`, groups: ['system:masters'] } },
    status: 200,
    body: /\ncontrollers(: | |=|:)\[cloud-node\]\n[^]*\nleader-elect-lease-duration(: | |=|:)15s\n[^]*\nsecure-port(: | |=|:)\d+\n/,
  },
];

test("/statusz and /flagz are open to group system:monitoring exactly when the API server's system:monitoring role lists them (v1.36+)", async (t) => {
  const role = await (await testKubeConfig()).makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name: 'system:monitoring' });
  const urls = new Set((role.rules ?? []).flatMap((r) => r.nonResourceURLs ?? []));
  const who = await clientCert(t.context.clientCa, `${ID}-monitoring`, ['system:monitoring']);
  for (const path of ['/statusz', '/flagz', '/metrics']) {
    const r = await httpsRequest(`${t.context.url}${path}`, { insecure: true, ...who });
    t.is(r.status, urls.has(path) ? 200 : 403, `${path}: ${r.body.slice(0, 200)}`);
  }
});

test('/statusz answers the structured kind as JSON when asked, 406 for other types', async (t) => {
  const admin = await clientCert(t.context.clientCa, `${ID}-admin`, ['system:masters']);
  const json = await httpsRequest(`${t.context.url}/statusz`, {
    insecure: true,
    ...admin,
    headers: { Accept: 'application/json;as=Statusz;v=v1beta1;g=config.k8s.io' },
  });
  t.is(json.status, 200, json.body);
  t.like(JSON.parse(json.body), {
    kind: 'Statusz',
    apiVersion: 'config.k8s.io/v1beta1',
    metadata: { name: 'cloud-controller-manager' },
    emulationVersion: '1.34',
  });
  const plain = await httpsRequest(`${t.context.url}/flagz`, { insecure: true, ...admin, headers: { Accept: 'application/json' } });
  t.is(plain.status, 406, plain.body);
});

let stranger: Pem | undefined;

async function credentials(t: { context: Ctx }, who: Who): Promise<HttpsOptions> {
  if ('anonymous' in who) return { headers: who.headers };
  if ('token' in who) {
    const token = who.token === 'scraper' ? await scraperToken() : who.token === 'no-access' ? t.context.noAccessToken : 'not-a-token';
    return { token };
  }
  const ca =
    who.cert.ca === 'client' ? t.context.clientCa : who.cert.ca === 'proxy' ? t.context.proxyCa : (stranger ??= await testCa(`${ID}-stranger`));
  return { ...(await clientCert(ca, who.cert.cn, who.cert.groups)), headers: who.headers };
}

for (const c of CASES) {
  test(c.what, async (t) => {
    const r = await httpsRequest(`${t.context.url}${c.path}`, { insecure: true, ...(await credentials(t, c.who)) });
    t.is(r.status, c.status, r.body);
    const refused = c.status === 401 || c.status === 403;
    if (refused) t.like(JSON.parse(r.body), { kind: 'Status', code: c.status });
    if (c.body) t.regex(refused ? (JSON.parse(r.body) as { message: string }).message : r.body, c.body);
  });
}
