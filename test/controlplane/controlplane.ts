/**
 * A real, throw-away Kubernetes control plane: etcd plus kube-apiserver on
 * loopback ports, configured like controller-runtime's envtest, plus a
 * kube-controller-manager running only the storage controllers
 * (KCM_CONTROLLERS). No kubelet or scheduler run, so Nodes exist only if
 * created via API or by hollow kubelets a test starts
 * (test/helpers/hollow-nodes.ts), and Pods only run where a test sets
 * spec.nodeName.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../host/log.js';
import { execa } from 'execa';
import { ensureBinaries, type Binaries } from './binaries.js';
import { ManagedProcess } from './managed-process.js';
import { etcdAnswersAs, freePorts, get, pollUntil } from './probe.js';
import { WEBHOOK_CLIENT_FILES, webhookClientArgs } from './webhook-client.js';

export interface ControlPlaneOptions {
  log?: Logger;
  /**
   * State directory to use instead of a fresh temp dir. Its previous cluster
   * state (etcd data, certs, keys, logs, kubeconfig) is replaced, and it is
   * kept on stop(). Without it a `ccm-cp-*` temp dir is made and removed.
   */
  dir?: string;
  /**
   * With `dir`: keep the previous cluster's etcd data (its objects) instead
   * of replacing it; certificates, keys, tokens and ports are new each start,
   * so the kubeconfig in `dir` is rewritten. For `cluster:up` after
   * `cluster:down`.
   */
  resume?: boolean;
  /** Limit for etcd + kube-apiserver to become ready (default 60 s). Binary builds are not counted. */
  startTimeoutMs?: number;
  /** Binaries to run; default: ensureBinaries(). */
  binaries?: Binaries;
  /** Start kube-controller-manager with KCM_CONTROLLERS (default true). */
  controllerManager?: boolean;
  /** Write kube-apiserver's audit log (AUDIT_POLICY) to auditLogPath (default false: benchmarks and the demo do without). */
  auditLog?: boolean;
  /**
   * Also run KCM's node-lifecycle-controller, which marks a node Unknown (and
   * taints it unreachable) when its kubelet stops heartbeating for
   * `gracePeriod` (KCM's --node-monitor-grace-period, e.g. "20s"). Only for
   * control planes whose nodes all run kubelets: nodes a test writes by hand
   * never heartbeat and would all go Unknown.
   */
  nodeLifecycle?: { gracePeriod: string };
  /**
   * Extra kube-apiserver flags, after the defaults (a later flag wins), e.g.
   * the bench's large section raising `--max-requests-inflight`.
   */
  apiserverFlags?: string[];
  /**
   * Picks the loopback ports of one boot: etcd client, etcd peer,
   * kube-apiserver, kube-controller-manager (default freePorts). A test hands
   * out a port another cluster's etcd holds, to see the clash retried and
   * never joined (test/integration/controlplane-ports.test.ts).
   */
  pickPorts?: (n: number) => Promise<number[]>;
}

/**
 * The kube-controller-manager controllers the control plane runs: exactly
 * what the PersistentVolume flow of a cloud-controller-manager's volume
 * controllers needs, and nothing that touches Nodes or Services (node
 * lifecycle, IPAM, route and service controllers would fight the CCM hosts
 * under test):
 *  - persistentvolume-binder: binds claims to the PVs our provisioner creates,
 *    sets `volume.kubernetes.io/storage-provisioner`, marks PVs Released;
 *  - persistentvolume-attach-detach: creates/deletes VolumeAttachments for
 *    Pods with spec.nodeName on nodes annotated for controller-managed attach;
 *  - persistentvolume-protection / persistentvolumeclaim-protection: the API
 *    server's StorageObjectInUseProtection admission plugin (on by default)
 *    puts `kubernetes.io/pv-protection` / `kubernetes.io/pvc-protection`
 *    finalizers on every PV/PVC, and only these controllers remove them, so
 *    without them no PV or PVC could ever be deleted;
 *  - persistentvolume-expander: as in a real cluster, it marks claims whose
 *    CSI driver must resize them (`volume.kubernetes.io/storage-resizer`).
 */
export const KCM_CONTROLLERS = [
  'persistentvolume-binder-controller',
  'persistentvolume-attach-detach-controller',
  'persistentvolume-protection-controller',
  'persistentvolumeclaim-protection-controller',
  'persistentvolume-expander-controller',
] as const;

/** The admin identity written into tokens.csv and the kubeconfig. */
export const ADMIN_USER = 'ccm-admin';

