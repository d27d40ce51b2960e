/**
 * Start-up step: the controllers. Their API clients (the host's, or each
 * controller's ServiceAccount's), and the run of every enabled controller
 * with the shared informers for as long as this replica leads.
 */
import { WebhookServer } from '../server/webhooks.js';
import { setMaxListeners } from 'node:events';
import type { Cloud } from '../cloud.js';
import { configForShard, type HostConfig } from '../config/config.js';
import { CONTROLLER_FACTORIES } from '../controllers/registry.js';
import type { HostHealth } from '../health.js';
import { makeClients, type KubeClients } from '../kube/client.js';
import type { ConnectionPool } from '../kube/connections.js';
import { EventRecorder } from '../kube/events.js';
import { InformerFactory } from '../kube/informer-factory.js';
import type { KubeConfigData } from '../kube/kubeconfig.js';
import type { WriteFence } from '../kube/rest.js';
import { ServiceAccountCredentials } from '../kube/service-account-credentials.js';
import { errorMessage, type Logger } from '../log.js';
import { setControllerRunning, type HostMetrics } from '../metrics.js';
import { COMPONENT_NAME, ControllerServiceAccounts, EventComponents, SHARDED_CONTROLLERS, type ControllerName } from '../names.js';
import type { PluginSupervisor } from '../plugin/supervisor.js';
import type { ProviderRegistry } from '../providers.js';
import type { RequestAuth } from '../server/delegated-auth.js';
import type { HealthServer } from '../server/server.js';
import { HOST_VERSION } from '../version.js';
import { within } from '../../sdk/within.js';
import { hostNodeOwnership, singleProviderOwnership } from '../ownership/host.js';

/** Bound on waiting for controllers (and then informers) to stop. */
const CONTROLLER_STOP_TIMEOUT_MS = 10_000;

export interface ControllerClients {
  clients: KubeClients;
  /** Events' own clients and limiter. */
  eventClients: KubeClients;
}

/**
 * The host's API clients and the per-controller lookup. Events get their own
 * client and limiter, as upstream's event broadcaster does, so a burst of
 * events never delays the controllers' own writes (counted in
 * rest_client_requests_total like every other client). With
 * --use-service-account-credentials each controller's clients and Events
 * authenticate as its ServiceAccount (upstream's names,
 * ControllerServiceAccounts: node-controller, service-controller,
 * route-controller); informers, leader election and the
 * start-up checks keep the host's credentials, as upstream. `fence` (the
 * fresh-lease check with --leader-elect) is asked before every write of all
 * of these clients; the leader election's own client is not fenced.
 */
export function controllerClients(
  config: HostConfig,
  kc: KubeConfigData,
  d: { metrics: HostMetrics; connections: ConnectionPool; log: Logger; fence?: WriteFence },
): { host: KubeClients; of: (name: ControllerName) => ControllerClients } {
  const userAgent = `${COMPONENT_NAME}/${HOST_VERSION}`;
  // Every write of these clients (the controllers', their Events', the ServiceAccount token requests) is fenced.
  const o = { qps: config.kubeApiQps, burst: config.kubeApiBurst, registry: d.metrics.registry, connections: d.connections, fence: d.fence };
  const clients = makeClients(kc, { ...o, userAgent });
  const eventClients = makeClients(kc, { ...o, userAgent });
  const perController = config.useServiceAccountCredentials ? new ServiceAccountCredentials({ kc, hostCore: clients.core, log: d.log }) : undefined;
  return {
    host: clients,
    of: (name) =>
      perController
        ? {
            clients: perController.clientsFor(ControllerServiceAccounts[name], { ...o, userAgent: `${userAgent}/${name}` }),
            eventClients: perController.clientsFor(ControllerServiceAccounts[name], { ...o, userAgent: `${userAgent}/${name}` }),
          }
        : { clients, eventClients },
  };
}

export interface ControllerRunDeps {
  /** The default provider's. */
  cloud: Cloud;
  supervisor: PluginSupervisor;
  providers: ProviderRegistry;
  clients: { host: KubeClients; of: (name: ControllerName) => ControllerClients };
  metrics: HostMetrics;
  health: HostHealth;
  server?: HealthServer;
  requestAuth: () => Promise<RequestAuth>;
  log: Logger;
}

/**
 * The `informer-sync` readiness check: a replica that leads must have synced
 * caches. Without --leader-elect a replica leads from start-up, so it is not
 * ready before its informers exist (the window between the health server's
 * start and the controllers' start); a standby replica (leader election, not
 * leading) is ready without caches. `synced` is undefined before the informers
 * exist.
 */
export function informerSyncProblem(s: { leaderElect: boolean; leading: boolean; synced: boolean | undefined }): string | undefined {
  if (!s.leading && s.leaderElect) return undefined;
  if (s.synced === undefined) return 'controllers have not started yet';
  return s.synced ? undefined : 'informer caches are not synced yet';
}

/**
 * What runs while this replica leads: `run(leading)` starts the informers
 * and every enabled controller, and resolves once they stopped (bounded)
 * after `leading` aborts. With --shard-index=auto, `run(leading, shard)`
 * runs the term of the shard whose Lease was won (its index and Lease in the
 * term's config: configForShard); `shard` is required then. Adds the
 * `informer-sync` readiness check.
 */
