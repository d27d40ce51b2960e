/**
 * Installing this host next to (or over) the upstream AWS CCM must not take
 * rights from upstream's identity, which a rollback needs again: on a control
 * plane of its own (it binds rights to kube-system/cloud-controller-manager,
 * which the shared control plane's golden-rules test pins), upstream's RBAC is
 * applied as cloud-provider-aws ships it, then every RBAC object of this
 * host's renderings (deploy/providers/aws, with and without the per-controller
 * component) as `kubectl apply --server-side --force-conflicts` would. After
 * that, upstream's ServiceAccount may still do everything upstream's
 * ClusterRole grants (SubjectAccessReview, verb by verb), and that ClusterRole
 * is as upstream wrote it. Before the host named its ClusterRole
 * system:grpc-cloud-controller-manager, applying it replaced upstream's rules
 * whole (serviceaccounts/token, endpoints, cluster-wide leases lost).
 *
 * And with --use-service-account-credentials=true the per-controller
 * component binds upstream's per-controller ServiceAccounts
 * (node-controller, service-controller, route-controller), the names
 * upstream's own ClusterRole lets its CCM mint tokens for.
 */
import anyTest, { type TestFn } from 'ava';
import { AuthorizationV1Api, RbacAuthorizationV1Api, type KubeConfig, type KubernetesObject, type V1PolicyRule } from '@kubernetes/client-node';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { renderProvider } from '../../helpers/manifests.js';
import { applyObjects } from '../../helpers/service-account.js';
import { kustomizeBinary } from '../../helpers/kustomize.js';

const test = anyTest as TestFn<{ cp: ControlPlane; admin: KubeConfig }>;

const UPSTREAM_SA = 'system:serviceaccount:kube-system:cloud-controller-manager';
const UPSTREAM_ROLE = 'system:cloud-controller-manager';

/**
 * Upstream's ClusterRole as k8s.io/cloud-provider-aws v1.34.4 ships it
 * (examples/existing-cluster/base/cluster-role.yaml and the chart's default
 * clusterRoleRules, merged: the chart adds tokenreviews and
 * subjectaccessreviews), one row per rule: group, resource, verbs.
 */
const UPSTREAM_RULES: [group: string, resource: string, verbs: string[]][] = [
  ['', 'events', ['create', 'patch', 'update']],
  ['', 'nodes', ['*']],
  ['', 'nodes/status', ['patch']],
  ['', 'services', ['list', 'patch', 'update', 'watch']],
  ['', 'services/status', ['list', 'patch', 'update', 'watch']],
  ['', 'serviceaccounts', ['create', 'get', 'list', 'watch']],
  ['', 'persistentvolumes', ['get', 'list', 'update', 'watch']],
  ['', 'endpoints', ['create', 'get', 'list', 'watch', 'update']],
  ['coordination.k8s.io', 'leases', ['create', 'get', 'list', 'watch', 'update']],
  ['', 'serviceaccounts/token', ['create']],
  ['authentication.k8s.io', 'tokenreviews', ['create']],
  ['authorization.k8s.io', 'subjectaccessreviews', ['create']],
];
const STAR_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

const upstreamObjects = (): KubernetesObject[] => [
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'cloud-controller-manager', namespace: 'kube-system' } },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: UPSTREAM_ROLE },
    rules: UPSTREAM_RULES.map(([g, r, verbs]) => ({ apiGroups: [g], resources: [r], verbs })),
  } as KubernetesObject,
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: UPSTREAM_ROLE },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: UPSTREAM_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: 'cloud-controller-manager', namespace: 'kube-system' }],
  } as KubernetesObject,
];

const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

async function allowed(admin: KubeConfig, user: string, a: { group: string; resource: string; verb: string; namespace?: string; name?: string }) {
  const [resource, subresource] = a.resource.split('/');
  const r = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
    body: {
      spec: {
        user,
        groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'],
        resourceAttributes: { group: a.group, resource, subresource, verb: a.verb, namespace: a.namespace, name: a.name },
      },
    },
  });
  return r.status?.allowed ?? false;
}

