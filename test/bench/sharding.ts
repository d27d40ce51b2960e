/**
 * Alpha sharding (issue 34 item 4, docs/design/sharding.md): the host with
 * 1, 2 and 4 active replicas (--shard-count/--shard-index), each a real
 * process with its own local-cloud plugin over one shared cloud state (the
 * journal names the replica behind every call), on the bench's control plane.
 *
 * 1. Throughput: N tainted Nodes and N LoadBalancer Services exist before the
 *    replicas start; time from the replicas' start until every Node is
 *    initialized and every Service has an ingress, cloud calls per replica,
 *    and keys (node names, service uids) that more than one replica touched.
 * 2. The budget: the same with --cloud-api-qps/--cloud-api-burst given to
 *    every replica (each takes 1/count): the cloud-call rate of all replicas
 *    together, per second, against the budget.
 * 3. A shard loss: 2 shards × 2 replicas with leader election (a standby per
 *    shard Lease); shard 1's leader is SIGKILLed, new Nodes and Services are
 *    created at once, and the time until each shard's new objects are served
 *    is measured; no load balancer may be created twice or deleted, no Node
 *    deleted.
 *
 * Run alone: `BENCH_ONLY=sharding npm run bench` (BENCH_SHARD_OBJECTS sets N).
 */
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, type V1Node, type V1Service } from '@kubernetes/client-node';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { startCcm, type RunningCcm } from '../helpers/ccm-side.js';
import { localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { shardOfUid } from '../../host/kube/shard-view.js';
import { readJournal, type JournalEntry } from '../../plugins/local/journal.js';
import { cpuSeconds, rssMb } from './ccm-sides.js';
import { f1, int, type BenchSection } from './section.js';
import { initialized, uninitializedNode } from './nodes.js';

const CREATE_CONCURRENCY = 32;
const OBJECTS = Number(process.env.BENCH_SHARD_OBJECTS ?? 2000);
const SETTINGS = {
  objects: OBJECTS,
  latencyMs: 50,
  qps: 100,
  burst: 200,
  workers: 10,
  budget: { qps: 4, burst: 4 },
  lossObjects: Math.max(50, Math.round(OBJECTS / 10)),
};

interface RunFigures {
  replicas: number;
  budget?: { qps: number; burst: number };
  seconds: number;
  nodesPerSecond: number;
  servicesPerSecond: number;
  cloudCalls: number;
  callsPerReplica: number[];
  /** Calls of all replicas together in their busiest second, and on average. */
  peakCallsPerSecond: number;
  meanCallsPerSecond: number;
  /** Node names and service uids that more than one replica's calls named. */
  keysTouchedTwice: number;
  hostCpuSeconds: number;
  hostPeakRssMb: number[];
}

interface LossFigures {
  leaseDurationSeconds: number;
  /** Seconds from the SIGKILL until the last new object of each shard was served. */
  servedAfterKill: { shard0: number; shard1: number };
  newObjects: { shard0: number; shard1: number };
  lbCreatedTwice: number;
  lbDeleted: number;
  nodesDeleted: number;
}

let seq = 0;

async function createObjects(core: CoreV1Api, state: string, ns: string, run: string, count: number, from = 0): Promise<void> {
  const names = Array.from({ length: count }, (_, i) => `${run}-${from + i}`);
  await localcloud(state, 'instance', 'add', ...names);
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < names.length) {
        const name = names[next++]!;
        await core.createNode({
          body: uninitializedNode(name, { 'bench-shard': run }),
        });
        await core.createNamespacedService({
          namespace: ns,
          body: { metadata: { name }, spec: { type: 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP' }] } },
        });
      }
    }),
  );
}

const served = (s: V1Service) => (s.status?.loadBalancer?.ingress ?? []).length > 0;

async function snapshot(core: CoreV1Api, ns: string, run: string): Promise<{ nodes: V1Node[]; services: V1Service[] }> {
  const [nodes, services] = await Promise.all([
    core.listNode({ labelSelector: `bench-shard=${run}` }),
    core.listNamespacedService({ namespace: ns }),
  ]);
  return { nodes: nodes.items, services: services.items };
}

