/**
 * A long-running child process (etcd, kube-apiserver, a test host) whose
 * stdout and stderr go straight to a log file, that can be stopped gracefully with a bounded
 * wait, and that is SIGKILLed if this Node process exits without stopping it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** Every process not yet known to have exited; killed on 'exit'. */
const live = new Set<ManagedProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: a SIGKILL is all there is time for.
  process.on('exit', () => {
    for (const p of live) p.killNow();
  });
}

export class ManagedProcess {
  private readonly child: ChildProcess;
  private exitInfo: string | undefined;
  /** Resolves with the exit code, or the name of the signal that ended the process (-1: it never started). */
  readonly exited: Promise<number | string>;

  private constructor(
    /** Short name used in messages ("etcd", "kube-apiserver"). */
    readonly name: string,
    /** File receiving the process's stdout and stderr. */
    readonly logPath: string,
    bin: string,
    args: string[],
    keepAlive: boolean,
    env: NodeJS.ProcessEnv | undefined,
  ) {
    // The log file descriptor is handed to the child directly, so the log is
    // complete even if this process dies, and no pipe keeps Node busy.
    const fd = openSync(logPath, 'a');
    try {
      this.child = spawn(bin, args, { stdio: ['ignore', fd, fd], shell: false, env });
    } finally {
      closeSync(fd);
    }
    live.add(this);
    this.exited = new Promise<number | string>((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = signal ? `killed by ${signal}` : `exited with code ${code}`;
        live.delete(this);
        resolve(signal ?? code ?? -1);
      });
      this.child.once('error', (err) => {
        // Spawn failures (ENOENT, EACCES) come here and no 'exit' follows.
        if (this.child.pid === undefined) {
          this.exitInfo = `failed to start: ${err.message}`;
          live.delete(this);
          resolve(-1);
        }
      });
    });
    // Do not keep the event loop alive for the child: tests that forget to
    // stop still end, and the exit hook then kills the child.
    if (!keepAlive) this.child.unref();
  }

  /**
   * Starts `bin args...` (no shell) with output appended to `logPath`.
   * `keepAlive`: the child keeps this process's event loop alive, as a test
   * that awaits its exit with nothing else running needs.
   */
  /** `opts.env`: the whole environment of the process (default: this process's). */
  static spawn(
    name: string,
    bin: string,
    args: string[],
    logPath: string,
    opts: { keepAlive?: boolean; env?: NodeJS.ProcessEnv } = {},
  ): ManagedProcess {
    installExitHook();
    return new ManagedProcess(name, logPath, bin, args, opts.keepAlive ?? false, opts.env);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Undefined while running; otherwise how it ended ("exited with code 1"). */
  get exit(): string | undefined {
    return this.exitInfo;
  }

  /** The last `n` lines of the process's log, for error messages. */
  async logTail(n = 20): Promise<string> {
    try {
      const lines = (await readFile(this.logPath, 'utf8')).trimEnd().split('\n');
      return lines.slice(-n).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /**
   * SIGTERM, then wait up to `graceMs`; if still running SIGKILL and wait up
   * to 5 s more. Resolves once the process is gone (and reaped by Node).
   * Throws only if even SIGKILL did not end it, naming the pid to clean up.
   */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.exitInfo !== undefined) return;
    this.child.kill('SIGTERM');
    if (await this.waitExit(graceMs)) return;
    this.child.kill('SIGKILL');
    if (await this.waitExit(5_000)) return;
    throw new Error(`${this.name} (pid ${this.pid}) did not exit after SIGKILL; kill it by hand`);
  }

  /** Sends `sig` if the process still runs; does not wait. */
  signal(sig: NodeJS.Signals): void {
    if (this.exitInfo === undefined) {
      try {
        this.child.kill(sig);
      } catch {
        // already gone
      }
    }
  }

  /** Synchronous SIGKILL for exit handlers; does not wait. */
  killNow(): void {
    this.signal('SIGKILL');
  }

  private async waitExit(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([this.exited.then(() => true as const), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
