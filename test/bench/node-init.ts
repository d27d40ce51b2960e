/**
 * Node initialization against a real control plane, our host and the
 * upstream Go cloud-controller-manager one after the other: N tainted nodes
 * whose instances exist in the local cloud (latency knob per call), each CCM
 * a separate process with the same --kube-api-qps/--kube-api-burst and
 * --concurrent-node-syncs. Measures seconds from the first node creation
 * until every node has lost its taint, the CCM process's CPU and peak RSS
 * (from /proc), the cloud calls (the local cloud's journal) and the node and
 * event writes (the kube-apiserver's request counter).
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { apiRequests, cpuSeconds, journaledCalls, rssMb, schedFigures, schedSnapshot, sideBySideRows, type SchedFigures } from './ccm-sides.js';
import { startCcm, type Side } from '../helpers/ccm-side.js';
import { f1, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';
import { latencyRows, nodeInitWatch, summarize, type LatencySummary } from './latency.js';
import { initialized, uninitializedNode } from './nodes.js';

const CREATE_CONCURRENCY = 32;

export interface NodeInitSettings {
  nodes: number;
  /** --concurrent-node-syncs; undefined leaves the CCM's default. */
  workers?: number;
  latencyMs: number;
  qps: number;
  burst: number;
}

export interface NodeInitFigures {
  seconds: number;
  createSeconds: number;
  peakRssMb: number;
  /** RSS once the CCM is serving, before any node exists. */
  startRssMb: number;
  /** User+system CPU seconds of the CCM process from its start until every node is initialized. */
  cpuSeconds: number;
  /** Every call the cloud served (the local cloud's journal; a batch call counts once). */
  cloudCalls: number;
  /** Node writes (PATCH/PUT, any subresource) the kube-apiserver served meanwhile; only the CCM writes Nodes here. */
  nodeWrites: number;
  /** Event writes (POST/PATCH) the kube-apiserver served meanwhile. */
  eventWrites: number;
  /** Per node: created → uninitialized taint gone, as the bench's watch saw it (latency.ts). */
  initLatency: LatencySummary;
  /** The CCM's threads from the first create until every node was initialized: waiting for a CPU, and the busiest one's share. */
  sched: SchedFigures;
}

