/**
 * Supervises one provider: starts it (exec mode) or dials it (sidecar mode),
 * runs the start-up sequence, watches it, restarts or redials with backoff,
 * and stops it with escalation.
 *
 * States: idle → starting → ready ⇄ (backoff → starting) → stopping → stopped.
 * Only `ready` serves calls; in every other state calls fail at once with
 * PluginUnavailableError so controllers requeue instead of hanging.
 *
 * Start-up sequence (both modes): grpc.health.v1 Check → GetPluginInfo
 * (protocol and launch nonce checked) → GetPluginCapabilities → Configure →
 * Probe until ready, all within the start timeout.
 *
 * The provider behind a connection must stay the one that was configured.
 * The sequence runs again (state `starting`, so no cloud call is sent
 * meanwhile) when a sidecar's connection drops (whatever answers next may be
 * a new process), when a periodic check finds a different
 * GetPluginInfo.instance_id, and when a call is answered NOT_CONFIGURED.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import {
  Capability,
  Service,
  type GetPluginCapabilitiesResponse,
  type GetPluginInfoResponse,
  type GetProviderSchemaResponse,
} from '../../proto/gen/ccm/provider/v1/identity.js';
import { AnnotationSchema } from './provider-schema.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../../sdk/protocol.js';
import { CloudCallError, PluginUnavailableError } from '../errors.js';
import { errorMessage, type Logger } from '../log.js';
import { Backoff } from '../kube/backoff.js';
import { PluginConnection, type CallObserver, type CallPolicy } from './connection.js';
import { CloudConfigRefusedError, PluginStartError, PluginStartTimeoutError } from './handshake.js';
import { PluginProcess } from './process.js';
import type { PluginStream } from './output-limiter.js';
import type { HandshakeAllowances } from './process.js';
import { socketProblem } from './file-checks.js';
import { watchStaleSocketDirs } from './socket-dir.js';
import { nodeOwnershipProblem } from '../ownership/nodes.js';
import { lbClassDeclaration, lbDeclarationProblems } from '../lb-classes.js';
import { volumeDeclarationProblems } from '../volume-provisioners.js';

export type PluginMode =
  { kind: 'exec'; path: string; args?: string[]; env?: string[]; allow?: HandshakeAllowances } | { kind: 'socket'; endpoint: string };

export type PluginState = 'idle' | 'starting' | 'ready' | 'backoff' | 'stopping' | 'stopped';

export interface SupervisorOptions {
  /** The --cloud-provider name, used in logs and metrics. */
  name: string;
  mode: PluginMode;
  startTimeoutMs: number;
  shutdownGraceMs: number;
  /** Passed to Configure after every (re)start. */
  configure: {
    cloudConfig: Buffer;
    clusterName: string;
    hostVersion: string;
    clusterUid?: string;
    /** The provider's own flags from the host's command line (ConfigureRequest.provider_args). */
    providerArgs?: readonly string[];
    /** The host's --node-selector (ConfigureRequest.node_selector): the provider's own controllers see only these Nodes. */
    nodeSelector?: string;
    /** The host's --watch-namespace (ConfigureRequest.watch_namespace): the provider's own controllers see only this namespace. */
    watchNamespace?: string;
    /**
     * What the host can vouch for of its leadership from now, in ms
     * (LeaderElector.freshLeaseRemainingMs): sent as
     * ConfigureRequest.controllers_lease with the provider's own controllers.
     * Absent (no leader election): no lease.
     */
    controllersLeaseMs?: () => number;
  };
  /** Probe period while ready (default 10 s). */
  probeIntervalMs?: number;
  /** Restart/redial backoff (defaults 1 s doubling to 5 min, reset after 10 min healthy). */
  restart?: { initialMs?: number; maxMs?: number; resetAfterMs?: number };
  log: Logger;
  observeCall?: CallObserver;
  /** Caller identity and mutation gate applied to every connection (see CallPolicy). */
  callPolicy?: CallPolicy;
  pluginLogLevel?: string;
  /** Told about every plugin output line dropped by the log rate limit (exec mode). */
  onOutputDropped?: (stream: PluginStream) => void;
}

