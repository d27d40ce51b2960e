/**
 * Nodes of two providers in one host (issue 31, "Done when": the bench item),
 * beside the upstream Go CCM running one provider, against a real control
 * plane. Ours runs two local clouds from --providers-config ("east" and
 * "west": different provider names, so different providerID prefixes, each
 * claiming the Nodes its node selector matches) and initializes N/2 Nodes
 * of each; upstream cannot run two providers in one process, so it runs one
 * local cloud holding all N instances and initializes all N Nodes. Same
 * Node creation as node-init (tainted, no providerID), same QPS/burst and
 * --concurrent-node-syncs, one side after the other. Measures time to
 * converge, cloud calls (each cloud's journal), Node and Event writes (the
 * kube-apiserver's counter), and CPU and peak RSS of the CCM process and of
 * each provider process (ours: its two exec-mode children; upstream: its
 * local cloud sidecar).
 */
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { LOCAL_PLUGIN, localcloud } from '../helpers/localcloud.js';
import { waitFor } from '../helpers/wait.js';
import { startCcm, type RunningCcm, type Side } from '../helpers/ccm-side.js';
import { ALLOW_SIMULATION_ENV } from '../../plugins/local/simulation-guard.js';
import { apiRequests, cpuSeconds, journaledCalls, ratio, rssMb } from './ccm-sides.js';
import { f1, int, type BenchSection } from './section.js';
import { CLOUD_PROVIDER_VERSION, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';
import { initialized, uninitializedNode } from './nodes.js';

const CREATE_CONCURRENCY = 32;
/** The label each provider's node selector matches (a Node has no providerID before initialization). */
const CLOUD_LABEL = 'bench-cloud';
const CLOUDS = ['east', 'west'] as const;
type CloudName = (typeof CLOUDS)[number];

const SETTINGS = { nodes: 1000, workers: 10, latencyMs: 50, qps: 100, burst: 200 };

/** CPU and peak RSS of one process, from its start until every Node was initialized. */
interface ProcessFigures {
  cpuSeconds: number;
  peakRssMb: number;
}

interface SideFigures {
  seconds: number;
  createSeconds: number;
  /** Seconds from the last create until every Node was initialized: the CCM's tail, apart from the create rate. */
  afterCreateSeconds: number;
  /** Calls every cloud's journal recorded (a batch call counts once). */
  cloudCalls: number;
  /** The same, per cloud (ours: east and west; upstream: its one cloud). */
  cloudCallsBy: Record<string, number>;
  /** Nodes whose providerID starts with each provider's prefix once initialized. */
  nodesBy: Record<string, number>;
  nodeWrites: number;
  eventWrites: number;
  /** The CCM process (our host; the upstream Go binary). */
  ccm: ProcessFigures & { startRssMb: number };
  /** Each provider process, by provider name. */
  providers: Record<string, ProcessFigures>;
}

async function processFigures(pid: number): Promise<ProcessFigures> {
  return { cpuSeconds: await cpuSeconds(pid), peakRssMb: await rssMb(pid, 'VmHWM') };
}

/** Our host's provider processes (its children), by the LOCALCLOUD_PROVIDER_NAME in their environment. */
async function providerChildren(hostPid: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== hostPid) continue;
      const env = (await readFile(`/proc/${entry}/environ`, 'utf8')).split('\0');
      const name = env.find((e) => e.startsWith('LOCALCLOUD_PROVIDER_NAME='))?.split('=')[1];
      if (name) out.set(name, Number(entry));
    } catch {
      // The process ended while being read: not one of ours.
    }
  }
  return out;
}

/** The pluginEnv of one local cloud in our providers file. */
function cloudEnv(state: string, name: CloudName): string[] {
  return [
    `LOCALCLOUD_STATE_DIR=${state}`,
    'LOCALCLOUD_JOURNAL=all',
    `${ALLOW_SIMULATION_ENV}=true`,
    `LOCALCLOUD_PROVIDER_NAME=${name}`,
    `LOCALCLOUD_NODE_SELECTOR=${CLOUD_LABEL}=${name}`,
  ];
}

/** ours2: our host with both clouds; ours1: our host with one cloud holding all (the reference); upstream: one cloud. */
type SideKind = 'ours2' | 'ours1' | 'upstream';

