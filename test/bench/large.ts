/**
 * scale-large (issue 34, item 1): N Nodes + M LoadBalancer Services created at
 * once, our host and the upstream CCM one after the other (ccm-sides.ts),
 * each on a fresh control plane of this section's own whose kube-apiserver
 * has its inflight limits raised, with the same client QPS on both sides.
 * Per side and setting (each side's default workers, then equal workers):
 * time to converge, node-init and create_to_assigned_loadbalancer latency
 * percentiles (latency.ts), cloud calls, API writes, CPU seconds and peak
 * RSS; then, with every object converged, a steady state of
 * BENCH_STEADY_MINUTES: cloud calls per node-hour, API requests per minute,
 * CPU seconds per minute. Also the peak RSS of etcd, kube-apiserver and the
 * machine's lowest available memory, which say what stops the next size.
 *
 * Settings (environment):
 * - BENCH_LARGE: sizes, `NODESxSERVICES,...` (default `20000x20000`), run in
 *   order; a size that fails (timeout, a process out of memory) stops the
 *   larger ones and the table says why.
 * - BENCH_STEADY_MINUTES: steady state after convergence (default 10; 0 skips).
 * - BENCH_LARGE_ROWS: `defaults`, `equal` or both (default both); the steady
 *   state is measured in the first row only (workers only change convergence).
 * - BENCH_LARGE_QPS: both sides' --kube-api-qps (default 300; burst twice it).
 * - BENCH_LARGE_TIMEOUT_MIN: limit for one side to converge (default 120).
 * - BENCH_LARGE_DEADLINE: an ISO time; no run goes past it (a run cut short
 *   stops the section as a failed size would), for a measurement that must
 *   end by then.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { ControlPlane } from '../controlplane/controlplane.js';
import { lbService, ensureNamespace } from '../helpers/lb.js';
import { localcloud } from '../helpers/localcloud.js';
import { mapLimit } from '../../host/util/map-limit.js';
import { apiRequests, apiRequestsByVerb, requestDelta, cpuSeconds, journaledCalls, rssMb, ratio, WRITE_VERBS } from './ccm-sides.js';
import { startCcm, type Side } from '../helpers/ccm-side.js';
import { f1, f2, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';
import { latencyRows, lbAssignWatch, nodeInitWatch, summarize, type LatencySummary } from './latency.js';
import { EXCLUDE_LB, uninitializedNode } from './nodes.js';

const CREATE_CONCURRENCY = 16;
/** Nodes that are load balancer backends; the others carry the exclusion label, so each load balancer stays small. */
const BACKENDS = 3;
const INSTANCE_CHUNK = 1000;
/**
 * kube-apiserver's inflight limits in this section (defaults 400 and 200):
 * two CCMs' informers, their writes and the bench's 32 concurrent creates and
 * two watches must never wait on the server's own limit.
 */
const APISERVER_FLAGS = ['--max-requests-inflight=1600', '--max-mutating-requests-inflight=800'];

function settings() {
  const sizes = (process.env.BENCH_LARGE ?? '20000x20000').split(',').map((c) => {
    const m = /^(\d+)x(\d+)$/.exec(c.trim());
    if (!m) throw new Error(`BENCH_LARGE entry ${JSON.stringify(c)} is not NODESxSERVICES, e.g. 20000x20000`);
    return { nodes: Number(m[1]), services: Number(m[2]) };
  });
  const steadyMinutes = Number(process.env.BENCH_STEADY_MINUTES ?? 10);
  const rows = (process.env.BENCH_LARGE_ROWS ?? 'defaults,equal').split(',').map((r) => r.trim());
  for (const r of rows) if (r !== 'defaults' && r !== 'equal') throw new Error(`BENCH_LARGE_ROWS entry ${r} is not defaults or equal`);
  const qps = Number(process.env.BENCH_LARGE_QPS ?? 300);
  const timeoutMin = Number(process.env.BENCH_LARGE_TIMEOUT_MIN ?? 120);
  if (!(steadyMinutes >= 0) || !(qps > 0) || !(timeoutMin > 0))
    throw new Error('BENCH_STEADY_MINUTES, BENCH_LARGE_QPS and BENCH_LARGE_TIMEOUT_MIN must be numbers ≥ 0');
  const deadline = process.env.BENCH_LARGE_DEADLINE ? Date.parse(process.env.BENCH_LARGE_DEADLINE) : Infinity;
  if (Number.isNaN(deadline)) throw new Error(`BENCH_LARGE_DEADLINE ${process.env.BENCH_LARGE_DEADLINE} is not an ISO time`);
  return { sizes, steadyMinutes, rows: rows as ('defaults' | 'equal')[], qps, burst: 2 * qps, timeoutMin, deadline };
}
type Settings = ReturnType<typeof settings>;

