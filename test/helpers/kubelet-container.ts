/**
 * A container of a pod run by test/helpers/pod-runner.ts, kept running as
 * the kubelet keeps it (restartPolicy Always), with its exec probes run as
 * the kubelet runs them:
 *
 * | kubelet                                                         | here |
 * |-----------------------------------------------------------------|------|
 * | startupProbe first; liveness and readiness only after it passed  | same |
 * | initialDelaySeconds (from the container's start), periodSeconds (10), timeoutSeconds (1), failureThreshold (3), successThreshold (1) | same, with the same defaults |
 * | an exec probe runs the command in the container, with its environment | the command in the image (pod-runner maps its paths), the container's environment |
 * | a probe past timeoutSeconds fails (and its process is killed)    | same (SIGKILL) |
 * | failureThreshold consecutive startup or liveness failures: the container is killed (SIGTERM, the probe's terminationGracePeriodSeconds else the pod's, then SIGKILL) and started again | same; an event says which probe and its last output |
 * | readiness: not ready until it passes, not ready again after failureThreshold failures, never a restart | `ready` |
 * | a container that exits is started again, after a back-off of 0 s, then 10 s doubling up to 300 s | same (no reset after 10 min of running) |
 *
 * Only exec probes run here; a container's httpGet probes are the test's to
 * poll (pod-runner.ts `probe`), as the host is not restarted by the runner.
 */
import { execFile } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Probe } from '@kubernetes/client-node';
import { ManagedProcess } from '../controlplane/managed-process.js';

/** The kubelet's defaults for a probe's unset fields. */
const DEFAULTS = { initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1 };
/** The kubelet's container restart back-off: 10 s doubling, at most 300 s (the first restart is at once). */
const BACKOFF_S = { first: 10, max: 300 };

export interface ContainerSpec {
  name: string;
  /** The container's log, appended to by every run of it (as `kubectl logs --previous` and the current one together). */
  logPath: string;
  /** Where the probe events go, one line each (`kubectl describe pod`'s events). */
  eventsPath: string;
  /** Starts one run of the container's process. */
  spawn(): ManagedProcess;
  /** The [file, args] that run `command` inside the container (paths mapped, the image's root), with its environment `env`. */
  execCommand(command: string[]): [string, string[]];
  env: NodeJS.ProcessEnv;
  startupProbe?: V1Probe;
  livenessProbe?: V1Probe;
  readinessProbe?: V1Probe;
  /** The pod's terminationGracePeriodSeconds (default 30). */
  terminationGracePeriodSeconds?: number;
}

type Kind = 'Startup' | 'Liveness' | 'Readiness';

/** A running container (see the table at the top). */
export class KubeletContainer {
  /** How often it was started again (a liveness or startup failure, or an exit). */
  restarts = 0;
  /** The readiness the kubelet reports (true without a readinessProbe once started, as the kubelet does). */
  ready = false;
  /** Every event, in order: `<Kind> probe failed: <output>`, `Container <name> failed liveness probe, will be restarted`, ... */
  readonly events: string[] = [];
  private process: ManagedProcess;
  /** Bumped at each restart: the probe loops of an older run stop. */
  private run = 0;
  private stopping = false;
  private readonly abort = new AbortController();

  constructor(private readonly spec: ContainerSpec) {
    for (const p of [spec.startupProbe, spec.livenessProbe, spec.readinessProbe])
      if (p && !p.exec?.command?.length) throw new Error(`container ${spec.name}: only exec probes run here (httpGet ones are the test's to poll)`);
    this.process = this.startRun();
  }

  get name(): string {
    return this.spec.name;
  }

  get logPath(): string {
    return this.spec.logPath;
  }

  /** Pid of the current run. */
  get pid(): number | undefined {
    return this.process.pid;
  }

  /** Sends `signal` to the current run (SIGSTOP wedges it: alive, answering nothing). */
  signal(signal: NodeJS.Signals): void {
    this.process.signal(signal);
  }

  /**
   * Stops the probes and the current run as the kubelet stops a container:
   * SIGTERM, the pod's terminationGracePeriodSeconds, SIGKILL (a stopped,
   * wedged process ends only so). Resolves with its exit code or signal; no
   * restart after. Idempotent.
   */
  async stop(): Promise<number | string> {
    this.stopping = true;
    this.abort.abort();
    const p = this.process;
    p.signal('SIGTERM');
    const kill = setTimeout(() => p.signal('SIGKILL'), (this.spec.terminationGracePeriodSeconds ?? 30) * 1000);
    try {
      return await p.exited;
    } finally {
      clearTimeout(kill);
    }
  }

  private event(line: string): void {
    this.events.push(line);
    void appendFile(this.spec.eventsPath, `${new Date().toISOString()} ${line}\n`).catch(() => undefined);
  }