/** Removes what a run made: Nodes by label, Services' finalizers then the namespace. */
async function cleanUp(core: CoreV1Api, ns: string, run: string): Promise<void> {
  await core.deleteCollectionNode({ labelSelector: `bench-shard=${run}` }).catch(() => undefined);
  const services = (await core.listNamespacedService({ namespace: ns })).items;
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < services.length) {
        const s = services[next++]!;
        await core
          .patchNamespacedService({ name: s.metadata!.name!, namespace: ns, body: [{ op: 'remove', path: '/metadata/finalizers' }] }, {
            headers: { 'Content-Type': 'application/json-patch+json' },
          } as never)
          .catch(() => undefined);
      }
    }),
  );
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
}

function keysTouchedTwice(entries: JournalEntry[]): number {
  const by = new Map<string, Set<string>>();
  for (const e of entries) {
    for (const k of [...(e.key ? [e.key] : []), ...(e.keys ?? [])]) {
      if (!by.has(k)) by.set(k, new Set());
      by.get(k)!.add(e.caller);
    }
  }
  return [...by.values()].filter((s) => s.size > 1).length;
}

function rates(entries: JournalEntry[], t0: number, t1: number): { peak: number; mean: number } {
  const perSecond = new Map<number, number>();
  for (const e of entries) {
    const s = Math.floor(e.start / 1000);
    perSecond.set(s, (perSecond.get(s) ?? 0) + 1);
  }
  return { peak: Math.max(0, ...perSecond.values()), mean: entries.length / Math.max(1, (t1 - t0) / 1000) };
}

/** The replicas: each its own process and plugin, on one cloud state. */
async function startReplicas(
  cp: ControlPlane,
  o: { state: string; dir: string; ns: string; run: string; count: number; perShard: number; flags: string[] },
): Promise<RunningCcm[]> {
  const out: RunningCcm[] = [];
  for (let index = 0; index < o.count; index++) {
    for (let r = 0; r < o.perShard; r++) {
      const dir = join(o.dir, `shard-${index}-${r}`);
      await mkdir(dir, { recursive: true });
      out.push(
        await startCcm(
          cp,
          { kind: 'ours', nodeFlags: [] },
          {
            controllers: 'cloud-node,service',
            qps: SETTINGS.qps,
            burst: SETTINGS.burst,
            clusterName: o.run,
            flags: [
              `--concurrent-node-syncs=${SETTINGS.workers}`,
              `--concurrent-service-syncs=${SETTINGS.workers}`,
              `--node-selector=bench-shard=${o.run}`,
              `--watch-namespace=${o.ns}`,
              `--shard-count=${o.count}`,
              `--shard-index=${index}`,
              ...o.flags,
            ],
          },
          o.state,
          dir,
          // Records only: several plugin processes would otherwise compete for the listeners.
          { LOCALCLOUD_LB_CIDR: '127.64.0.0/16', LOCALCLOUD_FORWARD: 'false' },
        ),
      );
    }
  }
  return out;
}

async function converge(core: CoreV1Api, ns: string, run: string, n: number, what: string): Promise<void> {
  await waitFor(
    async () => {
      const { nodes, services } = await snapshot(core, ns, run);
      return nodes.filter(initialized).length === n && services.filter(served).length === n;
    },
    { what, timeoutMs: 20 * 60_000, intervalMs: 500 },
  );
}

