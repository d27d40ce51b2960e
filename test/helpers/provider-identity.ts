/**
 * A real provider's own Kubernetes identity for its Initialize (the bridge
 * hands it KUBECONFIG through --plugin-env): a ServiceAccount in a namespace
 * of the test's own, with only the rules that provider's own informers and
 * recorders need. Never the host's ServiceAccount, never the admin.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig, type V1PolicyRule } from '@kubernetes/client-node';
import { applyObjects, serviceAccountKubeConfig } from './service-account.js';

export interface ProviderRules {
  /** Granted cluster-wide (a ClusterRole named after the namespace). */
  cluster: V1PolicyRule[];
  /** Granted in the namespace only. */
  namespaced?: V1PolicyRule[];
}

/** Creates `namespace`, the ServiceAccount `name` in it and its RBAC; returns its kubeconfig. */
export async function providerIdentity(admin: KubeConfig, namespace: string, name: string, rules: ProviderRules): Promise<KubeConfig> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const sa = { namespace, name };
  const subjects = [{ kind: 'ServiceAccount', ...sa }];
  const roleRef = (kind: string, ref: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name: ref });
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  await rbac.createClusterRole({ body: { metadata: { name: namespace }, rules: rules.cluster } });
  await rbac.createClusterRoleBinding({ body: { metadata: { name: namespace }, roleRef: roleRef('ClusterRole', namespace), subjects } });
  if (rules.namespaced?.length) {
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules: rules.namespaced } });
    await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name }, roleRef: roleRef('Role', name), subjects } });
  }
  return serviceAccountKubeConfig(admin, sa);
}

/** Removes what providerIdentity made for `namespace`. */
export async function removeProviderIdentity(admin: KubeConfig, namespace: string): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.deleteClusterRoleBinding({ name: namespace }).catch(() => undefined);
  await rbac.deleteClusterRole({ name: namespace }).catch(() => undefined);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
}

/**
 * The ServiceAccount `sa` bound to a ClusterRole `role` of `rules`, applied
 * (idempotent: test files that share a ServiceAccount may call it again);
 * its kubeconfig is written to `dir`/provider-kubeconfig (0600) and the path
 * returned, for a provider's KUBECONFIG.
 */
export async function providerKubeconfigFile(
  admin: KubeConfig,
  dir: string,
  sa: { namespace: string; name: string },
  role: string,
  rules: V1PolicyRule[],
): Promise<string> {
  await applyObjects(admin, [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { ...sa } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role }, rules } as never,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', ...sa }],
    } as never,
  ]);
  const path = join(dir, 'provider-kubeconfig');
  await writeFile(path, (await serviceAccountKubeConfig(admin, sa)).exportConfig(), { mode: 0o600 });
  return path;
}