/** What the provider said about itself at start-up. */
export interface PluginIdentity {
  info: GetPluginInfoResponse;
  capabilities: GetPluginCapabilitiesResponse;
  /** The provider's schema (CAPABILITY_PROVIDER_SCHEMA), read once per process; undefined: none, or unusable (logged). */
  schema?: AnnotationSchema;
}

/** Deadline of each liveness check call. */
const PROBE_TIMEOUT_MS = 5_000;
/** Consecutive failed liveness checks after which the plugin is restarted (exec) or redialed (sidecar). */
const LIVENESS_FAILURES = 2;
const STARTUP_POLL_MS = 100;

export class PluginSupervisor extends EventEmitter {
  private stateValue: PluginState = 'idle';
  private conn?: PluginConnection;
  private proc?: PluginProcess;
  private identityValue?: PluginIdentity;
  private readonly backoff: Backoff;
  private readonly resetAfterMs: number;
  private readyAt = 0;
  private restarts = 0;
  private probeTimer?: NodeJS.Timeout;
  private restartTimer?: NodeJS.Timeout;
  private stopStaleDirWatch?: () => void;
  private readonly log: Logger;

  /** The --cluster-name sent in Configure; requests carry it in RequestMeta too. */
  get clusterName(): string {
    return this.opts.configure.clusterName;
  }

  /** The cluster UID sent in Configure and in every RequestMeta ('' when not known). */
  get clusterUid(): string {
    return this.opts.configure.clusterUid ?? '';
  }

  constructor(private readonly opts: SupervisorOptions) {
    super();
    this.log = opts.log.child({ plugin: opts.name });
    this.backoff = new Backoff({ initialMs: opts.restart?.initialMs ?? 1000, maxMs: opts.restart?.maxMs ?? 300_000, factor: 2, jitter: 0.2 });
    this.resetAfterMs = opts.restart?.resetAfterMs ?? 600_000;
  }

  get state(): PluginState {
    return this.stateValue;
  }

  /** Number of restarts (exec), redials (socket) and re-runs of the start sequence since start. */
  get restartCount(): number {
    return this.restarts;
  }

  /** Pid of the running plugin process (exec mode), if any. */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /**
   * The provider's own controllers to run (ConfigureRequest.controllers):
   * sent in every Configure, so a restarted provider runs them again. Set
   * with runProviderControllers.
   */
  private providerControllers: readonly string[] = [];

  /** A renewal of the provider controllers' lease is in flight (renewals never overlap). */
  private renewing = false;
  /** Warnings of the last Configure, so that renewals log only new ones. */
  private lastWarnings = '';