export async function benchNodeInit(
  cp: ControlPlane,
  s: NodeInitSettings,
  side: Side,
  runId: string,
  log: (s: string) => void,
): Promise<NodeInitFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-init-${side.kind}-`));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: s.nodes }, (_, i) => `bench-${runId}-${i}`);
  await localcloud(state, 'instance', 'add', ...names);
  await localcloud(state, 'knobs', 'set', `latencyMs=${s.latencyMs}`);

  const flags = s.workers === undefined ? [] : [`--concurrent-node-syncs=${s.workers}`];
  const ccm = await startCcm(cp, side, { controllers: 'cloud-node', qps: s.qps, burst: s.burst, flags }, state, dir);
  const startRssMb = await rssMb(ccm.pid, 'VmRSS');
  const calls0 = await journaledCalls(state);
  const nodeWrites0 = await apiRequests(cp, 'nodes', ['PATCH', 'PUT', 'UPDATE']);
  const eventWrites0 = await apiRequests(cp, 'events', ['POST', 'PATCH', 'CREATE']);

  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const watch = nodeInitWatch(cp.kubeConfig(), `bench-run=${runId}`);
  await watch.start();
  log(`node-init: ${side.kind}: creating ${s.nodes} tainted nodes (workers=${s.workers ?? 'default'}), logs in ${dir}`);
  const sched0 = await schedSnapshot(ccm.pid);
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < names.length) {
        const name = names[next++]!;
        await core.createNode({
          body: uninitializedNode(name, { 'bench-run': runId }),
        });
      }
    }),
  );
  const createSeconds = (Date.now() - t0) / 1000;
  await waitFor(
    async () => {
      const list = await core.listNode({ labelSelector: `bench-run=${runId}` });
      const done = list.items.filter(initialized).length;
      return done === s.nodes;
    },
    { what: `${s.nodes} nodes initialized by ${side.kind}`, timeoutMs: 15 * 60_000, intervalMs: 250 },
  );
  const seconds = (Date.now() - t0) / 1000;
  const sched = schedFigures(sched0, await schedSnapshot(ccm.pid), seconds);
  // The last MODIFIED event may trail the LIST that saw it.
  await waitFor(() => watch.done === s.nodes, { what: `the watch saw ${s.nodes} nodes initialized`, timeoutMs: 60_000 });
  watch.stop();
  const peakRssMb = await rssMb(ccm.pid, 'VmHWM');
  const cpu = await cpuSeconds(ccm.pid);
  const calls = await journaledCalls(state);
  const nodeWrites = (await apiRequests(cp, 'nodes', ['PATCH', 'PUT', 'UPDATE'])) - nodeWrites0;
  const eventWrites = (await apiRequests(cp, 'events', ['POST', 'PATCH', 'CREATE'])) - eventWrites0;
  await ccm.stop();
  log(`node-init: ${side.kind} workers=${s.workers ?? 'default'} done in ${seconds.toFixed(1)} s`);
  await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  return {
    seconds,
    createSeconds,
    peakRssMb,
    startRssMb,
    cpuSeconds: cpu,
    cloudCalls: calls - calls0,
    nodeWrites,
    eventWrites,
    initLatency: summarize(watch.latenciesMs()),
    sched,
  };
}

const NODE_INIT = { nodes: 1000, latencyMs: 50, qps: 100, burst: 200 };
/** The V8 settings docs/memory.md recommends for the host. */
const TUNED_FLAGS = ['--max-semi-space-size=2', '--max-old-space-size=256'];

/** One row: the same settings for both sides; `oursFlags` are V8 flags for our host only. */
interface Row {
  label: string;
  workers?: number;
  oursFlags: string[];
}

const ROWS: Row[] = [
  { label: '10 (equal)', workers: 10, oursFlags: [] },
  { label: 'default (1 on both)', oursFlags: [] },
  { label: '10, our host with the V8 flags of docs/memory.md', workers: 10, oursFlags: TUNED_FLAGS },
];

export const nodeInitSection: BenchSection = {
  name: 'node-init',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const sectionStart = Date.now();
    const loadBefore = loadavg()[0]!;
    const results: { row: Row; ours: NodeInitFigures; upstream: NodeInitFigures }[] = [];
    for (const [i, row] of ROWS.entries()) {
      const s = { ...NODE_INIT, workers: row.workers };
      const ours = await benchNodeInit(cp, s, { kind: 'ours', nodeFlags: row.oursFlags }, `o${i}`, ctx.log);
      const upstream = await benchNodeInit(cp, s, { kind: 'upstream', bin }, `u${i}`, ctx.log);
      results.push({ row, ours, upstream });
    }
    const minutes = (Date.now() - sectionStart) / 60_000;
    const loadAfter = loadavg()[0]!;
    const labelled = results.map(({ row, ours, upstream }) => ({ label: row.label, ours, upstream }));
    const line = (what: string, pick: (f: NodeInitFigures) => number, fmt: (n: number) => string, bold = false) =>
      sideBySideRows(labelled, what, pick, fmt, bold);
    const markdown = `## Node initialization against a real kube-apiserver, beside the upstream CCM

