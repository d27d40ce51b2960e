/**
 * Node lifecycle and route controller benchmarks against a real control
 * plane, the host as its own process, the local cloud as its plugin.
 *
 * - lifecycle: 2,000 nodes, 500 of them NotReady, 50 ms per cloud call;
 *   cloud calls per pass and pass duration, with the batch status RPC and
 *   with single calls (LOCALCLOUD_NO_BATCH).
 * - routes: 2,000 nodes created with pod CIDRs; seconds until every route
 *   exists in the cloud and every node has NetworkUnavailable=False.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { execa } from 'execa';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { freePorts } from '../controlplane/probe.js';
import { setReady } from '../helpers/nodes.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { StateStore } from '../../plugins/local/state.js';
import { f1, f2, int, type BenchSection } from './section.js';

const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));
const CONCURRENCY = 32;

async function eachLimit<T>(items: T[], fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

async function startHostProcess(args: string[], dir: string, name: string) {
  const [port] = await freePorts(1);
  const out = createWriteStream(join(dir, `${name}.log`));
  const host = execa(process.execPath, [HOST_MAIN, '--bind-address=127.0.0.1', `--secure-port=${port}`, ...args], { reject: false, stdin: 'ignore', all: true, buffer: false });
  host.all!.pipe(out);
  let started = false;
  host.all!.on('data', (d: Buffer) => {
    if (d.toString().includes('cloud-controller-manager started')) started = true;
  });
  await waitFor(() => started || host.exitCode !== null, { what: 'host started', timeoutMs: 60_000 });
  if (!started) throw new Error(`host exited at start; see ${join(dir, `${name}.log`)}`);
  const metrics = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const stop = async () => {
    host.kill('SIGTERM');
    await host;
  };
  return { metrics, stop };
}

function sumMetric(text: string, name: string, filter: (labels: string) => boolean = () => true): number {
  let n = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.e+-]+)$`, 'gm'))) if (filter(m[1] ?? '')) n += Number(m[2]);
  return n;
}

const STATUS_METHODS = /method="(GetInstancesStatus|InstanceExists|InstanceShutdown)"/;

interface LifecycleFigures {
  batch: boolean;
  passes: number;
  callsPerPass: number;
  avgPassSeconds: number;
  notReady: number;
}

async function lifecycleRun(cp: ControlPlane, state: string, dir: string, runId: string, batch: boolean, log: (s: string) => void): Promise<LifecycleFigures> {
  const host = await startHostProcess(
    [
      '--cloud-provider=local',
      '--leader-elect=false',
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--cluster-name=bench',
      '--controllers=cloud-node-lifecycle',
      '--node-monitor-period=5s',
      `--node-selector=bench-run=${runId}`,
      `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
      ...(batch ? [] : ['--plugin-env=LOCALCLOUD_NO_BATCH=1']),
    ],
    dir,
    `lifecycle-${batch ? 'batch' : 'single'}`,
  );
  const read = async () => {
    const text = await host.metrics();
    return {
      passes: sumMetric(text, 'ccm_node_lifecycle_pass_duration_seconds_count'),
      seconds: sumMetric(text, 'ccm_node_lifecycle_pass_duration_seconds_sum'),
      calls: sumMetric(text, 'ccm_plugin_rpc_duration_seconds_count', (l) => STATUS_METHODS.test(l)),
      notReady: sumMetric(text, 'ccm_node_lifecycle_not_ready_nodes'),
    };
  };
  // The first pass starts when the cache has synced; measure the passes after it.
  const first = await waitFor(async () => {
    const r = await read();
    return r.passes >= 1 ? r : undefined;
  }, { what: 'first lifecycle pass', timeoutMs: 120_000 });
  const PASSES = 4;
  const last = await waitFor(async () => {
    const r = await read();
    return r.passes >= first.passes + PASSES ? r : undefined;
  }, { what: `${PASSES} more passes`, timeoutMs: 300_000, intervalMs: 500 });
  await host.stop();
  const passes = last.passes - first.passes;
  const fig = { batch, passes, callsPerPass: (last.calls - first.calls) / passes, avgPassSeconds: (last.seconds - first.seconds) / passes, notReady: last.notReady };
  log(`lifecycle ${batch ? 'batch' : 'single'}: ${f1(fig.callsPerPass)} calls/pass, ${f2(fig.avgPassSeconds)} s/pass`);
  return fig;
}

async function lifecycleBench(cp: ControlPlane, log: (s: string) => void): Promise<LifecycleFigures[]> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-bench-lifecycle-'));
  const state = join(dir, 'cloud');
  const runId = `lc${Date.now().toString(36)}`;
  const names = Array.from({ length: 2000 }, (_, i) => `${runId}-${i}`);
  await localcloud(state, 'instance', 'add', ...names);
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  log('lifecycle: creating 2,000 nodes (1,500 Ready)');
  await eachLimit(names, async (name) => {
    await core.createNode({ body: { metadata: { name, labels: { 'bench-run': runId } } } });
  });
  await eachLimit(names.slice(500), (name) => setReady(core, name, true));
  await localcloud(state, 'knobs', 'set', 'latencyMs=50');
  try {
    return [await lifecycleRun(cp, state, dir, runId, true, log), await lifecycleRun(cp, state, dir, runId, false, log)];
  } finally {
    await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  }
}

interface RouteFigures {
  batch: boolean;
  nodes: number;
  seconds: number;
  createSeconds: number;
  routeCalls: number;
}

async function routesRun(cp: ControlPlane, batch: boolean, log: (s: string) => void): Promise<RouteFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-bench-routes-'));
  const state = join(dir, 'cloud');
  const runId = `rt${batch ? 'b' : 's'}${Date.now().toString(36)}`;
  const N = 2000;
  const names = Array.from({ length: N }, (_, i) => `${runId}-${i}`);
  await localcloud(state, 'instance', 'add', ...names);
  const host = await startHostProcess(
    [
      '--cloud-provider=local',
      '--leader-elect=false',
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--cluster-name=bench',
      '--controllers=route',
      '--cluster-cidr=10.64.0.0/12',
      `--node-selector=bench-run=${runId}`,
      '--kube-api-qps=100',
      '--kube-api-burst=100',
      `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
      ...(batch ? [] : ['--plugin-env=LOCALCLOUD_NO_BATCH=1']),
    ],
    dir,
    `routes-${batch ? 'batch' : 'single'}`,
  );
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  log(`routes (${batch ? 'batch' : 'single'}): creating ${N} nodes with pod CIDRs`);
  const t0 = Date.now();
  await eachLimit(names.map((n, i) => [n, i] as const), async ([name, i]) => {
    const cidr = `10.${64 + (i >> 8)}.${i & 255}.0/24`;
    await core.createNode({ body: { metadata: { name, labels: { 'bench-run': runId } }, spec: { podCIDR: cidr, podCIDRs: [cidr] } } });
  });
  const createSeconds = (Date.now() - t0) / 1000;
  const routeStore = new StateStore(state);
  await waitFor(async () => {
    if (routeStore.read().routes.length < N) return false;
    const list = await core.listNode({ labelSelector: `bench-run=${runId}` });
    return list.items.filter((n: V1Node) => (n.status?.conditions ?? []).some((c) => c.type === 'NetworkUnavailable' && c.status === 'False')).length === N;
  }, { what: 'all routes and conditions', timeoutMs: 15 * 60_000, intervalMs: 500 });
  const seconds = (Date.now() - t0) / 1000;
  const text = await host.metrics();
  const routeCalls = sumMetric(text, 'ccm_plugin_rpc_duration_seconds_count', (l) => /method="(ListRoutes|CreateRoute|DeleteRoute|ReconcileRoutes)"/.test(l));
  await host.stop();
  await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  log(`routes ${batch ? 'batch' : 'single'}: ${f1(seconds)} s (creating the nodes: ${f1(createSeconds)} s)`);
  return { batch, nodes: N, seconds, createSeconds, routeCalls };
}

/** The machine is shared: say how loaded it was (1-minute load average on ${cpus().length} cores). */
const busy = () => `\nMachine load at the end of the run: 1-minute load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores.\n`;