/** Entries start() owns inside a state dir; only these are reset. */
const OWNED_ENTRIES = [
  'etcd',
  'certs',
  'tokens.csv',
  'sa.key',
  'sa.pub',
  'kubeconfig',
  'etcd.log',
  'kube-apiserver.log',
  'kube-controller-manager.log',
  'audit-policy.yaml',
  'audit.log',
  ...WEBHOOK_CLIENT_FILES,
];

/**
 * kube-apiserver's audit policy: every write to the objects the CCM's
 * controllers own or race with, with request and response bodies, so a
 * failing test can tell who changed what when (e.g. a DELETE that removed a
 * Service its finalizer should have kept); and every request of the
 * shipped provider identity (metadata only). Nothing else is logged.
 */
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: RequestResponse
    verbs: [create, update, patch, delete, deletecollection]
    resources:
      - group: ""
        resources: [services, services/status, persistentvolumeclaims, persistentvolumeclaims/status, persistentvolumes, nodes, nodes/status]
  # Every request of the shipped provider identity (deploy/components/provider-identity), whose client the
  # tests cannot count: test/integration/deploy/run-provider-manifests.test.ts finds its 403s here.
  - level: Metadata
    users: ["system:serviceaccount:kube-system:cloud-controller-manager-provider"]
  - level: None