  private startRun(): ManagedProcess {
    const run = ++this.run;
    const p = this.spec.spawn();
    const started = Date.now();
    this.ready = false;
    void p.exited.then((how) => {
      if (this.stopping || run !== this.run) return;
      this.event(`Container ${this.name} exited (${how}), will be restarted`);
      void this.restart(run, 0);
    });
    void this.probeLoops(run, started);
    return p;
  }

  /** Kills run `run` (SIGTERM, `graceS`, SIGKILL) and starts the next after the back-off; a no-op when that run is already being replaced. */
  private async restart(run: number, graceS: number): Promise<void> {
    if (this.stopping || run !== this.run) return;
    this.run++; // the old run's loops and exit handler stand down
    this.ready = false;
    const old = this.process;
    old.signal('SIGTERM');
    const exited = await Promise.race([old.exited.then(() => true), sleep(graceS * 1000, false, { signal: this.abort.signal }).catch(() => false)]);
    if (!exited) {
      old.signal('SIGKILL');
      await old.exited;
    }
    const backoffS = this.restarts === 0 ? 0 : Math.min(BACKOFF_S.first * 2 ** (this.restarts - 1), BACKOFF_S.max);
    if (!(await this.wait(backoffS))) return;
    this.restarts++;
    this.process = this.startRun();
  }

  /** Sleeps `s` seconds; false when the container was stopped meanwhile. */
  private async wait(s: number): Promise<boolean> {
    if (s > 0) await sleep(s * 1000, undefined, { signal: this.abort.signal }).catch(() => undefined);
    return !this.stopping;
  }

  /** One exec probe: passes on exit 0 within timeoutSeconds. */
  private exec(probe: V1Probe): Promise<{ ok: boolean; output: string }> {
    const [file, args] = this.spec.execCommand(probe.exec!.command ?? []);
    const timeout = (probe.timeoutSeconds ?? DEFAULTS.timeoutSeconds) * 1000;
    return new Promise((resolve) =>
      execFile(file, args, { env: this.spec.env, timeout, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
        const output = `${stdout}${stderr}`.trim();
        if (err && (err as { killed?: boolean }).killed)
          resolve({ ok: false, output: `command timed out after ${timeout / 1000}s${output ? `: ${output}` : ''}` });
        else resolve({ ok: !err, output: output || (err ? err.message : '') });
      }),
    );
  }

  private async probeLoops(run: number, started: number): Promise<void> {
    const { startupProbe, livenessProbe, readinessProbe } = this.spec;
    if (startupProbe && !(await this.loop(run, started, 'Startup', startupProbe))) return;
    if (!readinessProbe) this.ready = true;
    await Promise.all([
      livenessProbe ? this.loop(run, started, 'Liveness', livenessProbe) : undefined,
      readinessProbe ? this.loop(run, started, 'Readiness', readinessProbe) : undefined,
    ]);
  }

  /**
   * Runs `probe` every periodSeconds while run `run` lasts. Startup: resolves
   * true once it passes. Liveness and startup: failureThreshold failures in a
   * row restart the container (false). Readiness: sets `ready`.
   */
  private async loop(run: number, started: number, kind: Kind, probe: V1Probe): Promise<boolean> {
    const initialDelayS = probe.initialDelaySeconds ?? DEFAULTS.initialDelaySeconds;
    const periodS = probe.periodSeconds ?? DEFAULTS.periodSeconds;
    const failureThreshold = probe.failureThreshold ?? DEFAULTS.failureThreshold;
    const successThreshold = probe.successThreshold ?? DEFAULTS.successThreshold;
    if (!(await this.wait(Math.max(0, initialDelayS - (Date.now() - started) / 1000)))) return false;
    let failures = 0;
    let successes = 0;
    for (;;) {
      if (this.stopping || run !== this.run) return false;
      const { ok, output } = await this.exec(probe);
      if (this.stopping || run !== this.run) return false;
      if (ok) {
        failures = 0;
        successes++;
        if (kind === 'Startup') return true;
        if (kind === 'Readiness' && successes >= successThreshold) this.ready = true;
      } else {
        successes = 0;
        failures++;
        this.event(`${kind} probe failed: ${output}`);
        if (failures >= failureThreshold) {
          if (kind === 'Readiness') this.ready = false;
          else {
            this.event(`Container ${this.name} failed ${kind.toLowerCase()} probe, will be restarted`);
            const graceS = probe.terminationGracePeriodSeconds ?? this.spec.terminationGracePeriodSeconds ?? 30;
            void this.restart(run, graceS);
            return false;
          }
        }
      }
      if (!(await this.wait(periodS))) return false;
    }
  }
}