async function throughputRun(
  cp: ControlPlane,
  replicas: number,
  budget: { qps: number; burst: number } | undefined,
  log: (s: string) => void,
): Promise<RunFigures> {
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const run = `shard${++seq}-${replicas}`;
  const ns = `bench-${run}`;
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-shard-${run}-`));
  const state = join(dir, 'cloud');
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await localcloud(state, 'knobs', 'set', `latencyMs=${SETTINGS.latencyMs}`);
  log(`sharding: ${run}: creating ${SETTINGS.objects} Nodes and Services (logs in ${dir})`);
  await createObjects(core, state, ns, run, SETTINGS.objects);
  const journal0 = (await readJournal(state)).length;
  const t0 = Date.now();
  const hosts = await startReplicas(cp, {
    state,
    dir,
    ns,
    run,
    count: replicas,
    perShard: 1,
    flags: budget ? [`--cloud-api-qps=${budget.qps}`, `--cloud-api-burst=${budget.burst}`] : [],
  });
  await converge(core, ns, run, SETTINGS.objects, `${run} converged`);
  const t1 = Date.now();
  const seconds = (t1 - t0) / 1000;
  const cpu = (await Promise.all(hosts.map((h) => cpuSeconds(h.pid)))).reduce((a, b) => a + b, 0);
  const rss = await Promise.all(hosts.map((h) => rssMb(h.pid, 'VmHWM')));
  const entries = (await readJournal(state)).slice(journal0);
  const callers = [...new Set(entries.map((e) => e.caller))];
  const r = rates(entries, t0, t1);
  await Promise.all(hosts.map((h) => h.stop()));
  await cleanUp(core, ns, run);
  log(`sharding: ${run}: ${f1(seconds)} s, ${entries.length} cloud calls, peak ${r.peak}/s`);
  return {
    replicas,
    ...(budget ? { budget } : {}),
    seconds,
    nodesPerSecond: SETTINGS.objects / seconds,
    servicesPerSecond: SETTINGS.objects / seconds,
    cloudCalls: entries.length,
    callsPerReplica: callers.map((c) => entries.filter((e) => e.caller === c).length),
    peakCallsPerSecond: r.peak,
    meanCallsPerSecond: r.mean,
    keysTouchedTwice: keysTouchedTwice(entries),
    hostCpuSeconds: cpu,
    hostPeakRssMb: rss,
  };
}

async function identityOf(h: RunningCcm): Promise<string> {
  const text = await readFile(h.logFile, 'utf8');
  const m = /"identity":"([^"]+)"|\bidentity="([^"]+)"/.exec(text.split('\n').find((l) => l.includes('cloud-controller-manager started')) ?? '');
  if (!m) throw new Error(`no identity in ${h.logFile}`);
  return (m[1] ?? m[2])!;
}

async function lossRun(cp: ControlPlane, log: (s: string) => void): Promise<LossFigures> {
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  const coordination = cp.kubeConfig().makeApiClient(CoordinationV1Api);
  const run = `shard${++seq}-loss`;
  const ns = `bench-${run}`;
  const lease = `bench-${run}`;
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-shard-${run}-`));
  const state = join(dir, 'cloud');
  const initial = SETTINGS.objects / 2;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await localcloud(state, 'knobs', 'set', `latencyMs=${SETTINGS.latencyMs}`);
  await createObjects(core, state, ns, run, initial);
  const hosts = await startReplicas(cp, {
    state,
    dir,
    ns,
    run,
    count: 2,
    perShard: 2,
    flags: ['--leader-elect=true', `--leader-elect-resource-name=${lease}`, '--leader-elect-resource-namespace=kube-system'],
  });
  await converge(core, ns, run, initial, `${run}: first ${initial} converged`);
  const holder = (await coordination.readNamespacedLease({ name: `${lease}-shard-1`, namespace: 'kube-system' })).spec?.holderIdentity;
  const ids = await Promise.all(hosts.map(identityOf));
  const victim = hosts[ids.indexOf(holder ?? '')];
  if (!victim) throw new Error(`shard 1's Lease holder ${holder} is none of the replicas`);
  const nodesBefore = (await snapshot(core, ns, run)).nodes.length;
  const killedAt = Date.now();
  process.kill(victim.pid, 'SIGKILL');
  log(`sharding: ${run}: killed shard 1's leader ${holder}; creating ${SETTINGS.lossObjects} more`);
  await createObjects(core, state, ns, run, SETTINGS.lossObjects, initial);
  const firstServed = new Map<string, number>();
  const total = initial + SETTINGS.lossObjects;
  await waitFor(
    async () => {
      const { nodes, services } = await snapshot(core, ns, run);
      const now = Date.now();
      for (const n of nodes) if (initialized(n) && !firstServed.has(n.metadata!.uid!)) firstServed.set(n.metadata!.uid!, now);
      for (const s of services) if (served(s) && !firstServed.has(s.metadata!.uid!)) firstServed.set(s.metadata!.uid!, now);
      return nodes.filter(initialized).length === total && services.filter(served).length === total;
    },
    { what: `${run}: all ${total} served after the kill`, timeoutMs: 10 * 60_000, intervalMs: 250 },
  );
  const { nodes, services } = await snapshot(core, ns, run);
  const fresh = [...nodes, ...services].filter((o) => Number(/-(\d+)$/.exec(o.metadata!.name!)?.[1]) >= initial);
  const byShard = (i: number) => fresh.filter((o) => shardOfUid(o.metadata!.uid!, 2) === i);
  const lastServed = (i: number) => Math.max(...byShard(i).map((o) => firstServed.get(o.metadata!.uid!)! - killedAt)) / 1000;
  const entries = await readJournal(state);
  const creates = new Map<string, number>();
  for (const e of entries) {
    if (e.method === 'loadBalancers.ensureLoadBalancer' && e.created && e.key) creates.set(e.key, (creates.get(e.key) ?? 0) + 1);
    if (e.method === 'loadBalancers.ensureLoadBalancers') for (const k of e.createdKeys ?? []) creates.set(k, (creates.get(k) ?? 0) + 1);
  }
  const figures: LossFigures = {
    leaseDurationSeconds: 15,
    servedAfterKill: { shard0: lastServed(0), shard1: lastServed(1) },
    newObjects: { shard0: byShard(0).length, shard1: byShard(1).length },
    lbCreatedTwice: [...creates.values()].filter((n) => n > 1).length,
    lbDeleted: entries.filter((e) => e.method === 'loadBalancers.ensureLoadBalancerDeleted').length,
    nodesDeleted: nodesBefore + SETTINGS.lossObjects - nodes.length,
  };
  await Promise.all(hosts.filter((h) => h !== victim).map((h) => h.stop()));
  await victim.stop().catch(() => undefined);
  await cleanUp(core, ns, run);
  log(`sharding: ${run}: ${JSON.stringify(figures)}`);
  return figures;
}

