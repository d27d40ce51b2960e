/**
 * Crash soak (issue 21): SIGKILLs of the host, its plugin or both, at random
 * points, while LoadBalancer Services are created, changed, turned into
 * ClusterIP and back, and deleted. After the last kill: the time until the
 * cloud's load balancers equal the Services that want one, and whatever is
 * left wrong: orphans, missing load balancers, a load balancer created again
 * for a Service whose earlier one was never deleted (journal), Services stuck on the cleanup finalizer, plugin
 * socket directories left behind.
 *
 * Three modes: one host without leader election, one host with it (its own
 * short Lease), and an HA pair. A "kubelet" restarts every killed host after
 * 0-300 ms. CRASH_SOAK_KILLS (default 100) kills per mode, CRASH_SOAK_SEED
 * replays a run. Not in `npm test`: figures, not a pass/fail check.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { patchService } from '../helpers/kube-patch.js';
import { readJournal } from '../../plugins/local/journal.js';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { cloudLbs, ensureNamespace, lbService } from '../helpers/lb.js';
import { seededRandom } from '../helpers/seed.js';
import { f1, int, type BenchSection } from './section.js';
import { ALLOW_SIMULATION_FLAG } from '../helpers/localcloud.js';

const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));
/** Services alive at once at most (the ingress pool has 254 addresses). */
const MAX_LIVE = 60;
const CONVERGE_TIMEOUT_MS = 240_000;

interface Mode {
  name: string;
  replicas: number;
  leaderElect: boolean;
}

const MODES: Mode[] = [
  { name: 'one host, no leader election', replicas: 1, leaderElect: false },
  { name: 'one host, leader election', replicas: 1, leaderElect: true },
  { name: 'HA pair, leader election', replicas: 2, leaderElect: true },
];

interface Result {
  mode: string;
  kills: { host: number; plugin: number; both: number };
  ops: number;
  convergeS: number | undefined;
  orphans: number;
  missing: number;
  duplicates: number;
  stuck: number;
  socketDirs: number;
}

interface Replica {
  child?: ChildProcess;
}

