/**
 * The host process wiring: API server check, health/metrics server, plugin
 * supervisor, then (with --leader-elect, once this replica holds the Lease)
 * the shared informers and the enabled controllers. The plugin starts before
 * leadership so a standby is ready to take over, but only the leader runs
 * controllers, and the plugin connection refuses mutating calls unless this
 * replica holds a fresh lease. `startHost` resolves once the plugin is up and
 * the election (or the controllers) runs; `stop()` shuts down in reverse:
 * controllers (bounded) → informers → lease released → plugin → server.
 */
import type { Cloud } from './cloud.js';
import type { HostConfig } from './config/config.js';
import { readCloudConfig } from './config/cloud-config.js';
import { CONTROLLER_FACTORIES, CONTROLLER_PREFLIGHTS } from './controllers/registry.js';
import { EventRecorder } from './kube/events.js';
import { InformerFactory } from './kube/informer-factory.js';
import { getVersion } from './kube/api.js';
import { makeClients, type KubeClients } from './kube/client.js';
import { currentUser, loadKubeConfig, type KubeConfigData } from './kube/kubeconfig.js';
import { ConnectionPool } from './kube/connections.js';
import { HostStartError } from './errors.js';
import { ServiceAccountCredentials } from './kube/service-account-credentials.js';
import { KubeLeaseLock, LeaderElector, newLeaderIdentity } from './kube/leader-election.js';
import { errorMessage, type Logger } from './log.js';
import { createHostMetrics, observePluginRpc, setControllerRunning, type HostMetrics } from './metrics.js';
import { COMPONENT_NAME, EventComponents, type ControllerName } from './names.js';
import { GrpcCloud } from './plugin/grpc-cloud.js';
import { PluginMetrics } from './plugin/plugin-metrics.js';
import { PluginSupervisor, type PluginMode } from './plugin/supervisor.js';
import type { HealthServer } from './server/server.js';
import { HostHealth } from './health.js';
import { delegatedAuth, type RequestAuth } from './server/delegated-auth.js';
import { startSecureServer } from './server/secure-server.js';
import { within } from '../sdk/within.js';
import { HOST_VERSION } from './version.js';
import { registerCloudConfigSecrets, registerEnvSecrets, registerSecret, untrackedSecrets } from './redact.js';
import { setMaxListeners } from 'node:events';
import { Gauge } from 'prom-client';

export { HostStartError } from './errors.js';

export interface HostHandle {
  /** Leader-election identity (`hostname_uuid`), also sent to the plugin as the caller. */
  readonly identity: string;
  /** Whether this host runs its controllers now (always once started without --leader-elect). */
  isLeading(): boolean;
  readonly cloud: Cloud;
  readonly supervisor: PluginSupervisor;
  readonly metrics: HostMetrics;
  /** Port of the health/metrics server, if one runs. */
  readonly healthPort?: number;
  stop(): Promise<void>;
}

export interface StartHostOptions {
  log: Logger;
  /** A kubeconfig to use instead of --kubeconfig/--master (tests, demo); a client-node `KubeConfig` fits. */
  kubeConfig?: KubeConfigData;
  /**
   * Called once when the lease could not be renewed in time: the controllers
   * are already stopping. main exits non-zero, as upstream, so the kubelet
   * restarts the process clean.
   */
  onLeadershipLost?: () => void;
}

