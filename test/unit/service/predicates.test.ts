/** Tables for the service controller's predicates and the load balancer status validation. */
import test from 'ava';
import type { V1Node, V1Service } from '@kubernetes/client-node';
import { backendKey, isBackendNode, isLoadBalancer, needsUpdate, nodeUpdateNeedsSync } from '../../../host/controllers/service/predicates.js';
import { ingressEqual, toServiceRef } from '../../../host/controllers/service/service-ref.js';
import { lbStatusProblems } from '../../../host/plugin/validate-load-balancers.js';
import { KeyedMutex } from '../../../host/util/keyed-mutex.js';

const base: V1Service = {
  metadata: { name: 's', namespace: 'ns', uid: 'u1', annotations: { a: '1' }, labels: { app: 'x' } },
  spec: { type: 'LoadBalancer', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }], selector: { app: 'x' } },
};
const svc = (patch: (s: V1Service) => void): V1Service => {
  const s = structuredClone(base);
  patch(s);
  return s;
};

test('isLoadBalancer: the type, whatever the class (lb-classes.test.ts decides who serves it)', (t) => {
  t.true(isLoadBalancer(base));
  t.true(isLoadBalancer(svc((s) => (s.spec!.loadBalancerClass = 'other'))));
  t.false(isLoadBalancer(svc((s) => (s.spec!.type = 'ClusterIP'))));
});

const updates: { description: string; change: (s: V1Service) => void; want: boolean }[] = [
  { description: 'port number', change: (s) => (s.spec!.ports![0]!.port = 81), want: true },
  { description: 'nodePort', change: (s) => (s.spec!.ports![0]!.nodePort = 30081), want: true },
  { description: 'annotation', change: (s) => (s.metadata!.annotations!.b = '2'), want: true },
  { description: 'loadBalancerIP', change: (s) => (s.spec!.loadBalancerIP = '1.2.3.4'), want: true },
  { description: 'source ranges', change: (s) => (s.spec!.loadBalancerSourceRanges = ['10.0.0.0/8']), want: true },
  { description: 'externalTrafficPolicy', change: (s) => (s.spec!.externalTrafficPolicy = 'Local'), want: true },
  { description: 'healthCheckNodePort', change: (s) => (s.spec!.healthCheckNodePort = 32000), want: true },
  { description: 'ipFamilies', change: (s) => (s.spec!.ipFamilies = ['IPv6']), want: true },
  { description: 'sessionAffinity', change: (s) => (s.spec!.sessionAffinity = 'ClientIP'), want: true },
  { description: 'type', change: (s) => (s.spec!.type = 'NodePort'), want: true },
  { description: 'loadBalancerClass', change: (s) => (s.spec!.loadBalancerClass = 'example.com/a'), want: true },
  {
    description: "the host's maker record only",
    change: (s) => (s.metadata!.annotations = { ...s.metadata!.annotations, 'service.ccm.dev/load-balancer-provider': 'p' }),
    want: false,
  },
  { description: 'labels only', change: (s) => (s.metadata!.labels!.x = 'y'), want: false },
  { description: 'selector only', change: (s) => (s.spec!.selector = { app: 'y' }), want: false },
  { description: 'status only', change: (s) => (s.status = { loadBalancer: { ingress: [{ ip: '1.1.1.1' }] } }), want: false },
  { description: 'internalTrafficPolicy', change: (s) => (s.spec!.internalTrafficPolicy = 'Local'), want: false },
];
for (const c of updates) {
  test(`needsUpdate: ${c.description} → ${c.want}`, (t) => t.is(needsUpdate(base, svc(c.change)), c.want));
}

