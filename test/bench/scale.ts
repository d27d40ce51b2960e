/**
 * Scale: N tainted nodes and M LoadBalancer Services at once, every
 * controller that needs no extra flags running (cloud-node,
 * cloud-node-lifecycle, service), each side at its own defaults but the same
 * client QPS; our host and the upstream CCM one after the other
 * (ccm-sides.ts). Measures seconds until every node is initialized and every
 * Service has its ingress, CPU, RSS at start and peak, and the API writes.
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { dropFinalizers, ensureNamespace, lbService } from '../helpers/lb.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { mapLimit } from '../../host/util/map-limit.js';
import { apiRequests, cpuSeconds, journaledCalls, rssMb, sideBySideRows, WRITE_VERBS } from './ccm-sides.js';
import { startCcm, type Side } from '../helpers/ccm-side.js';
import { f1, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';
import { EXCLUDE_LB, initialized, uninitializedNode } from './nodes.js';

const CONCURRENCY = 32;
const QPS = 100;
const BURST = 200;
/** Nodes that are load balancer backends; the others carry the exclusion label, so each load balancer stays small. */
const BACKENDS = 3;
/** Instances are added to the local cloud this many at a time (one CLI process each). */
const INSTANCE_CHUNK = 1000;

/** The sizes measured; `BENCH_SCALE=NODESxSERVICES,...` (e.g. `1000x1000`) picks others. */
const CONFIGS = (process.env.BENCH_SCALE ?? '1000x1000,5000x10000').split(',').map((c) => {
  const m = /^(\d+)x(\d+)$/.exec(c.trim());
  if (!m) throw new Error(`BENCH_SCALE entry ${JSON.stringify(c)} is not NODESxSERVICES, e.g. 1000x1000`);
  return { nodes: Number(m[1]), services: Number(m[2]) };
});

interface ScaleFigures {
  seconds: number;
  cloudCalls: number;
  nodeWrites: number;
  serviceWrites: number;
  cpuSeconds: number;
  startRssMb: number;
  peakRssMb: number;
}

async function scaleRun(
  cp: ControlPlane,
  side: Side,
  nodes: number,
  services: number,
  runId: string,
  log: (s: string) => void,
): Promise<ScaleFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-scale-${side.kind}-`));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: nodes }, (_, i) => `${runId}-${i}`);
  for (let i = 0; i < names.length; i += INSTANCE_CHUNK) await localcloud(state, 'instance', 'add', ...names.slice(i, i + INSTANCE_CHUNK));
  const ns = `bench-${runId}`;
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  await ensureNamespace(core, ns);
  const settings = { controllers: 'cloud-node,cloud-node-lifecycle,service', qps: QPS, burst: BURST, flags: [] };
  const ccm = await startCcm(cp, side, settings, state, dir, { LOCALCLOUD_LB_CIDR: '127.64.0.0/16' });
  try {
    const startRssMb = await rssMb(ccm.pid, 'VmRSS');
    const calls0 = await journaledCalls(state);
    const nodeWrites0 = await apiRequests(cp, 'nodes', WRITE_VERBS);
    const serviceWrites0 = await apiRequests(cp, 'services', WRITE_VERBS);
    log(`scale: ${side.kind}: creating ${int(nodes)} nodes and ${int(services)} Services, logs in ${dir}`);
    const t0 = Date.now();
    const createNodes = mapLimit(
      names.map((name, i) => [name, i] as const),
      CONCURRENCY / 2,
      ([name, i]) =>
        core.createNode({
          body: uninitializedNode(name, { 'bench-run': runId, ...(i < BACKENDS ? {} : { [EXCLUDE_LB]: 'true' }) }),
        }),
    );
    const createServices = mapLimit(
      Array.from({ length: services }, (_, i) => i),
      CONCURRENCY / 2,
      (i) =>
        // No node ports: the default NodePort range (30000-32767) holds 2,768, and no traffic flows here.
        core.createNamespacedService({ namespace: ns, body: lbService(`s${i}`, ns, [{ port: 8080 }], { allocateLoadBalancerNodePorts: false }) }),
    );
    await Promise.all([createNodes, createServices]);
    let lastProgress = 0;
    await waitFor(
      async () => {
        const nodeList = await core.listNode({ labelSelector: `bench-run=${runId}` });
        const ready = nodeList.items.filter(initialized).length;
        const svcList = await core.listNamespacedService({ namespace: ns });
        const ingress = svcList.items.filter((s) => s.status?.loadBalancer?.ingress?.[0]?.ip).length;
        if (Date.now() - lastProgress > 30_000) {
          lastProgress = Date.now();
          log(`scale: ${side.kind}: ${int(ready)}/${int(nodes)} nodes initialized, ${int(ingress)}/${int(services)} ingresses`);
        }
        return ready === nodes && ingress === services;
      },
      { what: `${nodes} nodes initialized and ${services} ingresses (${side.kind})`, timeoutMs: 60 * 60_000, intervalMs: 2000 },
    );
    const seconds = (Date.now() - t0) / 1000;
    const figures = {
      seconds,
      cloudCalls: (await journaledCalls(state)) - calls0,
      // The benchmark's own creates are writes too.
      nodeWrites: (await apiRequests(cp, 'nodes', WRITE_VERBS)) - nodeWrites0 - nodes,
      serviceWrites: (await apiRequests(cp, 'services', WRITE_VERBS)) - serviceWrites0 - services,
      cpuSeconds: await cpuSeconds(ccm.pid),
      startRssMb,
      peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
    };
    log(`scale: ${side.kind}: ${int(nodes)} nodes + ${int(services)} Services in ${f1(seconds)} s, peak RSS ${f1(figures.peakRssMb)} MB`);
    return figures;
  } finally {
    await ccm.stop();
    const list = await core.listNamespacedService({ namespace: ns });
    await mapLimit(list.items, CONCURRENCY, async (svc) => {
      await dropFinalizers(core, svc).catch(() => undefined);
      await core.deleteNamespacedService({ namespace: ns, name: svc.metadata!.name! }).catch(() => undefined);
    });
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  }
}

export const scaleSection: BenchSection = {
  name: 'scale',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const before = loadavg()[0]!;
    const results: { label: string; nodes: number; services: number; ours: ScaleFigures; upstream: ScaleFigures }[] = [];
    for (const c of CONFIGS) {
      const id = `${c.nodes}-${c.services}-${Date.now().toString(36)}`;
      const ours = await scaleRun(cp, { kind: 'ours', nodeFlags: [] }, c.nodes, c.services, `so${id}`, ctx.log);
      const upstream = await scaleRun(cp, { kind: 'upstream', bin }, c.nodes, c.services, `su${id}`, ctx.log);
      results.push({ label: `${int(c.nodes)} nodes + ${int(c.services)} Services`, ...c, ours, upstream });
    }
    const line = (what: string, pick: (f: ScaleFigures) => number, fmt: (n: number) => string, bold = false) =>
      sideBySideRows(results, what, pick, fmt, bold);
    const markdown = `## Scale: nodes and Services at once, beside the upstream CCM, each at its defaults

