/**
 * The host as a separate OS process (`node dist/host/main.js`), for tests
 * that must kill it for real (SIGKILL). Its output goes straight to a log
 * file (see ha-host-process.ts). It runs as the shipped ServiceAccount
 * (kubeconfigFile), and kill() and stop() fail when its log shows a 403.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { existsSync, statSync } from 'node:fs';
import { assertNoForbidden, forbiddenInLog } from './forbidden.js';
import { spawnHost, type HostMain } from './ha-host-process.js';
import { hostKubeConfig } from './service-account.js';

export interface HostProcess {
  pid: number;
  logPath: string;
  /** SIGKILL, then wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful), then wait for the exit; resolves to the exit code (or signal name). */
  stop(): Promise<number | string>;
}

/** Writes the test hosts' kubeconfig (the shipped ServiceAccount, see service-account.ts) into `dir`: a host process needs a file. */
export async function kubeconfigFile(dir: string): Promise<string> {
  const kc = await hostKubeConfig();
  const path = join(dir, 'kubeconfig');
  await writeFile(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

/**
 * Starts `node dist/host/main.js <args>` and waits until it logs that it
 * started. Output is appended to `logPath`; `env` replaces this process's
 * environment.
 */
export async function startHostProcess(args: string[], logPath: string, env?: NodeJS.ProcessEnv, main?: HostMain): Promise<HostProcess> {
  // One replica: no lease to wait for after a SIGKILL (unless the caller asks for leader election).
  if (!args.some((a) => a.startsWith('--leader-elect'))) args = ['--leader-elect=false', ...args];
  // Only this process's lines count: the log may hold an earlier run's.
  const offset = existsSync(logPath) ? statSync(logPath).size : 0;
  const host = spawnHost(args, logPath, { env, main });
  const checkForbidden = async () => assertNoForbidden(await forbiddenInLog(logPath, offset), logPath);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    host.identity.then(() => 'started' as const),
    host.exited.then((code) => `exited (${code}) during start` as const),
    new Promise<string>((r) => (timer = setTimeout(() => r('did not log that it started within 60 s'), 60_000))),
  ]);
  clearTimeout(timer);
  if (outcome !== 'started') {
    host.kill('SIGKILL');
    throw new Error(`host process ${outcome}; see ${logPath}`);
  }
  return {
    pid: host.pid,
    logPath,
    kill: async () => {
      host.kill('SIGKILL');
      await host.exited;
      await checkForbidden();
    },
    stop: async () => {
      host.kill('SIGTERM');
      const code = await host.exited;
      await checkForbidden();
      return code;
    },
  };
}