${NODE_INIT.nodes} nodes registered with the \`node.cloudprovider.kubernetes.io/uninitialized\` taint
(32 concurrent creates from the benchmark's own client). Each side runs on the same control plane, one after the
other, with the same \`--kube-api-qps=${NODE_INIT.qps} --kube-api-burst=${NODE_INIT.burst}\`, \`--controllers=cloud-node\`,
and a fresh local cloud that adds ${NODE_INIT.latencyMs} ms to every call:

- **ours**: the host, with the local cloud as its plugin (exec mode).
- **upstream**: the upstream Go cloud-controller-manager (\`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION}, the control
  plane's Kubernetes version) built from tools/upstream-ccm, whose \`grpc\` cloud provider forwards every
  \`cloudprovider.Interface\` call, one RPC each, to the same local cloud running as a sidecar on a Unix socket.

Time runs from the first create until every node has lost its taint. CPU (user+system) and peak RSS are the CCM
process's own, from /proc, counted from its start; the local cloud's process is excluded on both sides. Cloud calls
are what the local cloud's journal recorded (a batch call counts once); node and event writes are the
kube-apiserver's request counter until the last node was initialized (nothing else writes Nodes in this control
plane); both CCMs write events asynchronously, so events still queued then are not counted. The three settings took
${f1(minutes)} min together; the machine's 1-minute load average was ${f1(loadBefore)} before and ${f1(loadAfter)} after
(other work shares it, so single runs vary by tens of percent).

| figure | --concurrent-node-syncs | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${line('seconds to all initialized', (f) => f.seconds, f1, true)}
${line('creating the nodes took (s)', (f) => f.createSeconds, f1)}
${line('cloud calls', (f) => f.cloudCalls, int)}
${line('Node writes', (f) => f.nodeWrites, int)}
${line('Event writes', (f) => f.eventWrites, int)}
${line('CPU (s)', (f) => f.cpuSeconds, f1, true)}
${line('RSS at start (MiB)', (f) => f.startRssMb, f1)}
${line('peak RSS (MiB)', (f) => f.peakRssMb, f1, true)}
${line('threads runnable, waiting for a CPU (s)', (f) => f.sched.waitSeconds, f1)}
${line('busiest thread running or waiting to run (% of the time)', (f) => f.sched.busiestShare * 100, f1, true)}
${latencyRows(labelled, 'node-init latency', (f) => f.initLatency)}

Node-init latency is per node, from its creation to the first watch event without the taint, both as the bench
process's own watch saw them (the way ClusterLoader2 times its phases; test/bench/latency.ts), percentiles over the
${NODE_INIT.nodes} nodes. The nodes arrive as fast as the benchmark creates them (the row above): when that is faster
than the CCM, later nodes wait in its queue and the percentiles grow with the queue; when it is slower (a loaded
machine), a CCM that handles each node as it comes shows its per-node time, and one that waits to batch shows the wait.

Why our p50 trails upstream's at 10 workers on a loaded machine (issue 34), though our p99 is lower: not the queue
order (both queues are FIFO, client-go's), not batching (a lookup waits 2 ms for company, and a prefetched answer is at
hand at once), not the API QPS (the host's client rate limiter made no request wait). Two causes:

- **CPU on one thread.** The host runs all of its JavaScript (ten workers, watch decoding, the REST client that
  per-object-cost below finds most of the busy time in, Events, the batch RPCs) on one thread, and spends about twice
  upstream's CPU per node; upstream's goroutines spread over several threads. On a loaded machine each runnable thread
  waits for a CPU several times as long as it runs, so the host's main thread is running or waiting to run most of the
  run (the "busiest thread" row), every request it makes takes longer, each node holds a worker longer, and the
  nodes queue: a node's latency is then mostly its wait behind the others (workqueue_queue_duration_seconds). Rows
  "threads waiting for a CPU" and "busiest thread" come from /proc/<pid>/task/*/schedstat over the run. On an idle
  machine the wait goes away; under load the CPU per object (issue 34, item 3) is what closes it.
- **Write order, on purpose.** Our host writes the cloud's addresses before it removes the taint (so a schedulable
  node always has them: docs/differences-from-upstream.md); upstream removes the taint first and writes the addresses after.
  Our taint goes one Node write later: one API round trip per node (milliseconds on an idle machine; about 0.16 s
  at a load average of 25–34), the same writes in all.

Diagnosis runs (300 nodes, 10 workers, load average 25–34, everything at nice 19; 2026-11-28): our host's main thread
ran 1.3–1.6 s and waited for a CPU 9.7–27 s over 15–34 s runs, its Node PATCHes took 0.16 s on average and nodes waited
0.7–1.0 s in its queue, p50 0.95–4.5 s; upstream used 0.85–1.0 CPU-s over all its threads (its busiest: 0.16 s running,
1.8 s waiting), p50 0.17–0.49 s. A variant of our host that removes the taint first, alternated with ours, had p50
1.84 and 2.64 s against ours' 2.03 and 4.51 s: within the run-to-run spread, so the order is not the gap.

Our host coalesces concurrent lookups into batch calls (\`GetInstancesMetadata\`, 500 nodes each), and each call also
prefetches the other nodes still waiting for initialization, so even one worker makes a handful of cloud calls and is
bounded by the API server's QPS, not by cloud latency × nodes; the upstream controller makes one \`InstanceMetadata\`
call per node (its periodic existence checks run every 5 minutes, outside these runs). Targets: all 1,000 initialized
in ≤ 30 s (issue 3; the client QPS bound is about 20 s: two node writes per node at 100 QPS); with one worker on both
sides ≥ 3× faster than upstream and within 1.2× of that bound (issue 12); host RSS ≤ 200 MB.
`;
    const figures = {
      settings: { ...NODE_INIT, upstream: CLOUD_PROVIDER_VERSION },
      rows: results.map(({ row, ours, upstream }) => ({
        setting: row.label,
        workers: row.workers ?? 'default',
        oursV8Flags: row.oursFlags,
        ours,
        upstream,
      })),
    };
    return { markdown, figures };
  },
};
