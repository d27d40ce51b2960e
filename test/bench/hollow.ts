/**
 * Node initialization and lifecycle with real kubelets (kubemark hollow
 * nodes, test/helpers/hollow-nodes.ts), our host and the upstream CCM one
 * after the other (ccm-sides.ts), each with a fresh local cloud, on a control
 * plane of this section's own whose kube-controller-manager runs the node
 * lifecycle controller (a killed kubelet's node goes Unknown): the shared
 * bench control plane's hand-written nodes never heartbeat.
 *
 * Per side: N kubelets register (tainted) while the CCM runs; seconds until
 * every node is initialized and Ready. Then a tenth of them die (SIGKILL) and
 * their instances are deleted: seconds from each node's going Unknown until
 * the CCM deleted it, and that every other node is still there. Also the
 * kubelets' own RSS and CPU, which bound how many this machine runs.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { ensureBinaries } from '../controlplane/binaries.js';
import { ControlPlane } from '../controlplane/controlplane.js';
import { HollowNodes } from '../helpers/hollow-nodes.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { deleteInstance } from '../../plugins/local/inventory.js';
import { StateStore } from '../../plugins/local/state.js';
import { apiRequests, cpuSeconds, journaledCalls, rssMb, sideBySideRows, WRITE_VERBS } from './ccm-sides.js';
import { startCcm, type Side } from '../helpers/ccm-side.js';
import { f1, f2, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
/** At most this many kubelets. */
const MAX_NODES = 500;
/** Kubelets spawned at once: each spends about a second of CPU starting. */
const START_BATCH = 10;

function hollowSettings() {
  const nodes = Number(process.env.BENCH_HOLLOW_NODES ?? 200);
  if (!Number.isInteger(nodes) || nodes < 2 || nodes > MAX_NODES)
    throw new Error(`BENCH_HOLLOW_NODES must be an integer in [2, ${MAX_NODES}], not ${process.env.BENCH_HOLLOW_NODES}`);
  return { nodes, dying: Math.max(1, Math.round(nodes / 10)), latencyMs: 50, qps: 100, burst: 200, monitorPeriod: '5s', grace: '20s' };
}
type Settings = ReturnType<typeof hollowSettings>;

interface HollowFigures {
  /** From the first kubelet's spawn until every Node exists. */
  registeredSeconds: number;
  /** From the first kubelet's spawn until every node is initialized and Ready. */
  initSeconds: number;
  /** Per dying node: seconds from its being seen Unknown until it was gone (polled every 250 ms). */
  deleteMeanSeconds: number;
  deleteMaxSeconds: number;
  /** Cloud calls (the local cloud's journal) while the nodes registered and initialized, then while the dead ones were deleted. */
  initCloudCalls: number;
  lifecycleCloudCalls: number;
  /** Node writes of anyone (the kubelets' status updates included) during initialization. */
  initNodeWrites: number;
  cpuSeconds: number;
  startRssMb: number;
  peakRssMb: number;
  /** Mean RSS of one hollow kubelet once all are Ready. */
  kubeletRssMb: number;
  /** Mean proportional set size of one: RSS with the pages shared between kubelets (mostly the binary's text) divided among them, what one more kubelet costs. */
  kubeletPssMb: number;
  /** CPU seconds per minute of one live hollow kubelet while the others died and were deleted. */
  kubeletCpuPerMinute: number;
}

const isReady = (n: V1Node) => (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const initialized = (n: V1Node) => !!n.spec?.providerID && !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);

/** Proportional set size of `pid` in MB (/proc/PID/smaps_rollup). */
async function pssMb(pid: number): Promise<number> {
  const kb = Number(/^Pss:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? NaN);
  return kb / 1024;
}

async function kubeletCpu(kubelets: HollowNodes, names: string[]): Promise<number> {
  const pids = kubelets.pids();
  const each = await Promise.all(names.map((n) => cpuSeconds(pids.get(n)!)));
  return each.reduce((a, b) => a + b, 0);
}