export const lifecycleSection: BenchSection = {
  name: 'lifecycle',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const rows = await lifecycleBench(cp, ctx.log);
    return `## Node lifecycle controller: one pass over 500 NotReady nodes

2,000 nodes (1,500 Ready, 500 without a Ready condition), every instance present in the local cloud, which
adds 50 ms to every call; \`--node-monitor-period=5s\`; the host runs as its own process. Figures are the
averages over 4 passes after the first (from the host's \`/metrics\`: plugin calls of GetInstancesStatus,
InstanceExists and InstanceShutdown, and \`ccm_node_lifecycle_pass_duration_seconds\`).

| mode | NotReady nodes | cloud calls per pass | pass duration (s) |
|---|---|---|---|
${rows.map((r) => `| ${r.batch ? 'batch (GetInstancesStatus, 500 per call)' : 'single calls (InstanceExists + InstanceShutdown, 16 in flight)'} | ${int(r.notReady)} | **${f1(r.callsPerPass)}** | **${f2(r.avgPassSeconds)}** |`).join('\n')}

Targets (issue 4): batch mode ≤ 1 s per pass over 500 NotReady nodes and ≤ 2 cloud calls per pass.
Upstream makes 2 calls per NotReady node, one after the other: about 1,000 calls and 50 s per pass here.
${busy()}`;
  },
};

export const routesSection: BenchSection = {
  name: 'routes',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const rows = [await routesRun(cp, true, ctx.log), await routesRun(cp, false, ctx.log)];
    return `## Route controller: 2,000 nodes from scratch

2,000 nodes created with pod CIDRs (32 concurrent creates from the benchmark's own client), every instance
present in the local cloud; the host runs \`--controllers=route --kube-api-qps=100 --kube-api-burst=100\` as its
own process. Time runs from the first node create until the local cloud has all 2,000 routes and every node
has \`NetworkUnavailable=False\` (reason RouteCreated). Each node costs one status patch.

| mode | nodes | seconds until all routes and conditions | creating the nodes took (s) | done after the last create (s) | route calls to the plugin |
|---|---|---|---|---|---|
${rows.map((r) => `| ${r.batch ? 'batch (ReconcileRoutes)' : 'single calls (ListRoutes + CreateRoute, 32 in flight)'} | ${int(r.nodes)} | **${f1(r.seconds)}** | ${f1(r.createSeconds)} | ${f1(r.seconds - r.createSeconds)} | ${int(r.routeCalls)} |`).join('\n')}

Target (issue 4): ≤ 60 s at \`--kube-api-qps=100\` (2,000 condition patches alone take 20 s at that rate).
In single-call mode every CreateRoute is one locked append to the local cloud's state log (its cost does not grow
with the route table); a real cloud's per-call cost differs.
${busy()}`;
  },
};
