/**
 * Service controller benchmarks against a real control plane, with the host
 * and the local cloud as their own processes:
 * - lb-create: N LoadBalancer Services created at once, the cloud adding a
 *   fixed latency to every call, our host and the upstream CCM one after the
 *   other (ccm-sides.ts); seconds until every Service has its ingress, cloud
 *   calls, API writes, CPU and RSS; at our default workers, then every
 *   Service deleted: seconds until every load balancer is gone, and the
 *   live reads our host made before deleting beside its writes.
 * - lb-nodes: M load balancers over K nodes, one node added; seconds until
 *   every load balancer in the cloud has it, and the cloud calls it took,
 *   both sides too.
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { createBackendNode, dropFinalizers, ensureNamespace, lbService } from '../helpers/lb.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { DEFAULT_CONCURRENT_SERVICE_SYNCS } from '../../host/config/options.js';
import { StateStore } from '../../plugins/local/state.js';
import { readJournal } from '../../plugins/local/journal.js';
import { mapLimit } from '../../host/util/map-limit.js';
import {
  apiRequests,
  cloudChanges,
  cpuSeconds,
  hostLiveReads,
  journaledCalls,
  journalLength,
  liveReadRows,
  rssMb,
  schedFigures,
  schedSnapshot,
  sideBySideRows,
  WRITE_VERBS,
  type LiveReadFigures,
  type SchedFigures,
} from './ccm-sides.js';
import { startCcm, type RunningCcm, type Side } from '../helpers/ccm-side.js';
import { f1, f2, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';
import { latencyRows, type LatencySummary } from './latency.js';
import { ServiceCreationLatency, type LbTransition } from './service-latency.js';

const CREATE_CONCURRENCY = 32;
const LATENCY_MS = 200;
const QPS = 100;
const BURST = 200;
/** The one backend node every load balancer forwards to; the bench's backends listen on its node ports. */
const BACKEND_IP = '127.0.60.1';
/** How long the probes may take, after every ingress is set, to find every load balancer answering. */
const AVAILABLE_TIMEOUT_MS = 5 * 60_000;

async function createServices(core: CoreV1Api, ns: string, n: number): Promise<void> {
  await mapLimit(
    Array.from({ length: n }, (_, i) => i),
    CREATE_CONCURRENCY,
    (i) => core.createNamespacedService({ namespace: ns, body: lbService(`s${i}`, ns, [{ port: 8080 }]) }),
  );
}

async function allIngress(core: CoreV1Api, ns: string, n: number): Promise<boolean> {
  const list = await core.listNamespacedService({ namespace: ns });
  return list.items.filter((s) => s.status?.loadBalancer?.ingress?.[0]?.ip).length === n;
}

async function cleanup(core: CoreV1Api, ns: string, runId: string): Promise<void> {
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  await core.deleteCollectionNode({ labelSelector: `bench-lb=${runId}` }).catch(() => undefined);
}

interface CreateFigures {
  seconds: number;
  /** Every call the cloud served (the local cloud's journal; a batch call counts once). */
  cloudCalls: number;
  /** Ensure calls (single or batch) the cloud served. */
  ensureCalls: number;
  /** Service writes (any verb but reads; spec, finalizer and status) the kube-apiserver served meanwhile. */
  serviceWrites: number;
  eventWrites: number;
  cpuSeconds: number;
  startRssMb: number;
  peakRssMb: number;
  /** Live reads beside the Service writes and cloud changes while creating. */
  live: LiveReadFigures;
  /** Only with `deleting`: every Service deleted once all have their ingress. */
  deletion?: DeleteFigures;
  /**
   * ClusterLoader2's ServiceCreationLatency transitions per Service, as the bench's watch and probes saw them
   * (service-latency.ts); delete_loadbalancer only with `deleting`.
   */
  latency: Record<LbTransition, LatencySummary>;
  /** Services found answering through their load balancer (the `available` phase) within the probes' time. */
  available: number;
  /** The CCM's threads from the first create until every ingress was set (ccm-sides.ts schedFigures). */
  sched: SchedFigures;
}

