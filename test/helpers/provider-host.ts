/**
 * The real host against a provider other than the built-in local cloud: the
 * Go or Python provider in exec mode (--plugin-path) or as a sidecar
 * (--plugin-endpoint), with its cloud config, for the multi-provider host
 * tests. Scoped like every test host (--node-selector, --controllers).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startHost } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import type { TestHost } from './host.js';
import type { ProviderUnderTest } from './providers.js';
import { startSidecar, type Sidecar } from './sidecar.js';
import { logFile } from './log-file.js';
import { assertNodeScoped } from './node-scope.js';
import { checkForbiddenOnStop } from './forbidden.js';
import { hostKubeConfig } from './service-account.js';

export type ProviderMode = 'exec' | 'sidecar';

export interface ProviderHost {
  host: TestHost;
  sidecar?: Sidecar;
  stop(): Promise<void>;
}

export interface ProviderHostOptions {
  /**
   * The provider's own environment, and nothing else of the test process's:
   * in exec mode as --plugin-env flags, in sidecar mode as the sidecar's
   * whole environment. Unset: exec mode passes none, a sidecar inherits the
   * test process's environment plus CCM_PROVIDER_TEST_HOOKS=1. With env, a
   * sidecar's log goes to `<dir>/provider.log` (in exec mode the host logs
   * the provider's lines in `<dir>/host.log`).
   */
  env?: Record<string, string>;
  /** Pass this file with --cloud-config as it is, instead of writing `cloudConfig` (ignored then) as JSON. */
  cloudConfigFile?: string;
}

/**
 * Starts `provider` in `mode` and a host using it. `cloudConfig` is written
 * to `<dir>/cloud.json` and passed with --cloud-config (unless
 * opts.cloudConfigFile names the file to pass); `args` are extra flags.
 */
export async function startProviderHost(
  dir: string,
  provider: { name: string; executable: ProviderUnderTest['executable'] },
  mode: ProviderMode,
  cloudConfig: unknown,
  args: string[],
  opts: ProviderHostOptions = {},
): Promise<ProviderHost> {
  let configPath = opts.cloudConfigFile;
  if (!configPath) {
    configPath = join(dir, 'cloud.json');
    await writeFile(configPath, JSON.stringify(cloudConfig));
  }
  const executable = await provider.executable(dir);
  const sidecar =
    mode !== 'sidecar'
      ? undefined
      : opts.env
        ? await startSidecar(executable, dir, opts.env, { inheritEnv: false, logPath: join(dir, 'provider.log') })
        : await startSidecar(executable, dir, { CCM_PROVIDER_TEST_HOOKS: '1' });
  const pluginEnv = mode === 'exec' ? Object.entries(opts.env ?? {}).map(([k, v]) => `--plugin-env=${k}=${v}`) : [];
  const parsed = parseHostArgs([
    `--cloud-provider=${provider.name}`,
    sidecar ? `--plugin-endpoint=${sidecar.endpoint}` : `--plugin-path=${executable}`,
    `--cloud-config=${configPath}`,
    '--cluster-name=test',
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    '-v=2',
    // No election on the shared default Lease (kube-system/cloud-controller-manager): other files' hosts run at the same time.
    '--leader-elect=false',
    ...pluginEnv,
    ...args,
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  try {
    // As the shipped ServiceAccount; stop() fails on any 403.
    const host = checkForbiddenOnStop(await startHost(parsed.config, { log, kubeConfig: await hostKubeConfig() }), logPath);
    return {
      host,
      sidecar,
      async stop() {
        await host.stop();
        await sidecar?.stop();
      },
    };
  } catch (err) {
    await sidecar?.stop();
    throw err;
  }
}