/** Direct children of `pid` (Linux /proc). */
async function childPids(pid: number): Promise<number[]> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return text.split(/\s+/).filter(Boolean).map(Number);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function soak(cp: ControlPlane, mode: Mode, index: number, kills: number, random: () => number, log: (s: string) => void): Promise<Result> {
  const ns = `soak-${index}`;
  const cluster = `soak${index}`;
  const dir = await mkdtemp(join(tmpdir(), 'ccm-soak-'));
  const state = join(dir, 'cloud');
  const hostTmp = join(dir, 'tmp');
  await mkdir(hostTmp);
  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  await ensureNamespace(core, ns);
  const args = [
    '--cloud-provider=local',
    `--kubeconfig=${cp.kubeconfigPath}`,
    `--cluster-name=${cluster}`,
    '--controllers=service',
    `--watch-namespace=${ns}`,
    `--node-selector=soak=${index}`,
    '--secure-port=0',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
    ALLOW_SIMULATION_FLAG,
    `--plugin-env=LOCALCLOUD_LB_CIDR=127.0.${57 + index}.0/24`,
    '--plugin-env=LOCALCLOUD_LATENCY_MS=20',
    ...(mode.leaderElect
      ? [
          '--leader-elect=true',
          `--leader-elect-resource-namespace=${ns}`,
          '--leader-elect-resource-name=soak',
          '--leader-elect-lease-duration=4s',
          '--leader-elect-renew-deadline=3s',
          '--leader-elect-retry-period=1s',
        ]
      : ['--leader-elect=false']),
  ];
  const replicas: Replica[] = Array.from({ length: mode.replicas }, () => ({}));
  let running = true;
  const start = (r: Replica, n: number) => {
    const fd = openSync(join(dir, `host-${n}.log`), 'a');
    const child = spawn(process.execPath, [HOST_MAIN, ...args], { stdio: ['ignore', fd, fd], env: { ...process.env, TMPDIR: hostTmp } });
    closeSync(fd);
    r.child = child;
    child.once('exit', () => {
      if (r.child !== child || !running) return;
      r.child = undefined;
      setTimeout(() => running && start(r, n), random() * 300);
    });
  };
  replicas.forEach((r, n) => start(r, n));

  // Churn: create, change a port, flip the type, delete.
  const live: string[] = [];
  let created = 0;
  let ops = 0;
  let churning = true;
  const churn = (async () => {
    while (churning) {
      const roll = random();
      try {
        if (live.length < 5 || (roll < 0.45 && live.length < MAX_LIVE)) {
          const name = `s${created++}`;
          await core.createNamespacedService({ namespace: ns, body: lbService(name, ns, [{ port: 8000 + Math.floor(random() * 1000) }]) });
          live.push(name);
        } else if (roll < 0.7) {
          const [name] = live.splice(Math.floor(random() * live.length), 1);
          await core.deleteNamespacedService({ name: name!, namespace: ns });
        } else if (roll < 0.85) {
          const name = live[Math.floor(random() * live.length)]!;
          await patchService(
            core,
            ns,
            name,
            { spec: { ports: [{ name: 'p0', port: 8000 + Math.floor(random() * 1000), protocol: 'TCP' }] } },
            'strategic',
          );
        } else {
          const name = live[Math.floor(random() * live.length)]!;
          const svc = await core.readNamespacedService({ name, namespace: ns });
          const type = svc.spec?.type === 'LoadBalancer' ? 'ClusterIP' : 'LoadBalancer';
          await patchService(core, ns, name, { spec: { type } }, 'merge');
        }
        ops++;
      } catch {
        // A conflict with the controller's own writes: the next op goes on.
      }
      await sleep(random() * 100);
    }
  })();

  const counts = { host: 0, plugin: 0, both: 0 };
  for (let k = 0; k < kills;) {
    await sleep(200 + random() * 1300);
    const up = replicas.filter((r) => r.child?.pid !== undefined && r.child.exitCode === null);
    if (up.length === 0) continue;
    const victim = up[Math.floor(random() * up.length)]!.child!;
    const roll = random();
    const kind = roll < 0.4 ? 'host' : roll < 0.8 ? 'plugin' : 'both';
    const plugins = await childPids(victim.pid!);
    if (kind !== 'host' && plugins.length === 0) continue; // its plugin is not up yet: another moment
    for (const p of kind === 'host' ? [] : plugins) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (kind !== 'plugin') victim.kill('SIGKILL');
    counts[kind]++;
    k++;
    if (k % 25 === 0) log(`  ${mode.name}: ${k}/${kills} kills, ${ops} Service operations`);
  }
  churning = false;
  await churn;
  const lastKill = Date.now();

  // Convergence: cloud == Services that want one, nothing stuck, every LB Service has its address.
  let convergeS: number | undefined;
  let last = { orphans: 0, missing: 0, stuck: 0 };
  while (Date.now() - lastKill < CONVERGE_TIMEOUT_MS) {
    const svcs = (await core.listNamespacedService({ namespace: ns })).items;
    const wants = (s: V1Service) => s.spec?.type === 'LoadBalancer' && !s.spec.loadBalancerClass && !s.metadata?.deletionTimestamp;
    const want = new Set(svcs.filter(wants).map((s) => s.metadata!.uid!));
    const have = new Set((await cloudLbs(state)).filter((l) => l.clusterName === cluster).map((l) => l.serviceUid));
    last = {
      orphans: [...have].filter((u) => !want.has(u)).length,
      missing: [...want].filter((u) => !have.has(u)).length,
      stuck: svcs.filter((s) => s.metadata?.deletionTimestamp).length,
    };
    const addressed = svcs.filter(wants).every((s) => s.status?.loadBalancer?.ingress?.length);
    if (last.orphans === 0 && last.missing === 0 && last.stuck === 0 && addressed) {
      convergeS = (Date.now() - lastKill) / 1000;
      break;
    }
    await sleep(250);
  }
  running = false;
  await Promise.all(
    replicas.map(async (r) => {
      if (!r.child || r.child.exitCode !== null) return;
      const exited = once(r.child, 'exit');
      r.child.kill('SIGTERM');
      await exited;
    }),
  );
  // A load balancer created again for a Service while its earlier one had not been deleted (a flip to
  // ClusterIP and back legitimately deletes and creates again).
  const exists = new Set<string>();
  const doubled = new Set<string>();
  const markCreated = (uid: string) => {
    if (exists.has(uid)) doubled.add(uid);
    exists.add(uid);
  };
  for (const e of (await readJournal(state)).filter((x) => x.ok).sort((a, b) => a.end - b.end)) {
    if (e.method === 'loadBalancers.ensureLoadBalancerDeleted' && e.key) exists.delete(e.key);
    else if (e.created && e.key) markCreated(e.key);
    // A batch ensure names the Services whose load balancer it created.
    for (const uid of e.createdKeys ?? []) markCreated(uid);
  }
  const duplicates = doubled.size;
  const socketDirs = (await readdir(hostTmp)).filter((e) => e.startsWith('ccm-plugin-')).length;
  return { mode: mode.name, kills: counts, ops, convergeS, ...last, duplicates, socketDirs };
}