/** Deleting every Service (its load balancer, then the cleanup finalizer). */
interface DeleteFigures {
  /** Seconds from the first delete until every Service is gone and the cloud has no load balancer. */
  seconds: number;
  cloudCalls: number;
  /** Live reads beside the Service writes and cloud changes while deleting. */
  live: LiveReadFigures;
  /** CPU seconds and peak RSS of the whole run (creating included). */
  cpuSeconds: number;
  peakRssMb: number;
}

/**
 * Deletes every Service in `ns` after stripping its cleanup finalizer (its CCM
 * is stopped). Explicitly: a namespace's contents are removed by
 * kube-controller-manager, which the benchmark's control plane may not run,
 * and leftovers would be work for the next side.
 */
async function deleteServices(core: CoreV1Api, ns: string): Promise<void> {
  const list = await core.listNamespacedService({ namespace: ns });
  await mapLimit(list.items, CREATE_CONCURRENCY, async (svc) => {
    await dropFinalizers(core, svc).catch(() => undefined);
    await core.deleteNamespacedService({ namespace: ns, name: svc.metadata!.name! }).catch(() => undefined);
  });
}

/**
 * N Services created at once under `side`; seconds until every ingress is
 * set, and what it cost. With `deleting`, then every Service deleted while
 * the CCM runs: seconds until they and their load balancers are gone.
 */
