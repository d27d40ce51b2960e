/**
 * host/kube/connections.ts against a real kube-apiserver (TLS, tokens): the
 * host's requests and watches go over pooled keep-alive connections. The
 * HTTP requests of this process are observed through Node's
 * `http.client.request.start` diagnostics channel; each test picks out its
 * own by User-Agent or path, as ava runs the tests of a file concurrently.
 */
import dc from 'node:diagnostics_channel';
import { randomBytes } from 'node:crypto';
import type { Agent, ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import test from 'ava';
import {
  CoreV1Api,
  type V1ConfigMap,
  type V1ConfigMapList,
  type V1SelfSubjectReview,
  type V1Secret,
  type V1SecretList,
} from '@kubernetes/client-node';
import { makeClients } from '../../host/kube/client.js';
import { ConnectionPool } from '../../host/kube/connections.js';
import { InformerFactory, type ResourceSpec } from '../../host/kube/informer-factory.js';
import { currentCluster, currentUser, singleConfig } from '../../host/kube/kubeconfig.js';
import { RequestTimeoutError } from '../../host/kube/rest.js';
import { silentLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { HOST_USER, hostKubeConfig } from '../helpers/service-account.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

/** Requests this process sends from now on that `pick` selects, with their socket and agent. */
function observeRequests(pick: (r: ClientRequest) => boolean): { seen: { socket?: Socket; agent: Agent; path: string }[]; stop(): void } {
  const seen: { socket?: Socket; agent: Agent; path: string }[] = [];
  const onStart = (msg: unknown) => {
    const request = (msg as { request: ClientRequest }).request;
    if (!pick(request)) return;
    const entry: { socket?: Socket; agent: Agent; path: string } = { agent: (request as ClientRequest & { agent: Agent }).agent, path: request.path };
    seen.push(entry);
    if (request.socket) entry.socket = request.socket;
    else request.once('socket', (s: Socket) => (entry.socket = s));
  };
  dc.subscribe('http.client.request.start', onStart);
  return { seen, stop: () => dc.unsubscribe('http.client.request.start', onStart) };
}

test('clients with different tokens sharing one pool send their requests over one connection, each as its own user', async (t) => {
  const userAgent = `kube-connections-it/${randomBytes(4).toString('hex')}`;
  const pool = new ConnectionPool();
  t.teardown(() => pool.destroy());
  const admin = makeClients(await testKubeConfig(), { userAgent, qps: 1000, burst: 1000, connections: pool });
  const host = makeClients(await hostKubeConfig(), { userAgent, qps: 1000, burst: 1000, connections: pool });
  const observed = observeRequests((r) => r.getHeader('user-agent') === userAgent);
  t.teardown(() => observed.stop());
  const whoami = async (clients: typeof admin) =>
    (
      await clients.rest.request<V1SelfSubjectReview>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      })
    ).status?.userInfo?.username;
  const users: (string | undefined)[] = [];
  for (let i = 0; i < 50; i++) users.push(await whoami(i % 2 ? host : admin));
  const adminUser = users[0];
  t.not(adminUser, HOST_USER);
  t.deepEqual(
    users,
    users.map((_, i) => (i % 2 ? HOST_USER : adminUser)),
  );
  t.is(observed.seen.length, 50);
  t.is(new Set(observed.seen.map((s) => s.socket)).size, 1, 'one connection for all requests');
});

