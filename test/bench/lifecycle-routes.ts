/**
 * Node lifecycle and route controller benchmarks against a real control
 * plane, our host and the upstream CCM one after the other (ccm-sides.ts),
 * each with a fresh local cloud:
 *
 * - lifecycle: 2,000 nodes, 500 of them NotReady, 50 ms per cloud call; then
 *   50 of the NotReady nodes' instances are deleted from the cloud: seconds
 *   until those Nodes are gone (and nothing else), cloud calls meanwhile.
 * - routes: 2,000 nodes created with pod CIDRs; seconds until every route
 *   exists in the cloud and every node has NetworkUnavailable=False.
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { setReady } from '../helpers/nodes.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { mapLimit } from '../../host/util/map-limit.js';
import { deleteInstance } from '../../plugins/local/inventory.js';
import { StateStore } from '../../plugins/local/state.js';
import {
  apiRequests,
  cloudChanges,
  cpuSeconds,
  hostLiveReads,
  journaledCalls,
  journalLength,
  liveReadRows,
  rssMb,
  sideBySideRows,
  WRITE_VERBS,
  type LiveReadFigures,
} from './ccm-sides.js';
import { startCcm, type Side } from '../helpers/ccm-side.js';
import { f1, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';

const CONCURRENCY = 32;
const QPS = 100;

/** What both sections measure of one side. */
interface SideFigures {
  seconds: number;
  /** Every call the cloud served meanwhile (the local cloud's journal; a batch call counts once). */
  cloudCalls: number;
  /** Node writes (any verb but reads, incl. deletes and status) the kube-apiserver served meanwhile. */
  nodeWrites: number;
  cpuSeconds: number;
  startRssMb: number;
  peakRssMb: number;
  /** The live reads beside the writes and cloud changes they guard, over the measured span. */
  live: LiveReadFigures;
  /** Routes only: seconds from deleting ROUTES.deleted Nodes until their routes are gone from the cloud. */
  deleteSeconds?: number;
}

type Results = { label: string; ours: SideFigures; upstream: SideFigures }[];

/** Runs `measure` for our host, then for upstream; each gets its own run id. */
async function bothSides(bin: string, label: string, measure: (side: Side, runId: string) => Promise<SideFigures>): Promise<Results> {
  const ours = await measure({ kind: 'ours', nodeFlags: [] }, `o${Date.now().toString(36)}`);
  const upstream = await measure({ kind: 'upstream', bin }, `u${Date.now().toString(36)}`);
  return [{ label, ours, upstream }];
}

function table(results: Results, first: string, deleted?: string): string {
  const line = (what: string, pick: (f: SideFigures) => number, fmt: (n: number) => string, bold = false) =>
    sideBySideRows(results, what, pick, fmt, bold);
  return `| figure | settings | ours | upstream | ours ÷ upstream |
|---|---|---|---|---|
${line(first, (f) => f.seconds, f1, true)}${deleted ? `\n${line(deleted, (f) => f.deleteSeconds ?? 0, f1, true)}` : ''}
${line('cloud calls', (f) => f.cloudCalls, int)}
${line('CPU (s)', (f) => f.cpuSeconds, f1, true)}
${line('RSS at start (MiB)', (f) => f.startRssMb, f1)}
${line('peak RSS (MiB)', (f) => f.peakRssMb, f1, true)}
${liveReadRows(results, (f) => f.live, 'Node', int)}`;
}

const LIFECYCLE = { nodes: 2000, notReady: 500, deleted: 50, latencyMs: 50, monitorPeriod: '5s' };