export async function benchCreate(
  cp: ControlPlane,
  side: Side,
  services: number,
  workers: number,
  runId: string,
  log: (s: string) => void,
  deleting = false,
): Promise<CreateFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-lb-${side.kind}-`));
  const state = join(dir, 'cloud');
  await localcloud(state, 'knobs', 'set', `latencyMs=${LATENCY_MS}`);
  const ns = `bench-${runId}`;
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  await ensureNamespace(core, ns);
  await createBackendNode(core, `bench-lb-${runId}-n0`, BACKEND_IP, { 'bench-lb': runId });
  const settings = { controllers: 'service', qps: QPS, burst: BURST, flags: [`--concurrent-service-syncs=${workers}`] };
  const ccm = await startCcm(cp, side, settings, state, dir, { LOCALCLOUD_LB_CIDR: '127.64.0.0/16' });
  const watch = new ServiceCreationLatency(cp.kubeConfig(), ns, BACKEND_IP);
  try {
    const startRssMb = await rssMb(ccm.pid, 'VmRSS');
    const calls0 = await journaledCalls(state);
    const writes0 = await apiRequests(cp, 'services', WRITE_VERBS);
    const events0 = await apiRequests(cp, 'events', WRITE_VERBS);
    const gets0 = await apiRequests(cp, 'services', ['GET']);
    const journal0 = await journalLength(state);
    log(`lb-create: ${side.kind}: ${services} Services, workers=${workers}, latency ${LATENCY_MS} ms, logs in ${dir}`);
    await watch.start();
    const sched0 = await schedSnapshot(ccm.pid);
    const t0 = Date.now();
    await createServices(core, ns, services);
    await waitFor(() => allIngress(core, ns, services), { what: 'every ingress set', timeoutMs: 30 * 60_000, intervalMs: 250 });
    const seconds = (Date.now() - t0) / 1000;
    const sched = schedFigures(sched0, await schedSnapshot(ccm.pid), seconds);
    await waitFor(() => watch.assigned === services, { what: `the watch saw ${services} ingresses`, timeoutMs: 60_000 });
    // The benchmark's own creates are Service writes too.
    const serviceWrites = (await apiRequests(cp, 'services', WRITE_VERBS)) - writes0 - services;
    const liveReads = side.kind === 'ours' ? await hostLiveReads(cp, ccm) : 0;
    const figures: CreateFigures = {
      seconds,
      cloudCalls: (await journaledCalls(state)) - calls0,
      ensureCalls: await journaledCalls(state, /ensureLoadBalancers?$/i),
      serviceWrites,
      eventWrites: (await apiRequests(cp, 'events', WRITE_VERBS)) - events0,
      cpuSeconds: await cpuSeconds(ccm.pid),
      startRssMb,
      peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
      live: {
        liveReads,
        gets: (await apiRequests(cp, 'services', ['GET'])) - gets0,
        kubeWrites: serviceWrites,
        cloudChanges: await cloudChanges(state, journal0),
      },
      latency: watch.summaries(),
      available: 0,
      sched,
    };
    // The probes run on: a load balancer not answering yet is reported, not waited for past the bound.
    await waitFor(() => watch.available === services, { what: `${services} load balancers answering`, timeoutMs: AVAILABLE_TIMEOUT_MS }).catch(
      (err: Error) => log(`lb-create: ${side.kind}: ${err.message} (${watch.available} answering)`),
    );
    figures.available = watch.available;
    if (deleting) {
      figures.deletion = await deleteAll(cp, core, ccm, side, ns, state, liveReads, log);
      await waitFor(() => watch.watch.count('deleted') === services, { what: `the watch saw ${services} Services deleted`, timeoutMs: 60_000 });
    }
    figures.latency = watch.summaries();
    log(`lb-create: ${side.kind} workers=${workers} done in ${f1(seconds)} s, ${figures.ensureCalls} ensure calls`);
    return figures;
  } finally {
    await watch.stop();
    await ccm.stop();
    await deleteServices(core, ns);
    await cleanup(core, ns, runId);
  }
}

/** Deletes every Service in `ns` (the CCM running); seconds until they and every load balancer are gone, and what it cost. */
async function deleteAll(
  cp: ControlPlane,
  core: CoreV1Api,
  ccm: RunningCcm,
  side: Side,
  ns: string,
  state: string,
  liveReads0: number,
  log: (s: string) => void,
): Promise<DeleteFigures> {
  const calls0 = await journaledCalls(state);
  const journal0 = await journalLength(state);
  const writes0 = await apiRequests(cp, 'services', [...WRITE_VERBS, 'DELETE']);
  const gets0 = await apiRequests(cp, 'services', ['GET']);
  const names = (await core.listNamespacedService({ namespace: ns })).items.map((s) => s.metadata!.name!);
  const store = new StateStore(state);
  const t0 = Date.now();
  await mapLimit(names, CREATE_CONCURRENCY, (name) => core.deleteNamespacedService({ namespace: ns, name }));
  await waitFor(async () => store.read().loadBalancers.length === 0 && (await core.listNamespacedService({ namespace: ns })).items.length === 0, {
    what: `every Service and load balancer gone (${side.kind})`,
    timeoutMs: 30 * 60_000,
    intervalMs: 250,
  });
  const seconds = (Date.now() - t0) / 1000;
  // The benchmark's own deletes are Service writes too.
  const kubeWrites = (await apiRequests(cp, 'services', [...WRITE_VERBS, 'DELETE'])) - writes0 - names.length;
  const figures = {
    seconds,
    cloudCalls: (await journaledCalls(state)) - calls0,
    live: {
      liveReads: side.kind === 'ours' ? (await hostLiveReads(cp, ccm)) - liveReads0 : 0,
      gets: (await apiRequests(cp, 'services', ['GET'])) - gets0,
      kubeWrites,
      cloudChanges: await cloudChanges(state, journal0),
    },
    cpuSeconds: await cpuSeconds(ccm.pid),
    peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
  };
  log(`lb-create: ${side.kind}: ${names.length} Services deleted in ${f1(seconds)} s, ${figures.live.liveReads} live reads`);
  return figures;
}

interface NodesFigures {
  seconds: number;
  /** Cloud calls from the node's creation until every load balancer has it (a batch call counts once). */
  cloudCalls: number;
  /** Load balancer calls among them, by method (journal names). */
  byMethod: Record<string, number>;
  cpuSeconds: number;
  /** Peak RSS over the whole run (500 load balancers made, then the node added). */
  peakRssMb: number;
}

/** Calls in the local cloud's journal by method, from entry `from` on. */
async function journalByMethod(state: string, from: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const e of (await readJournal(state)).slice(from)) {
    const m = e.method.replace(/^loadBalancers\./, '');
    out[m] = (out[m] ?? 0) + 1;
  }
  return out;
}

/** M load balancers over K nodes under `side`, then one node added; seconds until every load balancer has it. */
async function benchNodes(cp: ControlPlane, side: Side, runId: string, log: (s: string) => void): Promise<NodesFigures> {
  const { services, nodes, workers } = LB_NODES;
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-lbnodes-${side.kind}-`));
  const state = join(dir, 'cloud');
  await localcloud(state, 'knobs', 'set', `latencyMs=${LATENCY_MS}`);
  const ns = `bench-${runId}`;
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  await ensureNamespace(core, ns);
  const ip = (i: number) => `127.61.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  await mapLimit(
    Array.from({ length: nodes }, (_, i) => i),
    CREATE_CONCURRENCY,
    (i) => createBackendNode(core, `bench-lb-${runId}-n${i}`, ip(i), { 'bench-lb': runId }),
  );
  const settings = { controllers: 'service', qps: QPS, burst: BURST, flags: [`--concurrent-service-syncs=${workers}`] };
  const ccm = await startCcm(cp, side, settings, state, dir, { LOCALCLOUD_LB_CIDR: '127.64.0.0/16' });
  try {
    log(`lb-nodes: ${side.kind}: ${nodes} nodes, creating ${services} Services, logs in ${dir}`);
    await createServices(core, ns, services);
    await waitFor(() => allIngress(core, ns, services), { what: 'every ingress set', timeoutMs: 30 * 60_000, intervalMs: 500 });
    const store = new StateStore(state);
    // By name: other nodes of the control plane (none, normally) are backends too.
    const names = Array.from({ length: nodes }, (_, i) => `bench-lb-${runId}-n${i}`);
    const hasAll = (l: { backends: { nodeName: string }[] }) => {
      const have = new Set(l.backends.map((b) => b.nodeName));
      return names.every((n) => have.has(n));
    };
    await waitFor(() => store.read().loadBalancers.filter(hasAll).length === services, {
      what: 'every LB has every node',
      timeoutMs: 10 * 60_000,
      intervalMs: 250,
    });
    const calls0 = await journaledCalls(state);
    const added = `bench-lb-${runId}-added`;
    const t0 = Date.now();
    await createBackendNode(core, added, ip(nodes), { 'bench-lb': runId });
    await waitFor(() => store.read().loadBalancers.every((l) => l.backends.some((b) => b.nodeName === added)), {
      what: 'every LB has the new node',
      timeoutMs: 10 * 60_000,
      intervalMs: 20,
    });
    const seconds = (Date.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2000)); // let any straggling call show up in the counts
    const byMethod = await journalByMethod(state, calls0);
    const figures = {
      seconds,
      cloudCalls: Object.values(byMethod).reduce((a, b) => a + b, 0),
      byMethod,
      cpuSeconds: await cpuSeconds(ccm.pid),
      peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
    };
    log(`lb-nodes: ${side.kind}: done in ${f2(seconds)} s, ${figures.cloudCalls} cloud calls`);
    return figures;
  } finally {
    await ccm.stop();
    await deleteServices(core, ns);
    await cleanup(core, ns, runId);
  }
}

const LB_NODES = { services: 500, nodes: 200, workers: DEFAULT_CONCURRENT_SERVICE_SYNCS };

/** `BENCH_LB_SERVICES` sets the count (default 1,000), e.g. for a quick look at a change. */
const LB_CREATE = { services: Number(process.env.BENCH_LB_SERVICES ?? 1000), latencyMs: LATENCY_MS, qps: QPS, burst: BURST };
/** Equal workers on both sides: upstream's default (1), then ours (10); `BENCH_LB_WORKERS=10` runs only the settings listed (comma-separated). */
const CREATE_WORKERS = process.env.BENCH_LB_WORKERS ? process.env.BENCH_LB_WORKERS.split(',').map(Number) : [1, DEFAULT_CONCURRENT_SERVICE_SYNCS];
/** The setting whose run then deletes every Service (at 1 worker the cloud latency alone would take 200 s a side). */
const DELETE_WORKERS = DEFAULT_CONCURRENT_SERVICE_SYNCS;

/** What the API server served each side per deleted Service (GETs, writes), as a sentence. */
function perDeletion(deleted: { ours: DeleteFigures; upstream: DeleteFigures }[]): string {
  const d = deleted[0];
  if (!d) return '';
  const per = (n: number) => f1(n / LB_CREATE.services);
  return ` Per deleted load balancer the API server served our host ${per(d.ours.live.gets)} Service GETs and ${per(d.ours.live.kubeWrites)} writes, upstream ${per(d.upstream.live.gets)} GETs and ${per(d.upstream.live.kubeWrites)} writes.`;
}

export const lbCreateSection: BenchSection = {
  name: 'lb-create',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const sectionStart = Date.now();
    const loadBefore = loadavg()[0]!;
    const results: { label: string; workers: number; ours: CreateFigures; upstream: CreateFigures }[] = [];
    for (const workers of CREATE_WORKERS) {
      const ours = await benchCreate(
        cp,
        { kind: 'ours', nodeFlags: [] },
        LB_CREATE.services,
        workers,
        `co${workers}-${Date.now().toString(36)}`,
        ctx.log,
        workers === DELETE_WORKERS,
      );
      const upstream = await benchCreate(
        cp,
        { kind: 'upstream', bin },
        LB_CREATE.services,
        workers,
        `cu${workers}-${Date.now().toString(36)}`,
        ctx.log,
        workers === DELETE_WORKERS,
      );
      const label = `${workers} (equal${workers === 1 ? "; upstream's default" : workers === DEFAULT_CONCURRENT_SERVICE_SYNCS ? '; our default' : ''})`;
      results.push({ label, workers, ours, upstream });
    }
    const minutes = (Date.now() - sectionStart) / 60_000;
    const loadAfter = loadavg()[0]!;
    const line = (what: string, pick: (f: CreateFigures) => number, fmt: (n: number) => string, bold = false) =>
      sideBySideRows(results, what, pick, fmt, bold);
    const deleted = results
      .filter((r) => r.ours.deletion && r.upstream.deletion)
      .map((r) => ({ label: r.label, ours: r.ours.deletion!, upstream: r.upstream.deletion! }));
    const dline = (what: string, pick: (f: DeleteFigures) => number, fmt: (n: number) => string, bold = false) =>
      sideBySideRows(deleted, what, pick, fmt, bold);
    const markdown = `## LoadBalancer Services created at once (then deleted), beside the upstream CCM