`;
/** Audit log rotation: at most (1 + backups) × this many MB. */
const AUDIT_LOG_MAX_MB = 200;
const AUDIT_LOG_BACKUPS = 1;

const PORT_ATTEMPTS = 3;

class PortClashError extends Error {}

export class ControlPlane {
  /** Path of the kubeconfig (cluster CA, server URL, admin token). */
  readonly kubeconfigPath: string;
  private etcd?: ManagedProcess;
  private apiserver?: ManagedProcess;
  private controllerManager?: ManagedProcess;
  private serverUrl = '';
  private etcdUrl = '';
  private stopping?: Promise<void>;
  /** How kube-apiserver was started, so it can be restarted on the same port (fault tests). */
  private apiserverCmd?: { bin: string; args: string[]; logPath: string; ca: string };

  private constructor(
    /** Directory holding the cluster's state, certs, keys and logs. */
    readonly dir: string,
    /** Bearer token of user ccm-admin (group system:masters). */
    readonly token: string,
    private readonly removeDirOnStop: boolean,
    private readonly log?: Logger,
    /** Started with `resume`: the next start with `resume` finds these objects. */
    private readonly resumable = false,
  ) {
    this.kubeconfigPath = join(dir, 'kubeconfig');
  }

  /** etcd's client URL, e.g. http://127.0.0.1:41233 (empty before the first boot). */
  get etcdEndpoint(): string {
    return this.etcdUrl;
  }

  /** The apiserver's https URL, e.g. https://127.0.0.1:41234. */
  get server(): string {
    return this.serverUrl;
  }

  /**
   * Starts etcd and kube-apiserver and resolves once /readyz is ok and the
   * `default` and `kube-system` namespaces exist. Builds the binaries first if
   * needed (see ensureBinaries). On failure everything started is stopped and
   * the error carries the tail of the failing process's log; a port taken by
   * another process between picking and binding is retried with new ports.
   */
  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const bins = opts.binaries ?? (await ensureBinaries({ log: opts.log }));
    const owned = opts.dir === undefined;
    const dir = owned ? await mkdtemp(join(tmpdir(), 'ccm-cp-')) : resolve(opts.dir!);
    const replaced = OWNED_ENTRIES.filter((e) => !(opts.resume && e === 'etcd'));
    if (!owned) {
      await mkdir(dir, { recursive: true });
      await Promise.all(replaced.map((e) => rm(join(dir, e), { recursive: true, force: true })));
    }
    const cp = new ControlPlane(dir, randomBytes(24).toString('hex'), owned, opts.log, opts.resume ?? false);
    live.add(cp);
    installExitHook();
    const started = Date.now();
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          await cp.boot(
            bins,
            opts.startTimeoutMs ?? 60_000,
            opts.controllerManager ?? true,
            opts.auditLog ?? false,
            opts.nodeLifecycle,
            opts.apiserverFlags ?? [],
            opts.pickPorts ?? freePorts,
          );
          break;
        } catch (err) {
          if (!(err instanceof PortClashError) || attempt >= PORT_ATTEMPTS) throw err;
          opts.log?.warn({ attempt }, 'a picked port was taken before use; retrying with new ports');
          await cp.stopProcesses();
          await Promise.all(replaced.map((e) => rm(join(dir, e), { recursive: true, force: true })));
        }
      }
    } catch (err) {
      await cp.stop().catch(() => undefined);
      throw err;
    }
    opts.log?.info({ dir, server: cp.server, ms: Date.now() - started }, 'control plane ready');
    return cp;
  }

  /** kube-apiserver's audit log (writes to Services, claims, PVs and Nodes; see AUDIT_POLICY). */
  /** Process ids of etcd and kube-apiserver (for the bench's RSS and CPU figures), undefined when not running. */
  get pids(): { etcd?: number; apiserver?: number } {
    return { etcd: this.etcd?.pid, apiserver: this.apiserver?.pid };
  }

  get auditLogPath(): string {
    return join(this.dir, 'audit.log');
  }

  /** A client-node KubeConfig loaded from kubeconfigPath (admin token, cluster CA). */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  /** Stops kube-apiserver only (etcd keeps the state), for outage tests. */
  async stopApiServer(): Promise<void> {
    await this.apiserver?.stop(10_000);
  }

  /** Starts kube-apiserver again with the same flags and port; resolves once /readyz is ok. */
  async startApiServer(timeoutMs = 60_000): Promise<void> {
    const cmd = this.apiserverCmd;
    if (!cmd) throw new Error('the control plane never started kube-apiserver');
    const deadline = Date.now() + timeoutMs;
    this.apiserver = ManagedProcess.spawn('kube-apiserver', cmd.bin, cmd.args, `${cmd.logPath}.${Date.now()}`);
    await pollUntil(
      deadline,
      async () => {
        await this.failIfExited(this.apiserver!);
        const r = await get(`${this.serverUrl}/readyz`, { ca: cmd.ca, token: this.token }).catch(() => undefined);
        return r?.status === 200 ? true : undefined;
      },
      () => this.timeoutError(this.apiserver!, 'GET /readyz after restart', timeoutMs),
    );
  }

  /** Undefined while every process runs; otherwise which one ended and how. */
  unexpectedExit(): string | undefined {
    for (const p of [this.etcd, this.apiserver, this.controllerManager]) {
      if (p?.exit !== undefined) return `${p.name} ${p.exit} (log: ${p.logPath})`;
    }
    return undefined;
  }

  /**
   * Stops kube-controller-manager, kube-apiserver, then etcd (SIGTERM, up to 10 s each, then SIGKILL),
   * and removes a temp dir unless CCM_KEEP_CONTROLPLANE=1. Safe to call twice.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      try {
        await this.stopProcesses();
      } finally {
        live.delete(this);
        if (this.removeDirOnStop && process.env.CCM_KEEP_CONTROLPLANE !== '1') {
          await rm(this.dir, { recursive: true, force: true });
        } else {
          this.log?.info(
            { dir: this.dir },
            this.resumable ? 'control plane stopped; its objects are kept for the next start' : 'control plane stopped; logs kept',
          );
        }
      }
    })();
    return this.stopping;
  }

  /** SIGKILLs every process and removes a temp dir, synchronously (for 'exit' handlers). */
  killNow(): void {
    this.controllerManager?.killNow();
    this.apiserver?.killNow();
    this.etcd?.killNow();
    if (this.removeDirOnStop && process.env.CCM_KEEP_CONTROLPLANE !== '1') {
      try {
        rmSync(this.dir, { recursive: true, force: true });
      } catch {
        // best effort while exiting
      }
    }
  }

  private async stopProcesses(): Promise<void> {
    const errors: unknown[] = [];
    for (const p of [this.controllerManager, this.apiserver, this.etcd]) {
      await p?.stop(10_000).catch((err: unknown) => errors.push(err));
    }
    if (errors.length > 0) throw errors[0];
  }

  private async boot(
    bins: Binaries,
    timeoutMs: number,
    withControllerManager: boolean,
    auditLog: boolean,
    nodeLifecycle: { gracePeriod: string } | undefined,
    apiserverFlags: string[],
    pickPorts: (n: number) => Promise<number[]>,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const [etcdPort, peerPort, apiPort, kcmPort] = await pickPorts(4);
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    // Unique per boot, so the readiness probe knows our etcd from another that took the port (etcdAnswersAs).
    const etcdName = `ccm-${randomBytes(6).toString('hex')}`;
    this.etcdUrl = etcdUrl;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    this.serverUrl = `https://127.0.0.1:${apiPort}`;

    this.etcd = ManagedProcess.spawn(
      'etcd',
      bins.etcd,
      [
        `--name=${etcdName}`,
        `--data-dir=${join(this.dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=${etcdName}=${peerUrl}`,
        '--initial-cluster-state=new',
        '--unsafe-no-fsync', // a test cluster: speed over durability
        `--quota-backend-bytes=${4 * 1024 ** 3}`,
      ],
      join(this.dir, 'etcd.log'),
    );
    await pollUntil(
      deadline,
      async () => {
        await this.failIfExited(this.etcd!);
        // Another test's etcd on the port answers /health too; ours then exits (address in use) and failIfExited retries.
        return (await etcdAnswersAs(etcdUrl, etcdName)) ? true : undefined;
      },
      () => this.timeoutError(this.etcd!, `${etcdUrl}/health`, timeoutMs),
    );

    const certDir = join(this.dir, 'certs');
    const saKey = join(this.dir, 'sa.key');
    const saPub = join(this.dir, 'sa.pub');
    const tokens = join(this.dir, 'tokens.csv');
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    await writeFile(saKey, privateKey, { mode: 0o600 });
    await writeFile(saPub, publicKey);
    // Static token file format: token,user,uid,"group1,group2"
    await writeFile(tokens, `${this.token},${ADMIN_USER},${ADMIN_USER},"system:masters"\n`, { mode: 0o600 });

    if (auditLog) await writeFile(join(this.dir, 'audit-policy.yaml'), AUDIT_POLICY);
    const audit = auditLog
      ? [
          `--audit-policy-file=${join(this.dir, 'audit-policy.yaml')}`,
          `--audit-log-path=${this.auditLogPath}`,
          '--audit-log-format=json',
          `--audit-log-maxsize=${AUDIT_LOG_MAX_MB}`,
          `--audit-log-maxbackup=${AUDIT_LOG_BACKUPS}`,
        ]
      : [];
    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      ...audit,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--cert-dir=${certDir}`,
      '--service-cluster-ip-range=10.0.0.0/16',
      '--allow-privileged=true',
      '--disable-admission-plugins=ServiceAccount',
      '--authorization-mode=RBAC',
      `--token-auth-file=${tokens}`,
      `--service-account-issuer=${this.serverUrl}/`,
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      ...(await webhookClientArgs(this.dir)),
      ...(await loopbackAdvertiseArgs(bins.kubeApiserver)),
      ...apiserverFlags,
    ];
    this.apiserver = ManagedProcess.spawn('kube-apiserver', bins.kubeApiserver, apiserverArgs, join(this.dir, 'kube-apiserver.log'));

    // The apiserver writes a self-signed serving cert (with its CA appended)
    // into cert-dir before it serves; clients trust exactly that.
    const certPath = join(certDir, 'apiserver.crt');
    const ca = await pollUntil(
      deadline,
      async () => {
        await this.failIfExited(this.apiserver!);
        const pem = await readFile(certPath, 'utf8').catch(() => '');
        return pem.includes('-----END CERTIFICATE-----') ? pem : undefined;
      },
      () => this.timeoutError(this.apiserver!, certPath, timeoutMs),
    );
    const probe = async (path: string) => {
      await this.failIfExited(this.apiserver!);
      const r = await get(`${this.serverUrl}${path}`, { ca, token: this.token }).catch(() => undefined);
      return r?.status === 200 ? true : undefined;
    };
    for (const path of ['/readyz', '/api/v1/namespaces/default', '/api/v1/namespaces/kube-system']) {
      await pollUntil(
        deadline,
        () => probe(path),
        () => this.timeoutError(this.apiserver!, `GET ${path}`, timeoutMs),
      );
    }
    this.apiserverCmd = { bin: bins.kubeApiserver, args: apiserverArgs, logPath: join(this.dir, 'kube-apiserver.log'), ca };
    await writeFile(this.kubeconfigPath, kubeconfigYaml(this.serverUrl, ca, this.token), { mode: 0o600 });
    if (withControllerManager) await this.startControllerManager(bins, kcmPort!, deadline, timeoutMs, nodeLifecycle);
  }

  /**
   * kube-controller-manager as a cluster with an external cloud provider runs
   * it, limited to KCM_CONTROLLERS. It uses the admin kubeconfig (no
   * per-controller service accounts: --use-service-account-credentials is
   * off), serves /healthz on a loopback port with a self-signed certificate
   * (the probe only checks it is up), and syncs claims every 5 s instead of
   * 15 s so a missed event costs a test little.
   */
  private async startControllerManager(
    bins: Binaries,
    port: number,
    deadline: number,
    timeoutMs: number,
    nodeLifecycle?: { gracePeriod: string },
  ): Promise<void> {
    const controllers = nodeLifecycle ? [...KCM_CONTROLLERS, 'node-lifecycle-controller'] : KCM_CONTROLLERS;
    this.controllerManager = ManagedProcess.spawn(
      'kube-controller-manager',
      bins.kubeControllerManager,
      [
        `--kubeconfig=${this.kubeconfigPath}`,
        '--cloud-provider=external',
        `--controllers=${controllers.join(',')}`,
        ...(nodeLifecycle ? [`--node-monitor-grace-period=${nodeLifecycle.gracePeriod}`] : []),
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${join(this.dir, 'certs', 'kcm')}`,
        '--pvclaimbinder-sync-period=5s',
        '--attach-detach-reconcile-sync-period=5s',
        '--kube-api-qps=100',
        '--kube-api-burst=200',
        '-v=2',
      ],
      join(this.dir, 'kube-controller-manager.log'),
    );
    // Like the apiserver, it writes a self-signed cert (its CA appended) into its cert-dir before it serves: trusting
    // exactly that tells ours from another cluster's kube-controller-manager on the port (docs/testing.md, "Ports picked
    // free"). Read on every try: a read during the write may miss the CA.
    const certPath = join(this.dir, 'certs', 'kcm', 'kube-controller-manager.crt');
    const healthz = `https://127.0.0.1:${port}/healthz`;
    await pollUntil(
      deadline,
      async () => {
        await this.failIfExited(this.controllerManager!);
        const ca = await readFile(certPath, 'utf8').catch(() => '');
        if (!ca.includes('-----END CERTIFICATE-----')) return undefined;
        const r = await get(healthz, { ca }).catch(() => undefined);
        return r?.status === 200 ? true : undefined;
      },
      () => this.timeoutError(this.controllerManager!, `GET ${healthz}`, timeoutMs),
    );
  }

  private async failIfExited(p: ManagedProcess): Promise<void> {
    if (p.exit === undefined) return;
    const msg = await this.describeFailure(p, `${p.exit} during start`);
    if (/address already in use/i.test(msg)) throw new PortClashError(msg);
    throw new Error(msg);
  }

  private async timeoutError(p: ManagedProcess, waitingFor: string, timeoutMs: number): Promise<Error> {
    return new Error(await this.describeFailure(p, `not ready within ${timeoutMs / 1000}s (waiting for ${waitingFor})`));
  }

  private async describeFailure(p: ManagedProcess, what: string): Promise<string> {
    const tail = (await p.logTail(20)) || '(log is empty)';
    const keep =
      process.env.CCM_KEEP_CONTROLPLANE === '1' || !this.removeDirOnStop
        ? `logs kept in ${this.dir}`
        : `set CCM_KEEP_CONTROLPLANE=1 to keep ${this.dir} for inspection`;
    return `${p.name} ${what}; ${keep}. Last lines of ${p.name}.log:\n${tail}`;
  }
}