test.before(async (t) => {
  await kustomizeBinary();
  const cp = await ControlPlane.start({ controllerManager: false });
  t.context = { cp, admin: cp.kubeConfig() };
});

test.after.always(async (t) => {
  await t.context.cp?.stop();
});

test.serial("after this host's RBAC is applied, upstream's ServiceAccount keeps every right upstream's ClusterRole gives it", async (t) => {
  const { admin } = t.context;
  await applyObjects(admin, upstreamObjects());
  for (const perController of [false, true]) {
    const ours = (await renderProvider('aws', perController)).filter((o) => RBAC_KINDS.has(o.kind ?? ''));
    t.true(
      ours.some((o) => o.kind === 'ClusterRole'),
      'the rendering has RBAC',
    );
    await applyObjects(admin, ours);
  }

  const role = await admin.makeApiClient(RbacAuthorizationV1Api).readClusterRole({ name: UPSTREAM_ROLE });
  t.deepEqual(
    (role.rules ?? []).map((r: V1PolicyRule) => [r.apiGroups?.[0], r.resources?.[0], r.verbs]),
    UPSTREAM_RULES,
    "upstream's ClusterRole is as upstream wrote it",
  );
  const lost: string[] = [];
  for (const [group, resource, verbs] of UPSTREAM_RULES) {
    for (const verb of verbs.includes('*') ? STAR_VERBS : verbs) {
      const namespaced = !['nodes', 'nodes/status', 'persistentvolumes', 'tokenreviews', 'subjectaccessreviews'].includes(resource);
      if (!(await allowed(admin, UPSTREAM_SA, { group, resource, verb, namespace: namespaced ? 'kube-system' : undefined }))) {
        lost.push(`${verb} ${group ? `${group}/` : ''}${resource}`);
      }
    }
  }
  t.deepEqual(lost, [], "rights upstream's ServiceAccount lost");
});

test.serial('--use-service-account-credentials: the per-controller component binds the ServiceAccounts upstream mints tokens for', async (t) => {
  const { admin } = t.context;
  // Applied by the test above; upstream's per-controller client names (k8s.io/cloud-provider v0.34 ClientName).
  const cases: { sa: string; group: string; resource: string; verb: string; namespace?: string }[] = [
    { sa: 'node-controller', group: '', resource: 'nodes', verb: 'patch' },
    { sa: 'node-controller', group: '', resource: 'nodes', verb: 'delete' },
    { sa: 'node-controller', group: 'coordination.k8s.io', resource: 'leases', verb: 'create', namespace: 'kube-system' },
    { sa: 'service-controller', group: '', resource: 'services/status', verb: 'patch', namespace: 'default' },
    { sa: 'service-controller', group: '', resource: 'events', verb: 'create', namespace: 'default' },
    { sa: 'route-controller', group: '', resource: 'nodes/status', verb: 'patch' },
  ];
  for (const c of cases) {
    t.true(await allowed(admin, `system:serviceaccount:kube-system:${c.sa}`, c), `${c.sa}: ${c.verb} ${c.resource}`);
  }
  // The host identity of that mode may mint tokens for exactly those names.
  const host = 'system:serviceaccount:kube-system:cloud-controller-manager-host';
  for (const name of ['node-controller', 'service-controller', 'route-controller']) {
    t.true(
      await allowed(admin, host, { group: '', resource: 'serviceaccounts/token', verb: 'create', namespace: 'kube-system', name }),
      `token for ${name}`,
    );
  }
  t.false(
    await allowed(admin, host, {
      group: '',
      resource: 'serviceaccounts/token',
      verb: 'create',
      namespace: 'kube-system',
      name: 'cloud-node-controller',
    }),
    "not for the names before upstream's",
  );
});
