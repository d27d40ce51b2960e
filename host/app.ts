/**
 * The host process wiring, in the order `startHost` runs it: configuration
 * warnings, --cloud-config, the API server check (start/preflight.ts), the
 * health/metrics server, the leader elector, one plugin supervisor per
 * provider and the Cloud over each (start/plugin.ts, host/providers.ts), then (with --leader-elect, once this
 * replica holds the Lease) the shared informers and the enabled controllers
 * (start/controllers.ts). The plugin starts before leadership so a standby is
 * ready to take over, but only the leader runs controllers, and neither the
 * plugin connection's mutating calls nor the controllers' Kubernetes writes
 * leave the process unless this replica holds a fresh lease (the fence).
 * `startHost` resolves once the plugin is up and the election (or the
 * controllers) runs; `stop()` shuts down in reverse: controllers (bounded) →
 * informers → lease released → plugin → server.
 */
import { startTracing } from '../sdk/tracing.js';
import { Gauge } from 'prom-client';
import type { Cloud } from './cloud.js';
import type { HostConfig } from './config/config.js';
import { ConnectionPool } from './kube/connections.js';
import { makeClients } from './kube/client.js';
import type { KubeConfigData } from './kube/kubeconfig.js';
import { performance } from 'node:perf_hooks';
import { ShardLeaseReader } from './kube/budget-share.js';
import { CloudBudgetShare } from './kube/cloud-budget.js';
import { KubeLeaseLock, LeaderElector, newLeaderIdentity, type ElectionOutcome, type LeaseLock } from './kube/leader-election.js';
import { ShardCampaign } from './kube/shard-election.js';
import { AnyProviderReady, PluginLeaseGuard } from './kube/plugin-lease-guard.js';
import { errorMessage, type Logger } from './log.js';
import { createHostMetrics, type HostMetrics } from './metrics.js';
import { COMPONENT_NAME, shardLeaseName } from './names.js';
import type { PluginSupervisor } from './plugin/supervisor.js';
import type { ProviderRegistry } from './providers.js';
import { HostHealth } from './health.js';
import { delegatedAuth, type RequestAuth } from './server/delegated-auth.js';
import { startSecureServer } from './server/secure-server.js';
import type { HealthServer } from './server/server.js';
import { controllerClients, controllerRunner } from './start/controllers.js';
import { openProviders, pluginSupervisors } from './start/plugin.js';
import { connectToApiServer, loadCloudConfigs, readClusterUid, warnAboutConfig } from './start/preflight.js';
import { HOST_VERSION } from './version.js';

export { HostStartError } from './errors.js';

