/**
 * The service controller with several load-balancer providers (issue 31
 * item 3), on fakes: each Service goes to the provider of its class only, a
 * Service of a class nobody serves gets no call and no write, node-set
 * fan-out calls each provider with its own load balancers, and a class
 * change across providers is cleaned up by the maker before the new
 * provider ensures, and a provider that hangs holds up only its own Services
 * (each provider has its own service queue and node worker). (The real API server and the local cloud:
 * test/integration/service/lb-classes.test.ts, with one provider.)
 */
import test from 'ava';
import type { V1Node, V1Service } from '@kubernetes/client-node';
import type { LbStatus, LoadBalancers, ServiceRef } from '../../../host/cloud-load-balancers.js';
import type { NodeRef } from '../../../host/cloud.js';
import type { LiveServiceReads } from '../../../host/controllers/service/live-read.js';
import { ServiceController } from '../../../host/controllers/service/service-controller.js';
import type { CoreV1Api } from '../../../host/kube/api.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { silentLogger } from '../../../host/log.js';
import { nodeOwnershipDeclarations } from '../../../host/ownership/nodes.js';
import { waitFor } from '../../helpers/wait.js';

/** Waits for `cond` (helpers/wait.ts bounds it). */
const until = (cond: () => boolean, what: string) => waitFor(() => cond() || undefined, { what, timeoutMs: 10_000 });

const A = 'example.com/a';
const B = 'example.com/b';

/** A fake provider recording its calls as "<method> <service name>". */
function fakeLbs(calls: string[], name: string): LoadBalancers {
  const status: LbStatus = { ingress: [{ ip: '192.0.2.1' }] };
  return {
    batchEnsure: false,
    batchHosts: false,
    canList: false,
    ensureLoadBalancer: async (_c: string, s: ServiceRef) => (calls.push(`${name} ensure ${s.name}`), status),
    updateLoadBalancer: async (_c: string, s: ServiceRef, nodes: NodeRef[]) => void calls.push(`${name} hosts ${s.name} ${nodes.length}`),
    ensureLoadBalancerDeleted: async (_c: string, s: ServiceRef) => void calls.push(`${name} delete ${s.name} (${s.loadBalancerClass})`),
  } as unknown as LoadBalancers;
}

/** An informer over a mutable map (the test plays the watch, so every read may see a change: the count never repeats). */
function informer<T extends { metadata?: { name?: string; namespace?: string } }>(items: Map<string, T>): Informer<T> {
  let reads = 0;
  return {
    get: (key: string) => items.get(key),
    list: () => [...items.values()],
    mutationCount: () => reads++,
    addEventHandler: () => undefined,
    hasSynced: () => true,
  } as unknown as Informer<T>;
}

const service = (name: string, cls?: string, extra: Partial<V1Service['metadata']> = {}): V1Service => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...extra },
  spec: { type: 'LoadBalancer', loadBalancerClass: cls, ports: [{ port: 80, protocol: 'TCP', nodePort: 30080 }] },
});

const node = (name: string): V1Node => ({
  metadata: { name },
  status: { addresses: [{ type: 'InternalIP', address: `10.0.0.${name.length}` }] },
});

function setup() {
  const calls: string[] = [];
  const writes: string[] = [];
  const services = new Map<string, V1Service>();
  const nodes = new Map<string, V1Node>([['n1', node('n1')]]);
  const core = {
    patchNamespacedService: async (r: { name: string; body: { metadata?: { annotations?: Record<string, string | null> } } }) => {
      writes.push(`patch ${r.name} ${JSON.stringify(r.body.metadata?.annotations ?? {})}`);
      return {};
    },
    patchNamespacedServiceStatus: async (r: { name: string }) => (writes.push(`status ${r.name}`), {}),
  } as unknown as CoreV1Api;
  const reads: LiveServiceReads = { read: async (_p, ns, name) => services.get(`${ns}/${name}`), decided: () => undefined };
  const controller = new ServiceController({
    core,
    services: informer(services),
    nodes: informer(nodes),
    // x: class a and Services without a class; y: class b only.
    providers: [
      { name: 'x', lbs: fakeLbs(calls, 'x'), classes: { classes: [A], unclassed: true } },
      { name: 'y', lbs: fakeLbs(calls, 'y'), classes: { classes: [B], unclassed: false } },
    ],
    clusterName: 'c',
    clusterUid: 'uid-c',
    recorder: {
      event: (o: V1Service, _t: string, reason: string) => void writes.push(`event ${o.metadata?.name} ${reason}`),
    } as unknown as EventRecorder,
    log: silentLogger(),
    workers: 1,
    resyncPeriodMs: 0,
    reads,
  });
  return { calls, writes, services, nodes, controller };
}