/** Control planes not yet stopped; SIGKILLed if this process exits abruptly. */
const live = new Set<ControlPlane>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const cp of live) cp.killNow();
  });
}

/** A kubeconfig for the admin token; JSON string quoting is valid YAML. */
function kubeconfigYaml(server: string, caPem: string, token: string): string {
  const q = JSON.stringify;
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: ccm-test',
    '  cluster:',
    `    server: ${q(server)}`,
    `    certificate-authority-data: ${q(Buffer.from(caPem).toString('base64'))}`,
    'users:',
    `- name: ${ADMIN_USER}`,
    '  user:',
    `    token: ${q(token)}`,
    'contexts:',
    '- name: ccm-test',
    '  context:',
    '    cluster: ccm-test',
    `    user: ${ADMIN_USER}`,
    '    namespace: default',
    'current-context: ccm-test',
    '',
  ].join('\n');
}

/**
 * From v1.37 kube-apiserver refuses a loopback --advertise-address with the
 * endpoint reconciler of the `kubernetes` Service ("may not be in the
 * loopback range"); the test API server listens on 127.0.0.1 only, so that
 * reconciler is turned off there (nothing in the tests reaches the API server
 * through the Service). Older versions keep their default.
 */
async function loopbackAdvertiseArgs(kubeApiserver: string): Promise<string[]> {
  const { stdout } = await execa(kubeApiserver, ['--version'], { timeout: 30_000 });
  const minor = Number(/v1\.(\d+)\./.exec(stdout)?.[1] ?? 0);
  return minor >= 37 ? ['--endpoint-reconciler-type=none'] : [];
}