export interface HostHandle {
  /** Leader-election identity (`hostname_uuid`), also sent to the plugin as the caller. */
  readonly identity: string;
  /** Whether this host runs its controllers now (always once started without --leader-elect). */
  isLeading(): boolean;
  /** The default provider's Cloud and supervisor (the only provider's, with one). */
  readonly cloud: Cloud;
  readonly supervisor: PluginSupervisor;
  /** Every provider (host/providers.ts). */
  readonly providers: ProviderRegistry;
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
   * Called once when the lease (`namespace/name`; with --shard-index=auto the
   * served shard's) could not be renewed in time: the controllers are
   * already stopping. main exits non-zero, as upstream, so the kubelet
   * restarts the process clean.
   */
  onLeadershipLost?: (lease: string) => void;
}

/** Starts the host; rejects with HostStartError (one line naming the problem) when it cannot, having stopped what it started. */
export async function startHost(config: HostConfig, opts: StartHostOptions): Promise<HostHandle> {
  const log = opts.log;
  warnAboutConfig(config, log);
  const cloudConfigs = await loadCloudConfigs(config, log);
  const kc = await connectToApiServer(config, cloudConfigs, opts.kubeConfig, log);
  const clusterUid = await readClusterUid(config, kc, log);

  const metrics = createHostMetrics();
  const cleanups: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const c of cleanups.reverse()) await c().catch((err) => log.warn({ err: errorMessage(err) }, 'error while stopping'));
  };
  // OpenTelemetry traces, only when the OTEL_* variables ask (sdk/tracing.ts); flushed and stopped last.
  const tracing = await startTracing(COMPONENT_NAME, (message) => log.warn(message));
  cleanups.push(() => tracing.stop());
  // One set of keep-alive connections for every client and watch of the host
  // (per-controller tokens included), closed last.
  const connections = new ConnectionPool();
  cleanups.push(async () => connections.destroy());
  try {
    const { server, requestAuth } = await startServing(config, kc, { metrics, connections, cleanups, log });
    const health = new HostHealth(server);
    const identity = newLeaderIdentity();
    // Set once the supervisor exists (below); the election asks it only once it runs.
    let leaseGuard: PluginLeaseGuard | undefined;
    // Also set below: each renewal of the Lease renews the provider's own controllers' lease.
    const renewal: { onRenewed?: () => void } = {};
    const election = hostElection(
      config,
      kc,
      identity,
      { metrics, connections, log },
      () => leaseGuard,
      () => renewal.onRenewed?.(),
    );
    // The fence: only the leader, and only while its lease is fresh (measured from when its last
    // renewal was sent), sends Kubernetes writes and cloud mutations. Without --leader-elect there
    // is no lease and nothing is fenced.
    const fence = election ? () => (election.holdsFreshLease() ? undefined : 'this replica does not hold a fresh leader lease') : undefined;
    let stoppingHost = false;
    const refuseMutation = (): string | undefined => {
      if (stoppingHost) return 'the host is stopping';
      return fence?.();
    };
    // The providers' own controllers run under a lease of what the fence can vouch for, renewed with
    // the Lease: a provider whose host died uncleanly stops them before another replica can lead.
    const controllersLeaseMs = election ? () => election.freshLeaseRemainingMs() : undefined;
    const supervised = pluginSupervisors(config, {
      cloudConfigs,
      clusterUid,
      metrics,
      health,
      identity,
      refuseMutation,
      controllersLeaseMs,
      cloudBudget: election?.cloudBudget,
      log,
    });
    renewal.onRenewed = () => {
      for (const s of supervised) s.supervisor.renewProviderControllers();
    };
    const supervisor = supervised.find((s) => s.provider.default)!.supervisor;
    if (election && config.leaderElection.pluginUnreadyReleaseMs > 0) {
      // The lease follows the provider's readiness; with several, all of them together (unready only while none is
      // ready), so one provider down everywhere does not stop the others' work (kube/plugin-lease-guard.ts).
      const timeoutMs = config.leaderElection.pluginUnreadyReleaseMs;
      const guard =
        supervised.length > 1
          ? PluginLeaseGuard.overProviders(
              new AnyProviderReady(supervised.map((s) => ({ name: s.provider.name, readiness: s.supervisor }))),
              timeoutMs,
            )
          : new PluginLeaseGuard(supervisor, config.cloudProvider, timeoutMs);
      leaseGuard = guard;
      server?.addCheck('leaderCandidacy', () => guard.check(election.isLeader()), 'readyz');
    }
    const abortStart = new AbortController();
    cleanups.push(async () => {
      stoppingHost = true;
      abortStart.abort();
      await Promise.all(supervised.map((s) => s.supervisor.stop()));
    });
    const providers = await openProviders(config, supervised, abortStart.signal, log);
    const cloud = providers.default.cloud;
    const clients = controllerClients(config, kc, { metrics, connections, log, fence });
    const controllers = controllerRunner(config, { cloud, supervisor, providers, clients, metrics, health, server, requestAuth, log });
    const stopping = new AbortController();
    const done = election
      ? runElection(election, controllers.run, stopping.signal, { metrics, server, identity, onLost: opts.onLeadershipLost })
      : controllers.run(stopping.signal).catch((err) => log.error({ err: errorMessage(err) }, 'controllers failed to start'));
    cleanups.push(async () => {
      stopping.abort();
      await done;
    });
    log.info(
      { version: HOST_VERSION, provider: config.cloudProvider, leaderElect: config.leaderElect, identity },
      'cloud-controller-manager started',
    );
    return { cloud, supervisor, providers, metrics, healthPort: server?.port, identity, isLeading: controllers.isLeading, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

interface StepDeps {
  metrics: HostMetrics;
  connections: ConnectionPool;
  log: Logger;
}

/**
 * The health/metrics server on --secure-port (none when 0) and the delegated
 * authentication and authorization it and the PV label webhook use, built on
 * first use. Their stops join `cleanups`.
 */
async function startServing(
  config: HostConfig,
  kc: KubeConfigData,
  d: StepDeps & { cleanups: (() => Promise<void>)[] },
): Promise<{ server?: HealthServer; requestAuth: () => Promise<RequestAuth> }> {
  let auth: Promise<RequestAuth> | undefined;
  const requestAuth = () =>
    (auth ??= delegatedAuth(config.serving, {
      kubeConfig: kc,
      userAgent: `${COMPONENT_NAME}/${HOST_VERSION} delegated-auth`,
      registry: d.metrics.registry,
      connections: d.connections,
      log: d.log,
    }));
  d.cleanups.push(async () => (await auth?.catch(() => undefined))?.stop());
  if (config.securePort <= 0) return { requestAuth };
  const server = await startSecureServer(config, { auth: requestAuth, registry: d.metrics.registry, log: d.log });
  d.cleanups.push(() => server.close());
  return { server, requestAuth };
}

/**
 * The host's side of leader election: one elector on one Lease, or with
 * --shard-index=auto a campaign over the N shard Leases (kube/shard-election.ts).
 * `run` runs the election until its signal aborts, `runControllers` while
 * leading (with the shard won, for a campaign); the rest is the fence and the
 * checks, over whichever Lease is served now.
 */
interface HostElection {
  /** Every Lease this replica may hold, by name (for the gauge). */
  readonly leaseNames: readonly string[];
  /** With --shard-index=auto and --cloud-api-qps: the budget share from the live shard Leases, served in each term. */
  readonly cloudBudget?: CloudBudgetShare;
  isLeader(): boolean;
  holdsFreshLease(): boolean;
  freshLeaseRemainingMs(): number;
  check(): void;
  run(
    signal: AbortSignal,
    runControllers: (leading: AbortSignal, shard?: number) => Promise<void>,
    onLeader: (lease: string, holder: string) => void,
  ): Promise<{ outcome: ElectionOutcome; lease: string }>;
}

/**
 * The leader election on the --leader-elect-resource-* Lease (or, with
 * --shard-index=auto, on every shard's Lease), with its own API client;
 * undefined without --leader-elect. `guard()` (once set) makes a leader with
 * an unready plugin resign and keeps a candidate with one out of the
 * election (kube/plugin-lease-guard.ts). `onRenewed` is told after each
 * successful acquire and renewal.
 */
function hostElection(
  config: HostConfig,
  kc: KubeConfigData,
  identity: string,
  d: StepDeps,
  guard: () => PluginLeaseGuard | undefined,
  onRenewed: () => void,
): HostElection | undefined {
  if (!config.leaderElect) return undefined;
  const coordination = makeClients(kc, {
    qps: config.kubeApiQps,
    burst: config.kubeApiBurst,
    userAgent: `${COMPONENT_NAME}/${HOST_VERSION} leader-election`,
    registry: d.metrics.registry,
    connections: d.connections,
  }).coordination;
  const le = config.leaderElection;
  const lockOf = (name: string) => new KubeLeaseLock(coordination, le.resourceNamespace, name);
  const elector = (lock: LeaseLock, o: { campaignBlocker?: () => string | undefined; budget?: CloudBudgetShare } = {}): LeaderElector => {
    const e: LeaderElector = new LeaderElector({
      lock,
      identity,
      log: d.log,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      releaseReason: () => guard()?.releaseReason(),
      campaignBlocker: o.campaignBlocker,
      onRenewed: o.budget
        ? () => {
            onRenewed();
            o.budget!.renewed(e.freshLeaseRemainingMs());
          }
        : onRenewed,
      annotations: o.budget && (() => o.budget!.annotations()),
    });
    return e;
  };
  const qualified = (name: string) => `${le.resourceNamespace}/${name}`;
  if (!config.shard.fromLeases) {
    const one = elector(lockOf(le.resourceName), { campaignBlocker: () => guard()?.campaignBlocker() });
    return {
      leaseNames: [le.resourceName],
      isLeader: () => one.isLeader(),
      holdsFreshLease: () => one.holdsFreshLease(),
      freshLeaseRemainingMs: () => one.freshLeaseRemainingMs(),
      check: () => one.check(),
      run: async (signal, runControllers, onLeader) => ({
        outcome: await one.run(
          signal,
          (leading) => runControllers(leading),
          (holder) => onLeader(le.resourceName, holder),
        ),
        lease: qualified(le.resourceName),
      }),
    };
  }
  // Membership from the shard Leases: the shard's own elector guards each term (the campaign blocks as one).
  const leaseNames = Array.from({ length: config.shard.count }, (_, i) => shardLeaseName(le.resourceName, i));
  const locks = leaseNames.map(lockOf);
  const budget: CloudBudgetShare | undefined =
    config.cloudApiBudget.qps > 0
      ? new CloudBudgetShare({
          shards: config.shard.count,
          budget: config.cloudApiBudget,
          registry: d.metrics.registry,
          log: d.log,
        })
      : undefined;
  const electors = locks.map((lock) => elector(lock, { budget }));
  const campaign = new ShardCampaign({ electors, retryPeriodMs: le.retryPeriodMs, log: d.log, campaignBlocker: () => guard()?.campaignBlocker() });
  // The membership the share follows: this replica's own reads of the shard Leases, expiry on its own clock.
  const reader = new ShardLeaseReader({ locks, identity, now: () => performance.now() });
  return {
    leaseNames,
    cloudBudget: budget,
    isLeader: () => campaign.isLeader(),
    holdsFreshLease: () => campaign.holdsFreshLease(),
    freshLeaseRemainingMs: () => campaign.freshLeaseRemainingMs(),
    check: () => campaign.check(),
    run: async (signal, runControllers, onLeader) => {
      electors.forEach((e, i) => (e.onNewLeader = (holder) => onLeader(leaseNames[i]!, holder)));
      let served = '';
      const outcome = await campaign.run(signal, async (leading, shard) => {
        served = qualified(leaseNames[shard]!);
        await Promise.all([runControllers(leading, shard), budget?.serve(leading, (s) => reader.read(shard, s), le)]);
      });
      return { outcome, lease: served };
    },
  };
}

/**
 * Runs the election until `signal` aborts, the controllers while leading;
 * with upstream's `leader_election_master_status` gauge (one series per
 * Lease this replica may hold) and the `leaderElection` liveness check. A
 * lost lease calls `onLost` (main exits).
 */
async function runElection(
  election: HostElection,
  runControllers: (leading: AbortSignal, shard?: number) => Promise<void>,
  signal: AbortSignal,
  d: { metrics: HostMetrics; server?: HealthServer; identity: string; onLost?: (lease: string) => void },
): Promise<void> {
  // Upstream (client-go leaderelection metrics) name and meaning.
  const leaderStatus = new Gauge({
    name: 'leader_election_master_status',
    help: 'Whether this replica holds the leader lease (1) or not (0), by lease name.',
    labelNames: ['name'],
    registers: [d.metrics.registry],
  });
  for (const name of election.leaseNames) leaderStatus.set({ name }, 0);
  d.server?.addCheck('leaderElection', () => election.check(), 'healthz');
  const { outcome, lease } = await election.run(signal, runControllers, (name, holder) => leaderStatus.set({ name }, holder === d.identity ? 1 : 0));
  if (outcome === 'lost') d.onLost?.(lease);
}
