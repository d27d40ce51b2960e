/**
 * The host as a real process (`node dist/host/main.js`), for tests that kill,
 * signal and restart it. Its stdout and stderr (log lines) go straight
 * to a file descriptor of the log file, so a SIGKILLed host (or a crashed
 * test worker) loses nothing it wrote; the log is scanned for the
 * leader-election identity.
 */
import { existsSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ManagedProcess } from '../controlplane/managed-process.js';
import { assertArgsNodeScoped } from './node-scope.js';

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