async function lifecycleRun(cp: ControlPlane, side: Side, runId: string, log: (s: string) => void): Promise<SideFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-lifecycle-${side.kind}-`));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: LIFECYCLE.nodes }, (_, i) => `${runId}-${i}`);
  await localcloud(state, 'instance', 'add', ...names);
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  log(`lifecycle: ${side.kind}: creating ${int(LIFECYCLE.nodes)} nodes (${int(LIFECYCLE.nodes - LIFECYCLE.notReady)} Ready), logs in ${dir}`);
  await mapLimit(names, CONCURRENCY, (name) => core.createNode({ body: { metadata: { name, labels: { 'bench-run': runId } } } }));
  await mapLimit(names.slice(LIFECYCLE.notReady), CONCURRENCY, (name) => setReady(core, name, true));
  await localcloud(state, 'knobs', 'set', `latencyMs=${LIFECYCLE.latencyMs}`);
  const settings = { controllers: 'cloud-node-lifecycle', qps: QPS, burst: 2 * QPS, flags: [`--node-monitor-period=${LIFECYCLE.monitorPeriod}`] };
  const ccm = await startCcm(cp, side, settings, state, dir);
  try {
    const startRssMb = await rssMb(ccm.pid, 'VmRSS');
    // Measure from a running controller: its first pass has begun.
    await waitFor(async () => (await journaledCalls(state)) > 0, { what: 'first lifecycle cloud call', timeoutMs: 120_000, intervalMs: 200 });
    const calls0 = await journaledCalls(state);
    const writes0 = await apiRequests(cp, 'nodes', [...WRITE_VERBS, 'DELETE']);
    const gets0 = await apiRequests(cp, 'nodes', ['GET']);
    const journal0 = await journalLength(state);
    const reads0 = side.kind === 'ours' ? await hostLiveReads(cp, ccm) : 0;
    const gone = names.slice(0, LIFECYCLE.deleted);
    const store = new StateStore(state);
    const t0 = Date.now();
    for (const name of gone) await deleteInstance(store, name);
    await waitFor(async () => (await core.listNode({ labelSelector: `bench-run=${runId}` })).items.length <= LIFECYCLE.nodes - LIFECYCLE.deleted, {
      what: `${LIFECYCLE.deleted} Nodes of deleted instances gone (${side.kind})`,
      timeoutMs: 15 * 60_000,
      intervalMs: 200,
    });
    const seconds = (Date.now() - t0) / 1000;
    const left = new Set((await core.listNode({ labelSelector: `bench-run=${runId}` })).items.map((n: V1Node) => n.metadata!.name!));
    const wrong = names.filter((n, i) => (i < LIFECYCLE.deleted ? left.has(n) : !left.has(n)));
    if (wrong.length) throw new Error(`lifecycle (${side.kind}): wrong Nodes deleted or kept: ${wrong.slice(0, 10).join(', ')}; see ${ccm.logFile}`);
    const nodeWrites = (await apiRequests(cp, 'nodes', [...WRITE_VERBS, 'DELETE'])) - writes0;
    const figures = {
      seconds,
      cloudCalls: (await journaledCalls(state)) - calls0,
      nodeWrites,
      cpuSeconds: await cpuSeconds(ccm.pid),
      startRssMb,
      peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
      live: {
        liveReads: side.kind === 'ours' ? (await hostLiveReads(cp, ccm)) - reads0 : 0,
        gets: (await apiRequests(cp, 'nodes', ['GET'])) - gets0,
        kubeWrites: nodeWrites,
        cloudChanges: await cloudChanges(state, journal0),
      },
    };
    log(`lifecycle: ${side.kind}: ${LIFECYCLE.deleted} Nodes gone ${f1(seconds)} s after their instances, ${figures.cloudCalls} cloud calls`);
    return figures;
  } finally {
    await ccm.stop();
    await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  }
}

/** `deleted`: Nodes deleted once every route exists (every 20th), whose routes must go. */
const ROUTES = { nodes: 2000, deleted: 100, clusterCidr: '10.64.0.0/12' };

async function routesRun(cp: ControlPlane, side: Side, runId: string, log: (s: string) => void): Promise<SideFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-routes-${side.kind}-`));
  const state = join(dir, 'cloud');
  const names = Array.from({ length: ROUTES.nodes }, (_, i) => `${runId}-${i}`);
  await localcloud(state, 'instance', 'add', ...names);
  // Both sides: upstream starts its route controller only with both flags.
  const flags = [`--cluster-cidr=${ROUTES.clusterCidr}`, '--allocate-node-cidrs=true', '--configure-cloud-routes=true'];
  const ccm = await startCcm(cp, side, { controllers: 'route', qps: QPS, burst: QPS, flags }, state, dir);
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  try {
    const startRssMb = await rssMb(ccm.pid, 'VmRSS');
    const calls0 = await journaledCalls(state);
    const writes0 = await apiRequests(cp, 'nodes', WRITE_VERBS);
    const gets0 = await apiRequests(cp, 'nodes', ['GET']);
    const journal0 = await journalLength(state);
    log(`routes: ${side.kind}: creating ${int(ROUTES.nodes)} nodes with pod CIDRs, logs in ${dir}`);
    const t0 = Date.now();
    await mapLimit(
      names.map((n, i) => [n, i] as const),
      CONCURRENCY,
      async ([name, i]) => {
        const cidr = `10.${64 + (i >> 8)}.${i & 255}.0/24`;
        await core.createNode({ body: { metadata: { name, labels: { 'bench-run': runId } }, spec: { podCIDR: cidr, podCIDRs: [cidr] } } });
      },
    );
    const store = new StateStore(state);
    await waitFor(
      async () => {
        if (store.read().routes.length < ROUTES.nodes) return false;
        const list = await core.listNode({ labelSelector: `bench-run=${runId}` });
        return (
          list.items.filter((n: V1Node) => (n.status?.conditions ?? []).some((c) => c.type === 'NetworkUnavailable' && c.status === 'False'))
            .length === ROUTES.nodes
        );
      },
      { what: `all routes and conditions (${side.kind})`, timeoutMs: 15 * 60_000, intervalMs: 500 },
    );
    const seconds = (Date.now() - t0) / 1000;
    // Then Nodes go: each side's route controller must delete their routes (ours after a live read of each Node).
    const doomed = names.filter((_, i) => i % (ROUTES.nodes / ROUTES.deleted) === 0);
    const t1 = Date.now();
    await mapLimit(doomed, CONCURRENCY, (name) => core.deleteNode({ name }));
    const doomedSet = new Set(doomed);
    await waitFor(() => !store.read().routes.some((r) => doomedSet.has(r.targetNode)), {
      what: `the routes of ${ROUTES.deleted} deleted Nodes gone (${side.kind})`,
      timeoutMs: 10 * 60_000,
      intervalMs: 250,
    });
    const deleteSeconds = (Date.now() - t1) / 1000;
    // The benchmark's own creates are Node writes too (its deletes are not counted: DELETE is not in WRITE_VERBS).
    const nodeWrites = (await apiRequests(cp, 'nodes', WRITE_VERBS)) - writes0 - ROUTES.nodes;
    const figures = {
      seconds,
      deleteSeconds,
      cloudCalls: (await journaledCalls(state)) - calls0,
      nodeWrites,
      cpuSeconds: await cpuSeconds(ccm.pid),
      startRssMb,
      peakRssMb: await rssMb(ccm.pid, 'VmHWM'),
      live: {
        liveReads: side.kind === 'ours' ? await hostLiveReads(cp, ccm) : 0,
        gets: (await apiRequests(cp, 'nodes', ['GET'])) - gets0,
        kubeWrites: nodeWrites,
        cloudChanges: await cloudChanges(state, journal0),
      },
    };
    log(`routes: ${side.kind}: ${f1(seconds)} s, ${figures.cloudCalls} cloud calls`);
    return figures;
  } finally {
    await ccm.stop();
    await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  }
}

