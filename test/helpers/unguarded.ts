/**
 * The unguarded provider fixture (test/fixtures/unguarded-provider.ts) as a
 * sidecar process, with its call journal, and a host dialing it.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestHost, type TestHost } from './host.js';
import { startSidecar, type Sidecar } from './sidecar.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/unguarded-provider.js', import.meta.url));

/** One journal line of the fixture. */
export interface UnguardedCall {
  pid: number;
  configured: boolean;
  method: string;
  node?: string;
  exists?: boolean;
}

export interface Unguarded {
  host: TestHost;
  sidecar: Sidecar;
  /** Stops the sidecar and starts a new process on the same socket (unconfigured). */
  restart(): Promise<void>;
  /** Every Configure and InstanceExists the fixture processes answered so far. */
  calls(): Promise<UnguardedCall[]>;
  stop(): Promise<void>;
}

/**
 * Starts the fixture as a sidecar in `dir` (`instanceId`: random or empty),
 * knowing the instances `instances` once configured, and a test host on it
 * with `args`.
 */
export async function startUnguarded(dir: string, instances: string[], instanceId: 'random' | 'empty', args: string[]): Promise<Unguarded> {
  const callLog = join(dir, 'calls.jsonl');
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${FIXTURE}' "$@"\n`);
  await chmod(launcher, 0o755);
  const env = { FIXTURE_INSTANCE_ID: instanceId, FIXTURE_CALL_LOG: callLog };
  const config = join(dir, 'cloud.json');
  await writeFile(config, JSON.stringify({ instances }));
  let sidecar = await startSidecar(launcher, dir, env);
  let host: TestHost;
  try {
    host = await startTestHost(dir, ['--cloud-provider=unguarded', `--plugin-endpoint=${sidecar.endpoint}`, `--cloud-config=${config}`, ...args]);
  } catch (err) {
    await sidecar.stop();
    throw err;
  }
  return {
    host,
    get sidecar() {
      return sidecar;
    },
    async restart() {
      await sidecar.stop();
      sidecar = await startSidecar(launcher, dir, env);
    },
    async calls() {
      const text = await readFile(callLog, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as UnguardedCall);
    },
    async stop() {
      try {
        await host.stop();
      } finally {
        await sidecar.stop();
      }
    },
  };
}