async function benchSide(cp: ControlPlane, side: SideKind, bin: string, runId: string, log: (s: string) => void): Promise<SideFigures> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-bench-two-${side}-`));
  const names = Array.from({ length: SETTINGS.nodes }, (_, i) => `bench-${runId}-${i}`);
  const cloudOf = (i: number): CloudName => CLOUDS[i % 2]!;
  // Ours: one state per cloud holding its half; upstream: one state holding all.
  const states = new Map<string, string>();
  if (side === 'ours2') {
    for (const c of CLOUDS) {
      const state = join(dir, c);
      await localcloud(state, 'instance', 'add', ...names.filter((_, i) => cloudOf(i) === c));
      await localcloud(state, 'knobs', 'set', `latencyMs=${SETTINGS.latencyMs}`);
      states.set(c, state);
    }
  } else {
    const state = join(dir, 'local');
    await localcloud(state, 'instance', 'add', ...names);
    await localcloud(state, 'knobs', 'set', `latencyMs=${SETTINGS.latencyMs}`);
    states.set('local', state);
  }

  let running: RunningCcm;
  const common = { controllers: 'cloud-node', qps: SETTINGS.qps, burst: SETTINGS.burst, flags: [`--concurrent-node-syncs=${SETTINGS.workers}`] };
  if (side === 'ours2') {
    const file = join(dir, 'providers.yaml');
    const entries = CLOUDS.map((c) => {
      const env = cloudEnv(states.get(c)!, c).map((e) => `      - ${e}`);
      return `  - name: ${c}\n    pluginPath: ${LOCAL_PLUGIN}\n${c === 'east' ? '    routes: true\n' : ''}    pluginEnv:\n${env.join('\n')}`;
    });
    await writeFile(file, `providers:\n${entries.join('\n')}\n`);
    const s: Side = { kind: 'ours', nodeFlags: [], providersConfig: file };
    running = await startCcm(cp, s, common, states.get('east')!, dir);
  } else if (side === 'ours1') {
    running = await startCcm(cp, { kind: 'ours', nodeFlags: [] }, common, states.get('local')!, dir, { LOCALCLOUD_PROVIDER_NAME: 'local' });
  } else {
    running = await startCcm(cp, { kind: 'upstream', bin }, common, states.get('local')!, dir);
  }
  const providerPids = side === 'upstream' ? new Map([['local', running.sidecarPid!]]) : await providerChildren(running.pid);
  if (providerPids.size !== states.size)
    throw new Error(`${side}: found provider processes ${[...providerPids.keys()].join(', ')}; see ${running.logFile}`);
  const startRssMb = await rssMb(running.pid, 'VmRSS');
  const calls0 = new Map<string, number>();
  for (const [c, state] of states) calls0.set(c, await journaledCalls(state));
  const nodeWrites0 = await apiRequests(cp, 'nodes', ['PATCH', 'PUT', 'UPDATE']);
  const eventWrites0 = await apiRequests(cp, 'events', ['POST', 'PATCH', 'CREATE']);

  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  log(`two-providers: ${side}: creating ${SETTINGS.nodes} tainted nodes, logs in ${dir}`);
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < names.length) {
        const i = next++;
        const name = names[i]!;
        await core.createNode({
          body: uninitializedNode(name, { 'bench-run': runId, [CLOUD_LABEL]: cloudOf(i) }),
        });
      }
    }),
  );
  const createSeconds = (Date.now() - t0) / 1000;
  let done: V1Node[] = [];
  await waitFor(
    async () => {
      const list = await core.listNode({ labelSelector: `bench-run=${runId}` });
      done = list.items.filter(initialized);
      return done.length === SETTINGS.nodes;
    },
    { what: `${SETTINGS.nodes} nodes initialized by ${side}`, timeoutMs: 15 * 60_000, intervalMs: 250 },
  );
  const seconds = (Date.now() - t0) / 1000;
  const ccm = { ...(await processFigures(running.pid)), startRssMb };
  const providers: Record<string, ProcessFigures> = {};
  for (const [name, pid] of providerPids) providers[name] = await processFigures(pid);
  const cloudCallsBy: Record<string, number> = {};
  for (const [c, state] of states) cloudCallsBy[c] = (await journaledCalls(state)) - calls0.get(c)!;
  const nodeWrites = (await apiRequests(cp, 'nodes', ['PATCH', 'PUT', 'UPDATE'])) - nodeWrites0;
  const eventWrites = (await apiRequests(cp, 'events', ['POST', 'PATCH', 'CREATE'])) - eventWrites0;
  await running.stop();
  const nodesBy: Record<string, number> = {};
  for (const n of done) {
    const prefix = /^([a-z0-9-]+):\/\//.exec(n.spec?.providerID ?? '')?.[1] ?? '(none)';
    nodesBy[prefix] = (nodesBy[prefix] ?? 0) + 1;
  }
  // Each provider initializes only its own Nodes: a Node of the other cloud would carry the wrong prefix.
  if (side === 'ours2') {
    const wrong = done.filter((n) => !(n.spec?.providerID ?? '').startsWith(`${n.metadata?.labels?.[CLOUD_LABEL]}://`));
    if (wrong.length)
      throw new Error(
        `ours: ${wrong.length} Nodes initialized by the other provider, e.g. ${wrong[0]!.metadata?.name} ${wrong[0]!.spec?.providerID}`,
      );
  }
  log(`two-providers: ${side} done in ${f1(seconds)} s`);
  await core.deleteCollectionNode({ labelSelector: `bench-run=${runId}` });
  return {
    seconds,
    createSeconds,
    afterCreateSeconds: seconds - createSeconds,
    cloudCalls: Object.values(cloudCallsBy).reduce((a, b) => a + b, 0),
    cloudCallsBy,
    nodesBy,
    nodeWrites,
    eventWrites,
    ccm,
    providers,
  };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const providersCpu = (f: SideFigures) => sum(Object.values(f.providers).map((p) => p.cpuSeconds));
