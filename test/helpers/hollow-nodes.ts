/**
 * Hollow kubelets (kubemark: the real kubelet code with a fake container
 * runtime) for tests: each its own process with its own node name, loopback
 * port, root directory and log file, registering like a kubelet started with
 * --cloud-provider=external (uninitialized taint, no provider ID, the
 * provided-node-ip annotation when given a node IP), then heartbeating
 * (status every 10 s, Lease renewals) until stopped or killed.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ensureBinaries } from '../controlplane/binaries.js';
import { ManagedProcess } from '../controlplane/managed-process.js';
import { freePorts } from '../controlplane/probe.js';
import { readNodeOrUndefined } from './nodes.js';
import { waitFor } from './wait.js';

/** One hollow kubelet to start. */
export interface HollowNodeSpec {
  /** Node name; unique to the test. */
  name: string;
  /** Labels it registers with (--node-labels), e.g. the test's scope label. */
  labels?: Record<string, string>;
  /** --node-ip: the kubelet annotates the node with it (alpha.kubernetes.io/provided-node-ip). */
  nodeIp?: string;
  /**
   * How often the kubelet posts its status when nothing changed (default the
   * kubelet's 5m); e.g. "10s" for a test about status updates racing the host's.
   */
  statusReportFrequency?: string;
}

/** A unix socket path longer than this does not fit sockaddr_un (108 bytes, NUL included). */
const MAX_SOCKET_PATH = 100;
/** How long a kubelet may take from spawn to its Node object existing. */
const REGISTER_TIMEOUT_MS = 90_000;
/** How long a killed or stopped kubelet may take to be reaped. */
const EXIT_TIMEOUT_MS = 10_000;

/** Hollow kubelets started against one API server; stop() them in test.after.always. */
export class HollowNodes {
  private readonly procs = new Map<string, ManagedProcess>();

  private constructor(
    /** The admin kubeconfig file the kubelets use. */
    private readonly kubeconfigPath: string,
    /** Holds each kubelet's root directory and `<name>.log`. */
    readonly dir: string,
    private readonly bin: string,
    private readonly core: CoreV1Api,
  ) {}

  /**
   * Starts a kubelet per spec (in parallel) and resolves once each one's Node
   * object exists. `kubeconfigPath` must be a file (the kubelet reads it);
   * `dir` should be under the test's temp dir, so logs are kept with the
   * test's artifacts. Rejects naming the log of a kubelet that exited or did
   * not register in time.
   */
  static async start(kubeconfigPath: string, dir: string, specs: HollowNodeSpec[]): Promise<HollowNodes> {
    const { hollowKubelet } = await ensureBinaries();
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const nodes = new HollowNodes(kubeconfigPath, dir, hollowKubelet, kc.makeApiClient(CoreV1Api));
    try {
      await nodes.add(...specs);
    } catch (err) {
      await nodes.stop();
      throw err;
    }
    return nodes;
  }

  /** Starts more kubelets; resolves once their Nodes exist. */
  async add(...specs: HollowNodeSpec[]): Promise<void> {
    const ports = await freePorts(specs.length);
    await Promise.all(specs.map((spec, i) => this.startOne(spec, ports[i]!)));
  }

  /** Where the named kubelet's stdout and stderr go. */
  logPath(name: string): string {
    return join(this.dir, `${name}.log`);
  }

  /** Whether the named kubelet was started here and has not been killed or stopped. */
  running(name: string): boolean {
    return this.procs.has(name);
  }

  /** Process ids of the kubelets that run, by node name (for measuring them from /proc). */
  pids(): Map<string, number> {
    return new Map([...this.procs].flatMap(([name, p]) => (p.pid === undefined ? [] : [[name, p.pid] as const])));
  }

  /** SIGKILLs the named kubelet, as a machine dying would: no goodbye to the API server. Resolves once it is reaped. */
  async kill(name: string): Promise<void> {
    const p = this.procs.get(name);
    if (!p) throw new Error(`no hollow kubelet named ${name} (started: ${[...this.procs.keys()].join(', ') || 'none'})`);
    p.signal('SIGKILL');
    await waitFor(() => p.exit !== undefined, { timeoutMs: EXIT_TIMEOUT_MS, what: `hollow kubelet ${name} (pid ${p.pid}) to exit after SIGKILL` });
    this.procs.delete(name);
  }

  /** Stops every kubelet still running (SIGTERM, SIGKILL after a bounded wait). */
  async stop(): Promise<void> {
    await Promise.all([...this.procs.values()].map((p) => p.stop(EXIT_TIMEOUT_MS)));
    this.procs.clear();
  }

  private async startOne(spec: HollowNodeSpec, port: number): Promise<void> {
    if (this.procs.has(spec.name)) throw new Error(`hollow kubelet ${spec.name} already runs; pick a unique node name`);
    const rootDir = join(this.dir, spec.name);
    if (join(rootDir, 'cri.sock').length > MAX_SOCKET_PATH) {
      throw new Error(`hollow kubelet root dir ${rootDir} is too long for its runtime socket; use a shorter test dir or node name`);
    }
    await mkdir(rootDir, { recursive: true });
    const labels = Object.entries(spec.labels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const p = ManagedProcess.spawn(
      `hollow-kubelet ${spec.name}`,
      this.bin,
      [
        `--kubeconfig=${this.kubeconfigPath}`,
        `--name=${spec.name}`,
        `--root-dir=${rootDir}`,
        `--port=${port}`,
        ...(spec.nodeIp ? [`--node-ip=${spec.nodeIp}`] : []),
        ...(labels ? [`--node-labels=${labels}`] : []),
        ...(spec.statusReportFrequency ? [`--node-status-report-frequency=${spec.statusReportFrequency}`] : []),
        '-v=2',
      ],
      this.logPath(spec.name),
    );
    this.procs.set(spec.name, p);
    const outcome = await waitFor(
      async () => {
        if (p.exit !== undefined) return 'exited';
        return (await readNodeOrUndefined(this.core, spec.name)) ? 'registered' : undefined;
      },
      { timeoutMs: REGISTER_TIMEOUT_MS, intervalMs: 500, what: `hollow kubelet ${spec.name} to register its Node`, log: this.logPath(spec.name) },
    );
    if (outcome === 'exited')
      throw new Error(`hollow kubelet ${spec.name} ${p.exit} before registering; last lines of ${p.logPath}:\n${await p.logTail()}`);
  }
}
