/**
 * --use-service-account-credentials=true against the real API server, with
 * deploy/components/per-controller-rbac/rbac-per-controller.yaml applied and the host authenticated as that
 * mode's host ServiceAccount. That identity may only list/watch, manage its
 * Lease and mint tokens: it can NOT patch Nodes or Services nor create
 * Events. So a node initialized, a Service given its ingress and the
 * controllers' Events, with zero 403s (startTestHost's stop() checks), can
 * only come from the per-controller ServiceAccounts, which the host created
 * if missing. A token of each controller ServiceAccount is then asked who it
 * is (SelfSubjectReview) and what it may do (SelfSubjectAccessReview): each
 * has its own controller's rights and not the other's.
 */
import anyTest, { type TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthenticationV1Api, AuthorizationV1Api, CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { ensureNamespace, lbService, serviceEvents } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { deleteScopedNodes, nodeEvents, testScope } from '../../helpers/nodes.js';
import { applyShippedRbac, serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';
import { freePorts } from '../../controlplane/probe.js';
import { scrape } from '../../helpers/scraper.js';

const HOST_SA = { namespace: 'kube-system', name: 'cloud-controller-manager-host' };
/** Upstream's per-controller ServiceAccounts (k8s.io/cloud-provider's client names); cloud-node and cloud-node-lifecycle share one, as upstream. */
const NODE_SA = { namespace: 'kube-system', name: 'node-controller' };
const SERVICE_SA = { namespace: 'kube-system', name: 'service-controller' };
const LIFECYCLE_SA = NODE_SA;
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

const scope = testScope('sacreds');
const NS = `sacreds-${randomBytes(3).toString('hex')}`;
const test = anyTest as TestFn<{ dir: string; admin: KubeConfig; core: CoreV1Api }>;
/** Module-level: ava gives each test a copy of the context, so the after hook would not see it there. */
let host: TestHost | undefined;

async function can(
  kc: KubeConfig,
  attrs: { verb: string; resource: string; group?: string; subresource?: string; namespace?: string; name?: string },
): Promise<boolean> {
  const api = kc.makeApiClient(AuthorizationV1Api);
  const r = await api.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: { group: '', ...attrs } } } });
  return r.status?.allowed ?? false;
}

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-sacreds-it-'));
  const admin = await testKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  await applyShippedRbac(admin, 'components/per-controller-rbac/rbac-per-controller.yaml');
  await ensureNamespace(core, NS);
  t.context = { dir, admin, core };
});

test.after.always(async (t) => {
  // stop() throws when the host met any 403: that fails the run here.
  await host?.stop();
  await deleteScopedNodes(t.context.core, scope.selector).catch(() => undefined);
  await t.context.core.deleteNamespace({ name: NS }).catch(() => undefined);
});

test.serial("the host identity of this mode can not do the controllers' work itself", async (t) => {
  const hostKc = await serviceAccountKubeConfig(t.context.admin, HOST_SA);
  t.false(await can(hostKc, { verb: 'patch', resource: 'nodes' }));
  t.false(await can(hostKc, { verb: 'patch', resource: 'services', subresource: 'status', namespace: NS }));
  t.false(await can(hostKc, { verb: 'create', resource: 'events', namespace: NS }));
  t.true(await can(hostKc, { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: 'kube-system', name: NODE_SA.name }));
  t.true(await can(hostKc, { verb: 'list', resource: 'nodes' }));
});