/** The machine is shared: how loaded it was, before and after. */
const load = (before: number) => `the machine's 1-minute load average was ${f1(before)} before and ${f1(loadavg()[0]!)} after`;

export const lifecycleSection: BenchSection = {
  name: 'lifecycle',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const before = loadavg()[0]!;
    const results = await bothSides(bin, `period ${LIFECYCLE.monitorPeriod}`, (side, runId) => lifecycleRun(cp, side, runId, ctx.log));
    const markdown = `## Node lifecycle controller beside the upstream CCM: Nodes of deleted instances

${int(LIFECYCLE.nodes)} nodes (${int(LIFECYCLE.nodes - LIFECYCLE.notReady)} Ready, ${int(LIFECYCLE.notReady)} without a Ready condition), every instance present in a
fresh local cloud that adds ${LIFECYCLE.latencyMs} ms to every call. Each side runs \`--controllers=cloud-node-lifecycle
--node-monitor-period=${LIFECYCLE.monitorPeriod} --kube-api-qps=${QPS} --kube-api-burst=${2 * QPS}\` as its own process (upstream: the
upstream CCM \`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION} forwarding to the local cloud as a sidecar, tools/upstream-ccm).
Once its first pass has begun, the instances of ${LIFECYCLE.deleted} NotReady nodes are deleted from the cloud; time runs until
those ${LIFECYCLE.deleted} Nodes are gone (every other Node is checked to be still there). Cloud calls are the local cloud's
journal meanwhile; CPU and peak RSS the CCM process's own since its start; ${load(before)}.

${table(results, `seconds until the ${LIFECYCLE.deleted} Nodes are gone`)}

Our host asks about every NotReady node in one batch call per pass (GetInstancesStatus, 500 per call); upstream makes
two calls per NotReady node, one after the other (InstanceExists, then InstanceShutdown), so one pass over
${int(LIFECYCLE.notReady)} NotReady nodes takes about ${int(LIFECYCLE.notReady)} × 2 × ${LIFECYCLE.latencyMs} ms = ${(LIFECYCLE.notReady * 2 * LIFECYCLE.latencyMs) / 1000} s there.
Targets (issue 4): ≤ 1 s per pass over 500 NotReady nodes and ≤ 2 cloud calls per pass; (issue 12) never slower than upstream.

Live reads (issue 29, item 5): before deleting a Node our host GETs it from the API server (still the same Node,
still NotReady), one read per deletion, so here, where deleting is all the CCM writes, they equal its writes; upstream
deletes from its cache with no read. Node GETs count every client's; cloud objects changed are the journal's mutating
calls (none: the benchmark removes the instances itself). Target (issue 29): a few percent of writes at most.
`;
    return { markdown, figures: { settings: { ...LIFECYCLE, qps: QPS, upstream: CLOUD_PROVIDER_VERSION }, rows: results } };
  },
};