export const crashSoakSection: BenchSection = {
  name: 'crash-soak',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const kills = Number(process.env.CRASH_SOAK_KILLS ?? 100);
    const { random, describe } = seededRandom({ CCM_TEST_SEED: process.env.CRASH_SOAK_SEED });
    ctx.log(`crash soak: ${kills} kills per mode, ${describe.replace('CCM_TEST_SEED', 'CRASH_SOAK_SEED')}`);
    const results: Result[] = [];
    for (const [i, mode] of MODES.entries()) {
      ctx.log(`crash soak: ${mode.name}`);
      results.push(await soak(cp, mode, i, kills, random, ctx.log));
    }
    const rows = results.map(
      (r) =>
        `| ${r.mode} | ${int(r.kills.host + r.kills.plugin + r.kills.both)} (${r.kills.host} / ${r.kills.plugin} / ${r.kills.both}) | ${int(r.ops)} | ${r.convergeS === undefined ? `not within ${CONVERGE_TIMEOUT_MS / 1000} s` : f1(r.convergeS)} | ${r.orphans} | ${r.missing} | ${r.duplicates} | ${r.stuck} | ${r.socketDirs} |`,
    );
    return `## Crash soak: SIGKILLs during Service churn (issue 21)

SIGKILLs of the host, its plugin, or both, at random points every 0.2-1.5 s, while
LoadBalancer Services (at most ${MAX_LIVE} at once) are created, get a new port, turn into ClusterIP and
back, and are deleted; a stand-in kubelet restarts a killed host after 0-300 ms. Cloud latency 20 ms per
call. Counted after the last kill: seconds until the cloud's load balancers equal the Services that want
one (every one with its address, none stuck deleting), and what was still wrong then or at the
${CONVERGE_TIMEOUT_MS / 1000} s limit. Duplicate creates: Services for which the local cloud's journal shows a load
balancer created while the one created earlier had not been deleted (a flip to ClusterIP and back deletes and creates
again, legitimately). Socket directories: the plugins' private directories left in the
hosts' TMPDIR after the final graceful stop. ${describe.replace('CCM_TEST_SEED', 'CRASH_SOAK_SEED')}.
No upstream column yet: most kills here are of the provider process, which upstream does not have (its provider
is compiled in); a run killing only the upstream CCM during the same churn is not built.

| mode | kills (host / plugin / both) | Service operations | converged after (s) | orphans | missing | duplicate creates | stuck finalizers | socket dirs left |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}
`;
  },
};