/** Workers of the equal row, on both sides. */
const EQUAL_WORKERS = 10;

interface SteadyFigures {
  minutes: number;
  cloudCallsPerNodeHour: number;
  /** Node, Service and Event requests (every verb but WATCH) per minute: what the CCM asked of the API server. */
  apiRequestsPerMinute: number;
  cpuSecondsPerMinute: number;
}

interface LargeFigures {
  seconds: number;
  createSeconds: number;
  cloudCalls: number;
  nodeWrites: number;
  serviceWrites: number;
  eventWrites: number;
  cpuSeconds: number;
  startRssMb: number;
  peakRssMb: number;
  initLatency: LatencySummary;
  assignLatency: LatencySummary;
  /** Peak RSS (sampled every 5 s) of the control plane, and the machine's lowest MemAvailable meanwhile. */
  etcdPeakRssMb: number;
  apiserverPeakRssMb: number;
  minAvailableMb: number;
  steady?: SteadyFigures;
  /**
   * Set when the side had not converged by BENCH_LARGE_TIMEOUT_MIN or the
   * deadline: what it had done by then (its other figures are up to the cut,
   * so lower bounds), and at its last 10 minutes' rate how long the rest
   * would take.
   */
  cut?: { nodesDone: number; servicesDone: number; restMinutes: number };
}

const memAvailableMb = async () => Number(/MemAvailable:\s+(\d+)/.exec(await readFile('/proc/meminfo', 'utf8'))?.[1] ?? NaN) / 1024;
const rssOr0 = (pid: number | undefined) => (pid ? rssMb(pid, 'VmRSS').catch(() => 0) : Promise.resolve(0));

/** Every request the API server served for the CCM's resources (bench's creates included), but watches. */
const STEADY_VERBS = ['GET', 'LIST', 'POST', 'CREATE', 'PATCH', 'PUT', 'UPDATE', 'DELETE', 'DELETECOLLECTION', 'APPLY'];
const STEADY_RESOURCES = ['nodes', 'services', 'events'];
async function ccmRequests(cp: ControlPlane): Promise<number> {
  let n = 0;
  for (const r of STEADY_RESOURCES) n += await apiRequests(cp, r, STEADY_VERBS);
  return n;
}

