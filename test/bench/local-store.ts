/**
 * Cost of one local-cloud state change at scale: `node dist/test/bench/local-store.js [LBS] [NODES] [UPDATES]`
 * (defaults 500 load balancers × 200 nodes as backends, 1000 updates).
 *
 * Store: each update is what UpdateLoadBalancer does to the state: replace
 * one load balancer's backends (drop one node, or put it back). A second store
 * on the same directory (another provider process, or the CLI) then reads the
 * change. Provider: the UpdateLoadBalancer call itself, on a local cloud with
 * its forwarder (listeners on 127.20.0.0/16), which the call waits for.
 * Prints per-call times; plugins/local/README.md quotes them.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createLocalCloud } from '../../plugins/local/cloud.js';
import { silentLogger } from '../../plugins/local/context.js';
import { Forwarder } from '../../plugins/local/forwarder.js';
import { StateStore, type InstanceRecord, type LbBackendRecord, type LoadBalancerRecord } from '../../plugins/local/state.js';
import type { NodeRef } from '../../proto/gen/ccm/provider/v1/common.js';
import { Protocol, type ServiceRef } from '../../proto/gen/ccm/provider/v1/load_balancers.js';

const [lbs = 500, nodes = 200, updates = 1000] = process.argv.slice(2).map(Number);

function instance(i: number): InstanceRecord {
  const name = `bench-node-${i}`;
  return {
    id: `i-${i.toString(16).padStart(8, '0')}`,
    name,
    type: 'local.small',
    zone: 'local-a',
    region: 'local',
    addresses: [
      { type: 'InternalIP', address: `10.0.${i >> 8}.${i & 255}` },
      { type: 'Hostname', address: name },
    ],
    state: 'running',
    labels: {},
    createdAt: new Date().toISOString(),
  };
}

function backends(all: InstanceRecord[], skip: number): LbBackendRecord[] {
  return all.filter((_, i) => i !== skip).map((inst) => ({ nodeName: inst.name, address: inst.addresses[0]!.address }));
}

function loadBalancer(i: number, all: InstanceRecord[]): LoadBalancerRecord {
  return {
    name: `lb-bench-${i.toString().padStart(32, '0')}`,
    clusterName: 'bench',
    serviceUid: `uid-${i}`,
    serviceNamespace: 'default',
    serviceName: `svc-${i}`,
    ingressIp: `127.10.${i >> 8}.${i & 255}`,
    ipMode: 'VIP',
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30000 + (i % 2000) }],
    backends: backends(all, -1),
    sourceRanges: [],
    externalTrafficPolicy: 'Cluster',
    healthCheckNodePort: 0,
    sessionAffinity: 'None',
    createdAt: new Date().toISOString(),
  };
}

function summary(label: string, ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
  const mean = (ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(2);
  return `${label}: mean ${mean} ms, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms (${ms.length} calls)`;
}

const dir = await mkdtemp(join(tmpdir(), 'local-store-bench-'));
await storePhase().finally(() => rm(dir, { recursive: true, force: true }));
await providerPhase();

async function storePhase(): Promise<void> {
  const writer = new StateStore(dir);
  const reader = new StateStore(dir);
  const all = Array.from({ length: nodes }, (_, i) => instance(i));
  await writer.update((d) => {
    d.instances.push(...all);
    for (let i = 0; i < lbs; i++) d.loadBalancers.push(loadBalancer(i, all));
  });
  reader.view();
  const write: number[] = [];
  const read: number[] = [];
  for (let u = 0; u < updates; u++) {
    const name = `lb-bench-${(u % lbs).toString().padStart(32, '0')}`;
    const next = backends(all, u % 2 === 0 ? u % nodes : -1);
    const t0 = performance.now();
    await writer.update((d) => {
      const lb = d.loadBalancers.find((l) => l.name === name);
      if (lb) lb.backends = next;
    });
    const t1 = performance.now();
    const seen = reader.view().loadBalancer(name)?.backends.length;
    const t2 = performance.now();
    if (seen !== next.length) throw new Error(`reader saw ${seen} backends of ${name}, want ${next.length}`);
    write.push(t1 - t0);
    read.push(t2 - t1);
  }
  let bytes = 0;
  for (const f of ['state.json', 'state.jsonl'])
    bytes += await stat(join(dir, f)).then(
      (s) => s.size,
      () => 0,
    );
  console.log(`${lbs} load balancers × ${nodes} backends, ${nodes} instances; state files ${(bytes / 1e6).toFixed(1)} MB at the end`);
  console.log(summary('update (writer)', write));
  console.log(summary('view after it (other store)', read));
}

function nodeRef(inst: InstanceRecord): NodeRef {
  return {
    name: inst.name,
    providerId: `local://${inst.id}`,
    addresses: [],
    labels: {},
    uid: '',
    annotations: {},
    podCidrs: [],
    taints: [],
    unschedulable: false,
    conditions: [],
  };
}

function service(i: number): ServiceRef {
  return {
    uid: `00000000-0000-4000-8000-${i.toString().padStart(12, '0')}`,
    namespace: 'default',
    name: `svc-${i}`,
    annotations: {},
    labels: {},
    ports: [{ name: 'http', protocol: Protocol.PROTOCOL_TCP, port: 18080, nodePort: 30080, appProtocol: '', targetPort: 8080, targetPortName: '' }],
    loadBalancerIp: '',
    loadBalancerSourceRanges: [],
    ipFamilies: [],
    externalTrafficPolicy: 0,
    healthCheckNodePort: 0,
    sessionAffinity: 0,
    loadBalancerClass: '',
    sessionAffinityTimeoutSeconds: 0,
    selector: {},
    clusterIps: [],
    ipFamilyPolicy: 0,
    externalIps: [],
    internalTrafficPolicy: 0,
    endpoints: [],
  };
}

async function providerPhase(): Promise<void> {
  const pdir = await mkdtemp(join(tmpdir(), 'local-store-bench-provider-'));
  const store = new StateStore(pdir);
  const forwarder = new Forwarder(store, silentLogger);
  const cloud = createLocalCloud({ store, env: {}, loadBalancerCidr: '127.20.0.0/16', forwarder });
  const lbApi = cloud.loadBalancers!;
  const meta = { operationId: '', clusterName: 'bench', clusterUid: 'bench-uid', attempt: 1 };
  const signal = { signal: new AbortController().signal };
  try {
    const all = Array.from({ length: nodes }, (_, i) => instance(i));
    await store.update((d) => void d.instances.push(...all));
    const refs = all.map(nodeRef);
    for (let i = 0; i < lbs; i++) await lbApi.ensureLoadBalancer!({ meta, service: service(i), nodes: refs }, signal);
    const calls: number[] = [];
    for (let u = 0; u < Math.min(updates, 300); u++) {
      const subset = u % 2 === 0 ? refs.filter((_, i) => i !== u % nodes) : refs;
      const t0 = performance.now();
      await lbApi.updateLoadBalancer!({ meta, service: service(u % lbs), nodes: subset }, signal);
      calls.push(performance.now() - t0);
    }
    console.log(summary('UpdateLoadBalancer call (provider with forwarder)', calls));
  } finally {
    await forwarder.close();
    await rm(pdir, { recursive: true, force: true });
  }
}
