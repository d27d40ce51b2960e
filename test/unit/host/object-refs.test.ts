/**
 * What the host tells a provider about a Node and a Service: toNodeRef
 * (host/controllers/node-ref.ts) and toServiceRef
 * (host/controllers/service/service-ref.ts) within the protocol's bounds, and
 * the same objects through GrpcCloud to a provider served in-process by the
 * SDK (the real gRPC path), which records the requests it gets.
 */
import anyTest, { type TestFn } from 'ava';
import type { V1Node, V1Service } from '@kubernetes/client-node';
import { pino } from 'pino';
import { NODE_REF_BOUNDS, toNodeRef } from '../../../host/controllers/node-ref.js';
import { SERVICE_REF_BOUNDS, toServiceRef } from '../../../host/controllers/service/service-ref.js';
import { createLogger } from '../../../host/log.js';
import { GrpcCloud } from '../../../host/plugin/grpc-cloud.js';
import { PluginSupervisor } from '../../../host/plugin/supervisor.js';
import type { NodeRef as PbNodeRef } from '../../../proto/gen/ccm/provider/v1/common.js';
import {
  InternalTrafficPolicy,
  IpFamilyPolicy,
  IpMode,
  Protocol,
  type EnsureLoadBalancerRequest,
  type ServiceRef as PbServiceRef,
} from '../../../proto/gen/ccm/provider/v1/load_balancers.js';
import { startInProcess } from '../../../sdk/testing.js';

const test = anyTest as TestFn<unknown>;

const NODE_INFO = {
  machineID: 'ec2a1b2c3d4e5f60718293a4b5c6d7e8',
  systemUUID: '4211f4b8-8d3c-4d2a-9e6f-0123456789ab',
  bootID: 'b0b0b0b0-0000-4000-8000-000000000001',
  kernelVersion: '6.8.0-1017-aws',
  osImage: 'Ubuntu 24.04.1 LTS',
  containerRuntimeVersion: 'containerd://2.1.0',
  kubeletVersion: 'v1.34.4',
  kubeProxyVersion: '',
  operatingSystem: 'linux',
  architecture: 'arm64',
};