export function controllerRunner(
  base: HostConfig,
  d: ControllerRunDeps,
): { run: (leading: AbortSignal, shard?: number) => Promise<void>; isLeading: () => boolean } {
  let leadingNow = false;
  let informers: InformerFactory | undefined;
  d.server?.addCheck(
    'informer-sync',
    () => {
      const problem = informerSyncProblem({ leaderElect: base.leaderElect, leading: leadingNow, synced: informers?.hasSynced() });
      if (problem !== undefined) throw new Error(problem);
    },
    'readyz',
  );
  const run = async (leading: AbortSignal, shard?: number): Promise<void> => {
    // A replica that has won no shard serves nothing (refused here, not in each controller: shard -1 holds nothing anyway).
    if (base.shard.fromLeases && shard === undefined) throw new Error('controllers started without a shard Lease (--shard-index=auto)');
    const config = base.shard.fromLeases ? configForShard(base, shard!) : base;
    // Every controller's loops wait on this one signal (a dozen or more listeners at a time, each
    // removed when its wait ends): no leak, so no MaxListenersExceededWarning.
    setMaxListeners(0, leading);
    leadingNow = true;
    const factory = new InformerFactory({
      clients: d.clients.host,
      log: d.log,
      nodeSelector: config.nodeSelector,
      namespace: config.watchNamespace,
      minResyncPeriodMs: config.minResyncPeriodMs,
    });
    informers = factory;
    const { running, started } = await startControllers(config, factory, leading, d);
    factory.start();
    // Each provider's own controllers (e.g. AWS's tagging) run in its process, only while this replica leads.
    // Cluster-wide too: with --shard-count, shard 0's leader runs them.
    const withOwn = config.shard.index === 0 ? d.providers.list().filter((p) => p.config.controllers.length > 0) : [];
    await Promise.all(
      withOwn.map((p) =>
        p.supervisor
          .runProviderControllers(p.config.controllers)
          .catch((err: unknown) =>
            d.log.error(
              { err: errorMessage(err), controllers: p.config.controllers, ...(d.providers.list().length > 1 ? { provider: p.name } : {}) },
              "the provider's own controllers were not started",
            ),
          ),
      ),
    );
    d.log.info(
      { version: HOST_VERSION, provider: config.cloudProvider, controllers: started, informerResyncMs: factory.resyncPeriodMs },
      'controllers started',
    );
    await new Promise<void>((resolve) => (leading.aborted ? resolve() : leading.addEventListener('abort', () => resolve(), { once: true })));
    leadingNow = false;
    await Promise.all(
      withOwn.map((p) =>
        p.supervisor
          .runProviderControllers([])
          .catch((err: unknown) =>
            d.log.warn(
              { err: errorMessage(err), ...(d.providers.list().length > 1 ? { provider: p.name } : {}) },
              "the provider's own controllers were not stopped (a plugin of this host ends with it)",
            ),
          ),
      ),
    );
    // In-flight work finishes or is abandoned within the bound; the gate
    // already refuses new cloud mutations.
    const settled = await within(Promise.allSettled(running), CONTROLLER_STOP_TIMEOUT_MS);
    if (!settled) d.log.warn({ timeoutMs: CONTROLLER_STOP_TIMEOUT_MS }, 'controllers did not stop in time; continuing shutdown');
    await within(factory.stop(), CONTROLLER_STOP_TIMEOUT_MS);
  };
  return { run, isLeading: () => leadingNow };
}

/** Loads and starts every enabled controller that this build and cloud support; returns their run promises and names. */
async function startControllers(
  config: HostConfig,
  informers: InformerFactory,
  signal: AbortSignal,
  d: ControllerRunDeps,
): Promise<{ running: Promise<void>[]; started: ControllerName[] }> {
  const running: Promise<void>[] = [];
  const started: ControllerName[] = [];
  // Every provider's declarations (the empty-selector rule depends on how many there are). With several, each is
  // named by its name in the host and declares for itself: the --node-ownership-* overrides are one provider's
  // (config.ts refuses them with --providers-config).
  const list = d.providers.list();
  const nodeOwnership =
    list.length === 1
      ? singleProviderOwnership(config, d.cloud)
      : hostNodeOwnership(list.map((p) => ({ name: () => p.name, cloud: p.cloud, override: {} })));
  // One admission webhook server for this term's controllers that serve a webhook (started with the first of them).
  const webhooks = new WebhookServer({ config: config.volumes, requestAuth: d.requestAuth, log: d.log });
  for (const name of config.enabledControllers) {
    const load = CONTROLLER_FACTORIES[name];
    const controllerLog = d.log.child({ controller: name });
    if (config.shard.index !== 0 && !SHARDED_CONTROLLERS.has(name)) {
      controllerLog.info({ shard: config.shard.index }, 'a cluster-wide controller: it runs on shard 0 only');
      continue;
    }
    if (!load) {
      controllerLog.info('controller is not available in this build yet; skipping it');
      continue;
    }
    const factory = await load();
    const { clients, eventClients } = d.clients.of(name);
    const made = factory({
      name,
      config,
      cloud: d.cloud,
      supervisor: d.supervisor,
      providers: d.providers,
      clients,
      informers,
      recorder: new EventRecorder(eventClients.core, { component: EventComponents[name], log: controllerLog }),
      log: controllerLog,
      metrics: d.metrics,
      registry: d.metrics.registry,
      requestAuth: d.requestAuth,
      webhooks,
      nodeOwnership,
    });
    if ('skip' in made) {
      controllerLog.warn({ reason: made.skip }, 'not starting the controller');
      continue;
    }
    setControllerRunning(d.metrics, name, true);
    const stopped = d.health.controllerStarted(name, made);
    started.push(name);
    running.push(
      made
        .run(signal)
        .then(
          () => {
            if (!signal.aborted) {
              controllerLog.error('controller stopped while this replica leads');
              stopped('it returned while this replica leads');
            }
          },
          (err) => {
            controllerLog.error({ err: errorMessage(err) }, 'controller stopped with an error');
            stopped(errorMessage(err));
          },
        )
        .finally(() => setControllerRunning(d.metrics, name, false)),
    );
  }
  return { running, started };
}
