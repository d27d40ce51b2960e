/**
 * The identity test hosts run as: the shipped ServiceAccount
 * (deploy/base/rbac.yaml and deploy/base/rbac-delegated-auth.yaml), with a
 * token from the TokenRequest API. The test
 * runner applies the RBAC and mints the token once (`prepareHostIdentity`)
 * and passes the kubeconfig in CCM_TEST_HOST_KUBECONFIG; a test file run on
 * its own does the same against its private control plane. Test code keeps
 * the admin kubeconfig (testKubeConfig).
 */
import { writeFile } from 'node:fs/promises';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, PatchStrategy, RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { testKubeConfig } from '../controlplane/shared.js';
import { loadManifest } from './manifests.js';

export const HOST_SERVICE_ACCOUNT = { namespace: 'kube-system', name: 'cloud-controller-manager' } as const;
/** The user name the API server gives that ServiceAccount. */
export const HOST_USER = `system:serviceaccount:${HOST_SERVICE_ACCOUNT.namespace}:${HOST_SERVICE_ACCOUNT.name}`;

/**
 * Applies deploy/base/rbac.yaml, or another file of deploy/, with
 * deploy/base/rbac-delegated-auth.yaml (which either needs), server-side
 * apply, idempotent, with the admin `kc`.
 */
export async function applyShippedRbac(admin: KubeConfig, file = 'base/rbac.yaml'): Promise<void> {
  await applyObjects(admin, [...(await loadManifest(file)), ...(await loadManifest('base/rbac-delegated-auth.yaml'))]);
}

/** Server-side applies `objects` (idempotent) with the admin `kc`. */
export async function applyObjects(admin: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(admin);
  for (const obj of objects) {
    await api.patch(obj, undefined, undefined, 'ccm-tests', true, PatchStrategy.ServerSideApply);
  }
}

/** A kubeconfig for `admin`'s cluster whose user is the ServiceAccount (default: the host's), with a fresh token (24 h). */
export async function serviceAccountKubeConfig(
  admin: KubeConfig,
  sa: { namespace: string; name: string } = HOST_SERVICE_ACCOUNT,
): Promise<KubeConfig> {
  const core = admin.makeApiClient(CoreV1Api);
  const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
  const tr = await core.createNamespacedServiceAccountToken({
    ...sa,
    body: { spec: { expirationSeconds: 24 * 3600, audiences: [] } },
  });
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token: tr.status!.token }],
    contexts: [{ name: 'host', cluster: cluster.name, user }],
    currentContext: 'host',
  });
  return kc;
}

/** Runner side: applies the RBAC, mints a token and writes the host kubeconfig to `path`. */
export async function prepareHostIdentity(admin: KubeConfig, path: string): Promise<void> {
  await applyShippedRbac(admin);
  const kc = await serviceAccountKubeConfig(admin);
  await writeFile(path, kc.exportConfig(), { mode: 0o600 });
}

let shared: Promise<string> | undefined;

/** The KubeConfig test hosts use: CCM_TEST_HOST_KUBECONFIG, else prepared here once per process. */
export async function hostKubeConfig(): Promise<KubeConfig> {
  shared ??= (async () => {
    const path = process.env.CCM_TEST_HOST_KUBECONFIG;
    if (path) {
      const kc = new KubeConfig();
      kc.loadFromFile(path);
      return kc.exportConfig();
    }
    const admin = await testKubeConfig();
    await applyShippedRbac(admin);
    return (await serviceAccountKubeConfig(admin)).exportConfig();
  })();
  const kc = new KubeConfig();
  kc.loadFromString(await shared);
  return kc;
}

/**
 * The shipped leader-election Role's verbs (deploy/base/rbac.yaml) for the Lease `name` (or Leases: the shard Leases of
 * --shard-count) in `namespace`, bound to the host's ServiceAccount: what an operator who moves the Lease
 * (--leader-elect-resource-namespace/-name) grants.
 */
export async function grantLease(admin: KubeConfig, namespace: string, name: string | readonly string[]): Promise<void> {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const group = 'coordination.k8s.io';
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'ccm-leader-election' },
      rules: [
        { apiGroups: [group], resources: ['leases'], verbs: ['create'] },
        { apiGroups: [group], resources: ['leases'], resourceNames: typeof name === 'string' ? [name] : [...name], verbs: ['get', 'update'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'ccm-leader-election' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ccm-leader-election' },
      subjects: [{ kind: 'ServiceAccount', namespace: HOST_SERVICE_ACCOUNT.namespace, name: HOST_SERVICE_ACCOUNT.name }],
    },
  });
}