const fullNode: V1Node = {
  metadata: {
    name: 'n1',
    uid: 'node-uid-1',
    labels: { 'kubernetes.io/hostname': 'n1' },
    annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kubectl.kubernetes.io/last-applied-configuration': '{"kind":"Node"}' },
  },
  spec: {
    providerID: 'acme://i-1',
    podCIDR: '10.244.1.0/24',
    podCIDRs: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
    taints: [
      { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: new Date() },
    ],
    unschedulable: true,
  },
  status: {
    addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
    conditions: [
      { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' },
      { type: 'MemoryPressure', status: 'False' },
    ],
    nodeInfo: NODE_INFO,
  },
};

const fullService: V1Service = {
  metadata: { name: 'web', namespace: 'ns', uid: 'svc-uid-1', annotations: { a: '1' }, labels: { l: 'v' } },
  spec: {
    type: 'LoadBalancer',
    ports: [
      { name: 'http', port: 80, protocol: 'TCP', nodePort: 30080, targetPort: 8080 as never },
      { name: 'named', port: 81, protocol: 'TCP', nodePort: 30081, targetPort: 'web' as never },
      { name: 'digits', port: 82, protocol: 'UDP', nodePort: 30082, targetPort: '9090' as never },
      { name: 'unset', port: 83, protocol: 'TCP', nodePort: 30083 },
    ],
    selector: { app: 'web' },
    clusterIP: '10.96.0.10',
    clusterIPs: ['10.96.0.10', 'fd00::10'],
    ipFamilies: ['IPv4', 'IPv6'],
    ipFamilyPolicy: 'PreferDualStack',
    externalIPs: ['192.0.2.7'],
    allocateLoadBalancerNodePorts: false,
    internalTrafficPolicy: 'Local',
  },
  status: {
    loadBalancer: {
      ingress: [{ ip: '203.0.113.5', ipMode: 'VIP', ports: [{ port: 80, protocol: 'TCP', error: 'Pending' }] }, { hostname: 'lb.example.com' }],
    },
  },
};

test('toNodeRef: pod CIDRs, taints, unschedulable, conditions, nodeInfo and annotations (never last-applied-configuration)', (t) => {
  const ref = toNodeRef(fullNode);
  t.deepEqual(ref.annotations, { 'node.alpha.kubernetes.io/ttl': '0' });
  t.deepEqual(ref.podCidrs, ['10.244.1.0/24', 'fd00:10:244:1::/64']);
  t.deepEqual(ref.taints, [
    { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unreachable', value: '', effect: 'NoExecute' },
  ]);
  t.true(ref.unschedulable);
  t.deepEqual(ref.conditions, [
    { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    { type: 'MemoryPressure', status: 'False', reason: '' },
  ]);
  t.deepEqual(ref.nodeInfo, {
    machineId: NODE_INFO.machineID,
    systemUuid: NODE_INFO.systemUUID,
    bootId: NODE_INFO.bootID,
    kernelVersion: NODE_INFO.kernelVersion,
    osImage: NODE_INFO.osImage,
    containerRuntimeVersion: NODE_INFO.containerRuntimeVersion,
    kubeletVersion: NODE_INFO.kubeletVersion,
    operatingSystem: NODE_INFO.operatingSystem,
    architecture: NODE_INFO.architecture,
  });
});

test('toNodeRef: a Node the kubelet has not reported on yet, and one with only spec.podCIDR', (t) => {
  const ref = toNodeRef({ metadata: { name: 'bare' }, spec: { podCIDR: '10.244.9.0/24' } });
  t.deepEqual(ref.podCidrs, ['10.244.9.0/24']);
  t.deepEqual([ref.taints, ref.conditions, ref.annotations, ref.unschedulable, ref.nodeInfo], [[], [], {}, false, undefined]);
});

test('toNodeRef: everything from outside is bounded (counts clamped, long strings dropped, never cut)', (t) => {
  const B = NODE_REF_BOUNDS;
  const many = (n: number, f: (i: number) => [string, string]) => Object.fromEntries(Array.from({ length: n }, (_, i) => f(i)));
  const node: V1Node = {
    metadata: {
      name: 'big',
      // 100 small annotations: the first 64 in key order.
      annotations: many(100, (i) => [`example.com/a${String(i).padStart(3, '0')}`, 'v']),
    },
    spec: {
      podCIDRs: Array.from({ length: 20 }, (_, i) => `10.${i}.0.0/24`),
      taints: [
        { key: 'k'.repeat(B.taintStringBytes + 1), effect: 'NoSchedule' },
        ...Array.from({ length: 100 }, (_, i) => ({ key: `t${i}`, effect: 'NoSchedule' })),
      ],
    },
    status: {
      conditions: Array.from({ length: 50 }, (_, i) => ({
        type: `C${i}`,
        status: 'True',
        reason: i === 0 ? 'R'.repeat(B.conditionStringBytes + 1) : 'Ok',
      })),
      nodeInfo: { ...NODE_INFO, systemUUID: 'u'.repeat(B.nodeInfoStringBytes + 1) },
    },
  };
  const ref = toNodeRef(node);
  const keys = Object.keys(ref.annotations!);
  t.is(keys.length, B.annotations);
  t.is(keys[0], 'example.com/a000');
  t.is(keys.at(-1), 'example.com/a063');
  t.is(ref.podCidrs!.length, B.podCidrs);
  t.is(ref.taints!.length, B.taints);
  t.is(ref.taints![0]!.key, 't0', 'a taint with an over-long key is not sent');
  t.is(ref.conditions!.length, B.conditions);
  t.is(ref.conditions![0]!.reason, '', 'an over-long reason is sent empty');
  t.is(ref.nodeInfo!.systemUuid, '', 'an over-long systemUUID is sent empty, not cut');
  t.is(ref.nodeInfo!.kubeletVersion, 'v1.34.4');

  // The byte budget: a huge annotation is skipped, smaller ones after it still fit.
  const sized = toNodeRef({
    metadata: { name: 's', annotations: { 'a/big': 'x'.repeat(B.annotationBytes), 'b/small': 'y', 'c/fill': 'z'.repeat(B.annotationBytes - 20) } },
  });
  t.deepEqual(Object.keys(sized.annotations!), ['b/small', 'c/fill']);
  const total = Object.entries(sized.annotations!).reduce((n, [k, v]) => n + k.length + v.length, 0);
  t.true(total <= B.annotationBytes);
});

test('toServiceRef: targetPort, selector, cluster IPs, policies, external IPs, allocateLoadBalancerNodePorts and the current ingress', (t) => {
  const { ref, problems } = toServiceRef(fullService);
  t.deepEqual(problems, []);
  t.deepEqual(
    ref.ports.map((p) => p.targetPort),
    [8080, 'web', 9090, undefined],
  );
  t.deepEqual(ref.selector, { app: 'web' });
  t.deepEqual(ref.clusterIps, ['10.96.0.10', 'fd00::10']);
  t.is(ref.ipFamilyPolicy, 'PreferDualStack');
  t.deepEqual(ref.externalIps, ['192.0.2.7']);
  t.false(ref.allocateLoadBalancerNodePorts);
  t.is(ref.internalTrafficPolicy, 'Local');
  t.deepEqual(ref.status, {
    ingress: [{ ip: '203.0.113.5', ipMode: 'VIP', ports: [{ port: 80, protocol: 'TCP', error: 'Pending' }] }, { hostname: 'lb.example.com' }],
  });
});

test('toServiceRef: unset fields stay unset, and lists from outside are bounded', (t) => {
  const B = SERVICE_REF_BOUNDS;
  const bare = toServiceRef({ metadata: { uid: 'u' }, spec: { type: 'LoadBalancer', ports: [{ port: 80 }] } }).ref;
  t.deepEqual(
    [
      bare.selector,
      bare.clusterIps,
      bare.ipFamilyPolicy,
      bare.externalIps,
      bare.allocateLoadBalancerNodePorts,
      bare.internalTrafficPolicy,
      bare.status,
    ],
    [{}, [], undefined, [], undefined, undefined, { ingress: [] }],
  );
  const big = toServiceRef({
    metadata: { uid: 'u' },
    spec: {
      type: 'LoadBalancer',
      ports: [{ port: 80 }],
      selector: Object.fromEntries(Array.from({ length: B.selector + 1 }, (_, i) => [`k${i}`, 'v'])),
      clusterIP: '10.96.0.11',
      externalIPs: Array.from({ length: 100 }, (_, i) => `192.0.2.${i}`),
    },
    status: { loadBalancer: { ingress: Array.from({ length: 100 }, (_, i) => ({ ip: `198.51.100.${i}` })) } },
  }).ref;
  t.deepEqual(big.selector, {}, 'a selector over the bound is not sent at all (part of one would select other Pods)');
  t.deepEqual(big.clusterIps, ['10.96.0.11'], 'spec.clusterIP alone');
  t.is(big.externalIps!.length, B.externalIps);
  t.is(big.status!.ingress.length, B.ingress);
  t.deepEqual(toServiceRef({ metadata: { uid: 'u' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } }).ref.clusterIps, []);
});

test('the refs reach the provider: every new NodeRef and ServiceRef field on the wire', async (t) => {
  const seen: EnsureLoadBalancerRequest[] = [];
  const p = await startInProcess(
    {
      info: { name: 'acme.example.com', vendorVersion: '1.0.0', providerName: 'acme' },
      loadBalancers: {
        async ensureLoadBalancer(req) {
          seen.push(req);
          return { status: { ingress: [{ ip: '203.0.113.5', hostname: '', ipMode: IpMode.IP_MODE_VIP, ports: [] }] } };
        },
      },
    },
    { logger: pino({ level: 'silent' }) },
  );
  const supervisor = new PluginSupervisor({
    name: 'acme',
    mode: { kind: 'socket', endpoint: p.endpoint },
    startTimeoutMs: 10_000,
    shutdownGraceMs: 100,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'test', hostVersion: 'test' },
    probeIntervalMs: 60_000,
    log: createLogger({ level: 'silent' }),
  });
  t.teardown(async () => {
    await supervisor.stop();
    await p.close();
  });
  await supervisor.start();
  const lbs = new GrpcCloud(supervisor, { readMs: 5_000, mutateMs: 5_000 }).loadBalancers()!;
  await lbs.ensureLoadBalancer('test', toServiceRef(fullService).ref, [toNodeRef(fullNode)]);
  t.is(seen.length, 1);
  const node: PbNodeRef = seen[0]!.nodes[0]!;
  t.deepEqual(node.annotations, { 'node.alpha.kubernetes.io/ttl': '0' });
  t.deepEqual(node.podCidrs, ['10.244.1.0/24', 'fd00:10:244:1::/64']);
  t.deepEqual(node.taints, [
    { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unreachable', value: '', effect: 'NoExecute' },
  ]);
  t.true(node.unschedulable);
  t.deepEqual(node.conditions[0], { type: 'Ready', status: 'True', reason: 'KubeletReady' });
  t.is(node.nodeInfo?.systemUuid, NODE_INFO.systemUUID);
  t.is(node.nodeInfo?.architecture, 'arm64');
  const svc: PbServiceRef = seen[0]!.service!;
  t.deepEqual(
    svc.ports.map((x) => [x.targetPort, x.targetPortName]),
    [
      [8080, ''],
      [0, 'web'],
      [9090, ''],
      [0, ''],
    ],
  );
  t.deepEqual(svc.selector, { app: 'web' });
  t.deepEqual(svc.clusterIps, ['10.96.0.10', 'fd00::10']);
  t.is(svc.ipFamilyPolicy, IpFamilyPolicy.IP_FAMILY_POLICY_PREFER_DUAL_STACK);
  t.deepEqual(svc.externalIps, ['192.0.2.7']);
  t.is(svc.allocateLoadBalancerNodePorts, false, 'false is sent, not left unset');
  t.is(svc.internalTrafficPolicy, InternalTrafficPolicy.INTERNAL_TRAFFIC_POLICY_LOCAL);
  t.deepEqual(svc.status, {
    ingress: [
      { ip: '203.0.113.5', hostname: '', ipMode: IpMode.IP_MODE_VIP, ports: [{ port: 80, protocol: Protocol.PROTOCOL_TCP, error: 'Pending' }] },
      { ip: '', hostname: 'lb.example.com', ipMode: IpMode.IP_MODE_UNSPECIFIED, ports: [] },
    ],
  });

  // allocateLoadBalancerNodePorts unset stays unset on the wire.
  await lbs.ensureLoadBalancer(
    'test',
    toServiceRef({ ...fullService, spec: { ...fullService.spec, allocateLoadBalancerNodePorts: undefined } }).ref,
    [],
  );
  t.is(seen[1]!.service!.allocateLoadBalancerNodePorts, undefined);
});
