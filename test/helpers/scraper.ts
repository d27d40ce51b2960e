/**
 * Reaching a test host's --secure-port server as a monitoring system does:
 * over HTTPS (the host's self-signed certificate is not verified here; the
 * secure-serving test checks it) with the token of a ServiceAccount allowed
 * `get` on /metrics and every health path, as Prometheus is given in a real
 * cluster. The ServiceAccount and its RBAC are applied once per process
 * (idempotent: test files share them).
 */
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { testKubeConfig } from '../controlplane/shared.js';
import { httpsRequest, type HttpsAnswer } from './https.js';

export const SCRAPER = { namespace: 'kube-system', name: 'ccm-test-scraper' } as const;
/** What the scraper may read, as a cluster operator grants Prometheus. */
export const SCRAPER_PATHS = ['/metrics', '/healthz/*', '/readyz/*', '/livez/*'];

let token: Promise<string> | undefined;

/** A token of the scraper ServiceAccount (valid for a day). */
export function scraperToken(): Promise<string> {
  token ??= (async () => {
    const admin = await testKubeConfig();
    const api = KubernetesObjectApi.makeApiClient(admin);
    const objects: KubernetesObject[] = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...SCRAPER } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: SCRAPER.name },
        rules: [{ nonResourceURLs: SCRAPER_PATHS, verbs: ['get'] }],
      } as KubernetesObject,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: SCRAPER.name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: SCRAPER.name },
        subjects: [{ kind: 'ServiceAccount', ...SCRAPER }],
      } as KubernetesObject,
    ];
    for (const obj of objects) await api.patch(obj, undefined, undefined, 'ccm-tests', true, PatchStrategy.ServerSideApply);
    const tr = await admin
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccountToken({ ...SCRAPER, body: { spec: { expirationSeconds: 24 * 3600, audiences: [] } } });
    return tr.status!.token;
  })();
  return token;
}

/** GET `path` (e.g. /metrics, /readyz/plugin) of the host serving on 127.0.0.1:`port`, as the scraper. */
export async function scrape(port: number, path: string): Promise<HttpsAnswer> {
  return httpsRequest(`https://127.0.0.1:${port}${path}`, { insecure: true, token: await scraperToken() });
}

/** The body of /metrics; throws on any other status than 200. */
export async function scrapeMetrics(port: number): Promise<string> {
  const r = await scrape(port, '/metrics');
  if (r.status !== 200) throw new Error(`GET /metrics of the host on port ${port} answered ${r.status}: ${r.body}`);
  return r.body;
}