test('informer watches go over the pool: one keep-alive watch agent, apart from the request connections', async (t) => {
  const kc = await testKubeConfig();
  const userAgent = `kube-connections-it/${randomBytes(4).toString('hex')}`;
  const clients = makeClients(kc, { userAgent, qps: 1000, burst: 1000 });
  t.teardown(() => clients.connections.destroy());
  const namespace = `kube-connections-it-${randomBytes(4).toString('hex')}`;
  const admin = kc.makeApiClient(CoreV1Api);
  await admin.createNamespace({ body: { metadata: { name: namespace } } });
  t.teardown(() =>
    admin.deleteNamespace({ name: namespace }).then(
      () => undefined,
      () => undefined,
    ),
  );
  const observed = observeRequests((r) => r.path.startsWith(`/api/v1/namespaces/${namespace}/`) || r.getHeader('user-agent') === userAgent);
  t.teardown(() => observed.stop());

  const configMaps: ResourceSpec<V1ConfigMap> = {
    name: 'configmaps',
    path: '/api/v1/configmaps',
    namespacedPath: (ns) => `/api/v1/namespaces/${ns}/configmaps`,
    list: (c, a) => c.rest.request<V1ConfigMapList>('GET', `/api/v1/namespaces/${a.namespace!}/configmaps`),
  };
  const secrets: ResourceSpec<V1Secret> = {
    name: 'secrets',
    path: '/api/v1/secrets',
    namespacedPath: (ns) => `/api/v1/namespaces/${ns}/secrets`,
    list: (c, a) => c.rest.request<V1SecretList>('GET', `/api/v1/namespaces/${a.namespace!}/secrets`),
  };
  const factory = new InformerFactory({ clients, log: silentLogger(), nodeSelector: '', namespace });
  t.teardown(() => factory.stop());
  const cmInformer = factory.for(configMaps);
  factory.for(secrets);
  factory.start();
  await admin.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'probe' } } });
  await waitFor(() => cmInformer.get(`${namespace}/probe`), { what: 'the watch delivers the ConfigMap', timeoutMs: 30_000 });
  const isWatch = (s: { path: string }) => s.path.includes('watch=true');
  // The first watch of each resource, once it has its connection.
  const watches = await waitFor(
    () => {
      const w = ['configmaps', 'secrets'].map((r) => observed.seen.find((s) => isWatch(s) && s.path.includes(`/${r}?`)));
      return w.every((x) => x?.socket) ? (w as { socket: Socket; agent: Agent }[]) : undefined;
    },
    { what: 'both watches on their connections', timeoutMs: 30_000 },
  );
  const requests = observed.seen.filter((s) => !isWatch(s));
  t.is(new Set(watches.map((w) => w.agent)).size, 1, 'both watches use one agent');
  const watchAgent = watches[0]!.agent as Agent & { keepAlive: boolean };
  t.true(watchAgent.keepAlive);
  t.false(
    requests.some((r) => r.agent === watchAgent),
    'requests do not use the watch agent',
  );
  t.not(watches[0]!.socket, watches[1]!.socket);
});

test('requests with a body are framed on reused connections: 40 concurrent conditional node deletes all succeed', async (t) => {
  const kc = await testKubeConfig();
  const admin = kc.makeApiClient(CoreV1Api);
  const { core, connections } = makeClients(kc, { userAgent: 'kube-connections-it-delete', qps: 1000, burst: 1000 });
  t.teardown(() => connections.destroy());
  const prefix = `kube-conn-del-${randomBytes(3).toString('hex')}`;
  const nodes = await Promise.all(Array.from({ length: 40 }, (_, i) => admin.createNode({ body: { metadata: { name: `${prefix}-${i}` } } })));
  t.teardown(() => Promise.all(nodes.map((n) => admin.deleteNode({ name: n.metadata!.name! }).catch(() => undefined))));
  // A DELETE body sent without Content-Length was read by the API server as the next request (HTTP 400).
  const results = await Promise.allSettled(
    nodes.map((n) =>
      core.deleteNode({ name: n.metadata!.name!, body: { preconditions: { uid: n.metadata!.uid, resourceVersion: n.metadata!.resourceVersion } } }),
    ),
  );
  t.deepEqual(
    results.flatMap((r) => (r.status === 'rejected' ? [String((r.reason as Error).message)] : [])),
    [],
  );
});

test('a write on a black-holed connection fails with a request timeout instead of hanging; the next request takes a new connection', async (t) => {
  const kc = await testKubeConfig();
  const admin = kc.makeApiClient(CoreV1Api);
  const namespace = `kube-connections-it-${randomBytes(4).toString('hex')}`;
  await admin.createNamespace({ body: { metadata: { name: namespace } } });
  t.teardown(() =>
    admin.deleteNamespace({ name: namespace }).then(
      () => undefined,
      () => undefined,
    ),
  );
  const proxy = await startTcpProxy(currentCluster(kc)!.server);
  t.teardown(() => proxy.close());
  const requestTimeoutMs = 2000;
  const { rest, connections } = makeClients(singleConfig({ ...currentCluster(kc)!, server: proxy.url }, currentUser(kc)!), {
    userAgent: 'kube-connections-it-timeout',
    qps: 1000,
    burst: 1000,
    requestTimeoutMs,
  });
  t.teardown(() => connections.destroy());
  const path = `/api/v1/namespaces/${namespace}/configmaps`;
  await rest.request<V1ConfigMap>('POST', path, { body: { metadata: { name: 'probe' }, data: { v: '1' } } });
  t.is(proxy.accepted, 1);

  t.is(proxy.freeze(), 1, 'the idle keep-alive connection is black-holed');
  const patch = { body: { data: { v: '2' } }, contentType: 'application/merge-patch+json' };
  const err = await t.throwsAsync(rest.request<V1ConfigMap>('PATCH', `${path}/probe`, patch));
  t.true(err instanceof RequestTimeoutError, String(err));
  t.is((err as RequestTimeoutError).timeoutMs, requestTimeoutMs);
  t.regex(err!.message, /^PATCH \/api\/v1\/namespaces\/[^ ]+\/configmaps\/probe: no answer within 2 s/);

  const patched = await rest.request<V1ConfigMap>('PATCH', `${path}/probe`, patch);
  t.is(patched.data?.v, '2');
  t.is(proxy.accepted, 2, 'the retry went over a new connection');
});