/** Bound on waiting for controllers (and then informers) to stop. */
export const CONTROLLER_STOP_TIMEOUT_MS = 10_000;

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

  const cloudConfig = await loadCloudConfig(config, log);

  let kc: KubeConfigData;
  let versionClient: KubeClients;
  try {
    kc = opts.kubeConfig ?? loadKubeConfig({ kubeconfig: config.kubeconfig, master: config.master });
    versionClient = makeClients(kc, { userAgent: `${COMPONENT_NAME}/${HOST_VERSION}` });
  } catch (err) {
    throw new HostStartError(errorMessage(err));
  }
  registerCloudConfigSecrets(cloudConfig);
  registerEnvSecrets(config.pluginEnv);
  registerSecret(currentUser(kc)?.token);
  if (untrackedSecrets() > 0) {
    log.warn(
      { untracked: untrackedSecrets() },
      'some secret values of --cloud-config or --plugin-env are too many or too long (a single line over 4 KiB) to be redacted from logs and events: keep bulky secrets in files the provider reads',
    );
  }
  try {
    await checkApiServer(versionClient);
  } finally {
    versionClient.connections.destroy();
  }

  const metrics = createHostMetrics();
  const cleanups: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const c of cleanups.reverse()) await c().catch((err) => log.warn({ err: errorMessage(err) }, 'error while stopping'));
  };

  // One set of keep-alive connections for every client and watch of the host
  // (per-controller tokens included), closed last.
  const connections = new ConnectionPool();
  cleanups.push(async () => connections.destroy());
  let server: HealthServer | undefined;
  // Built on first use: by the --secure-port server at start, or by the PV label webhook.
  let auth: Promise<RequestAuth> | undefined;
  const requestAuth = () =>
    (auth ??= delegatedAuth(config.serving, {
      kubeConfig: kc,
      userAgent: `${COMPONENT_NAME}/${HOST_VERSION} delegated-auth`,
      registry: metrics.registry,
      connections,
      log,
    }));
  cleanups.push(async () => (await auth?.catch(() => undefined))?.stop());
  try {
    if (config.securePort > 0) {
      server = await startSecureServer(config, { auth: requestAuth, registry: metrics.registry, log });
      const s = server;
      cleanups.push(() => s.close());
    }

    const health = new HostHealth(server);
    const identity = newLeaderIdentity();
    const elector = config.leaderElect
      ? new LeaderElector({
          lock: new KubeLeaseLock(
            makeClients(kc, {
              qps: config.kubeApiQps,
              burst: config.kubeApiBurst,
              userAgent: `${COMPONENT_NAME}/${HOST_VERSION} leader-election`,
              registry: metrics.registry,
              connections,
            }).coordination,
            config.leaderElection.resourceNamespace,
            config.leaderElection.resourceName,
          ),
          identity,
          log,
          ...config.leaderElection,
        })
      : undefined;
    // Only the leader, and only while its lease is fresh, sends cloud mutations.
    let stoppingHost = false;
    const refuseMutation = (): string | undefined => {
      if (stoppingHost) return 'the host is stopping';
      if (elector && !elector.holdsFreshLease()) return 'this replica is not the leader';
      return undefined;
    };

    const mode: PluginMode =
      config.plugin.kind === 'exec'
        ? {
            kind: 'exec',
            path: config.plugin.file,
            env: Object.entries(config.pluginEnv).map(([k, v]) => `${k}=${v}`),
            allow: { tcp: config.pluginAllowTcp, externalSocket: config.pluginAllowExternalSocket },
          }
        : { kind: 'socket', endpoint: config.plugin.endpoint };
    const supervisor = new PluginSupervisor({
      name: config.cloudProvider,
      mode,
      startTimeoutMs: config.pluginStartTimeoutMs,
      shutdownGraceMs: config.pluginShutdownGraceMs,
      configure: { cloudConfig, clusterName: config.clusterName, hostVersion: HOST_VERSION },
      log,
      pluginLogLevel: config.verbosity >= 4 ? 'trace' : config.verbosity >= 1 ? 'debug' : 'info',
      observeCall: (method, code, seconds) => {
        observePluginRpc(metrics, { plugin: config.cloudProvider, method, code }, seconds);
        health.cloud.observe(method, code);
      },
      callPolicy: { caller: identity, refuseMutation },
      onOutputDropped: (stream) => metrics.pluginOutputDropped.inc({ plugin: config.cloudProvider, stream }),
    });
    const pluginMetrics = new PluginMetrics(supervisor, log);
    metrics.registry.append = (hostText) => pluginMetrics.textAfter(hostText);
    const pluginLabels = { plugin: config.cloudProvider };
    supervisor.on('state', (s: string) => metrics.pluginReady.set(pluginLabels, s === 'ready' ? 1 : 0));
    supervisor.on('restart', () => metrics.pluginRestarts.inc(pluginLabels));
    health.watchPlugin(supervisor, config.cloudProvider);
    const abortStart = new AbortController();
    cleanups.push(async () => {
      stoppingHost = true;
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
    for (const name of config.enabledControllers) {
      const preflight = CONTROLLER_PREFLIGHTS[name];
      if (preflight) (await preflight())(config, cloud);
    }

    const userAgent = `${COMPONENT_NAME}/${HOST_VERSION}`;
    const clients = makeClients(kc, { qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent, registry: metrics.registry, connections });
    // Events get their own client and limiter, as upstream's event broadcaster
    // does, so a burst of events never delays the controllers' own writes.
    // Counted in rest_client_requests_total like every other client, so a 403 on an Event shows there too.
    const eventClients = makeClients(kc, { qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent, registry: metrics.registry, connections });
    // --use-service-account-credentials: each controller's clients and Events
    // authenticate as its own ServiceAccount; informers, leader election and
    // the start-up checks keep the host's credentials, as upstream.
    const perController = config.useServiceAccountCredentials ? new ServiceAccountCredentials({ kc, hostCore: clients.core, log }) : undefined;
    const clientsOf = (name: ControllerName): ControllerClients => {
      if (!perController) return { clients, eventClients };
      const o = { qps: config.kubeApiQps, burst: config.kubeApiBurst, userAgent: `${userAgent}/${name}`, connections };
      return {
        clients: perController.clientsFor(name, { ...o, registry: metrics.registry }),
        eventClients: perController.clientsFor(name, { ...o, registry: metrics.registry }),
      };
    };

    let leadingNow = false;
    let informers: InformerFactory | undefined;
    server?.addCheck(
      'informer-sync',
      () => {
        if (leadingNow && informers && !informers.hasSynced()) throw new Error('informer caches are not synced yet');
      },
      'readyz',
    );

    /** Runs every enabled controller until `leading` aborts; resolves once they and the informers stopped (bounded). */
    const runControllers = async (leading: AbortSignal): Promise<void> => {
      // Every controller's loops wait on this one signal (a dozen or more listeners at a time, each
      // removed when its wait ends): no leak, so no MaxListenersExceededWarning.
      setMaxListeners(0, leading);
      leadingNow = true;
      const factory = new InformerFactory({
        clients,
        log,
        nodeSelector: config.nodeSelector,
        namespace: config.watchNamespace,
        minResyncPeriodMs: config.minResyncPeriodMs,
      });
      informers = factory;
      const { running, started } = await startControllers({
        config,
        cloud,
        supervisor,
        clientsOf,
        informers: factory,
        log,
        metrics,
        health,
        requestAuth,
        signal: leading,
      });
      factory.start();
      log.info(
        { version: HOST_VERSION, provider: config.cloudProvider, controllers: started, informerResyncMs: factory.resyncPeriodMs },
        'controllers started',
      );
      await new Promise<void>((resolve) => (leading.aborted ? resolve() : leading.addEventListener('abort', () => resolve(), { once: true })));
      leadingNow = false;
      // In-flight work finishes or is abandoned within the bound; the gate
      // already refuses new cloud mutations.
      const settled = await within(Promise.allSettled(running), CONTROLLER_STOP_TIMEOUT_MS);
      if (!settled) log.warn({ timeoutMs: CONTROLLER_STOP_TIMEOUT_MS }, 'controllers did not stop in time; continuing shutdown');
      await within(factory.stop(), CONTROLLER_STOP_TIMEOUT_MS);
    };

    const stopping = new AbortController();
    let done: Promise<unknown>;
    if (elector) {
      // Upstream (client-go leaderelection metrics) name and meaning.
      const leaderStatus = new Gauge({
        name: 'leader_election_master_status',
        help: 'Whether this replica holds the leader lease (1) or not (0), by lease name.',
        labelNames: ['name'],
        registers: [metrics.registry],
      });
      leaderStatus.set({ name: config.leaderElection.resourceName }, 0);
      server?.addCheck('leaderElection', () => elector.check(), 'healthz');
      done = elector
        .run(stopping.signal, runControllers, (leader) => leaderStatus.set({ name: config.leaderElection.resourceName }, leader === identity ? 1 : 0))
        .then((outcome) => {
          if (outcome === 'lost') opts.onLeadershipLost?.();
        });
    } else {
      done = runControllers(stopping.signal).catch((err) => log.error({ err: errorMessage(err) }, 'controllers failed to start'));
    }
    cleanups.push(async () => {
      stopping.abort();
      await done;
    });
    log.info(
      { version: HOST_VERSION, provider: config.cloudProvider, leaderElect: config.leaderElect, identity },
      'cloud-controller-manager started',
    );
    return {
      cloud,
      supervisor,
      metrics,
      healthPort: server?.port,
      identity,
      isLeading: () => leadingNow,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

interface ControllerClients {
  clients: KubeClients;
  /** Events' own clients and limiter. */
  eventClients: KubeClients;
}

interface StartControllersArgs {
  config: HostConfig;
  cloud: Cloud;
  supervisor: PluginSupervisor;
  /** The API clients of one controller: the host's, or its ServiceAccount's. */
  clientsOf: (name: ControllerName) => ControllerClients;
  informers: InformerFactory;
  log: Logger;
  metrics: HostMetrics;
  health: HostHealth;
  requestAuth: () => Promise<RequestAuth>;
  signal: AbortSignal;
}

/** Loads and starts every enabled controller that this build and cloud support; returns their run promises and names. */
async function startControllers(a: StartControllersArgs): Promise<{ running: Promise<void>[]; started: ControllerName[] }> {
  const running: Promise<void>[] = [];
  const started: ControllerName[] = [];
  for (const name of a.config.enabledControllers) {
    const load = CONTROLLER_FACTORIES[name];
    const controllerLog = a.log.child({ controller: name });
    if (!load) {
      controllerLog.info('controller is not available in this build yet; skipping it');
      continue;
    }
    const factory = await load();
    const { clients, eventClients } = a.clientsOf(name);
    const made = factory({
      name,
      config: a.config,
      cloud: a.cloud,
      supervisor: a.supervisor,
      clients,
      informers: a.informers,
      recorder: new EventRecorder(eventClients.core, { component: EventComponents[name], log: controllerLog }),
      log: controllerLog,
      metrics: a.metrics,
      registry: a.metrics.registry,
      requestAuth: a.requestAuth,
    });
    if ('skip' in made) {
      controllerLog.warn({ reason: made.skip }, 'not starting the controller');
      continue;
    }
    setControllerRunning(a.metrics, name, true);
    const stopped = a.health.controllerStarted(name, made.healthy ? () => made.healthy!() : undefined);
    started.push(name);
    running.push(
      made
        .run(a.signal)
        .then(
          () => {
            if (!a.signal.aborted) {
              controllerLog.error('controller stopped while this replica leads');
              stopped('it returned while this replica leads');
            }
          },
          (err) => {
            controllerLog.error({ err: errorMessage(err) }, 'controller stopped with an error');
            stopped(errorMessage(err));
          },
        )
        .finally(() => setControllerRunning(a.metrics, name, false)),
    );
  }
  return { running, started };
}

/** The --cloud-config bytes; empty without the flag, or when --cloud-config-optional and the file does not exist. */
async function loadCloudConfig(config: HostConfig, log: Logger): Promise<Buffer> {
  if (!config.cloudConfigPath) return Buffer.alloc(0);
  const bytes = await readCloudConfig(config.cloudConfigPath, { optional: config.cloudConfigOptional });
  if (bytes) return bytes;
  log.info(
    { path: config.cloudConfigPath },
    'the --cloud-config file does not exist: starting with an empty cloud config (--cloud-config-optional); restart the host after creating it',
  );
  return Buffer.alloc(0);
}

/** Fails fast, with one line, when the API server cannot be reached (upstream waits up to 10 s). */
async function checkApiServer(clients: KubeClients): Promise<void> {
  const server = clients.rest.server;
  const deadline = Date.now() + API_CHECK_TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await getVersion(clients.rest, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
      return;
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new HostStartError(`cannot reach the API server at ${server}: ${errorMessage(last)}; check --kubeconfig/--master`);
}