N nodes (registered with the uninitialized taint; all but ${BACKENDS} labelled \`${EXCLUDE_LB}\`, so each load
balancer has ${BACKENDS} backends) and M LoadBalancer Services (\`allocateLoadBalancerNodePorts: false\`: the default NodePort
range holds only 2,768 ports, and no traffic flows here) created at once by the benchmark's client; every instance
exists in a fresh local cloud with no added latency. Each side runs \`--controllers=cloud-node,cloud-node-lifecycle,service
--kube-api-qps=${QPS} --kube-api-burst=${BURST}\` and otherwise its own defaults (workers: ours 1 node and 10 service
syncs; upstream 1 and 1), as its own process; upstream is \`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION} forwarding to the
local cloud as a sidecar (tools/upstream-ccm). Time runs from the first create until every node is initialized and
every Service has its ingress; CPU and RSS are the CCM process's own since its start; writes exclude the
benchmark's creates; the machine's 1-minute load average was ${f1(before)} before and ${f1(loadavg()[0]!)} after.

| figure | objects | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${line('seconds until all done', (f) => f.seconds, f1, true)}
${line('cloud calls', (f) => f.cloudCalls, int)}
${line('Node writes', (f) => f.nodeWrites, int)}
${line('Service writes', (f) => f.serviceWrites, int)}
${line('CPU (s)', (f) => f.cpuSeconds, f1, true)}
${line('RSS at start (MiB)', (f) => f.startRssMb, f1)}
${line('peak RSS (MiB)', (f) => f.peakRssMb, f1, true)}

Targets (issue 12): peak RSS with default flags ≤ 1.5× upstream's at 1,000 nodes + 1,000 Services and ≤ 2× at
5,000 nodes + 10,000 Services; RSS at start ≤ 90 MiB; never slower than upstream.
`;
    return {
      markdown,
      figures: {
        settings: { configs: CONFIGS, qps: QPS, burst: BURST, backends: BACKENDS, latencyMs: 0, upstream: CLOUD_PROVIDER_VERSION },
        rows: results,
      },
    };
  },
};
