/**
 * The host as a real process (`node dist/host/main.js`), for tests that kill,
 * signal and restart it. stderr (JSON log lines) goes to a file and is
 * scanned for the leader-election identity.
 */
import { createWriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';

const MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));

export interface HostProcess {
  readonly pid: number;
  /** Leader-election identity, once the host logged it. */
  readonly identity: Promise<string>;
  /** Exit code (or signal name) once the process ended. */
  readonly exited: Promise<number | string>;
  readonly logPath: string;
  kill(signal: NodeJS.Signals): void;
}

/** Spawns the host with `args`, appending its log to `logPath`. */
export function spawnHost(args: string[], logPath: string): HostProcess {
  const child: ResultPromise = execa(process.execPath, [MAIN, ...args], { reject: false, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe', buffer: false, cleanup: true });
  const log = createWriteStream(logPath, { flags: 'a' });
  let resolveId!: (id: string) => void;
  const identity = new Promise<string>((r) => (resolveId = r));
  let pending = '';
  child.stderr!.on('data', (d: Buffer) => {
    log.write(d);
    pending += d.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const m = /"identity":"([^"]+)"/.exec(line);
      if (m && line.includes('cloud-controller-manager started')) resolveId(m[1]!);
    }
  });
  const exited = child.then((r) => (r.signal ? r.signal : (r.exitCode ?? -1)));
  void exited.finally(() => log.end());
  return {
    pid: child.pid!,
    identity,
    exited,
    logPath,
    kill: (signal) => {
      child.kill(signal);
    },
  };
}
