/**
 * Starts the real host (startHost) for a test: flags parsed like the binary
 * does, the local cloud plugin as a real child process, the shared real
 * control plane. Logs go to `<dir>/host.log` for post-mortems.
 *
 * The host authenticates as the shipped ServiceAccount (deploy/base/rbac.yaml;
 * see service-account.ts), so every controller test runs under the shipped
 * RBAC: `stop()` fails (throws) when the host met any 403 Forbidden, counted
 * in rest_client_requests_total or logged by a watch.
 */
import { join } from 'node:path';
import { startHost, type HostHandle } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { hostKubeConfig } from './service-account.js';
import { logFile } from './log-file.js';
import { assertNodeScoped } from './node-scope.js';
import { checkForbiddenOnStop } from './forbidden.js';
import { ALLOW_SIMULATION_FLAG } from './localcloud.js';

export interface TestHost extends HostHandle {
  logPath: string;
}

export interface TestHostOptions {
  /** Run with this identity instead of the shipped ServiceAccount (e.g. the admin, for tests about other RBAC). */
  kubeConfig?: KubeConfig;
}

/** Where startTestHost(dir) keeps its log. */
export function testHostLogPath(dir: string): string {
  return join(dir, 'host.log');
}

/** `args` are extra flags (e.g. `--controllers=cloud-node`); `dir` holds the log and the local cloud state. */
export async function startTestHost(dir: string, args: string[] = [], opts: TestHostOptions = {}): Promise<TestHost> {
  const kc = opts.kubeConfig ?? (await hostKubeConfig());
  const parsed = parseHostArgs([
    '--cloud-provider=local',
    '--cluster-name=test',
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${join(dir, 'cloud')}`,
    ALLOW_SIMULATION_FLAG,
    '-v=2',
    // Many test files run hosts at once against one API server: no election
    // unless a test asks for one (with its own lease name and namespace).
    '--leader-elect=false',
    // No admission webhook server on the shared default port unless a test asks for one (its own free port).
    '--webhook-secure-port=0',
    ...args,
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  assertNodeScoped(parsed.config);
  const logPath = testHostLogPath(dir);
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  const host = await startHost(parsed.config, { log, kubeConfig: kc });
  return checkForbiddenOnStop(host, logPath);
}
