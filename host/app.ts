/**
 * The host process wiring: API server check, health/metrics server, plugin
 * supervisor, shared informers and the enabled controllers. `startHost`
 * resolves once everything is running and returns a handle whose `stop()`
 * shuts down in reverse order (controllers → informers → plugin → server).
 */
import { readFile } from 'node:fs/promises';
import { VersionApi, type KubeConfig } from '@kubernetes/client-node';
import type { Cloud } from './cloud.js';
import type { HostConfig } from './config/config.js';
import { CONTROLLER_FACTORIES } from './controllers/registry.js';
import { EventRecorder } from './kube/events.js';
import { InformerFactory } from './kube/informer-factory.js';
import { loadKubeConfig, makeClients } from './kube/client.js';
import { HostStartError } from './errors.js';
import { errorMessage, type Logger } from './log.js';
import { createHostMetrics, observePluginRpc, setControllerRunning, type HostMetrics } from './metrics.js';
import { COMPONENT_NAME, EventComponents } from './names.js';
import { GrpcCloud } from './plugin/grpc-cloud.js';
import { PluginSupervisor, type PluginMode } from './plugin/supervisor.js';
import { startHealthServer, type HealthServer } from './server/server.js';
import { HOST_VERSION } from './version.js';

export { HostStartError } from './errors.js';

export interface HostHandle {
  readonly cloud: Cloud;
  readonly supervisor: PluginSupervisor;
  readonly metrics: HostMetrics;
  /** Port of the health/metrics server, if one runs. */
  readonly healthPort?: number;
  stop(): Promise<void>;
}

export interface StartHostOptions {
  log: Logger;
  /** A KubeConfig to use instead of --kubeconfig/--master (tests, demo). */
  kubeConfig?: KubeConfig;
}

const API_CHECK_TIMEOUT_MS = 10_000;