async function largeRun(
  s: Settings,
  side: Side,
  row: 'defaults' | 'equal',
  nodes: number,
  services: number,
  steadyMinutes: number,
  runId: string,
  log: (l: string) => void,
): Promise<LargeFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-large-${side.kind}-`));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: nodes }, (_, i) => `${runId}-${i}`);
  for (let i = 0; i < names.length; i += INSTANCE_CHUNK) await localcloud(state, 'instance', 'add', ...names.slice(i, i + INSTANCE_CHUNK));
  // A fresh control plane per run: no earlier run's objects or etcd history in its figures.
  const cp = await ControlPlane.start({ controllerManager: false, apiserverFlags: APISERVER_FLAGS, startTimeoutMs: 180_000 });
  const peaks = { etcd: 0, apiserver: 0, minAvailable: Infinity };
  const sample = async () => {
    peaks.etcd = Math.max(peaks.etcd, await rssOr0(cp.pids.etcd));
    peaks.apiserver = Math.max(peaks.apiserver, await rssOr0(cp.pids.apiserver));
    peaks.minAvailable = Math.min(peaks.minAvailable, await memAvailableMb());
  };
  const sampler = setInterval(() => void sample().catch(() => undefined), 5000);
  try {
    const ns = `bench-${runId}`;
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    await ensureNamespace(core, ns);
    const flags = row === 'equal' ? [`--concurrent-node-syncs=${EQUAL_WORKERS}`, `--concurrent-service-syncs=${EQUAL_WORKERS}`] : [];
    const common = { controllers: 'cloud-node,cloud-node-lifecycle,service', qps: s.qps, burst: s.burst, flags };
    // Load balancers as records only: no traffic flows here, and 20,000 listeners (a file descriptor each)
    // pass the process's open-file limit (EMFILE at 19,979 on a machine with 20,000).
    const ccm = await startCcm(cp, side, common, state, dir, { LOCALCLOUD_LB_CIDR: '127.64.0.0/16', LOCALCLOUD_FORWARD: 'false' });
    const nodeWatch = nodeInitWatch(cp.kubeConfig(), `bench-run=${runId}`);
    const svcWatch = lbAssignWatch(cp.kubeConfig(), ns);
    try {
      await nodeWatch.start();
      await svcWatch.start();
      const startRssMb = await rssMb(ccm.pid, 'VmRSS');
      const calls0 = await journaledCalls(state);
      const nodeWrites0 = await apiRequests(cp, 'nodes', WRITE_VERBS);
      const serviceWrites0 = await apiRequests(cp, 'services', WRITE_VERBS);
      const eventWrites0 = await apiRequests(cp, 'events', WRITE_VERBS);
      log(`scale-large: ${side.kind} (${row}): creating ${int(nodes)} nodes and ${int(services)} Services, logs in ${dir}`);
      let lastProgress = '';
      const progress = async (what: string) =>
        log(
          (lastProgress =
            `scale-large: ${side.kind} (${row}) ${what}: ${int(nodeWatch.done)}/${int(nodes)} nodes initialized, ` +
            `${int(svcWatch.done)}/${int(services)} ingresses (${int(nodeWatch.seen)} + ${int(svcWatch.seen)} created); ` +
            `RSS ccm ${f1(await rssOr0(ccm.pid))}, etcd ${f1(peaks.etcd)} (peak), apiserver ${f1(peaks.apiserver)} (peak) MiB; ` +
            `${f1(peaks.minAvailable / 1024)} GiB available at least`),
        );
      // Objects done over time, for the rate at a cut.
      const history: { at: number; done: number }[] = [];
      const ticker = setInterval(() => {
        history.push({ at: Date.now(), done: nodeWatch.done + svcWatch.done });
        void progress(`${f1((Date.now() - t0) / 1000)} s`).catch(() => undefined);
      }, 30_000);
      const t0 = Date.now();
      let created: number;
      let cut: LargeFigures['cut'];
      try {
        const createNodes = mapLimit(
          names.map((name, i) => [name, i] as const),
          CREATE_CONCURRENCY,
          ([name, i]) =>
            core.createNode({
              body: uninitializedNode(name, { 'bench-run': runId, ...(i < BACKENDS ? {} : { [EXCLUDE_LB]: 'true' }) }),
            }),
        );
        const createServices = mapLimit(
          Array.from({ length: services }, (_, i) => i),
          CREATE_CONCURRENCY,
          // No node ports: the default NodePort range holds 2,768, and no traffic flows here.
          (i) =>
            core.createNamespacedService({ namespace: ns, body: lbService(`s${i}`, ns, [{ port: 8080 }], { allocateLoadBalancerNodePorts: false }) }),
        );
        await Promise.all([createNodes, createServices]);
        created = Date.now();
        // Bounded by BENCH_LARGE_TIMEOUT_MIN and the deadline; a side cut there keeps what it measured.
        const bound = Date.now() + Math.max(0, Math.min(s.timeoutMin * 60_000, s.deadline - Date.now()));
        const converged = () => nodeWatch.done === nodes && svcWatch.done === services;
        while (!converged() && Date.now() < bound) await new Promise((r) => setTimeout(r, 1000));
        if (!converged()) {
          await progress('cut');
          const done = nodeWatch.done + svcWatch.done;
          const from = history.find((h) => h.at >= Date.now() - 10 * 60_000) ?? { at: t0, done: 0 };
          const perMinute = (done - from.done) / ((Date.now() - from.at) / 60_000);
          cut = {
            nodesDone: nodeWatch.done,
            servicesDone: svcWatch.done,
            restMinutes: perMinute > 0 ? (nodes + services - done) / perMinute : Infinity,
          };
        }
      } catch (err) {
        await progress('when it stopped');
        throw new Error(`${err instanceof Error ? err.message.split('\n')[0] : String(err)} (${lastProgress})`, { cause: err });
      } finally {
        clearInterval(ticker);
      }
      const seconds = (Date.now() - t0) / 1000;
      await sample();
      const figures: LargeFigures = {
        seconds,
        createSeconds: (created - t0) / 1000,
        cloudCalls: (await journaledCalls(state)) - calls0,
        // The benchmark's own creates are writes too.
        nodeWrites: (await apiRequests(cp, 'nodes', WRITE_VERBS)) - nodeWrites0 - nodes,
        serviceWrites: (await apiRequests(cp, 'services', WRITE_VERBS)) - serviceWrites0 - services,
        eventWrites: (await apiRequests(cp, 'events', WRITE_VERBS)) - eventWrites0,
        cpuSeconds: await cpuSeconds(ccm.pid),
        startRssMb,
        peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
        initLatency: summarize(nodeWatch.latenciesMs()),
        assignLatency: summarize(svcWatch.latenciesMs()),
        etcdPeakRssMb: 0,
        apiserverPeakRssMb: 0,
        minAvailableMb: 0,
        ...(cut ? { cut } : {}),
      };
      nodeWatch.stop();
      svcWatch.stop();
      log(
        `scale-large: ${side.kind} (${row}): ${cut ? 'cut' : 'converged'} after ${f1(seconds)} s, CPU ${f1(figures.cpuSeconds)} s, peak RSS ${f1(figures.peakRssMb)} MiB`,
      );
      // No steady state that would run past BENCH_LARGE_DEADLINE (the row then shows none), nor after a cut.
      if (!cut && steadyMinutes > 0 && Date.now() + steadyMinutes * 60_000 <= s.deadline) {
        const c0 = await journaledCalls(state);
        const r0 = await ccmRequests(cp);
        const byVerb0 = await apiRequestsByVerb(cp, STEADY_RESOURCES);
        const cpu0 = await cpuSeconds(ccm.pid);
        const s0 = Date.now();
        let lastByVerb = byVerb0;
        for (let m = 1; m <= Math.ceil(steadyMinutes); m++) {
          await new Promise((r) => setTimeout(r, Math.min(60_000, steadyMinutes * 60_000 - (Date.now() - s0))));
          // Per minute, by verb and resource: a burst (work left from convergence) tells itself from a steady rate.
          const byVerb = await apiRequestsByVerb(cp, STEADY_RESOURCES);
          log(
            `scale-large: ${side.kind} (${row}) steady state ${m}/${Math.ceil(steadyMinutes)} min: ${int((await journaledCalls(state)) - c0)} cloud calls; ` +
              `API requests this minute: ${requestDelta(lastByVerb, byVerb)}`,
          );
          lastByVerb = byVerb;
        }
        const minutes = (Date.now() - s0) / 60_000;
        figures.steady = {
          minutes,
          cloudCallsPerNodeHour: ((await journaledCalls(state)) - c0) / nodes / (minutes / 60),
          apiRequestsPerMinute: ((await ccmRequests(cp)) - r0) / minutes,
          cpuSecondsPerMinute: ((await cpuSeconds(ccm.pid)) - cpu0) / minutes,
        };
        figures.peakRssMb = await rssMb(ccm.pid, 'VmHWM');
        log(
          `scale-large: ${side.kind} (${row}) steady state requests per minute: ${requestDelta(byVerb0, await apiRequestsByVerb(cp, STEADY_RESOURCES), minutes)}`,
        );
      }
      await sample();
      figures.etcdPeakRssMb = peaks.etcd;
      figures.apiserverPeakRssMb = peaks.apiserver;
      figures.minAvailableMb = peaks.minAvailable;
      return figures;
    } finally {
      nodeWatch.stop();
      svcWatch.stop();
      await ccm.stop();
    }
  } finally {
    clearInterval(sampler);
    await cp.stop();
  }
}

/** What ended a cut run: the per-side limit or the section's deadline. */
const cutReason = (s: Settings) =>
  Number.isFinite(s.deadline) ? `BENCH_LARGE_TIMEOUT_MIN=${s.timeoutMin} or BENCH_LARGE_DEADLINE` : `BENCH_LARGE_TIMEOUT_MIN=${s.timeoutMin}`;

type Result = { label: string; nodes: number; services: number; row: string; ours: LargeFigures; upstream?: LargeFigures };

const label = (size: { nodes: number; services: number }, row: 'defaults' | 'equal') =>
  `${int(size.nodes)} + ${int(size.services)}, ${row === 'equal' ? `${EQUAL_WORKERS} and ${EQUAL_WORKERS} workers` : 'default workers'}`;

/** `fmt(n)`, or a dash for a side that did not finish. */
const orDash = (n: number | undefined, fmt: (n: number) => string) => (n === undefined || Number.isNaN(n) ? '—' : fmt(n));

export const scaleLargeSection: BenchSection = {
  name: 'scale-large',
  async run(ctx) {
    const s = settings();
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const before = loadavg()[0]!;
    const started = Date.now();
    const results: Result[] = [];
    let stopped: string | undefined;
    for (const size of s.sizes) {
      let ours: LargeFigures | undefined;
      let rowName = '';
      try {
        for (const [i, row] of s.rows.entries()) {
          ours = undefined;
          rowName = label(size, row);
          if (Date.now() >= s.deadline) throw new Error('BENCH_LARGE_DEADLINE passed before this run');
          const id = `${size.nodes}-${row[0]}-${Date.now().toString(36)}`;
          const steady = i === 0 ? s.steadyMinutes : 0;
          ours = await largeRun(s, { kind: 'ours', nodeFlags: [] }, row, size.nodes, size.services, steady, `lo${id}`, ctx.log);
          const upstream = ours.cut
            ? undefined
            : await largeRun(s, { kind: 'upstream', bin }, row, size.nodes, size.services, steady, `lu${id}`, ctx.log);
          results.push({ label: rowName, ...size, row, ours, upstream });
          const cutSide = ours.cut ? 'ours' : upstream?.cut ? 'upstream' : undefined;
          if (cutSide) {
            const f = (cutSide === 'ours' ? ours : upstream)!;
            stopped =
              `${rowName}: ${cutSide === 'ours' ? 'ours' : 'upstream'} was cut after ${f1(f.seconds / 60)} min (${cutReason(s)}) with ` +
              `${int(f.cut!.nodesDone)}/${int(size.nodes)} nodes initialized and ${int(f.cut!.servicesDone)}/${int(size.services)} ingresses; ` +
              `at its last 10 minutes' rate the rest would take ${Number.isFinite(f.cut!.restMinutes) ? `about ${int(f.cut!.restMinutes)} min more` : 'forever (no progress)'}` +
              `${cutSide === 'ours' ? ', so upstream was not run' : ''}`;
            ctx.log(`scale-large: stopped: ${stopped}`);
            break;
          }
        }
        if (stopped) break;
      } catch (err) {
        stopped = `${rowName} failed${ours ? " on the upstream side (ours did: its figures are in the table, upstream's shown as —)" : ''}: ${
          err instanceof Error ? err.message.split('\n')[0] : String(err)
        }`;
        // What one side measured is kept: the other's column shows a dash.
        if (ours) results.push({ label: rowName, ...size, row: rowName, ours, upstream: undefined });
        ctx.log(`scale-large: ${stopped}`);
        break;
      }
    }
    const minutes = (Date.now() - started) / 60_000;
    // A side cut short shows lower bounds (≥), so the ratio is a bound too.
    // Figures fixed before the cut (creating, RSS at start, lowest MemAvailable) are not bounds: cumulative = false.
    const line = (what: string, pick: (f: LargeFigures) => number, fmt: (n: number) => string, bold = false, cumulative = true) =>
      results
        .map(({ label, ours, upstream }) => {
          const oursCut = cumulative && ours.cut !== undefined;
          const upstreamCut = cumulative && upstream?.cut !== undefined;
          const o = `${oursCut ? '≥ ' : ''}${fmt(pick(ours))}`;
          const u = upstream ? pick(upstream) : undefined;
          const bound = oursCut ? '≥ ' : upstreamCut ? '≤ ' : '';
          const r = u === undefined ? '—' : `${bound}${ratio(pick(ours), u)}`;
          return `| ${what} | ${label} | ${bold ? `**${o}**` : o} | ${upstreamCut ? '≥ ' : ''}${orDash(u, fmt)} | ${r} |`;
        })
        .join('\n');
    // Latency rows need both sides converged; a side cut short or not run has none.
    const complete = results.filter((r): r is Result & { upstream: LargeFigures } => r.upstream !== undefined && !r.upstream.cut && !r.ours.cut);
    const withSteady = results.filter((r) => r.ours.steady);
    const sline = (what: string, pick: (f: SteadyFigures) => number, fmt: (n: number) => string) =>
      withSteady
        .map(({ label, ours, upstream }) => {
          const o = pick(ours.steady!);
          const u = upstream?.steady ? pick(upstream.steady) : undefined;
          return `| ${what} | ${label} | **${fmt(o)}** | ${orDash(u, fmt)} | ${u === undefined ? '—' : ratio(o, u)} |`;
        })
        .join('\n');
    const doneCell = (f: LargeFigures | undefined, r: Result) =>
      f === undefined
        ? '—'
        : `${int(f.cut?.nodesDone ?? r.nodes)}/${int(r.nodes)} + ${int(f.cut?.servicesDone ?? r.services)}/${int(r.services)}${f.cut ? ' (cut)' : ''}`;
    const steadyTable = withSteady.length
      ? `Steady state: the next ${f1(withSteady[0]!.ours.steady!.minutes)} minutes after convergence (first setting only), nothing created or changed:

| figure | objects | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${sline('cloud calls per node-hour', (f) => f.cloudCallsPerNodeHour, f2)}
${sline('API requests per minute (Nodes, Services, Events; no watches)', (f) => f.apiRequestsPerMinute, f1)}
${sline('CPU seconds per minute', (f) => f.cpuSecondsPerMinute, f2)}
`
      : `No steady state measured (BENCH_STEADY_MINUTES=${s.steadyMinutes}${results.length ? '' : ', and no size finished'}).
`;
    // One line per figure; a figure no result has (latency of a cut run) leaves no blank line in the table.
    const tableRows = [
      results.map((r) => `| nodes initialized + ingresses | ${r.label} | ${doneCell(r.ours, r)} | ${doneCell(r.upstream, r)} | — |`).join('\n'),
      line('seconds until all done (until the cut, for a side cut)', (f) => f.seconds, f1, true),
      line('creating took (s)', (f) => f.createSeconds, f1, false, false),
      line('cloud calls', (f) => f.cloudCalls, int),
      line('Node writes', (f) => f.nodeWrites, int),
      line('Service writes', (f) => f.serviceWrites, int),
      line('Event writes', (f) => f.eventWrites, int),
      line('CPU (s)', (f) => f.cpuSeconds, f1, true),
      line('RSS at start (MiB)', (f) => f.startRssMb, f1, false, false),
      line('peak RSS (MiB)', (f) => f.peakRssMb, f1, true),
      latencyRows(complete, 'node-init latency', (f) => f.initLatency),
      latencyRows(complete, 'create_to_assigned_loadbalancer', (f) => f.assignLatency),
      line('etcd peak RSS (MiB)', (f) => f.etcdPeakRssMb, f1),
      line('kube-apiserver peak RSS (MiB)', (f) => f.apiserverPeakRssMb, f1),
      line('machine MemAvailable, lowest (GiB)', (f) => f.minAvailableMb / 1024, f1, false, false),
    ]
      .filter((l) => l !== '')
      .join('\n');
    const markdown = `## Scale, large: up to ${int(Math.max(...s.sizes.map((x) => x.nodes)))} nodes and Services, beside the upstream CCM

Sizes asked: ${s.sizes.map((x) => `${int(x.nodes)} nodes + ${int(x.services)} Services`).join(', ')} (\`BENCH_LARGE\`); ${
      stopped ? `**stopped**: ${stopped}.` : 'every size finished.'
    } N nodes (tainted uninitialized; all but ${BACKENDS} labelled \`${EXCLUDE_LB}\`) and M LoadBalancer
Services (\`allocateLoadBalancerNodePorts: false\`) created at once by the benchmark (${CREATE_CONCURRENCY} concurrent creates
each); instances in a fresh local cloud with no added latency, its load balancers records only (\`LOCALCLOUD_FORWARD=false\`:
no traffic flows here, and a listener per load balancer passes the open-file limit near 20,000). Every run has a fresh control plane of its own (etcd
and kube-apiserver, no kube-controller-manager) whose kube-apiserver runs \`${APISERVER_FLAGS.join(' ')}\`. Both sides run
\`--controllers=cloud-node,cloud-node-lifecycle,service --kube-api-qps=${s.qps} --kube-api-burst=${s.burst}\` (\`BENCH_LARGE_QPS\`), ${s.rows
      .map((r) =>
        r === 'defaults'
          ? "at each side's default workers (ours 1 node and 10 service syncs, upstream 1 and 1)"
          : `at ${EQUAL_WORKERS} node and ${EQUAL_WORKERS} service workers on both`,
      )
      .join(', then ')} (\`BENCH_LARGE_ROWS=${s.rows.join(',')}\`);
upstream is \`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION} forwarding to the local cloud as a sidecar. Time runs from the first create
until the bench's watches saw every node initialized and every ingress; CPU and RSS are the CCM process's own since
its start (its cloud plugin or sidecar excluded, as in every section); writes exclude the benchmark's creates; etcd's and
kube-apiserver's peak RSS are sampled every 5 s. The whole section took ${f1(minutes)} min; the machine's 1-minute load
average was ${f1(before)} before and ${f1(loadavg()[0]!)} after.

| figure | objects, workers | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${tableRows}

${steadyTable}
A side marked "(cut)" had not converged when BENCH_LARGE_TIMEOUT_MIN or BENCH_LARGE_DEADLINE ended its run: its
figures are what it had done by then (lower bounds), it has no latency percentiles and no steady state.
Latencies are per object from its creation to its phase, as the bench process's own watches saw both events
(test/bench/latency.ts; ClusterLoader2's \`create_to_assigned_loadbalancer\`, and node-init: created → taint gone); objects
arrive as fast as the benchmark creates them ("creating took"), and later ones include their wait in the CCM's queue. Steady-state API
requests count every verb but WATCH on Nodes, Services and Events (nothing else runs against this control plane).
The nodes have no kubelet, so no Ready condition: upstream's cloud-node-lifecycle then asks the cloud about every node
every 5 s (\`InstanceExists\` and \`InstanceShutdown\`, one call each per node), where in a cluster of Ready nodes it asks
about none; its steady-state cloud calls are that worst case (ours checks the same nodes with batch calls).
`;
    return {
      markdown,
      figures: {
        settings: { ...s, apiserverFlags: APISERVER_FLAGS, backends: BACKENDS, equalWorkers: EQUAL_WORKERS, upstream: CLOUD_PROVIDER_VERSION },
        stopped: stopped ?? null,
        rows: results,
      },
    };
  },
};