async function hollowRun(cp: ControlPlane, s: Settings, side: Side, runId: string, log: (s: string) => void): Promise<HollowFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-hollow-${side.kind}-`));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: s.nodes }, (_, i) => `${runId}-${i}`);
  await localcloud(state, 'instance', 'add', ...names);
  await localcloud(state, 'knobs', 'set', `latencyMs=${s.latencyMs}`);
  const settings = {
    controllers: 'cloud-node,cloud-node-lifecycle',
    qps: s.qps,
    burst: s.burst,
    flags: [`--node-monitor-period=${s.monitorPeriod}`],
  };
  const ccm = await startCcm(cp, side, settings, state, dir);
  const kubelets = await HollowNodes.start(cp.kubeconfigPath, join(dir, 'k'), []);
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const list = async () => (await core.listNode({ labelSelector: `bench-run=${runId}` })).items;
  try {
    const startRssMb = await rssMb(ccm.pid, 'VmRSS');
    const calls0 = await journaledCalls(state);
    const writes0 = await apiRequests(cp, 'nodes', WRITE_VERBS);
    log(`hollow: ${side.kind}: starting ${s.nodes} hollow kubelets, logs in ${dir}`);
    const t0 = Date.now();
    for (let i = 0; i < names.length; i += START_BATCH) {
      await kubelets.add(...names.slice(i, i + START_BATCH).map((name) => ({ name, labels: { 'bench-run': runId } })));
    }
    const registeredSeconds = (Date.now() - t0) / 1000;
    await waitFor(async () => (await list()).filter((n) => initialized(n) && isReady(n)).length === s.nodes, {
      what: `${s.nodes} hollow nodes initialized and Ready (${side.kind})`,
      timeoutMs: 15 * 60_000,
      intervalMs: 250,
      log: ccm.logFile,
    });
    const initSeconds = (Date.now() - t0) / 1000;
    const initCloudCalls = (await journaledCalls(state)) - calls0;
    const initNodeWrites = (await apiRequests(cp, 'nodes', WRITE_VERBS)) - writes0;
    const pids = [...kubelets.pids().values()];
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const kubeletRssMb = mean(await Promise.all(pids.map((pid) => rssMb(pid, 'VmRSS'))));
    const kubeletPssMb = mean(await Promise.all(pids.map(pssMb)));
    log(
      `hollow: ${side.kind}: ${s.nodes} initialized and Ready ${f1(initSeconds)} s after the first spawn (registered at ${f1(registeredSeconds)} s)`,
    );

    const dying = names.slice(0, s.dying);
    const living = names.slice(s.dying);
    const cpu0 = await kubeletCpu(kubelets, living);
    const calls1 = await journaledCalls(state);
    const tk = Date.now();
    const store = new StateStore(state);
    for (const name of dying) {
      await kubelets.kill(name);
      await deleteInstance(store, name);
    }
    const unknownAt = new Map<string, number>();
    const goneAt = new Map<string, number>();
    await waitFor(
      async () => {
        const now = Date.now();
        const byName = new Map((await list()).map((n) => [n.metadata!.name!, n]));
        for (const name of dying) {
          const n = byName.get(name);
          if (!unknownAt.has(name) && (!n || !isReady(n))) unknownAt.set(name, now);
          if (!goneAt.has(name) && !n) goneAt.set(name, now);
        }
        const lost = living.filter((name) => !byName.has(name));
        if (lost.length) throw new Error(`hollow (${side.kind}): live nodes deleted: ${lost.slice(0, 10).join(', ')}; see ${ccm.logFile}`);
        return goneAt.size === dying.length;
      },
      { what: `${dying.length} dead hollow nodes deleted (${side.kind})`, timeoutMs: 10 * 60_000, intervalMs: 250, log: ccm.logFile },
    );
    const delays = dying.map((name) => (goneAt.get(name)! - unknownAt.get(name)!) / 1000);
    const kubeletCpuPerMinute = ((await kubeletCpu(kubelets, living)) - cpu0) / living.length / ((Date.now() - tk) / 60_000);
    const figures = {
      registeredSeconds,
      initSeconds,
      deleteMeanSeconds: delays.reduce((a, b) => a + b, 0) / delays.length,
      deleteMaxSeconds: Math.max(...delays),
      initCloudCalls,
      lifecycleCloudCalls: (await journaledCalls(state)) - calls1,
      initNodeWrites,
      cpuSeconds: await cpuSeconds(ccm.pid),
      startRssMb,
      peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
      kubeletRssMb,
      kubeletPssMb,
      kubeletCpuPerMinute,
    };
    log(`hollow: ${side.kind}: ${dying.length} dead nodes gone ${f1(figures.deleteMeanSeconds)} s (mean) after going Unknown`);
    return figures;
  } finally {
    await kubelets.stop();
    await ccm.stop();
    await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  }
}

export const hollowSection: BenchSection = {
  name: 'hollow',
  async run(ctx) {
    const s = hollowSettings();
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    await ensureBinaries({ onProgress: (l) => ctx.log(l) });
    const cp = await ControlPlane.start({ nodeLifecycle: { gracePeriod: s.grace } });
    const before = loadavg()[0]!;
    try {
      const ours = await hollowRun(cp, s, { kind: 'ours', nodeFlags: [] }, `o${Date.now().toString(36)}`, ctx.log);
      const upstream = await hollowRun(cp, s, { kind: 'upstream', bin }, `u${Date.now().toString(36)}`, ctx.log);
      const results = [{ label: `${s.nodes} kubelets`, ours, upstream }];
      const line = (what: string, pick: (f: HollowFigures) => number, fmt: (n: number) => string, bold = false) =>
        sideBySideRows(results, what, pick, fmt, bold);
      const markdown = `## Real kubelets (hollow nodes) beside the upstream CCM: initialization and dead nodes