  private configureRequest() {
    const cfg = this.opts.configure;
    let controllers = [...this.providerControllers];
    let controllersLease: { seconds: number; nanos: number } | undefined;
    if (controllers.length > 0 && cfg.controllersLeaseMs) {
      const ms = Math.floor(cfg.controllersLeaseMs());
      // A leader whose fence is closed cannot vouch for them: none, rather than a lease of nothing.
      if (ms <= 0) controllers = [];
      else controllersLease = { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
    }
    return {
      cloudConfig: cfg.cloudConfig,
      clusterName: cfg.clusterName,
      hostVersion: cfg.hostVersion,
      clusterUid: cfg.clusterUid ?? '',
      providerArgs: [...(cfg.providerArgs ?? [])],
      controllers,
      nodeSelector: cfg.nodeSelector ?? '',
      watchNamespace: cfg.watchNamespace ?? '',
      controllersLease,
    };
  }

  /** Logs the warnings of a Configure answer, each set once in a row (renewals repeat them). */
  private logConfigureWarnings(warnings: readonly string[] | undefined): void {
    const key = (warnings ?? []).join('\n');
    if (key === this.lastWarnings) return;
    this.lastWarnings = key;
    for (const w of warnings ?? []) this.log.warn({ warning: w }, 'plugin configuration warning');
  }

  /**
   * Renews the lease of the provider's own controllers
   * (ConfigureRequest.controllers_lease) with a Configure of the same input,
   * when there are controllers, a lease and a ready plugin, and no renewal
   * is in flight; the host calls it after every renewal of its leader Lease.
   * Bounded by what is left of the lease; never throws (a failed renewal
   * lets the lease run out, which is the point).
   */
  renewProviderControllers(): void {
    const leaseMs = this.opts.configure.controllersLeaseMs?.() ?? 0;
    if (this.renewing || this.providerControllers.length === 0 || leaseMs <= 0 || this.stateValue !== 'ready' || !this.conn) return;
    const conn = this.conn;
    this.renewing = true;
    conn
      .unary<object, { warnings: string[] }>(conn.lifecycle, 'Configure', this.configureRequest(), Math.min(this.opts.startTimeoutMs, leaseMs))
      .then((res) => this.logConfigureWarnings(res.warnings))
      .catch((err: unknown) => this.log.debug({ err: errorMessage(err) }, "renewing the provider's own controllers' lease failed"))
      .finally(() => (this.renewing = false));
  }

  /**
   * Asks the provider to run exactly `names` of its own controllers (the
   * host calls it with those of --controllers when it starts leading, and
   * with none when it stops): Configure again with them, at once when the
   * plugin is ready, else at its next (re)start. Idempotent; rejects with
   * the Configure error (the provider keeps what it ran before).
   */
  async runProviderControllers(names: readonly string[]): Promise<void> {
    this.providerControllers = [...names];
    if (this.stateValue !== 'ready' || !this.conn) return;
    const configured = await this.conn.unary<object, { warnings: string[] }>(
      this.conn.lifecycle,
      'Configure',
      this.configureRequest(),
      this.opts.startTimeoutMs,
    );
    this.logConfigureWarnings(configured.warnings);
    this.log.info({ controllers: names }, "provider's own controllers configured");
  }

  /** Identity from the latest successful start-up; undefined before the first. */
  get identity(): PluginIdentity | undefined {
    return this.identityValue;
  }

  /** The live connection; throws PluginUnavailableError unless ready. */
  connection(): PluginConnection {
    if (this.stateValue !== 'ready' || !this.conn) {
      throw new PluginUnavailableError(`plugin ${this.opts.name} is not ready (${this.stateValue}): the call will be retried`);
    }
    return this.conn;
  }

  /**
   * First start. Exec mode: removes socket directories left by host
   * processes that are gone, and keeps watching those of hosts still alive
   * (see socket-dir.ts), then rejects with
   * PluginStartError if the plugin cannot be started (the host reports it
   * and exits). Socket mode: keeps
   * redialing with backoff until the sidecar answers or `signal` aborts.
   */
  async start(signal?: AbortSignal): Promise<PluginIdentity> {
    if (this.stateValue !== 'idle') throw new Error(`start called in state ${this.stateValue}`);
    if (this.opts.mode.kind === 'exec') this.stopStaleDirWatch = await watchStaleSocketDirs(this.log);
    for (;;) {
      try {
        await this.runOnce();
        return this.identityValue!;
      } catch (err) {
        // A refused cloud config is permanent for these bytes: no redial helps (docs/protocol.md, "Lifecycle").
        if (this.opts.mode.kind === 'exec' || this.isStopping() || err instanceof CloudConfigRefusedError) {
          this.stopStaleDirWatch?.();
          throw err;
        }
        const wait = this.backoff.next();
        this.log.warn({ err: errorMessage(err), retryInMs: wait }, 'cannot reach plugin sidecar, retrying');
        this.setState('backoff');
        await delay(wait, undefined, { signal }).catch(() => undefined);
        if (signal?.aborted) throw new PluginStartError(`stopped while waiting for plugin sidecar at ${this.opts.mode.endpoint}`);
      }
    }
  }

  /** Graceful stop: Shutdown RPC, then stdin close / SIGTERM / SIGKILL (exec mode only). Idempotent. */
  async stop(): Promise<void> {
    if (this.stateValue === 'stopped' || this.stateValue === 'stopping') return;
    this.setState('stopping');
    clearTimeout(this.probeTimer);
    clearTimeout(this.restartTimer);
    this.stopStaleDirWatch?.();
    const conn = this.conn;
    const proc = this.proc;
    if (proc) {
      const how = await this.stopProcess(proc, conn, 'host is stopping', true);
      this.log.info({ how }, 'plugin stopped');
    } else {
      conn?.close('host is stopping');
    }
    this.conn = undefined;
    this.proc = undefined;
    this.setState('stopped');
  }

  /**
   * Stops a started exec-mode process. `graceful` (every stop of a plugin
   * that still answers, a failed start included): the documented stop
   * sequence (docs/protocol.md, "Lifecycle"): Shutdown with the grace
   * period, answer awaited at most min(grace, 5 s); close the connection;
   * close stdin; wait up to the grace period; SIGTERM; 2 s; SIGKILL. Not
   * graceful (a plugin that stopped answering): no Shutdown and no grace,
   * stdin EOF then SIGTERM at once. Resolves how the process ended.
   */
  private async stopProcess(proc: PluginProcess, conn: PluginConnection | undefined, why: string, graceful: boolean): Promise<string> {
    const graceMs = graceful ? this.opts.shutdownGraceMs : 0;
    if (conn && graceful) {
      await conn
        .unary(
          conn.lifecycle,
          'Shutdown',
          { gracePeriod: { seconds: Math.floor(graceMs / 1000), nanos: (graceMs % 1000) * 1e6 } },
          Math.min(graceMs, 5000),
        )
        .catch((err) => this.log.debug({ err: errorMessage(err) }, 'plugin Shutdown call failed'));
    }
    conn?.close(why);
    return proc.stop({ graceMs });
  }

  private isStopping(): boolean {
    return this.stateValue === 'stopping' || this.stateValue === 'stopped';
  }

  private setState(s: PluginState): void {
    if (this.stateValue === s) return;
    const old = this.stateValue;
    this.stateValue = s;
    this.log.debug({ from: old, to: s }, 'plugin state change');
    this.emit('state', s, old);
    if (s === 'ready') this.emit('ready');
    if (old === 'ready') this.emit('notReady');
  }

  /** One start-up (exec: spawn + handshake; socket: dial) followed by the shared sequence. */
  private async runOnce(): Promise<void> {
    this.setState('starting');
    const deadline = Date.now() + this.opts.startTimeoutMs;
    const mode = this.opts.mode;
    let expectedInstance = '';
    if (mode.kind === 'exec') {
      this.log.info({ path: mode.path }, 'starting plugin');
      const proc = await PluginProcess.start({
        path: mode.path,
        args: mode.args,
        env: mode.env,
        allow: mode.allow,
        startTimeoutMs: this.opts.startTimeoutMs,
        logLevel: this.opts.pluginLogLevel,
        log: this.log,
        onOutputDropped: this.opts.onOutputDropped,
      });
      this.proc = proc;
      expectedInstance = proc.instanceId;
      this.conn = this.newConnection(proc.target);
      void proc.exited.then((how) => this.onExit(proc, how));
    } else {
      // A sidecar may share a group with the host (0660 + fsGroup), so this only warns.
      const path = mode.endpoint.replace(/^unix:\/\//, '');
      const unsafe = await socketProblem(path);
      if (unsafe && !unsafe.startsWith('cannot stat')) this.log.warn({ problem: unsafe }, 'plugin sidecar socket is not private');
      this.conn = this.newConnection(mode.endpoint);
      const conn = this.conn;
      conn.watchConnection(() => this.rerun(conn, 'the connection to the plugin sidecar was lost'));
    }
    const previous = this.identityValue;
    try {
      this.identityValue = await this.initialize(this.conn, expectedInstance, deadline);
    } catch (err) {
      const conn = this.conn;
      this.conn = undefined;
      if (this.proc) {
        // A plugin that answered (e.g. refused its config) gets the whole stop sequence, so it can exit 0;
        // one that stopped answering gets no grace.
        const p = this.proc;
        this.proc = undefined;
        const how = await this.stopProcess(p, conn, 'plugin start-up failed', !(err instanceof PluginStartTimeoutError));
        this.log.info({ how, pid: p.pid }, 'plugin stopped after a failed start');
      } else {
        conn.close('plugin start-up failed');
      }
      if (this.isStopping()) throw err;
      this.setState('idle');
      throw err;
    }
    if (this.isStopping()) return;
    this.becomeReady(previous);
  }

  private newConnection(target: string): PluginConnection {
    const conn: PluginConnection = new PluginConnection(target, this.opts.observeCall, this.opts.callPolicy, () =>
      this.rerun(conn, 'the plugin answered NOT_CONFIGURED'),
    );
    return conn;
  }

  private becomeReady(previous: PluginIdentity | undefined): void {
    this.readyAt = Date.now();
    const { info, capabilities } = this.identityValue!;
    // Whether this start found a different process than the last one ('unknown' without instance ids).
    const newProcess = previous === undefined ? undefined : info.instanceId === '' ? 'unknown' : info.instanceId !== previous.info.instanceId;
    this.log.info(
      {
        name: info.name,
        version: info.vendorVersion,
        protocol: info.protocolVersion,
        pid: this.proc?.pid,
        providerName: capabilities.providerName,
        instanceId: info.instanceId,
        newProcess,
      },
      'plugin ready',
    );
    if (this.opts.mode.kind === 'socket' && info.instanceId === '' && previous === undefined) {
      this.log.warn(
        {},
        'plugin sidecar reports no instance id: a restart is noticed only when the connection drops; upgrade the provider (see GetPluginInfoResponse.instance_id)',
      );
    }
    this.setState('ready');
    this.startProbing();
  }

  /**
   * Runs the start sequence again on `conn` (Configure included) because the
   * provider behind it may have changed or lost its configuration; no cloud
   * call is sent until it succeeds. On failure: redial (sidecar) or restart
   * the process (exec) with backoff. Ignored unless `conn` is the live
   * connection of a ready plugin (so one cause triggers one re-run).
   */
  private rerun(conn: PluginConnection, reason: string): void {
    if (conn !== this.conn || this.stateValue !== 'ready') return;
    this.log.warn({ reason }, 'plugin may have changed behind its connection; running the start sequence again before any further cloud call');
    clearTimeout(this.probeTimer);
    // Calls already sent may reach the new process before it is configured.
    conn.rejectAll(new PluginUnavailableError(`${reason}: the call will be retried`));
    this.setState('starting');
    this.restarts++;
    this.emit('restart', this.restarts);
    const previous = this.identityValue;
    const expected = this.opts.mode.kind === 'exec' ? (previous?.info.instanceId ?? '') : '';
    this.initialize(conn, expected, Date.now() + this.opts.startTimeoutMs).then(
      (identity) => {
        if (this.isStopping() || conn !== this.conn) return;
        this.identityValue = identity;
        this.becomeReady(previous);
      },
      async (err: unknown) => {
        // A dead exec plugin leaves the restart to us (onExit ignores a run in `starting`).
        if (this.isStopping() || this.stateValue !== 'starting' || (this.conn !== undefined && this.conn !== conn)) return;
        this.log.error({ err: errorMessage(err) }, 'plugin start sequence failed after a reconnect');
        this.conn = undefined;
        const proc = this.proc;
        this.proc = undefined;
        if (proc) await this.stopProcess(proc, conn, 'plugin start sequence failed', !(err instanceof PluginStartTimeoutError));
        else conn.close('plugin start sequence failed');
        if (!this.isStopping()) this.scheduleRestart();
      },
    );
  }

  private async initialize(conn: PluginConnection, expectedInstance: string, deadline: number): Promise<PluginIdentity> {
    const remaining = () => Math.max(1, deadline - Date.now());
    const timedOut = (what: string, cause?: unknown) =>
      new PluginStartTimeoutError(
        `plugin did not become ready within the start timeout of ${this.opts.startTimeoutMs / 1000} s (--plugin-start-timeout): ${what}` +
          `${cause === undefined ? '' : ` (${errorMessage(cause)})`}; see the plugin's log lines, or raise --plugin-start-timeout if it is only slow`,
        { cause },
      );
    // A call cut short by the start deadline is the timeout, not the call's own failure.
    const call = async <T>(method: string, send: (ms: number) => Promise<T>, capMs = Infinity): Promise<T> => {
      if (Date.now() >= deadline) throw timedOut(`${method} was not answered in time`);
      try {
        return await send(Math.min(capMs, remaining()));
      } catch (err) {
        if (Date.now() >= deadline) throw timedOut(`${method} was not answered in time`, err);
        throw err;
      }
    };
    while (!(await conn.healthCheck(Math.min(2000, remaining())))) {
      if (Date.now() >= deadline) throw timedOut(`${conn.target} never reported SERVING on grpc.health.v1`);
      await delay(STARTUP_POLL_MS);
    }
    const info = await call('GetPluginInfo', (ms) => conn.unary<object, GetPluginInfoResponse>(conn.identity, 'GetPluginInfo', {}, ms));
    if (!SUPPORTED_PROTOCOL_VERSIONS.includes(info.protocolVersion)) {
      const side = info.protocolVersion > Math.max(...SUPPORTED_PROTOCOL_VERSIONS) ? 'upgrade the host' : 'upgrade the plugin';
      throw new PluginStartError(
        `plugin ${info.name} speaks protocol ${info.protocolVersion}, host speaks ${SUPPORTED_PROTOCOL_VERSIONS.join(',')}: ${side}`,
      );
    }
    if (expectedInstance && info.instanceId !== expectedInstance) {
      throw new PluginStartError(
        `plugin answered with instance id ${JSON.stringify(info.instanceId)}, expected the one the host launched (${expectedInstance}): another process owns the socket`,
      );
    }
    const capabilities = await call('GetPluginCapabilities', (ms) =>
      conn.unary<object, GetPluginCapabilitiesResponse>(conn.identity, 'GetPluginCapabilities', {}, ms),
    );
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(capabilities.providerName)) {
      throw new PluginStartError(
        `plugin declares provider name ${JSON.stringify(capabilities.providerName)}, which is not a lowercase DNS label: fix the plugin`,
      );
    }
    const ownership = nodeOwnershipProblem(capabilities);
    if (ownership) throw new PluginStartError(`plugin declares an invalid node ownership: ${ownership}: fix the plugin`);
    // A load balancer class declaration the host cannot use is the plugin's bug: refuse it at once.
    const lbClassProblems = capabilities.services.includes(Service.SERVICE_LOAD_BALANCERS)
      ? lbDeclarationProblems(info.name, lbClassDeclaration(capabilities))
      : [];
    if (lbClassProblems.length) throw new PluginStartError(`${lbClassProblems.join('; ')}: fix the plugin`);
    // So is a provisioner name that could never be a StorageClass provisioner (or is declared twice).
    const volumeProblems = capabilities.services.includes(Service.SERVICE_VOLUMES)
      ? volumeDeclarationProblems(info.name, capabilities.volumeProvisioners)
      : [];
    if (volumeProblems.length) throw new PluginStartError(`${volumeProblems.join('; ')}: fix the plugin`);
    const schema = capabilities.capabilities.includes(Capability.CAPABILITY_PROVIDER_SCHEMA) ? await this.readSchema(conn, call) : undefined;
    const configured = await call('Configure', (ms) =>
      conn.unary<object, { warnings: string[] }>(conn.lifecycle, 'Configure', this.configureRequest(), ms),
    ).catch((err: unknown) => {
      if (err instanceof CloudCallError && err.code === 'INVALID_ARGUMENT') {
        throw new CloudConfigRefusedError(
          `plugin ${info.name} refused its cloud config (Configure answered INVALID_ARGUMENT: ${err.message}): fix the cloud config (--cloud-config) and restart the host`,
          { cause: err },
        );
      }
      throw err;
    });
    // A (re)started provider's warnings are logged again, whatever the last ones were.
    this.lastWarnings = '';
    this.logConfigureWarnings(configured.warnings);
    for (let answeredNotReady = false; ; answeredNotReady = true) {
      if (answeredNotReady && Date.now() >= deadline) throw timedOut('Probe kept answering ready=false');
      let probe: { ready: boolean };
      try {
        probe = await call('Probe', (ms) => conn.unary<object, { ready: boolean }>(conn.identity, 'Probe', {}, ms), PROBE_TIMEOUT_MS);
      } catch (err) {
        // The last Probe cut short by the deadline says nothing new: the plugin was answering not ready.
        if (answeredNotReady && Date.now() >= deadline) throw timedOut('Probe kept answering ready=false');
        throw err;
      }
      if (probe.ready) break;
      await delay(STARTUP_POLL_MS);
    }
    return { info, capabilities, schema };
  }

  /**
   * The provider's schema, once per process. A failed call or a schema the
   * host cannot use is one log line and no validation (the provider still
   * checks its input): never a reason to refuse the provider.
   */
  private async readSchema(
    conn: PluginConnection,
    call: <T>(method: string, send: (ms: number) => Promise<T>, capMs?: number) => Promise<T>,
  ): Promise<AnnotationSchema | undefined> {
    let answer: GetProviderSchemaResponse;
    try {
      answer = await call(
        'GetProviderSchema',
        (ms) => conn.unary<object, GetProviderSchemaResponse>(conn.identity, 'GetProviderSchema', {}, ms),
        PROBE_TIMEOUT_MS,
      );
    } catch (err) {
      if (err instanceof PluginStartTimeoutError) throw err;
      this.log.error(
        { err: errorMessage(err) },
        "cannot read the plugin's schema (GetProviderSchema); Service annotations are not validated by the host",
      );
      return undefined;
    }
    const compiled = AnnotationSchema.compile(answer);
    if ('problem' in compiled) {
      this.log.error(
        { problem: compiled.problem },
        "ignoring the plugin's schema (GetProviderSchema); Service annotations are not validated by the host",
      );
      return undefined;
    }
    this.log.info({ annotations: compiled.schema.serviceAnnotations }, "plugin's schema read; Service annotations are validated before every ensure");
    return compiled.schema;
  }

  /**
   * The liveness policy (docs/protocol.md), the same in both modes: every
   * probe interval, grpc.health.v1 Check, GetPluginInfo (a different
   * instance id re-runs the start sequence) and Probe, each with a
   * PROBE_TIMEOUT_MS deadline. After LIVENESS_FAILURES consecutive failed
   * checks (an error, a deadline exceeded, ready=false, NOT SERVING, or a dead
   * socket) the plugin is killed and restarted (exec mode) or redialed
   * (sidecar mode) with backoff; readiness is false until it is ready again.
   * Checks run one after another, never overlapping.
   */
  private startProbing(): void {
    clearTimeout(this.probeTimer);
    const every = this.opts.probeIntervalMs ?? 10_000;
    const conn = this.conn;
    const known = this.identityValue?.info.instanceId ?? '';
    let failures = 0;
    const check = async (): Promise<void> => {
      if (!conn || conn !== this.conn || this.stateValue !== 'ready') return;
      try {
        if (!(await conn.healthCheck(PROBE_TIMEOUT_MS)))
          throw new Error(`grpc.health.v1 Check did not answer SERVING (deadline ${PROBE_TIMEOUT_MS} ms)`);
        // A different instance id is a new process that was never configured.
        const info = await conn.unary<object, GetPluginInfoResponse>(conn.identity, 'GetPluginInfo', {}, PROBE_TIMEOUT_MS);
        if (info.instanceId !== known) {
          this.rerun(
            conn,
            `a different provider process answers (instance id ${JSON.stringify(info.instanceId)}, configured ${JSON.stringify(known)})`,
          );
          return;
        }
        const r = await conn.unary<object, { ready: boolean }>(conn.identity, 'Probe', {}, PROBE_TIMEOUT_MS);
        if (!r.ready) throw new Error('Probe answered ready=false');
        failures = 0;
      } catch (err) {
        if (conn !== this.conn || this.stateValue !== 'ready') return;
        failures++;
        this.log.warn({ err: errorMessage(err), failures, limit: LIVENESS_FAILURES }, 'plugin liveness check failed');
        if (failures >= LIVENESS_FAILURES) {
          this.restartUnresponsive(conn, `${failures} consecutive liveness checks failed, the last with: ${errorMessage(err)}`);
          return;
        }
      }
      this.probeTimer = setTimeout(() => void check(), every).unref();
    };
    this.probeTimer = setTimeout(() => void check(), every).unref();
  }

  /** A live plugin that failed its liveness checks: redial (sidecar), or kill it and restart with backoff (exec; onExit restarts). */
  private restartUnresponsive(conn: PluginConnection, reason: string): void {
    clearTimeout(this.probeTimer);
    if (this.opts.mode.kind === 'socket') {
      this.log.error({ reason }, 'plugin sidecar stopped answering; redialing');
      this.conn = undefined;
      conn.close('plugin sidecar stopped answering');
      this.scheduleRestart();
      return;
    }
    const proc = this.proc;
    if (!proc) return; // already exited: onExit restarts it
    this.log.error({ reason, pid: proc.pid }, 'plugin stopped answering; killing it to restart');
    conn.rejectAll(new PluginUnavailableError(`plugin ${this.opts.name} stopped answering (${reason}): the call will be retried`));
    this.setState('backoff');
    // Unresponsive: no grace, straight to SIGTERM then SIGKILL. onExit schedules the restart.
    void proc.stop({ graceMs: 0 });
  }

  private scheduleRestart(): void {
    if (Date.now() - this.readyAt >= this.resetAfterMs) this.backoff.reset();
    const wait = this.backoff.next();
    this.setState('backoff');
    this.log.info({ retryInMs: wait, restarts: this.restarts }, 'restarting plugin after backoff');
    this.restartTimer = setTimeout(() => {
      if (this.isStopping()) return;
      this.restarts++;
      this.emit('restart', this.restarts);
      this.runOnce().catch((err) => {
        if (this.isStopping()) return;
        this.log.error({ err: errorMessage(err) }, 'plugin restart failed');
        this.scheduleRestart();
      });
    }, wait);
  }

  private onExit(proc: PluginProcess, how: string): void {
    if (proc !== this.proc) return; // a run we already replaced or stopped
    this.proc = undefined;
    const conn = this.conn;
    this.conn = undefined;
    // Reject every in-flight call now rather than letting each hit its deadline.
    conn?.close(`plugin ${this.opts.name} exited (${how})`);
    if (this.isStopping()) return;
    clearTimeout(this.probeTimer);
    this.log.error({ how, pid: proc.pid }, 'plugin exited unexpectedly');
    if (this.stateValue === 'starting') return; // runOnce reports the failure itself
    this.scheduleRestart();
  }
}
