/**
 * One run of a provider executable: spawn (never through a shell), handshake,
 * stderr forwarding, and an escalating stop. The process is its own process
 * group so a stop reaches any children it made; its stdin stays open for its
 * whole life, and EOF tells it that the host is gone. Its exit is taken from
 * the process, not from its pipes (something it started may hold them), and
 * whatever it leaves running is killed (process-tree.ts).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Handshake } from '../../sdk/protocol.js';
import {
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_LOG_LEVEL,
  ENV_PROTOCOL_VERSIONS,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '../../sdk/protocol.js';
import type { Logger } from '../log.js';
import { within } from '../../sdk/within.js';
import { readHandshake, PluginStartError } from './handshake.js';
import { forwardStderr } from './stderr.js';
import { OutputLimiter, type PluginStream } from './output-limiter.js';
import { executableProblem, socketProblem } from './file-checks.js';
import { createSocketDir, removeSocketDir } from './socket-dir.js';
import { redact, redactCut } from '../redact.js';
import { killPluginProcesses, processStartTime, snapshotPluginProcesses, type PluginTree } from './process-tree.js';

/** Characters of a stray stdout line that are logged (stdout is for the handshake only). */
const STDOUT_LOGGED_CHARS = 512;

/** How long the pipes may stay open after the plugin exited (a process it left may hold them) before they are destroyed. */
const PIPE_LINGER_MS = 2_000;

/**
 * How the process ended, from its own exit (the 'exit' event), not from its
 * pipes closing: a process it left behind may hold them open forever.
 */
function whenExited(child: ChildProcessWithoutNullStreams): Promise<string> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ? `killed by ${signal}` : `exit code ${code}`));
    // `on`, not `once`: an unhandled later 'error' (a failed kill, say) would be thrown.
    child.on('error', (err) => {
      if (child.pid === undefined) resolve(`failed to start: ${err.message}`);
    });
  });
}

/** Stops reading the plugin's pipes once they drained or PIPE_LINGER_MS passed, so a leftover holder costs nothing. */
function releasePipes(child: ChildProcessWithoutNullStreams): void {
  const timer = setTimeout(() => {
    child.stdout?.destroy();
    child.stderr?.destroy();
  }, PIPE_LINGER_MS);
  timer.unref();
  let open = 0;
  for (const s of [child.stdout, child.stderr]) {
    if (!s || s.destroyed || s.closed) continue;
    open++;
    s.once('close', () => --open === 0 && clearTimeout(timer));
  }
  if (open === 0) clearTimeout(timer);
}

/** Host environment variables a provider may see; everything else is withheld. */
export const DEFAULT_ENV_ALLOWLIST = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

/**
 * The environment a plugin starts with (before the protocol's CCM_PLUGIN_*
 * variables): the allowlisted host variables, then `entries` (`NAME=VALUE`
 * sets one; `NAME` passes the host's value, if any). Nothing else of the
 * host's environment is passed.
 */
export function allowedPluginEnv(entries: readonly string[], hostEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of DEFAULT_ENV_ALLOWLIST) if (hostEnv[name] !== undefined) env[name] = hostEnv[name]!;
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
    else if (hostEnv[entry] !== undefined) env[entry] = hostEnv[entry]!;
  }
  return env;
}

/** Handshakes accepted besides the default (a Unix socket at CCM_PLUGIN_ENDPOINT); both default to false. */
export interface HandshakeAllowances {
  /** `--plugin-allow-tcp`: a TCP loopback address. */
  tcp?: boolean;
  /** `--plugin-allow-external-socket`: a Unix socket outside the host's private directory. */
  externalSocket?: boolean;
}

export interface SpawnOptions {
  /** The executable; a `.js` file is run with this Node binary. */
  path: string;
  args?: string[];
  startTimeoutMs: number;
  /** Extra environment: NAME (copied from the host) or NAME=VALUE. */
  env?: string[];
  allow?: HandshakeAllowances;
  logLevel?: string;
  log: Logger;
  /** Told about every output line dropped by the log rate limit (see OutputLimiter). */
  onOutputDropped?: (stream: PluginStream) => void;
}