test('each Service goes to the provider of its class; an unserved class gets no call and no write', async (t) => {
  const f = setup();
  for (const s of [service('plain'), service('in-a', A), service('in-b', B), service('other', 'example.com/other')])
    f.services.set(`ns/${s.metadata!.name}`, s);
  for (const key of f.services.keys()) await f.controller.sync(key);
  t.deepEqual(f.calls.sort(), ['x ensure in-a', 'x ensure plain', 'y ensure in-b']);
  t.deepEqual(
    f.writes.filter((w) => w.startsWith('patch')).sort(),
    [
      'patch in-a {"service.ccm.dev/load-balancer-provider":"x","service.ccm.dev/load-balancer-class":"example.com/a"}',
      'patch in-b {"service.ccm.dev/load-balancer-provider":"y","service.ccm.dev/load-balancer-class":"example.com/b"}',
      'patch plain {}',
    ],
    'the finalizer, with the maker on classed Services only',
  );
  t.false(
    f.writes.some((w) => w.includes(' other')),
    'nothing written about the Service of an unserved class',
  );

  // A node joins: each provider updates the backends of its own load balancers.
  f.calls.length = 0;
  f.nodes.set('n2', node('n22'));
  await f.controller.syncNodes();
  t.deepEqual(f.calls.sort(), ['x hosts in-a 2', 'x hosts plain 2', 'y hosts in-b 2']);
});

test('a class change across providers: the maker deletes, then the new class’s provider ensures', async (t) => {
  const f = setup();
  // As the cache shows it after LoadBalancer(b) → ClusterIP → LoadBalancer(a), the middle step unseen.
  f.services.set(
    'ns/moved',
    service('moved', A, {
      finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
      annotations: { 'service.ccm.dev/load-balancer-provider': 'y', 'service.ccm.dev/load-balancer-class': B },
    }),
  );
  await f.controller.sync('ns/moved');
  t.deepEqual(f.calls, [`y delete moved (${B})`, 'x ensure moved']);
  t.deepEqual(
    f.writes.filter((w) => w.startsWith('patch')),
    [
      'patch moved {"service.ccm.dev/load-balancer-provider":null,"service.ccm.dev/load-balancer-class":null}',
      'patch moved {"service.ccm.dev/load-balancer-provider":"x","service.ccm.dev/load-balancer-class":"example.com/a"}',
    ],
    'the old record goes with the old load balancer, the new one comes with the finalizer',
  );
});

test('a provider that hangs holds only its own Services: the other provider’s ensures and backend updates go on', async (t) => {
  const f = setup();
  // y's calls hang until released (as a stopped plugin's, until their deadline).
  let release!: () => void;
  const hung = new Promise<void>((resolve) => (release = resolve));
  const y = (f.controller as unknown as { classes: { named(n: string): { lbs: LoadBalancers } } }).classes.named('y')!.lbs;
  const ensureY = y.ensureLoadBalancer.bind(y);
  const updateY = y.updateLoadBalancer.bind(y);
  Object.assign(y, {
    ensureLoadBalancer: async (...a: Parameters<LoadBalancers['ensureLoadBalancer']>) => (await hung, ensureY(...a)),
    updateLoadBalancer: async (...a: Parameters<LoadBalancers['updateLoadBalancer']>) => (await hung, updateY(...a)),
  });
  // y's Services first in the cache: one worker (workers: 1) takes them first.
  for (const s of [service('b1', B), service('b2', B), service('plain'), service('in-a', A)]) f.services.set(`ns/${s.metadata!.name}`, s);
  const abort = new AbortController();
  const informers = f.controller as unknown as { o: { services: { waitForSync?: unknown }; nodes: { waitForSync?: unknown } } };
  informers.o.services.waitForSync = async () => true;
  informers.o.nodes.waitForSync = async () => true;
  const running = f.controller.run(abort.signal);
  f.controller.resyncAll();
  await until(() => f.calls.includes('x ensure plain') && f.calls.includes('x ensure in-a'), "x's ensures");
  t.deepEqual(f.calls.sort(), ['x ensure in-a', 'x ensure plain'], 'x ensured while y hangs');

  // A node joins: x's backends are updated while y's ensure still hangs.
  f.nodes.set('n2', node('n22'));
  (f.controller as unknown as { nodesChanged(): void }).nodesChanged();
  await until(() => f.calls.includes('x hosts plain 2') && f.calls.includes('x hosts in-a 2'), "x's backend updates");
  t.false(
    f.calls.some((c) => c.startsWith('y ')),
    'nothing of y done yet',
  );

  release();
  await until(() => f.calls.includes('y ensure b1') && f.calls.includes('y ensure b2'), "y's ensures once released");
  abort.abort();
  await running;
  t.pass();
});

