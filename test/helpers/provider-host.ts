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

/**
 * Starts `provider` in `mode` and a host using it. `cloudConfig` is written
 * to `<dir>/cloud.json` and passed with --cloud-config; `args` are extra flags.
 * `pluginEnv` reaches the provider: --plugin-env in exec mode, its
 * environment in sidecar mode.
 */
export async function startProviderHost(
  dir: string,
  provider: { name: string; executable: ProviderUnderTest['executable'] },
  mode: ProviderMode,
  cloudConfig: unknown,
  args: string[],
  pluginEnv: Record<string, string> = {},
): Promise<ProviderHost> {
  const configPath = join(dir, 'cloud.json');
  await writeFile(configPath, JSON.stringify(cloudConfig));
  const executable = await provider.executable(dir);
  const sidecar = mode === 'sidecar' ? await startSidecar(executable, dir, { CCM_PROVIDER_TEST_HOOKS: '1', ...pluginEnv }) : undefined;
  const parsed = parseHostArgs([
    `--cloud-provider=${provider.name}`,
    ...(sidecar
      ? [`--plugin-endpoint=${sidecar.endpoint}`]
      : [`--plugin-path=${executable}`, ...Object.entries(pluginEnv).map(([k, v]) => `--plugin-env=${k}=${v}`)]),
    `--cloud-config=${configPath}`,
    '--cluster-name=test',
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    '-v=2',
    // No election on the shared default Lease (kube-system/cloud-controller-manager): other files' hosts run at the same time.
    '--leader-elect=false',
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