export async function startHost(config: HostConfig, opts: StartHostOptions): Promise<HostHandle> {
  const log = opts.log;
  if (config.clusterNameDefaulted) {
    log.warn(
      { clusterName: config.clusterName },
      '--cluster-name is left at its default: cloud objects of clusters sharing one account may collide; set a unique --cluster-name',
    );
  }
  for (const w of config.warnings) log.warn({ warning: w }, 'configuration warning');

  let cloudConfig = Buffer.alloc(0);
  if (config.cloudConfigPath) {
    try {
      cloudConfig = await readFile(config.cloudConfigPath);
    } catch (err) {
      throw new HostStartError(`cannot read --cloud-config ${config.cloudConfigPath}: ${errorMessage(err)}`);
    }
  }

  let kc: KubeConfig;
  try {
    kc = opts.kubeConfig ?? loadKubeConfig({ kubeconfig: config.kubeconfig, master: config.master });
  } catch (err) {
    throw new HostStartError(errorMessage(err));
  }
  await checkApiServer(kc);

  const metrics = createHostMetrics();
  const cleanups: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const c of cleanups.reverse()) await c().catch((err) => log.warn({ err: errorMessage(err) }, 'error while stopping'));
  };

  let server: HealthServer | undefined;
  try {
    if (config.securePort > 0) {
      server = await startHealthServer({ bindAddress: config.bindAddress, port: config.securePort, tls: config.tls, registry: metrics.registry, log });
      const s = server;
      cleanups.push(() => s.close());
    }

    const mode: PluginMode =
      config.plugin.kind === 'exec'
        ? { kind: 'exec', path: config.plugin.file, env: Object.entries(config.pluginEnv).map(([k, v]) => `${k}=${v}`) }
        : { kind: 'socket', endpoint: config.plugin.endpoint };
    const supervisor = new PluginSupervisor({
      name: config.cloudProvider,
      mode,
      startTimeoutMs: config.pluginStartTimeoutMs,
      shutdownGraceMs: config.pluginShutdownGraceMs,
      configure: { cloudConfig, clusterName: config.clusterName, hostVersion: HOST_VERSION },
      log,
      pluginLogLevel: config.verbosity >= 4 ? 'trace' : config.verbosity >= 1 ? 'debug' : 'info',
      observeCall: (method, code, seconds) => observePluginRpc(metrics, { plugin: config.cloudProvider, method, code }, seconds),
    });
    const pluginLabels = { plugin: config.cloudProvider };
    supervisor.on('state', (s: string) => metrics.pluginReady.set(pluginLabels, s === 'ready' ? 1 : 0));
    supervisor.on('restart', () => metrics.pluginRestarts.inc(pluginLabels));
    server?.addCheck('plugin', () => {
      if (supervisor.state !== 'ready') throw new Error(`plugin ${config.cloudProvider} is ${supervisor.state}`);
    });
    const abortStart = new AbortController();
    cleanups.push(async () => {
      abortStart.abort();
      await supervisor.stop();
    });
    try {
      await supervisor.start(abortStart.signal);
    } catch (err) {
      throw new HostStartError(`cannot start plugin for --cloud-provider=${config.cloudProvider}: ${errorMessage(err)}`);
    }
    const cloud = new GrpcCloud(supervisor, { readMs: config.pluginCallTimeoutMs, mutateMs: config.pluginMutationTimeoutMs });
    if (!cloud.info().hasClusterId) log.warn('the cloud provider does not tag cloud objects with the cluster name (HasClusterID=false)');

    const userAgent = `${COMPONENT_NAME}/${HOST_VERSION}`;
    const clients = makeClients(kc, { qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent, registry: metrics.registry });
    // Events get their own client and limiter, as upstream's event broadcaster
    // does, so a burst of events never delays the controllers' own writes.
    const eventClients = makeClients(kc, { qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent });

    const informers = new InformerFactory({
      kc,
      clients,
      log,
      nodeSelector: config.nodeSelector,
      namespace: config.watchNamespace,
    });
    const controllers = new AbortController();
    const running: Promise<void>[] = [];
    cleanups.push(async () => {
      controllers.abort();
      await Promise.allSettled(running);
      await informers.stop();
    });

    for (const name of config.enabledControllers) {
      const factory = CONTROLLER_FACTORIES[name];
      const controllerLog = log.child({ controller: name });
      if (!factory) {
        controllerLog.info('controller is not available in this build yet; skipping it');
        continue;
      }
      const made = factory({
        name,
        config,
        cloud,
        supervisor,
        clients,
        informers,
        recorder: new EventRecorder(eventClients.core, { component: EventComponents[name], log: controllerLog }),
        log: controllerLog,
        metrics,
        registry: metrics.registry,
      });
      if ('skip' in made) {
        controllerLog.warn({ reason: made.skip }, 'not starting the controller');
        continue;
      }
      setControllerRunning(metrics, name, true);
      server?.addCheck(name, () => {
        if (made.healthy && !made.healthy()) throw new Error(`${name} is not making progress`);
      });
      running.push(
        made
          .run(controllers.signal)
          .catch((err) => controllerLog.error({ err: errorMessage(err) }, 'controller stopped with an error'))
          .finally(() => setControllerRunning(metrics, name, false)),
      );
    }
    informers.start();
    log.info({ version: HOST_VERSION, provider: config.cloudProvider, controllers: config.enabledControllers }, 'cloud-controller-manager started');
    return { cloud, supervisor, metrics, healthPort: server?.port, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** Fails fast, with one line, when the API server cannot be reached (upstream waits up to 10 s). */
async function checkApiServer(kc: KubeConfig): Promise<void> {
  const server = kc.getCurrentCluster()?.server ?? '(none)';
  const version = kc.makeApiClient(VersionApi);
  const deadline = Date.now() + API_CHECK_TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await Promise.race([
        version.getCode(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), Math.max(1, deadline - Date.now())).unref()),
      ]);
      return;
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new HostStartError(`cannot reach the API server at ${server}: ${errorMessage(last)}; check --kubeconfig/--master`);
}
