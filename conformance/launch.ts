/**
 * Starts a provider executable the way the host does (docs/protocol.md,
 * "Launch"), but keeps everything it prints: every stdout line (the protocol
 * allows exactly one) and the tail of stderr (for failure messages). The
 * environment can be bent (no cookie, a wrong cookie, other protocol
 * versions) for the refusal checks.
 */
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';
import { allowedPluginEnv } from '../host/plugin/process.js';
import {
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_LOG_LEVEL,
  ENV_PROTOCOL_VERSIONS,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '../sdk/protocol.js';

/** How the provider ended. */
export interface ExitInfo {
  code?: number;
  signal?: string;
}

export interface LaunchOptions {
  /** Executable, or a .js file run with this Node.js. */
  path: string;
  /** NAME=VALUE entries added to the environment. */
  env?: readonly string[];
  /** Cookie value; null leaves the variable out. Default: the real cookie. */
  cookie?: string | null;
  /** CCM_PLUGIN_PROTOCOL_VERSIONS; default the versions the host speaks; null leaves the variable out. */
  protocolVersions?: string | null;
  /** Runs before the provider starts, with the socket path it will be given (e.g. to leave a stale socket there). */
  beforeStart?: (socketPath: string) => Promise<void>;
}

/** A running (or finished) provider process. */
export class Launched {
  readonly stdoutLines: string[] = [];
  readonly stderrTail: string[] = [];
  exit?: ExitInfo;
  private lineWaiters: (() => void)[] = [];

  private constructor(
    private readonly child: ResultPromise,
    readonly socketDir: string,
    readonly socketPath: string,
    readonly instanceId: string,
    readonly exited: Promise<ExitInfo>,
  ) {}

  static async start(opts: LaunchOptions): Promise<Launched> {
    const socketDir = await mkdtemp(join(tmpdir(), 'ccm-conf-'));
    await chmod(socketDir, 0o700);
    const socketPath = join(socketDir, 'provider.sock');
    const instanceId = randomUUID();
    const env = allowedPluginEnv(opts.env ?? []);
    if (opts.cookie !== null) env[MAGIC_COOKIE_KEY] = opts.cookie ?? MAGIC_COOKIE_VALUE;
    if (opts.protocolVersions !== null) env[ENV_PROTOCOL_VERSIONS] = opts.protocolVersions ?? SUPPORTED_PROTOCOL_VERSIONS.join(',');
    env[ENV_ENDPOINT] = `unix://${socketPath}`;
    env[ENV_INSTANCE_ID] = instanceId;
    env[ENV_LOG_LEVEL] = 'debug';
    await opts.beforeStart?.(socketPath);
    const isJs = /\.[cm]?js$/.test(opts.path);
    const child = execa(isJs ? process.execPath : opts.path, isJs ? [opts.path] : [], {
      env,
      extendEnv: false,
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      detached: true,
      cleanup: true,
    });
    const exited = child.then((r): ExitInfo => ({ code: r.exitCode, signal: r.signal }));
    const l = new Launched(child, socketDir, socketPath, instanceId, exited);
    void exited.then((e) => {
      l.exit = e;
      l.wake();
    });
    child.stdin?.on('error', () => undefined);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      l.stdoutLines.push(line);
      l.wake();
    });
    createInterface({ input: child.stderr! }).on('line', (line) => {
      l.stderrTail.push(line);
      if (l.stderrTail.length > 40) l.stderrTail.shift();
    });
    return l;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private wake(): void {
    for (const w of this.lineWaiters.splice(0)) w();
  }

  /** The first stdout line, or undefined when the process exits or `timeoutMs` passes first. */
  async firstLine(timeoutMs: number): Promise<string | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.stdoutLines.length === 0 && !this.exit && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.lineWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.stdoutLines[0];
  }

  /** Resolves the exit info, or undefined if still running after `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<ExitInfo | undefined> {
    return Promise.race([this.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs).unref())]);
  }

  /** Closes the provider's stdin (the host-is-gone signal). */
  closeStdin(): void {
    this.child.stdin?.end();
  }

  /** Ends the process for good (SIGKILL to its group) and removes the socket directory. */
  async kill(): Promise<void> {
    if (!this.exit && this.child.pid) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        this.child.kill('SIGKILL');
      }
      await this.exited;
    }
    await rm(this.socketDir, { recursive: true, force: true });
  }

  /** Last stderr lines, for failure messages. */
  stderrSummary(n = 5): string {
    const tail = this.stderrTail.slice(-n).join(' | ');
    return tail ? ` (stderr: ${tail.slice(0, 600)})` : ' (no stderr output)';
  }
}

/** "exit code 1" / "killed by SIGKILL". */
export function describeExit(e: ExitInfo): string {
  return e.signal ? `killed by ${e.signal}` : `exit code ${e.code}`;
}