/** Why a handshake is refused under `allow`, with what to do; undefined when it is accepted. */
function handshakeRefusal(h: Handshake, offeredSocket: string, allow: HandshakeAllowances): string | undefined {
  if (h.network === 'tcp' && !allow.tcp) {
    return `it names TCP address ${h.address}, and only Unix sockets are accepted: make the plugin listen on CCM_PLUGIN_ENDPOINT (the SDKs do), or start the host with --plugin-allow-tcp`;
  }
  if (h.network === 'unix' && h.address !== offeredSocket && !allow.externalSocket) {
    return `it names socket ${h.address}, outside the host's private directory: make the plugin listen on CCM_PLUGIN_ENDPOINT (${offeredSocket}), or start the host with --plugin-allow-external-socket`;
  }
  return undefined;
}

/** A started provider process. */
export class PluginProcess {
  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly pid: number,
    readonly handshake: Handshake,
    readonly instanceId: string,
    /**
     * Resolves once the process has exited and been reaped (whether or not
     * its pipes are still open), the processes it left were killed and its
     * socket directory removed.
     */
    readonly exited: Promise<string>,
    private readonly tree: PluginTree,
    /** Processes (pid → start time) found in the plugin's tree at stop, killed at exit if still there. */
    private readonly recorded: Map<number, string>,
  ) {}

  /**
   * Spawns the provider and waits for its handshake. Rejects with
   * PluginStartError (process already killed and reaped) on a bad or missing
   * handshake, an early exit, or the start timeout.
   */
  static async start(opts: SpawnOptions): Promise<PluginProcess> {
    const refused = await executableProblem(opts.path);
    if (refused) throw new PluginStartError(`refusing to start the plugin: ${refused}`);
    const instanceId = randomUUID();
    const socketDir = await createSocketDir(undefined, instanceId);
    const socketPath = join(socketDir, 'provider.sock');
    const env = allowedPluginEnv(opts.env ?? []);
    Object.assign(env, {
      [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
      [ENV_PROTOCOL_VERSIONS]: SUPPORTED_PROTOCOL_VERSIONS.join(','),
      [ENV_ENDPOINT]: `unix://${socketPath}`,
      [ENV_INSTANCE_ID]: instanceId,
      [ENV_LOG_LEVEL]: opts.logLevel ?? 'info',
    });
    const isJs = /\.(c|m)?js$/.test(opts.path);
    const file = isJs ? process.execPath : opts.path;
    const args = isJs ? [opts.path, ...(opts.args ?? [])] : (opts.args ?? []);
    let child: ChildProcessWithoutNullStreams;
    try {
      // Its own process group (detached), so that a stop reaches what it starts; node:child_process directly,
      // because execa's import alone costs the host about 6 MiB of RSS and 260 modules.
      child = spawn(file, args, { env, stdio: 'pipe', detached: true, shell: false });
    } catch (err) {
      await removeSocketDir(socketDir);
      throw new PluginStartError(`cannot start plugin ${opts.path}: ${(err as Error).message}`);
    }
    const pid = child.pid ?? -1;
    const tree: PluginTree = { groupId: pid, marker: `${ENV_INSTANCE_ID}=${instanceId}` };
    const recorded = new Map<number, string>();
    const exitSeen = whenExited(child);
    const exited = exitSeen.then(async (how) => {
      // The process is gone and reaped; whatever it started goes with it, and so does its socket directory.
      const stragglers = pid > 0 ? await killPluginProcesses(tree, recorded) : 0;
      if (stragglers > 0) opts.log.warn({ pid, killed: stragglers }, 'killed processes the plugin left running');
      await removeSocketDir(socketDir);
      releasePipes(child);
      return how;
    });
    // Keep the exit promise from ever rejecting unobserved.
    exited.catch(() => undefined);
    // Older processes cannot carry the marker, so only newer ones' environments are read at the end.
    // Not awaited: the pipes' readers must be attached before any output comes.
    if (pid > 0) void processStartTime(pid).then((t) => (tree.startTime = t));
    // If the host itself exits without stopping the plugin (a crash), the plugin's group goes with it; stdin EOF is the plugin's other cue.
    const killOnHostExit = () => {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    };
    if (pid > 0) {
      process.on('exit', killOnHostExit);
      void exitSeen.then(() => process.off('exit', killOnHostExit));
    }
    const log = opts.log.child({ pid });
    const limiter = new OutputLimiter({ log, onDropped: opts.onOutputDropped });
    void exited.then(() => limiter.close());
    if (child.stderr) void forwardStderr(child.stderr, log, limiter);
    child.stdin?.on('error', () => undefined); // EPIPE once the plugin is gone
    try {
      const handshake = await readHandshake(child.stdout!, {
        timeoutMs: opts.startTimeoutMs,
        // The exit itself, not the clean-up after it: the reader reports it within a short grace after stdout closes.
        exited: exitSeen,
        onOtherLine: (line, cutBytes) => {
          if (!limiter.admit('stdout')) return;
          const truncatedBytes = cutBytes + Buffer.byteLength(line) - Buffer.byteLength(line.slice(0, STDOUT_LOGGED_CHARS));
          // Redacted before the cut, so that the cut cannot split a secret beyond recognition.
          const shown = redact(line).slice(0, STDOUT_LOGGED_CHARS);
          log.warn(
            { line: truncatedBytes > 0 ? redactCut(shown) : shown, ...(truncatedBytes > 0 ? { truncatedBytes } : {}) },
            'ignoring plugin stdout line that is not the handshake',
          );
        },
      });
      const refused = handshakeRefusal(handshake, socketPath, opts.allow ?? {});
      if (refused) throw new PluginStartError(`refusing the plugin's handshake: ${refused}`);
      if (handshake.network === 'tcp') {
        log.warn({ address: handshake.address }, 'plugin listens on TCP loopback (--plugin-allow-tcp): any local process can reach it');
      } else if (handshake.address !== socketPath) {
        log.warn({ expected: socketPath, got: handshake.address }, 'plugin listens outside its private directory (--plugin-allow-external-socket)');
      }
      if (handshake.network === 'unix') {
        const unsafe = await socketProblem(handshake.address, { privateDir: handshake.address === socketPath ? socketDir : undefined });
        if (unsafe) throw new PluginStartError(`refusing the plugin's socket: ${unsafe}`);
      }
      return new PluginProcess(child, pid, handshake, instanceId, exited, tree, recorded);
    } catch (err) {
      const proc = new PluginProcess(
        child,
        pid,
        { core: 1, protocol: 0, network: 'unix', address: '', transport: 'grpc' },
        instanceId,
        exited,
        tree,
        recorded,
      );
      await proc.stop({ graceMs: 0 });
      throw err;
    }
  }

  /** gRPC target for the handshake address. */
  get target(): string {
    return this.handshake.network === 'unix' ? `unix://${this.handshake.address}` : this.handshake.address;
  }

  /** Sends a signal to the whole process group (falls back to the process). */
  signal(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, sig);
    } catch {
      try {
        this.child.kill(sig);
      } catch {
        // Already gone.
      }
    }
  }

  /**
   * Escalating stop: close stdin (the plugin's cue to exit), wait `graceMs`,
   * then SIGTERM the group, wait `termMs`, then SIGKILL it. Always reaps the
   * process; then every process it left is killed (process-tree.ts) and the
   * private socket directory removed. Idempotent.
   */
  async stop(opts: { graceMs: number; termMs?: number }): Promise<string> {
    // While the plugin lives its descendants can be found by parent pid, even those that cleared their environment.
    for (const p of await snapshotPluginProcesses(this.tree)) this.recorded.set(p.pid, p.startTime);
    this.child.stdin?.end();
    const waitFor = (ms: number) => within(this.exited, ms);
    if (!(await waitFor(opts.graceMs))) {
      this.signal('SIGTERM');
      if (!(await waitFor(opts.termMs ?? 2000))) this.signal('SIGKILL');
    }
    return this.exited;
  }
}