${int(s.nodes)} kubemark hollow kubelets (the kubelet's own code with a fake runtime, one process each; docs/testing.md "Real kubelets
in the tests") register with \`--cloud-provider=external\` (tainted) while the CCM runs, ${START_BATCH} spawned at a time, every
instance present in a fresh local cloud that adds ${s.latencyMs} ms to every call. Each side runs \`--controllers=cloud-node,cloud-node-lifecycle
--node-monitor-period=${s.monitorPeriod} --kube-api-qps=${s.qps} --kube-api-burst=${s.burst}\` as its own process (upstream: the upstream CCM
\`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION} forwarding to the local cloud as a sidecar, tools/upstream-ccm), on a control plane of
this section's own whose kube-controller-manager runs the node lifecycle controller (\`--node-monitor-grace-period=${s.grace}\`).
Then ${s.dying} kubelets are killed (SIGKILL) and their instances deleted: each such node goes Unknown after the grace period,
and the time counted is from its being seen Unknown until it is gone (polled every 250 ms; every other node is checked to be
still there). Node writes include the kubelets' own; the machine's 1-minute load average was ${f1(before)} before and ${f1(loadavg()[0]!)} after.

| figure | settings | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${line('seconds until every kubelet registered', (f) => f.registeredSeconds, f1)}
${line('seconds until every node initialized and Ready', (f) => f.initSeconds, f1, true)}
${line('cloud calls until then', (f) => f.initCloudCalls, int)}
${line('Node writes until then', (f) => f.initNodeWrites, int)}
${line(`dead node Unknown → deleted, mean (s)`, (f) => f.deleteMeanSeconds, f1, true)}
${line(`dead node Unknown → deleted, max (s)`, (f) => f.deleteMaxSeconds, f1)}
${line('cloud calls while the dead were deleted', (f) => f.lifecycleCloudCalls, int)}
${line('CCM CPU (s)', (f) => f.cpuSeconds, f1, true)}
${line('CCM RSS at start (MiB)', (f) => f.startRssMb, f1)}
${line('CCM peak RSS (MiB)', (f) => f.peakRssMb, f1, true)}
${line('RSS of one hollow kubelet (MiB)', (f) => f.kubeletRssMb, f1)}
${line('PSS of one hollow kubelet (MiB)', (f) => f.kubeletPssMb, f1)}
${line('CPU of one live hollow kubelet (s per minute)', (f) => f.kubeletCpuPerMinute, f2)}

Registration is the kubelets' own work and the same on both sides. A kubelet's RSS counts the pages all of them share
(mostly the binary's text); its PSS divides those among them, so PSS is what one more kubelet costs. Initialization waits for the kubelets' first Ready
status as well as for the CCM. Both lifecycle controllers are periodic (every ${s.monitorPeriod}), so a dead node waits from 0 to
${s.monitorPeriod} after going Unknown for the next pass: with few dying nodes that figure is mostly where the pass happened to be.
`;
      return { markdown, figures: { settings: { ...s, startBatch: START_BATCH, upstream: CLOUD_PROVIDER_VERSION }, rows: results } };
    } finally {
      await cp.stop();
    }
  },
};