export const routesSection: BenchSection = {
  name: 'routes',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const before = loadavg()[0]!;
    const results = await bothSides(bin, 'defaults', (side, runId) => routesRun(cp, side, runId, ctx.log));
    const markdown = `## Route controller beside the upstream CCM: ${int(ROUTES.nodes)} nodes from scratch

${int(ROUTES.nodes)} nodes created with pod CIDRs (32 concurrent creates from the benchmark's own client), every instance
present in a fresh local cloud. Each side runs \`--controllers=route --cluster-cidr=${ROUTES.clusterCidr} --allocate-node-cidrs=true
--configure-cloud-routes=true --kube-api-qps=${QPS} --kube-api-burst=${QPS}\` as its own process, other settings at each side's
default (upstream: the upstream CCM \`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION} forwarding to the local cloud as a sidecar).
Time runs from the first node create until the cloud has all ${int(ROUTES.nodes)} routes and every node has
\`NetworkUnavailable=False\` (reason RouteCreated). Then the benchmark deletes ${int(ROUTES.deleted)} of the Nodes (every
${ROUTES.nodes / ROUTES.deleted}th) and time runs until the cloud has none of their routes. Cloud calls, Node writes and the live-read
rows cover both phases; Node writes exclude the benchmark's creates and deletes; ${load(before)}.

${table(results, 'seconds until all routes and conditions', `seconds until the routes of ${int(ROUTES.deleted)} deleted Nodes are gone`)}

Our host reconciles in batch mode: once per reconcile it lists the routes (ListRoutes: no deletion is decided from the
Node cache alone, not even the batch call's), then creates the missing ones and deletes the confirmed ones in one
ReconcileRoutes call, as nodes arrive (node events trigger at most one reconcile per 10 s, as upstream's v1.35 watch-based
mode); upstream reconciles every \`--route-reconciliation-period\` (10 s), listing the routes and making one CreateRoute
or DeleteRoute per route (up to 200 in flight). Before a route is deleted our host GETs its target Node (one read per
Node, gone → the route goes); upstream deletes from its cache with no read. Cloud objects changed count each route a
batch call created or deleted.
Targets (issue 4): ≤ 60 s at \`--kube-api-qps=${QPS}\` (${int(ROUTES.nodes)} condition patches alone take ${ROUTES.nodes / QPS} s at that rate); (issue 12) never slower than upstream; (issue 29) live reads a few percent of
writes at most.
`;
    return { markdown, figures: { settings: { ...ROUTES, qps: QPS, upstream: CLOUD_PROVIDER_VERSION }, rows: results } };
  },
};