function render(runs: RunFigures[], loss: LossFigures): string {
  const row = (r: RunFigures) =>
    `| ${r.replicas} | ${r.budget ? `${r.budget.qps}/s, burst ${r.budget.burst}` : 'none'} | ${f1(r.seconds)} | ${f1(r.nodesPerSecond)} | ${int(r.cloudCalls)} (${r.callsPerReplica.join(' + ')}) | ${r.peakCallsPerSecond} | ${f1(r.meanCallsPerSecond)} | ${r.keysTouchedTwice} | ${f1(r.hostCpuSeconds)} | ${r.hostPeakRssMb.map((m) => Math.round(m)).join(', ')} |`;
  return `## Sharding (alpha): 1, 2 and 4 active replicas

${int(SETTINGS.objects)} tainted Nodes and ${int(SETTINGS.objects)} LoadBalancer Services exist before the replicas start
(\`--controllers=cloud-node,service\`, \`--shard-count\`=replicas, each replica its own local-cloud plugin over one
shared cloud state that adds ${SETTINGS.latencyMs} ms to every call; ${SETTINGS.workers} node and ${SETTINGS.workers} service workers and
\`--kube-api-qps=${SETTINGS.qps}\` per replica). Converged = every Node initialized and every Service with an ingress, timed
from the replicas' start. Cloud calls from the local cloud's journal (a batch call counts once), split by replica;
"touched twice" counts node names and service uids that calls of more than one replica named (must be 0).

| replicas | cloud budget (all shards) | converge s | objects/s (each kind) | cloud calls | busiest second | mean calls/s | touched twice | host CPU s (sum) | host peak RSS MiB |
|---|---|---|---|---|---|---|---|---|---|
${runs.map(row).join('\n')}

Shard loss: 2 shards × 2 replicas (leader election on each shard's Lease, ${loss.leaseDurationSeconds} s lease), ${int(SETTINGS.objects / 2)} Nodes and
Services converged, then shard 1's leader SIGKILLed and ${SETTINGS.lossObjects} more of each created at once
(${loss.newObjects.shard0} new objects in shard 0, ${loss.newObjects.shard1} in shard 1): shard 0's last new object served
${f1(loss.servedAfterKill.shard0)} s after the kill, shard 1's ${f1(loss.servedAfterKill.shard1)} s (its standby takes the Lease once it expires).
Load balancers created twice: ${loss.lbCreatedTwice}; load balancers deleted: ${loss.lbDeleted}; Nodes deleted: ${loss.nodesDeleted}.
`;
}

export const shardingSection: BenchSection = {
  name: 'sharding',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const runs: RunFigures[] = [];
    for (const replicas of [1, 2, 4]) runs.push(await throughputRun(cp, replicas, undefined, ctx.log));
    runs.push(await throughputRun(cp, 4, SETTINGS.budget, ctx.log));
    const loss = await lossRun(cp, ctx.log);
    return { markdown: render(runs, loss), figures: { settings: SETTINGS, runs, loss } };
  },
};