const providersRss = (f: SideFigures) => sum(Object.values(f.providers).map((p) => p.peakRssMb));

export const twoProvidersSection: BenchSection = {
  name: 'two-providers',
  async run(ctx) {
    const bin = await ensureUpstreamCcm((l) => ctx.log(l));
    const cp = await ctx.controlPlane();
    const sectionStart = Date.now();
    const loadBefore = loadavg()[0]!;
    // Two rounds, the second in the other order, so no side always runs on a warmer (or busier) control plane.
    const rounds: ({ label: string } & Record<SideKind, SideFigures>)[] = [];
    for (const [i, order] of (
      [
        ['ours2', 'ours1', 'upstream'],
        ['upstream', 'ours1', 'ours2'],
      ] as SideKind[][]
    ).entries()) {
      const got = {} as Record<SideKind, SideFigures>;
      for (const side of order) got[side] = await benchSide(cp, side, bin, `t${i}${side}`, ctx.log);
      rounds.push({ label: `${i + 1} (${order[0] === 'upstream' ? 'upstream' : 'ours'} first)`, ...got });
    }
    const minutes = (Date.now() - sectionStart) / 60_000;
    const loadAfter = loadavg()[0]!;
    const half = SETTINGS.nodes / 2;
    const row = (what: string, pick: (f: SideFigures) => number, fmt: (n: number) => string, bold = false) =>
      rounds
        .map((r) => {
          const o = fmt(pick(r.ours2));
          return `| ${what} | ${r.label} | ${bold ? `**${o}**` : o} | ${fmt(pick(r.ours1))} | ${fmt(pick(r.upstream))} | ${ratio(pick(r.ours2), pick(r.upstream))} |`;
        })
        .join('\n');
    const text = (what: string, show: (f: SideFigures) => string) =>
      rounds.map((r) => `| ${what} | ${r.label} | ${show(r.ours2)} | ${show(r.ours1)} | ${show(r.upstream)} | |`).join('\n');
    const byProvider = (r: Record<string, number>) =>
      Object.entries(r)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${int(v)}`)
        .join(', ');
    const proc = (pick: (p: ProcessFigures) => number) => (f: SideFigures) =>
      Object.entries(f.providers)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, p]) => `${k} ${f1(pick(p))}`)
        .join(', ');
    const markdown = `## Nodes of two providers in one host, beside upstream running one

Issue 31: one host running two providers, each initializing only the Nodes it owns. ${int(SETTINGS.nodes)} Nodes
registered with the \`node.cloudprovider.kubernetes.io/uninitialized\` taint and no providerID (32 concurrent creates
from the benchmark's own client, as in node-init), every other one labelled \`${CLOUD_LABEL}=east\` or
\`${CLOUD_LABEL}=west\`. All sides run on the same control plane in the same run, one after the other, with the same
\`--kube-api-qps=${SETTINGS.qps} --kube-api-burst=${SETTINGS.burst}\`, \`--controllers=cloud-node\`,
\`--concurrent-node-syncs=${SETTINGS.workers}\`, and fresh local clouds that add ${SETTINGS.latencyMs} ms to every call:

- **ours**: the host with \`--providers-config\` listing two local clouds, \`east\` and \`west\` (provider names, so
  providerID prefixes \`east://\` and \`west://\`), both spawned by the host (exec mode), each holding the instances
  of its ${int(half)} Nodes and claiming them by its node selector (\`LOCALCLOUD_NODE_SELECTOR=${CLOUD_LABEL}=<name>\`).
  The cloud node controller runs one instance per provider, each with its own queue and ${SETTINGS.workers} workers; both
  share the host's one Kubernetes client and its QPS. The bench checks every Node got its own cloud's prefix.
- **upstream**: the upstream Go cloud-controller-manager (\`k8s.io/cloud-provider\` ${CLOUD_PROVIDER_VERSION}) built
  from tools/upstream-ccm, whose \`grpc\` cloud provider forwards each call to one local cloud (a sidecar on a Unix
  socket) holding all ${int(SETTINGS.nodes)} instances. Upstream runs one cloud provider per process, so it cannot run
  two side by side (two CCMs would each see, and act on, the other's Nodes: the problem issue 31 solves); one
  provider with all the Nodes is the closest upstream setup doing the same work.
- **ours, 1 provider** (for reference: what the second provider costs): the host as in node-init, one local cloud
  (exec mode) holding all ${int(SETTINGS.nodes)} instances.

Time runs from the first create until every Node has lost its taint; when the creates themselves are slow (a loaded
machine), that time is mostly theirs, so "seconds after the last create" shows each CCM's own tail. CPU (user+system) and peak RSS are from
/proc, per process, from its start; the CCM row is the CCM process alone, the provider rows are the local cloud
processes (ours: the host's children; upstream: its sidecar). Cloud calls are the local clouds' journals (a batch call
counts once); Node and Event writes are the kube-apiserver's request counter until the last Node was initialized
(events still queued then are not counted). All sides ran in the same run, twice, the second round in the reverse
order, ${f1(minutes)} min together; the machine's 1-minute load average was ${f1(loadBefore)} before and ${f1(loadAfter)} after (other work shares it, so
the absolute figures vary by tens of percent between runs).

| figure | round | ours, 2 providers × ${int(half)} | ours, 1 provider × ${int(SETTINGS.nodes)} | upstream, 1 provider × ${int(SETTINGS.nodes)} | ours (2) ÷ upstream |
|---|---|---|---|---|---|
${row('seconds to all initialized', (f) => f.seconds, f1, true)}
${row('creating the nodes took (s)', (f) => f.createSeconds, f1)}
${row('seconds after the last create', (f) => f.afterCreateSeconds, f1, true)}
${text('Nodes initialized, by providerID prefix', (f) => byProvider(f.nodesBy))}
${row('cloud calls', (f) => f.cloudCalls, int)}
${text('cloud calls by provider', (f) => byProvider(f.cloudCallsBy))}
${row('Node writes', (f) => f.nodeWrites, int)}
${row('Event writes', (f) => f.eventWrites, int)}
${row('CCM CPU (s)', (f) => f.ccm.cpuSeconds, f1, true)}
${row('CCM RSS at start (MiB)', (f) => f.ccm.startRssMb, f1)}
${row('CCM peak RSS (MiB)', (f) => f.ccm.peakRssMb, f1, true)}
${text(
  'provider CPU (s)',
  proc((p) => p.cpuSeconds),
)}
${text(
  'provider peak RSS (MiB)',
  proc((p) => p.peakRssMb),
)}
${row('CCM + providers CPU (s)', (f) => f.ccm.cpuSeconds + providersCpu(f), f1)}
${row('CCM + providers peak RSS (MiB)', (f) => f.ccm.peakRssMb + providersRss(f), f1)}

Each of our provider instances batches its own Nodes' lookups (\`GetInstancesMetadata\`), so the cloud calls stay far
fewer than the Nodes (each batch takes the Nodes waiting then, so the slower the Nodes arrive the smaller the
batches) while upstream makes one \`InstanceMetadata\` call per Node; a second provider costs our host a
second local cloud process (its RSS is in the provider rows) and a second controller instance, not a second CCM.
Our host initializes the Nodes about as fast as they are created (its tail after the last create is short), so its
two Node writes per Node fall inside the create window and share the API server, its QPS and the cores with the
benchmark's creates; upstream falls behind and writes much of its share after the last create. That is why the
creates take longer beside our host: compare the whole time to all initialized, not the create time alone.
`;
    const figures = { settings: { ...SETTINGS, upstream: CLOUD_PROVIDER_VERSION, oursProviders: [...CLOUDS] }, rounds };
    return { markdown, figures };
  },
};
