/**
 * The local cloud: a simulated cloud for laptops and CI, and the reference
 * provider, implementing every service and method of ccm.provider.v1 on top
 * of a state directory shared with the `localcloud` CLI.
 *
 * Every cloud call first goes through the fault-injection knobs (knobs.ts)
 * and is counted (metrics.ts); Configure, probe, metrics and close are not.
 */
import { UnavailableError } from '../../sdk/errors.js';
import type { CallContext, CloudProvider } from '../../sdk/provider.js';
import { applyCloudConfig, resolveSettings, type CloudSettings, type SettingsInput } from './config.js';
import { silentLogger, type CloudContext, type LocalCloudLogger } from './context.js';
import { createInstancesService } from './instances.js';
import { FaultInjector, knobsFromEnv, mergeKnobs, type Knobs } from './knobs.js';
import { createLoadBalancersService } from './load-balancers.js';
import { Journal, journalModeFromEnv } from './journal.js';
import { LockTimeoutError } from './lock.js';
import { LocalCloudMetrics } from './metrics.js';
import { PROVIDER_NAME } from './names.js';
import { createRoutesService } from './routes.js';
import { resolveStateDir, StateStore, type KnobSettings } from './state.js';
import { createVolumesService } from './volumes.js';
import { createClustersService, createZonesService } from './zones.js';

/** Implementation name reported by GetPluginInfo. */
const LOCAL_CLOUD_NAME = 'local.ccm.dev';
/** Vendor version reported by GetPluginInfo. */
const LOCAL_CLOUD_VERSION = '0.1.0';

/** Options of {@link createLocalCloud}; everything is optional. */
export interface LocalCloudOptions extends SettingsInput {
  /** State directory (default: $LOCALCLOUD_STATE_DIR, else `.localcloud` under cwd). */
  stateDir?: string;
  /** A store to share (tests); overrides stateDir. */
  store?: StateStore;
  /** Environment read for settings and knobs (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Knob settings above the environment, below the state document's `knobs`. */
  knobs?: KnobSettings;
  /** Randomness for the error rate and jitter, in [0, 1). */
  random?: () => number;
  /** Clock for the rate limiter, in ms. */
  now?: () => number;
  /** Bound on waiting for the state lock, in ms. */
  lockWaitMs?: number;
  logger?: LocalCloudLogger;
  /** Load balancer data plane to keep in step after each load balancer change (forwarder.ts). */
  forwarder?: { sync(): Promise<void>; close(): Promise<void> };
}

/** The local cloud provider plus handles for tests and tools. */
export interface LocalCloud extends CloudProvider {
  /** The state store it reads and writes. */
  readonly store: StateStore;
  /** The knobs the next call will see. */
  currentKnobs(): Knobs;
  /** The settings in force (after Configure). */
  currentSettings(): CloudSettings;
}

type AsyncMethod = (req: never, ctx: CallContext) => Promise<unknown>;

/**
 * Creates the local cloud. Throws a one-line error when the environment or
 * options are invalid (bad knob value, bad CIDR).
 */
export function createLocalCloud(opts: LocalCloudOptions = {}): LocalCloud {
  const env = opts.env ?? process.env;
  const store = opts.store ?? new StateStore(resolveStateDir(opts.stateDir, env), { lockWaitMs: opts.lockWaitMs });
  const initial = resolveSettings(opts, env);
  const envKnobs = knobsFromEnv(env);
  const log = opts.logger ?? silentLogger;
  const c: CloudContext = { store, settings: initial, log, forwarder: opts.forwarder };
  const faults = new FaultInjector({ random: opts.random, now: opts.now });
  // LOCALCLOUD_NO_BATCH=1: a provider without the batch RPCs (the host then makes single calls).
  const noBatch = /^(1|true|yes|on)$/i.test(env.LOCALCLOUD_NO_BATCH ?? '');
  const journal = new Journal(store.dir, journalModeFromEnv(env));
  const metrics = new LocalCloudMetrics(store);

  let knobsSource: KnobSettings | undefined;
  let knobs: Knobs = mergeKnobs(envKnobs, opts.knobs);
  const currentKnobs = (): Knobs => {
    const fromState = store.read().knobs;
    if (fromState !== knobsSource) {
      knobsSource = fromState;
      knobs = mergeKnobs(envKnobs, opts.knobs, fromState);
    }
    return knobs;
  };

  /** Puts every method of a service behind the knobs and maps lock timeouts to UNAVAILABLE. */
  function instrument<S extends object>(service: string, impl: S): S {
    const out: Record<string, AsyncMethod> = {};
    for (const [method, fn] of Object.entries(impl) as [string, AsyncMethod][]) {
      const label = `${service}.${method}`;
      const journaled = journal.covers(method);
      out[method] = async (req, ctx) => {
        const start = Date.now();
        let ok = false;
        let result: unknown;
        try {
          await faults.hold(currentKnobs, ctx, label);
          await faults.before(currentKnobs(), ctx, label);
          const res = await fn(req, ctx);
          ok = true;
          result = res;
          await faults.after(currentKnobs(), ctx);
          return res;
        } catch (err) {
          if (err instanceof LockTimeoutError) throw new UnavailableError(err.message);
          throw err;
        } finally {
          metrics.called(label, ok);
          if (journaled)
            await journal.record({ caller: ctx.caller ?? '', method: label, methodName: method, request: req, start, end: Date.now(), ok, result });
        }
      };
    }
    return out as S;
  }

  return {
    info: {
      name: LOCAL_CLOUD_NAME,
      vendorVersion: LOCAL_CLOUD_VERSION,
      providerName: PROVIDER_NAME,
      hasClusterId: true,
      loadBalancerIpModeProxy: true,
      volumesExpandOnline: true,
      manifest: { stateDir: store.dir },
    },
    store,
    currentKnobs,
    currentSettings: () => c.settings,

    async configure(req) {
      const { settings, warnings } = applyCloudConfig(initial, req.cloudConfig, req.clusterName);
      c.settings = settings;
      log.info({ clusterName: settings.clusterName, zone: settings.zone, region: settings.region, lbPool: settings.lbPool.cidr.text }, 'configured');
      return { warnings };
    },

    async probe() {
      store.view(); // Throws when the state cannot be read.
      return true;
    },

    async metrics() {
      return metrics.text();
    },

    async close() {
      await opts.forwarder?.close();
      log.debug({}, 'closed');
    },

    instances: instrument('instances', withoutBatch(createInstancesService(c), noBatch, ['getInstancesStatus', 'getInstancesMetadata'])),
    zones: instrument('zones', createZonesService(c)),
    clusters: instrument('clusters', createClustersService(c)),
    loadBalancers: instrument('loadBalancers', createLoadBalancersService(c)),
    routes: instrument('routes', withoutBatch(createRoutesService(c), noBatch, ['reconcileRoutes'])),
    volumes: instrument('volumes', createVolumesService(c)),
  };
}

/** `impl` without the methods `names` when `drop` (capabilities follow the methods present). */
function withoutBatch<S extends object>(impl: S, drop: boolean, names: string[]): S {
  if (!drop) return impl;
  return Object.fromEntries(Object.entries(impl).filter(([k]) => !names.includes(k))) as S;
}