${int(LB_CREATE.services)} Services of type LoadBalancer (one TCP port, one backend node) created by the benchmark's own
client (32 at a time). Each side runs on the same control plane, one after the other, with the same
\`--controllers=service --kube-api-qps=${QPS} --kube-api-burst=${BURST} --concurrent-service-syncs=N\` and a fresh local
cloud that adds ${LATENCY_MS} ms to every call: **ours** is the host with the local cloud as its plugin; **upstream** is
the upstream cloud-controller-manager (\`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION}) whose \`grpc\` provider forwards
every call to the same local cloud as a sidecar (tools/upstream-ccm). Time runs from the first create until every
Service has \`status.loadBalancer.ingress\`. CPU and peak RSS are the CCM process's own (from /proc, from its start);
cloud calls are the local cloud's journal (a batch call counts once); Service writes exclude the benchmark's own
creates. The settings took ${f1(minutes)} min together; the machine's 1-minute load average was ${f1(loadBefore)} before
and ${f1(loadAfter)} after.

| figure | --concurrent-service-syncs | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${line('seconds until every ingress is set', (f) => f.seconds, f1, true)}
${line('cloud calls', (f) => f.cloudCalls, int)}
${line('ensure calls', (f) => f.ensureCalls, int)}
${line('Event writes', (f) => f.eventWrites, int)}
${line('CPU (s)', (f) => f.cpuSeconds, f1, true)}
${line('RSS at start (MiB)', (f) => f.startRssMb, f1)}
${line('peak RSS (MiB)', (f) => f.peakRssMb, f1, true)}
${liveReadRows(results, (f) => f.live, 'Service', int)}

### ServiceCreationLatency, the way ClusterLoader2 measures it

ClusterLoader2's (SIG Scalability's) \`ServiceCreationLatency\` measurement, its LoadBalancer transitions, per Service,
percentiles over the ${int(LB_CREATE.services)} Services of each run above (test/bench/service-latency.ts; \`BENCH_LB_SERVICES\` sets
the count, \`BENCH_LB_WORKERS\` the settings). The phases are
the bench process's own clock when its watch delivered the event (ClusterLoader2 takes \`created\` and \`deleting\` from the
object's timestamps, which have one-second resolution):

- \`create_to_assigned_loadbalancer\`: from the Service's creation (first seen by the watch, opened before the first create)
  to the first event with \`status.loadBalancer.ingress\`: the CCM's queue wait, its cloud call and its status write. The
  Services are created 32 at a time, so later ones include their wait in the CCM's queue.
- \`assigned_to_available_loadbalancer\`: from that event until a request through the ingress address and the Service's port
  is answered by the backend three times in a row (ClusterLoader2's ping checker: three successes, one second after every
  failure; it curls from a pod, the bench makes a TCP exchange with a backend on the node port the load balancer forwards
  to, the local cloud's load balancers being L4 listeners on loopback addresses). The CCM's part is done by then: this is the
  cloud's data plane (the local cloud binds the listener before its ensure call returns; its forwarder, the same code on
  both sides, runs in our host's plugin process or in upstream's sidecar) and the bench's probes: differences are the
  machine's load.
- \`create_to_available_loadbalancer\`: the two above together, what a user waits for.
- \`delete_loadbalancer\`: in the ${DELETE_WORKERS}-worker run below, from the first event with \`metadata.deletionTimestamp\` (the
  benchmark's delete; the CCM's cleanup finalizer keeps the Service) to the DELETED event: the CCM's queue wait, its cloud
  delete and the finalizer's removal.

ClusterLoader2's other transitions (ClusterIP, NodePort, Ingress) involve no CCM.

| transition | --concurrent-service-syncs | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${(['create_to_assigned_loadbalancer', 'assigned_to_available_loadbalancer', 'create_to_available_loadbalancer'] as const)
  .map((t) => latencyRows(results, t, (f) => f.latency[t]))
  .join('\n')}
${latencyRows(
  results.filter((r) => r.ours.deletion && r.upstream.deletion),
  'delete_loadbalancer',
  (f) => f.latency.delete_loadbalancer,
)}
${line('Services found answering (of ' + int(LB_CREATE.services) + ')', (f) => f.available, int)}
${line('threads runnable, waiting for a CPU, until every ingress (s)', (f) => f.sched.waitSeconds, f1)}
${line('busiest thread running or waiting to run (% of that time)', (f) => f.sched.busiestShare * 100, f1, true)}

The last two rows are the CCM's threads from /proc/<pid>/task/*/schedstat (see node-init: our host runs its
JavaScript on one thread, so on a loaded machine its queue waits for that thread).

Then, in the ${DELETE_WORKERS}-worker run, the benchmark deletes all ${int(LB_CREATE.services)} Services while the CCM runs; time runs from
the first delete until every Service is gone (the CCM removed its cleanup finalizer) and the cloud has no load balancer.
Service writes exclude the benchmark's deletes; CPU and peak RSS are the whole run's (creating included):

| figure | --concurrent-service-syncs | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${dline('seconds until every Service and load balancer is gone', (f) => f.seconds, f1, true)}
${dline('cloud calls', (f) => f.cloudCalls, int)}
${dline('CPU (s), whole run', (f) => f.cpuSeconds, f1, true)}
${dline('peak RSS (MiB), whole run', (f) => f.peakRssMb, f1, true)}
${liveReadRows(deleted, (f) => f.live, 'Service', int)}

Live reads (issue 29, item 5): before our host deletes a load balancer (a deleted Service's, or one whose Service no
longer wants it) it GETs the Service from the API server, one read per deletion; creating costs none. Upstream
deletes from its cache with no read. Service GETs count every client's; cloud objects changed count each load balancer
a batch call changed. Target (issue 29): live reads a few percent of writes at most.${perDeletion(deleted)}

Targets (issue 12): at equal workers (1 and 10) ours ≥ 1.5× faster than upstream (the cloud-latency and QPS bounds
allow about 1.8× at 10 workers); with one worker the cloud latency alone is ${int(LB_CREATE.services)} × ${LATENCY_MS} ms =
${(LB_CREATE.services * LATENCY_MS) / 1000} s for a CCM that makes one call per Service.
`;
    const figures = {
      settings: { ...LB_CREATE, upstream: CLOUD_PROVIDER_VERSION },
      rows: results.map(({ label, workers, ours, upstream }) => ({ setting: label, workers, ours, upstream })),
    };
    return { markdown, figures };
  },
};

