/**
 * The local cloud: a simulated cloud for laptops and CI, and the reference
 * provider, implementing every service and method of ccm.provider.v1 on top
 * of a state directory shared with the `localcloud` CLI.
 *
 * Every cloud call first goes through the fault-injection knobs (knobs.ts)
 * and is counted (metrics.ts); Configure, probe, metrics and close are not.
 */
import { toStatus, UnavailableError } from '../../sdk/errors.js';
import type { CallContext, CloudProvider, ProviderSchema } from '../../sdk/provider.js';
import { SchemaValueType } from '../../proto/gen/ccm/provider/v1/identity.js';
import { applyCloudConfig, DEFAULT_REGION, DEFAULT_ZONE, resolveSettings, type CloudSettings, type SettingsInput } from './config.js';
import { silentLogger, type CloudContext, type LocalCloudLogger } from './context.js';
import { createInstancesService } from './instances.js';
import { failFor, FaultInjector, knobsFromEnv, mergeKnobs, respellAnswer, type Knobs } from './knobs.js';
import { createLoadBalancersService, LOCAL_ANNOTATION_PREFIX, LOCAL_SERVICE_ANNOTATIONS } from './load-balancers.js';
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

/** The name of the object a single call is about: its Service's name, its Node's, or its route's target node. */
function objectOf(req: Record<string, unknown>): string | undefined {
  const svc = req.service as { name?: string } | undefined;
  const node = req.node as { name?: string } | undefined;
  const route = req.route as { targetNode?: string } | undefined;
  return svc?.name || node?.name || (req.nodeName as string | undefined) || route?.targetNode || undefined;
}

/**
 * Runs `call` under the `fail` knob (knobs.ts, failFor): a single call about
 * a named object fails with its error; a batch call (`services`, else
 * `nodes`) is made without the named entries, which are answered with their
 * errors, in request order. A single call is about its `service`, `node`,
 * `nodeName` or route target.
 */
async function withFailKnob(fail: string, method: string, req: unknown, call: (req: unknown) => Promise<unknown>): Promise<unknown> {
  if (!fail) return call(req);
  const r = (req ?? {}) as Record<string, unknown>;
  // A load balancer call's `nodes` are its backends: the call is about its Service(s).
  const field = Array.isArray(r.services) ? 'services' : r.service === undefined && Array.isArray(r.nodes) ? 'nodes' : undefined;
  if (field === undefined) {
    const err = failFor(fail, method, objectOf(r));
    if (err) throw err;
    return call(req);
  }
  const items = r[field] as { name?: string; uid?: string }[];
  const errors = items.map((i) => failFor(fail, method, i.name));
  if (errors.every((e) => e === undefined)) return call(req);
  const rest = items.filter((_, i) => errors[i] === undefined);
  const res = (rest.length > 0 ? await call({ ...r, [field]: rest }) : { results: [] }) as { results: Record<string, unknown>[] };
  const keyOf = (i: { name?: string; uid?: string }) => (field === 'services' ? i.uid : i.name);
  const resultKey = field === 'services' ? 'serviceUid' : 'nodeName';
  const byKey = new Map(res.results.map((x) => [x[resultKey], x]));
  res.results = items.map((item, i) => {
    const err = errors[i];
    return err ? { [resultKey]: keyOf(item), error: toStatus(err) } : byKey.get(keyOf(item))!;
  });
  return res;
}

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
  // LOCALCLOUD_NO_SCHEMA=1: a provider without GetProviderSchema (the host then checks no annotation).
  const noSchema = /^(1|true|yes|on)$/i.test(env.LOCALCLOUD_NO_SCHEMA ?? '');
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
  // ReconcileRoutes applies the `fail` knob to each route it would create or delete (routes.ts).
  c.faultFor = (method, object) => failFor(currentKnobs().fail, method, object);
  c.lbQuota = () => ({ limit: currentKnobs().lbQuota, retryMs: currentKnobs().lbQuotaRetryMs });

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
          await faults.hold(currentKnobs, ctx, label, (waiting) => metrics.held(label, waiting));
          await faults.before(currentKnobs(), ctx, label);
          const res = respellAnswer(currentKnobs().respell, await withFailKnob(currentKnobs().fail, label, req, (r) => fn(r as never, ctx)));
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
      // LOCALCLOUD_POD_BACKENDS=true: load balancers forward to pod addresses for Services that ask (protocol 1.1).
      loadBalancerPodBackends: env.LOCALCLOUD_POD_BACKENDS === 'true',
      volumesExpandOnline: true,
      loadBalancerClasses: initial.loadBalancerClasses,
      loadBalancerClassesOnly: initial.loadBalancerClassesOnly,
      volumeProvisioners: initial.volumeProvisioners,
      manifest: { stateDir: store.dir },
      // Node ownership: local:// Nodes, and (LOCALCLOUD_NODE_SELECTOR) the Nodes without a providerID it claims.
      // LOCALCLOUD_PROVIDER_ID_PREFIXES (comma-separated): other declared prefixes, for tests of a provider whose declarations disagree with its answers.
      providerIdPrefixes: env.LOCALCLOUD_PROVIDER_ID_PREFIXES ? env.LOCALCLOUD_PROVIDER_ID_PREFIXES.split(',') : [`${PROVIDER_NAME}://`],
      nodeSelector: env.LOCALCLOUD_NODE_SELECTOR ?? '',
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

    ...(noSchema ? {} : { schema: localSchema() }),

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

/** The local cloud's schema: its Service annotations and cloud-config keys (config.ts). */
function localSchema(): ProviderSchema {
  const str = SchemaValueType.SCHEMA_VALUE_TYPE_STRING;
  return {
    annotationPrefixes: [LOCAL_ANNOTATION_PREFIX],
    annotations: LOCAL_SERVICE_ANNOTATIONS,
    cloudConfigKeys: [
      { key: 'zone', type: str, defaultValue: DEFAULT_ZONE, description: 'The zone of every instance.' },
      { key: 'region', type: str, defaultValue: DEFAULT_REGION, description: 'The region of every instance.' },
      {
        key: 'loadBalancerCidr',
        type: SchemaValueType.SCHEMA_VALUE_TYPE_CIDR_LIST,
        defaultValue: '127.0.10.0/24',
        description: 'The pool load balancer addresses come from (one CIDR).',
      },
      { key: 'masterAddress', type: str, description: 'Accepted and ignored (a key cloud configs of other providers carry).' },
      { key: 'apiToken', type: str, description: 'Accepted and ignored (a credential key, never logged).' },
    ],
  };
}
