/**
 * What the shipped ServiceAccount may do, asked of the real API server as
 * that identity: SelfSubjectRulesReview must match a golden list exactly
 * (a change to deploy/base/rbac.yaml changes this list on purpose), and
 * SelfSubjectAccessReview must deny reading Secrets and creating Pods.
 */
import test from 'ava';
import { AuthorizationV1Api, type V1SelfSubjectRulesReview } from '@kubernetes/client-node';
import { kubeVersion } from '../../controlplane/binaries.js';
import { hostKubeConfig } from '../../helpers/service-account.js';

/** `verb group/resource[#name]` lines (group '' = core), sorted, plus `verb nonResourceURL`. */
function flatten(review: V1SelfSubjectRulesReview): string[] {
  const out = new Set<string>();
  for (const r of review.status?.resourceRules ?? []) {
    for (const verb of r.verbs) {
      for (const group of r.apiGroups ?? ['']) {
        for (const resource of r.resources ?? []) {
          const names = r.resourceNames?.length ? r.resourceNames : [undefined];
          for (const name of names) out.add(`${verb} ${group}/${resource}${name ? `#${name}` : ''}`);
        }
      }
    }
  }
  for (const r of review.status?.nonResourceRules ?? [])
    for (const verb of r.verbs) for (const url of r.nonResourceURLs ?? []) out.add(`${verb} ${url}`);
  return [...out].sort();
}

/** Granted everywhere by deploy/base/rbac.yaml's ClusterRole (and the built-in self-review rights). */
const CLUSTER_WIDE = [
  'create /events',
  'patch /events',
  'get /nodes',
  'list /nodes',
  'watch /nodes',
  'update /nodes',
  'patch /nodes',
  'delete /nodes',
  'patch /nodes/status',
  'get /services',
  'list /services',
  'watch /services',
  'update /services',
  'patch /services',
  'patch /services/status',
  // Pod-IP backends (protocol 1.1): EndpointSlices, watched when a provider declares them.
  'list discovery.k8s.io/endpointslices',
  'watch discovery.k8s.io/endpointslices',
  // The cluster UID (the kube-system Namespace's uid), read at start.
  'get /namespaces#kube-system',
  'get /persistentvolumes',
  'list /persistentvolumes',
  'watch /persistentvolumes',
  'create /persistentvolumes',
  'patch /persistentvolumes',
  'delete /persistentvolumes',
  'get /persistentvolumeclaims',
  'list /persistentvolumeclaims',
  'watch /persistentvolumeclaims',
  'patch /persistentvolumeclaims',
  'patch /persistentvolumeclaims/status',
  'get storage.k8s.io/storageclasses',
  'list storage.k8s.io/storageclasses',
  'watch storage.k8s.io/storageclasses',
  'get storage.k8s.io/volumeattachments',
  'list storage.k8s.io/volumeattachments',
  'watch storage.k8s.io/volumeattachments',
  'patch storage.k8s.io/volumeattachments',
  'patch storage.k8s.io/volumeattachments/status',
  // deploy/base/rbac-delegated-auth.yaml: system:auth-delegator.
  'create authentication.k8s.io/tokenreviews',
  'create authorization.k8s.io/subjectaccessreviews',
  // Every authenticated user (system:basic-user, system:discovery, system:public-info-viewer).
  'create authorization.k8s.io/selfsubjectaccessreviews',
  'create authorization.k8s.io/selfsubjectrulesreviews',
  'create authentication.k8s.io/selfsubjectreviews',
];
/**
 * Built-in rights of every service account that depend on the control
 * plane's version (CCM_KUBE_VERSION): reading ClusterTrustBundles is granted
 * on v1.37.2 and not on v1.34.4 (the two versions the suite has run on).
 */
const BY_VERSION: { sinceMinor: number; rules: string[] }[] = [
  {
    sinceMinor: 37,
    rules: [
      'get certificates.k8s.io/clustertrustbundles',
      'list certificates.k8s.io/clustertrustbundles',
      'watch certificates.k8s.io/clustertrustbundles',
    ],
  },
];
const BUILT_IN = BY_VERSION.filter((v) => Number(kubeVersion().split('.')[1]) >= v.sinceMinor).flatMap((v) => v.rules);

const NON_RESOURCE = [
  // system:service-account-issuer-discovery, bound to every service account.
  'get /.well-known/openid-configuration',
  'get /.well-known/openid-configuration/',
  'get /openid/v1/jwks',
  'get /openid/v1/jwks/',
  'get /api',
  'get /api/*',
  'get /apis',
  'get /apis/*',
  'get /healthz',
  'get /livez',
  'get /openapi',
  'get /openapi/*',
  'get /readyz',
  'get /version',
  'get /version/',
];
/** Only in kube-system: the leader-election lock, and the node deletion brake's record. */
const KUBE_SYSTEM_ONLY = [
  'create coordination.k8s.io/leases',
  'get coordination.k8s.io/leases#cloud-controller-manager',
  'update coordination.k8s.io/leases#cloud-controller-manager',
  'get coordination.k8s.io/leases#cloud-controller-manager-node-deletions',
  'update coordination.k8s.io/leases#cloud-controller-manager-node-deletions',
  // deploy/base/rbac-delegated-auth.yaml: extension-apiserver-authentication-reader.
  'get /configmaps#extension-apiserver-authentication',
  'list /configmaps#extension-apiserver-authentication',
  'watch /configmaps#extension-apiserver-authentication',
];

async function rules(namespace: string): Promise<string[]> {
  const api = (await hostKubeConfig()).makeApiClient(AuthorizationV1Api);
  return flatten(await api.createSelfSubjectRulesReview({ body: { spec: { namespace } } }));
}

test('SelfSubjectRulesReview of the shipped ServiceAccount matches the golden list exactly', async (t) => {
  const got = await rules('default');
  const want = [...CLUSTER_WIDE, ...BUILT_IN, ...NON_RESOURCE].sort();
  t.deepEqual(
    got.filter((r) => !want.includes(r)),
    [],
    'granted but not in the golden list',
  );
  t.deepEqual(
    want.filter((r) => !got.includes(r)),
    [],
    'in the golden list but not granted',
  );
  t.deepEqual(got, want);
  t.deepEqual(await rules('kube-system'), [...CLUSTER_WIDE, ...BUILT_IN, ...NON_RESOURCE, ...KUBE_SYSTEM_ONLY].sort());
});

test('the shipped ServiceAccount can NOT read secrets, create pods, touch RBAC or other leases', async (t) => {
  const api = (await hostKubeConfig()).makeApiClient(AuthorizationV1Api);
  const can = async (attrs: { verb: string; resource: string; group?: string; namespace?: string; name?: string }) =>
    (await api.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: { ...attrs, group: attrs.group ?? '' } } } })).status?.allowed ??
    false;
  for (const verb of ['get', 'list', 'watch']) {
    t.false(await can({ verb, resource: 'secrets' }), `${verb} secrets cluster-wide`);
    t.false(await can({ verb, resource: 'secrets', namespace: 'kube-system' }), `${verb} secrets in kube-system`);
  }
  t.false(await can({ verb: 'create', resource: 'pods', namespace: 'default' }), 'create pods');
  t.false(await can({ verb: 'create', resource: 'pods', namespace: 'kube-system' }), 'create pods in kube-system');
  t.false(await can({ verb: 'create', resource: 'clusterrolebindings', group: 'rbac.authorization.k8s.io' }), 'create clusterrolebindings');
  t.false(
    await can({ verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-system', name: 'kube-controller-manager' }),
    'update another lease',
  );
  t.false(await can({ verb: 'create', resource: 'leases', group: 'coordination.k8s.io', namespace: 'default' }), 'leases outside kube-system');
  t.false(await can({ verb: 'create', resource: 'serviceaccounts/token', namespace: 'kube-system' }), 'mint tokens');
  // And the positive controls, so the denials above mean something.
  t.true(await can({ verb: 'patch', resource: 'nodes' }));
  t.true(await can({ verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-system', name: 'cloud-controller-manager' }));
});
