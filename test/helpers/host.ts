/**
 * Starts the real host (startHost) for a test: flags parsed like the binary
 * does, the local cloud plugin as a real child process, the shared real
 * control plane. Logs go to `<dir>/host.log` for post-mortems.
 */
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { startHost, type HostHandle } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';

export interface TestHost extends HostHandle {
  logPath: string;
}

/** `args` are extra flags (e.g. `--controllers=cloud-node`); `dir` holds the log and the local cloud state. */
export async function startTestHost(dir: string, args: string[] = []): Promise<TestHost> {
  const kc = await testKubeConfig();
  const parsed = parseHostArgs([
    '--cloud-provider=local',
    '--cluster-name=test',
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`,
    '-v=2',
    // Many test files run hosts at once against one API server: no election
    // unless a test asks for one (with its own lease name and namespace).
    '--leader-elect=false',
    ...args,
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: createWriteStream(logPath, { flags: 'a' }) });
  const host = await startHost(parsed.config, { log, kubeConfig: kc });
  return Object.assign(host, { logPath });
}
