/**
 * Runs a provider executable in sidecar mode, as a container next to the host
 * would: no magic cookie, `--endpoint=unix://<dir>/provider.sock`. Resolves
 * once the socket accepts connections.
 */
import { join } from 'node:path';
import { createWriteStream } from 'node:fs';
import { connect } from 'node:net';
import { execa, type ResultPromise } from 'execa';
import { waitFor } from './wait.js';

export interface Sidecar {
  endpoint: string;
  socketPath: string;
  /** Pid of the executable (a launcher script that `exec`s keeps it). */
  pid: number;
  /** Sends `signal` (e.g. SIGSTOP to wedge it: alive, answering nothing). */
  signal(signal: NodeJS.Signals): void;
  stop(): Promise<void>;
}

/** Whether something accepts connections on the Unix socket `path`. */
export function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface SidecarOptions {
  /**
   * Whether the sidecar also gets the test process's environment (default
   * true). False: only `env`, as a container gets only what its spec sets and
   * as exec mode passes only --plugin-env (e.g. no AWS settings or proxies of
   * the machine reach a provider that reads them).
   */
  inheritEnv?: boolean;
  /** Also append the sidecar's stderr (its log) to this file, for assertions and post-mortems. */
  logPath?: string;
}

/** Starts `executable` as a sidecar listening in `dir`; `env` entries are NAME=VALUE. */
export async function startSidecar(executable: string, dir: string, env: Record<string, string> = {}, opts: SidecarOptions = {}): Promise<Sidecar> {
  const socketPath = join(dir, 'provider.sock');
  const endpoint = `unix://${socketPath}`;
  const { CCM_PLUGIN_MAGIC_COOKIE: _cookie, ...all } = process.env;
  void _cookie;
  const inherited = opts.inheritEnv === false ? {} : all;
  const child: ResultPromise = execa(executable, [`--endpoint=${endpoint}`], {
    env: { ...inherited, ...env },
    extendEnv: false,
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
    reject: false,
    buffer: { stderr: true },
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  if (opts.logPath) child.stderr?.pipe(createWriteStream(opts.logPath, { flags: 'a' }));
  try {
    await waitFor(() => answers(socketPath), { what: `sidecar socket ${socketPath}`, timeoutMs: 60_000, intervalMs: 100 });
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}; stderr: ${stderr}`, { cause: err });
  }
  return {
    endpoint,
    socketPath,
    pid: child.pid ?? -1,
    signal: (signal) => void child.kill(signal),
    async stop() {
      // A stopped process gets SIGTERM only once it runs again.
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await child;
      clearTimeout(t);
    },
  };
}