export const lbNodesSection: BenchSection = {
  name: 'lb-nodes',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const before = loadavg()[0]!;
    const ours = await benchNodes(cp, { kind: 'ours', nodeFlags: [] }, `no-${Date.now().toString(36)}`, ctx.log);
    const upstream = await benchNodes(cp, { kind: 'upstream', bin }, `nu-${Date.now().toString(36)}`, ctx.log);
    const results = [{ label: `${LB_NODES.workers} (equal)`, ours, upstream }];
    const line = (what: string, pick: (f: NodesFigures) => number, fmt: (n: number) => string, bold = false) =>
      sideBySideRows(results, what, pick, fmt, bold);
    const methods = [...new Set([...Object.keys(ours.byMethod), ...Object.keys(upstream.byMethod)])].sort();
    const markdown = `## One node added under ${int(LB_NODES.services)} load balancers, beside the upstream CCM

${int(LB_NODES.services)} LoadBalancer Services over ${int(LB_NODES.nodes)} backend nodes, a fresh local cloud adding ${LATENCY_MS} ms to every call;
each side runs \`--controllers=service --kube-api-qps=${QPS} --kube-api-burst=${BURST} --concurrent-service-syncs=${LB_NODES.workers}\` as its
own process (upstream: \`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION} forwarding to the local cloud as a sidecar). Once every
load balancer has every node, one node is added; time runs from its creation until every load balancer in the
cloud's state has it as a backend. Cloud calls are the local cloud's journal meanwhile; CPU and peak RSS the CCM
process's own over the whole run (making the ${int(LB_NODES.services)} load balancers included); ${`the machine's 1-minute load average was ${f1(before)} before and ${f1(loadavg()[0]!)} after`}.

| figure | --concurrent-service-syncs | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${line('seconds until every LB has the new node', (f) => f.seconds, f2, true)}
${line('cloud calls', (f) => f.cloudCalls, int)}
${methods.map((m) => line(`… ${m}`, (f) => f.byMethod[m] ?? 0, int)).join('\n')}
${line('CPU (s), whole run', (f) => f.cpuSeconds, f1, true)}
${line('peak RSS (MiB), whole run', (f) => f.peakRssMb, f1, true)}

Our host sends one node-set change to every load balancer in batch calls (UpdateLoadBalancerHosts) where the
provider supports it (the local cloud does); upstream calls UpdateLoadBalancer once per load balancer.
Targets (issue 5): ≤ 5 s; 1 batch call where the provider supports it.
`;
    return {
      markdown,
      figures: { settings: { ...LB_NODES, latencyMs: LATENCY_MS, qps: QPS, burst: BURST, upstream: CLOUD_PROVIDER_VERSION }, rows: results },
    };
  },
};