test('with several providers each gets as backends only its own Nodes and those nobody owns, on ensure and on backend updates; with one, every Node', async (t) => {
  const owned = (providerID: string): V1Node => ({ ...node('x'), spec: { providerID } });
  const cases: { name: string; providers: string[]; want: Record<string, string[]> }[] = [
    {
      name: 'two providers',
      providers: ['x', 'y'],
      want: { x: ['bare', 'other-cloud', 'x-1', 'x-1b'], y: ['bare', 'other-cloud', 'y-1', 'y-1b'] },
    },
    { name: 'one provider', providers: ['x'], want: { x: ['bare', 'other-cloud', 'x-1', 'x-1b', 'y-1', 'y-1b'] } },
  ];
  for (const c of cases) {
    const got: Record<string, string[]> = {};
    const record = (p: string) => (_c: string, _s: ServiceRef, nodes: NodeRef[]) => void (got[p] = nodes.map((n) => n.name).sort());
    const nodes = new Map<string, V1Node>([
      ['x-1', { ...owned('x://i-1'), metadata: { name: 'x-1' } }],
      // y's Node whose providerID ends in x's instance id: x must never get it.
      ['y-1', { ...owned('y://i-1'), metadata: { name: 'y-1' } }],
      ['other-cloud', { ...owned('gce://p/z/vm'), metadata: { name: 'other-cloud' } }],
      ['bare', { ...node('bare'), metadata: { name: 'bare' } }],
    ]);
    const services = new Map<string, V1Service>([
      ['ns/sx', service('sx')],
      ['ns/sy', service('sy', B)],
    ]);
    const lbs = (p: string): LoadBalancers =>
      ({
        ...fakeLbs([], p),
        ensureLoadBalancer: async (cl: string, s: ServiceRef, n: NodeRef[]) => (record(p)(cl, s, n), { ingress: [{ ip: '192.0.2.1' }] }),
        updateLoadBalancer: async (cl: string, s: ServiceRef, n: NodeRef[]) => record(p)(cl, s, n),
      }) as unknown as LoadBalancers;
    const all = [
      { name: 'x', lbs: lbs('x'), classes: { classes: [A], unclassed: true } },
      { name: 'y', lbs: lbs('y'), classes: { classes: [B], unclassed: false } },
    ].filter((p) => c.providers.includes(p.name));
    const declarations = nodeOwnershipDeclarations(
      c.providers.map((name) => ({ name, providerName: name, providerIdPrefixes: [], nodeSelector: '' })),
    );
    const controller = new ServiceController({
      core: { patchNamespacedService: async () => ({}), patchNamespacedServiceStatus: async () => ({}) } as unknown as CoreV1Api,
      services: informer(services),
      nodes: informer(nodes),
      providers: all,
      clusterName: 'c',
      clusterUid: 'uid-c',
      recorder: { event: () => undefined } as unknown as EventRecorder,
      log: silentLogger(),
      workers: 1,
      resyncPeriodMs: 0,
      reads: { read: async (_p, ns, name) => services.get(`${ns}/${name}`), decided: () => undefined },
      nodeOwnership: { declarations: () => declarations },
    });
    for (const key of services.keys()) await controller.sync(key);
    // A Node of each provider joins: the backend updates follow the same rule.
    nodes.set('x-1b', { ...owned('x://i-2'), metadata: { name: 'x-1b' } });
    nodes.set('y-1b', { ...owned('y://i-2'), metadata: { name: 'y-1b' } });
    await controller.syncNodes();
    t.deepEqual(got, c.want, c.name);
  }
});
