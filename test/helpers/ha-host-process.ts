/**
 * The host as a real process (`node dist/host/main.js`), for tests that kill,
 * signal and restart it. Its stdout and stderr (log lines) go straight
 * to a file descriptor of the log file, so a SIGKILLed host (or a crashed
 * test worker) loses nothing it wrote; the log is scanned for the
 * leader-election identity. Below spawnHost: the replicas of the HA tests
 * (leaderReplicas), which campaign for a Lease of the test's own.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, open, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { ExecutionContext } from 'ava';
import { ManagedProcess } from '../controlplane/managed-process.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { assertArgsNodeScoped } from './node-scope.js';
import { grantLease, hostKubeConfig } from './service-account.js';

const MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));
/** Longest log read for the start line: the host logs it within its first lines. */
const MAX_SCAN_BYTES = 4 * 1024 * 1024;

/**
 * What runs the host: a script for this machine's node (default: the
 * repository's dist/host/main.js), or the command (file and argv) that runs
 * it with `args`, e.g. a built image's entrypoint (test/helpers/images.ts).
 */
export type HostMain = string | ((args: string[]) => [string, string[]]);

export interface HostProcess {
  readonly pid: number;
  /** Leader-election identity, once the host logged that it started (pending forever if it exits first). */
  readonly identity: Promise<string>;
  /** Exit code (or signal name) once the process ended. */
  readonly exited: Promise<number | string>;
  readonly logPath: string;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Spawns the host with `args`, appending its output to `logPath`. The log is
 * in the format `args` ask for (klog text by default); the start line is
 * found in either. `env` replaces this process's environment.
 * `ownApiServer`: the host talks to a control plane of the test's own, so it
 * need not be scoped with --node-selector (see node-scope.ts).
 */
export function spawnHost(
  args: string[],
  logPath: string,
  opts: { ownApiServer?: boolean; env?: NodeJS.ProcessEnv; main?: HostMain } = {},
): HostProcess {
  if (!opts.ownApiServer) assertArgsNodeScoped(args);
  // Only this process's lines count: the log may hold an earlier run's.
  const offset = existsSync(logPath) ? statSync(logPath).size : 0;
  const [file, argv] = typeof opts.main === 'function' ? opts.main(args) : [process.execPath, [opts.main ?? MAIN, ...args]];
  const child = ManagedProcess.spawn('host', file, argv, logPath, { keepAlive: true, env: opts.env });
  let ended = false;
  void child.exited.then(() => (ended = true));
  const identity = (async () => {
    for (;;) {
      const line = (await readFrom(logPath, offset)).split('\n').find((l) => l.includes('cloud-controller-manager started'));
      const m = line && /"identity":"([^"]+)"|\bidentity="([^"]+)"/.exec(line);
      if (m) return (m[1] ?? m[2])!;
      if (ended) return new Promise<string>(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return { pid: child.pid ?? -1, identity, exited: child.exited, logPath, kill: (signal) => child.signal(signal) };
}

/** The log's text from byte `offset` on (bounded). */
async function readFrom(path: string, offset: number): Promise<string> {
  const f = await open(path, 'r');
  try {
    const buf = Buffer.alloc(Math.max(0, Math.min(MAX_SCAN_BYTES, (await f.stat()).size - offset)));
    const { bytesRead } = await f.read(buf, 0, buf.length, offset);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await f.close();
  }
}

/** Lease timing of the tests' replicas: short, so that a hand-over takes seconds. */
export const TEST_LEASE = { durationS: 6, renewS: 4, retryS: 1 } as const;

/**
 * The flags of a replica that campaigns for the Lease `namespace`/ccm with
 * TEST_LEASE's timing: a Lease of the test's own, never the default one
 * (CONTRIBUTING.md). The shipped Role grants the default Lease only, so the
 * test grants this one (grantLease), as an operator who moves the Lease does.
 */
export function leaderElectArgs(namespace: string): string[] {
  return [
    '--leader-elect=true',
    `--leader-elect-resource-namespace=${namespace}`,
    '--leader-elect-resource-name=ccm',
    `--leader-elect-lease-duration=${TEST_LEASE.durationS}s`,
    `--leader-elect-renew-deadline=${TEST_LEASE.renewS}s`,
    `--leader-elect-retry-period=${TEST_LEASE.retryS}s`,
  ];
}

/** One HA test's replicas and what they share (leaderReplicas). */
export interface LeaderReplicas {
  /** The test's temporary directory: the replicas' logs (host-N.log), the cloud state. */
  readonly dir: string;
  /** The admin, for the test's own calls; each replica gets the --kubeconfig the test passes it. */
  readonly admin: KubeConfig;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  /** `<prefix>-<random>`: the Leases, the Services the replicas watch, and the ccm-test label of the Nodes they serve. */
  readonly namespace: string;
  /** The local cloud's state directory (`dir`/cloud), one for all replicas. */
  readonly state: string;
  /** A kubeconfig file of the shipped ServiceAccount, for replicas the test need not tell apart by credential. */
  readonly kubeconfig: string;
  /** The Nodes the test made (push their names): deleted when it ends. */
  readonly nodes: string[];
  /** Every replica spawned, in order. */
  readonly hosts: HostProcess[];
  /**
   * Spawns replica `n` (log `dir`/host-`n`.log) of the local cloud's host:
   * cluster `clusterName`, scoped to `namespace` (its Services, the Nodes
   * labelled ccm-test=`namespace`), campaigning for its Lease (leaderElectArgs),
   * at -v=2; `args` add the rest: --kubeconfig, the controllers, the port and
   * the provider's place. Does not wait for the start (`identity` resolves then).
   */
  spawnReplica(n: number, args: string[]): HostProcess;
}

/**
 * Sets up an HA test on the shared API server: a namespace of its own with
 * the Leases `leases` (default: ccm) granted to the shipped ServiceAccount,
 * which exists with its RBAC once this returns (hostKubeConfig). When the
 * test ends, every replica is SIGKILLed (SIGCONT first: a stopped one too),
 * then the Nodes in `nodes` and the namespace are deleted.
 */
export async function leaderReplicas(
  t: ExecutionContext,
  opts: { prefix: string; clusterName: string; leases?: readonly string[] },
): Promise<LeaderReplicas> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-${opts.prefix}-`));
  const admin = await testKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const namespace = `${opts.prefix}-${randomBytes(4).toString('hex')}`;
  const hosts: HostProcess[] = [];
  const nodes: string[] = [];
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  t.teardown(async () => {
    for (const h of hosts) {
      h.kill('SIGCONT');
      h.kill('SIGKILL');
    }
    for (const n of nodes) await core.deleteNode({ name: n }).catch(() => undefined);
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });
  await grantLease(admin, namespace, opts.leases ?? 'ccm');
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, (await hostKubeConfig()).exportConfig(), { mode: 0o600 });
  const spawnReplica = (n: number, args: string[]) => {
    const scoped = [`--node-selector=ccm-test=${namespace}`, `--watch-namespace=${namespace}`, ...leaderElectArgs(namespace)];
    const h = spawnHost(['--cloud-provider=local', `--cluster-name=${opts.clusterName}`, ...scoped, '-v=2', ...args], join(dir, `host-${n}.log`));
    hosts.push(h);
    return h;
  };
  return {
    dir,
    admin,
    core,
    coordination: admin.makeApiClient(CoordinationV1Api),
    namespace,
    state: join(dir, 'cloud'),
    kubeconfig,
    nodes,
    hosts,
    spawnReplica,
  };
}