const node = (patch: (n: V1Node) => void = () => undefined): V1Node => {
  const n: V1Node = {
    metadata: { name: 'n1', labels: {} },
    spec: { providerID: 'local://i-1' },
    status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
  };
  patch(n);
  return n;
};
const nodes: { description: string; n: V1Node; want: boolean }[] = [
  { description: 'plain node', n: node(), want: true },
  {
    description: 'exclude label true',
    n: node((n) => (n.metadata!.labels!['node.kubernetes.io/exclude-from-external-load-balancers'] = 'true')),
    want: false,
  },
  {
    description: 'exclude label empty',
    n: node((n) => (n.metadata!.labels!['node.kubernetes.io/exclude-from-external-load-balancers'] = '')),
    want: false,
  },
  {
    description: 'exclude label false',
    n: node((n) => (n.metadata!.labels!['node.kubernetes.io/exclude-from-external-load-balancers'] = 'false')),
    want: true,
  },
  {
    description: 'exclude label F',
    n: node((n) => (n.metadata!.labels!['node.kubernetes.io/exclude-from-external-load-balancers'] = 'F')),
    want: true,
  },
  { description: 'being deleted', n: node((n) => (n.metadata!.deletionTimestamp = new Date())), want: false },
  {
    description: 'uninitialized',
    n: node((n) => (n.spec!.taints = [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' }])),
    want: false,
  },
  {
    description: 'autoscaler deleting',
    n: node((n) => (n.spec!.taints = [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }])),
    want: false,
  },
  { description: 'unschedulable stays', n: node((n) => (n.spec!.unschedulable = true)), want: true },
];
for (const c of nodes) {
  test(`isBackendNode: ${c.description} → ${c.want}`, (t) => t.is(isBackendNode(c.n), c.want));
}

test('backendKey ignores heartbeats and unrelated labels, not addresses', (t) => {
  const k = backendKey(node());
  t.is(backendKey(node((n) => (n.status!.conditions = [{ type: 'Ready', status: 'True' }]))), k);
  t.is(backendKey(node((n) => (n.metadata!.labels!.foo = 'bar'))), k);
  t.not(backendKey(node((n) => (n.status!.addresses = [{ type: 'InternalIP', address: '10.0.0.2' }]))), k);
});

// Upstream (KEP-3458): a node's own update triggers a backend sync only when
// its exclusion label or providerID changes; the autoscaler's taint and a
// deletionTimestamp drop it from the backends at the next sync, so kube-proxy's
// health check can drain its connections first. Address changes and the
// uninitialized taint are ours (docs/differences-from-upstream.md).
const CA_TAINT = { key: 'ToBeDeletedByClusterAutoscaler', value: '1700000000', effect: 'NoSchedule' };
const nodeUpdates: { description: string; old: V1Node; cur: V1Node; want: boolean }[] = [
  { description: 'heartbeat', old: node(), cur: node((n) => (n.status!.conditions = [{ type: 'Ready', status: 'True' }])), want: false },
  { description: 'autoscaler taint added', old: node(), cur: node((n) => (n.spec!.taints = [CA_TAINT])), want: false },
  { description: 'autoscaler taint removed', old: node((n) => (n.spec!.taints = [CA_TAINT])), cur: node(), want: false },
  { description: 'deletionTimestamp set', old: node(), cur: node((n) => (n.metadata!.deletionTimestamp = new Date())), want: false },
  {
    description: 'exclusion label added',
    old: node(),
    cur: node((n) => (n.metadata!.labels!['node.kubernetes.io/exclude-from-external-load-balancers'] = 'true')),
    want: true,
  },
  { description: 'providerID changed', old: node(), cur: node((n) => (n.spec!.providerID = 'local://i-2')), want: true },
  {
    description: 'address changed (ours)',
    old: node(),
    cur: node((n) => (n.status!.addresses = [{ type: 'InternalIP', address: '10.0.0.2' }])),
    want: true,
  },
  {
    description: 'address of an autoscaler-tainted node changed (ours)',
    old: node((n) => (n.spec!.taints = [CA_TAINT])),
    cur: node((n) => ((n.spec!.taints = [CA_TAINT]), (n.status!.addresses = [{ type: 'InternalIP', address: '10.0.0.2' }]))),
    want: true,
  },
  {
    description: 'uninitialized taint removed (ours)',
    old: node((n) => (n.spec!.taints = [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' }])),
    cur: node(),
    want: true,
  },
];
for (const c of nodeUpdates) {
  test(`nodeUpdateNeedsSync: ${c.description} → ${c.want}`, (t) => t.is(nodeUpdateNeedsSync(c.old, c.cur), c.want));
}

test('toServiceRef: conversion and problems', (t) => {
  const { ref, problems } = toServiceRef(base);
  t.deepEqual(problems, []);
  t.deepEqual(ref.ports, [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080, appProtocol: '' }]);
  t.is(ref.externalTrafficPolicy, 'Cluster');
  t.regex(toServiceRef(svc((s) => (s.spec!.ports![0]!.protocol = 'HTTP'))).problems.join(), /unsupported protocol/);
  t.regex(toServiceRef(svc((s) => (s.spec!.ports = []))).problems.join(), /no ports/);
});

test('ingressEqual treats empty fields as absent', (t) => {
  t.true(ingressEqual([{ ip: '1.1.1.1', ipMode: 'VIP' }], [{ ip: '1.1.1.1', ipMode: 'VIP', ports: [] }]));
  t.false(ingressEqual([{ ip: '1.1.1.1', ipMode: 'VIP' }], [{ ip: '1.1.1.1', ipMode: 'Proxy' }]));
  t.true(ingressEqual(undefined, []));
});

const statuses: { description: string; ingress: Parameters<typeof lbStatusProblems>[0]['ingress']; bad: boolean }[] = [
  { description: 'ip + VIP', ingress: [{ ip: '127.0.10.1', ipMode: 'VIP' }], bad: false },
  { description: 'hostname', ingress: [{ hostname: 'lb.example.com' }], bad: false },
  { description: 'invalid ip', ingress: [{ ip: '999.1.2.3' }], bad: true },
  { description: 'neither ip nor hostname', ingress: [{}], bad: true },
  { description: 'hostname that is an IP', ingress: [{ hostname: '1.2.3.4' }], bad: true },
  { description: 'ipMode without ip', ingress: [{ hostname: 'a.example.com', ipMode: 'Proxy' }], bad: true },
  { description: 'port out of range', ingress: [{ ip: '1.2.3.4', ports: [{ port: 70000, protocol: 'TCP' }] }], bad: true },
  { description: 'port error not CamelCase', ingress: [{ ip: '1.2.3.4', ports: [{ port: 80, protocol: 'TCP', error: 'bad thing' }] }], bad: true },
];
for (const c of statuses) {
  test(`lbStatusProblems: ${c.description}`, (t) => t.is(lbStatusProblems({ ingress: c.ingress }).length > 0, c.bad));
}

test('KeyedMutex serializes per key and runAll takes every key', async (t) => {
  const m = new KeyedMutex<string>();
  const order: string[] = [];
  const slow = (tag: string, ms: number) => async () => {
    order.push(`${tag}+`);
    await new Promise((r) => setTimeout(r, ms));
    order.push(`${tag}-`);
  };
  await Promise.all([m.run('a', slow('a1', 20)), m.run('a', slow('a2', 1)), m.runAll(['b', 'a'], slow('all', 1))]);
  t.deepEqual(order.slice(0, 4), ['a1+', 'a1-', 'a2+', 'a2-']);
  t.deepEqual(order.slice(4), ['all+', 'all-']);
});

test('KeyedMutex.tryAcquire takes only a free key, never waits, and its release lets waiters in', async (t) => {
  const m = new KeyedMutex<string>();
  const release = m.tryAcquire('a');
  t.truthy(release);
  t.is(m.tryAcquire('a'), undefined, 'held');
  const order: string[] = [];
  const waiter = m.run('a', async () => void order.push('run'));
  await new Promise((r) => setImmediate(r));
  t.deepEqual(order, [], 'run waits for the holder');
  release!();
  release!();
  await waiter;
  t.deepEqual(order, ['run']);
  const busy = m.run('b', () => new Promise((r) => setTimeout(r, 5)));
  t.is(m.tryAcquire('b'), undefined, 'a key being run is not free');
  await busy;
  const again = m.tryAcquire('a');
  t.truthy(again, 'free again once everyone is done');
  again!();
});
