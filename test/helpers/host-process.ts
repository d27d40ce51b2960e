/**
 * The host as a separate OS process (`node dist/host/main.js`), for tests
 * that must kill it for real (SIGKILL). Its output goes to a log file.
 */
import { createWriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { testKubeConfig } from '../controlplane/shared.js';
import { waitFor } from './wait.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));

export interface HostProcess {
  pid: number;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful), then wait for the exit. */
  stop(): Promise<void>;
}

/** Writes the suite's kubeconfig into `dir` (a host process needs a file). */
export async function kubeconfigFile(dir: string): Promise<string> {
  const kc = await testKubeConfig();
  const path = join(dir, 'kubeconfig');
  await writeFile(path, kc.exportConfig());
  return path;
}

/** Starts `node dist/host/main.js <args>` and waits until it logs that it started. Output is appended to `logPath`. */
export async function startHostProcess(args: string[], logPath: string): Promise<HostProcess> {
  // One replica: no lease to wait for after a SIGKILL (unless the caller asks for leader election).
  if (!args.some((a) => a.startsWith('--leader-elect'))) args = ['--leader-elect=false', ...args];
  const child: ResultPromise = execa(process.execPath, [HOST_MAIN, ...args], { reject: false, stdin: 'ignore', all: true, buffer: false });
  child.all!.pipe(createWriteStream(logPath, { flags: 'a' }));
  let started = false;
  let exited = false;
  child.all!.on('data', (d: Buffer) => {
    if (d.toString().includes('cloud-controller-manager started')) started = true;
  });
  void child.then(() => (exited = true));
  await waitFor(() => started || exited, { what: 'host process started', timeoutMs: 60_000, intervalMs: 50 });
  if (!started) throw new Error(`host process exited during start; see ${logPath}`);
  return {
    pid: child.pid!,
    kill: async () => {
      child.kill('SIGKILL');
      await child;
    },
    stop: async () => {
      child.kill('SIGTERM');
      await child;
    },
  };
}