test.serial('with --use-service-account-credentials the controllers work as their own ServiceAccounts, without a 403', async (t) => {
  const { dir, admin, core } = t.context;
  const hostKc = await serviceAccountKubeConfig(admin, HOST_SA);
  const [port] = await freePorts(1);
  // With --secure-port, so the host identity's delegated authentication and authorization (rbac-delegated-auth.yaml) are used too.
  host = await startTestHost(
    dir,
    [
      '--use-service-account-credentials=true',
      '--controllers=cloud-node,service',
      `--node-selector=${scope.selector}`,
      `--watch-namespace=${NS}`,
      `--secure-port=${port}`,
    ],
    { kubeConfig: hostKc },
  );
  t.is((await scrape(port!, '/metrics')).status, 200, 'a scraper token is reviewed and authorized through the host identity');

  const nodeName = `${scope.prefix}-n1`;
  await localcloud(
    join(dir, 'cloud'),
    'instance',
    'add',
    nodeName,
    '--zone',
    'zone-a',
    '--region',
    'region-x',
    '--type',
    'm.small',
    '--address',
    '127.0.3.1',
  );
  await core.createNode({
    body: {
      metadata: { name: nodeName, labels: { ...scope.labels, 'kubernetes.io/hostname': nodeName } },
      spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'Hostname', address: nodeName }] },
    },
  });
  const node = await waitFor(
    async () => {
      const n: V1Node = await core.readNode({ name: nodeName });
      return (n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED) ? undefined : n;
    },
    { what: 'node initialized by the cloud-node controller' },
  );
  t.true(node.spec?.providerID?.startsWith('local://'));
  t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'zone-a');

  const svc = await core.createNamespacedService({ namespace: NS, body: lbService('web', NS, [{ port: 8080 }]) });
  const ingress = await waitFor(
    async () => (await core.readNamespacedService({ name: 'web', namespace: NS })).status?.loadBalancer?.ingress?.[0]?.ip,
    {
      what: 'LoadBalancer ingress',
    },
  );
  t.truthy(ingress);

  // Events: the host identity may not create them, so these were written as the controllers.
  const nodeEv = await waitFor(async () => (await nodeEvents(core, nodeName)).find((e) => e.reason === 'Synced'), { what: 'Synced event' });
  t.is(nodeEv.reportingComponent || nodeEv.source?.component, 'cloud-node-controller');
  const svcEv = await waitFor(async () => (await serviceEvents(core, svc)).find((e) => e.reason === 'EnsuredLoadBalancer'), {
    what: 'EnsuredLoadBalancer event',
  });
  t.is(svcEv.reportingComponent || svcEv.source?.component, 'service-controller');

  // The host got or created both ServiceAccounts (upstream's names).
  for (const sa of [NODE_SA, SERVICE_SA]) t.truthy((await core.readNamespacedServiceAccount(sa)).metadata?.uid, `${sa.name} exists`);
  // No 403 so far (stop() checks again, including Events and watches).
  const metric = await host.metrics.registry.getSingleMetric('rest_client_requests_total')?.get();
  t.deepEqual(
    (metric?.values ?? []).filter((v) => v.labels.code === '403'),
    [],
  );
});

test.serial("each controller ServiceAccount is its own user with only its controller's rights", async (t) => {
  const { admin } = t.context;
  const nodeKc = await serviceAccountKubeConfig(admin, NODE_SA);
  const svcKc = await serviceAccountKubeConfig(admin, SERVICE_SA);
  const who = async (kc: KubeConfig) =>
    (await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} })).status?.userInfo?.username;
  t.is(await who(nodeKc), 'system:serviceaccount:kube-system:node-controller');
  t.is(await who(svcKc), 'system:serviceaccount:kube-system:service-controller');
  t.true(await can(nodeKc, { verb: 'patch', resource: 'nodes' }));
  t.false(await can(nodeKc, { verb: 'patch', resource: 'services', subresource: 'status', namespace: NS }));
  t.true(await can(svcKc, { verb: 'patch', resource: 'services', subresource: 'status', namespace: NS }));
  t.false(await can(svcKc, { verb: 'patch', resource: 'nodes' }));
  t.false(await can(svcKc, { verb: 'list', resource: 'secrets' }));
  // The lifecycle controller (node-controller, as cloud-node) keeps its deletion brake's count on its own Lease, and may touch no other.
  const lifecycleKc = await serviceAccountKubeConfig(admin, LIFECYCLE_SA);
  const lease = (name: string) => ({ verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system', name });
  t.true(await can(lifecycleKc, lease('cloud-controller-manager-node-deletions')));
  t.false(await can(lifecycleKc, lease('cloud-controller-manager')), "not the leader election's Lease");
  t.false(await can(svcKc, lease('cloud-controller-manager-node-deletions')));
});
