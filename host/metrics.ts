/**
 * The host's Prometheus metrics: one prom-client Registry per host, served
 * on /metrics. Upstream names are kept where upstream has the metric
 * (component-base and cloud-provider's controllers); `ccm_*` metrics are ours. Upstream has no generic
 * cloud-call metrics, but every cloud call here crosses the plugin boundary,
 * so the host measures them.
 *
 * The controllers' own metrics are defined in controller-metrics.ts; work
 * queue (`workqueue_*`) and API client (`rest_client_*`) metrics are
 * registered on the same registry by host/kube, which takes it as an option.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { COMPONENT_NAME, ControllerAliases, type ControllerName } from './names.js';
import { HOST_VERSION } from './version.js';

/** Metric names, as scraped. */
export const MetricNames = {
  PLUGIN_RPC_DURATION: 'ccm_plugin_rpc_duration_seconds',
  PLUGIN_RPC_ERRORS: 'ccm_plugin_rpc_errors_total',
  PLUGIN_RESTARTS: 'ccm_plugin_restarts_total',
  PLUGIN_READY: 'ccm_plugin_ready',
  PLUGIN_OUTPUT_DROPPED: 'ccm_plugin_output_lines_dropped_total',
  TAINT_REMOVAL_DELAY: 'node_controller_cloud_provider_taint_removal_delay_seconds',
  INITIAL_NODE_SYNC_DELAY: 'node_controller_initial_node_sync_delay_seconds',
  RUNNING_MANAGED_CONTROLLERS: 'running_managed_controllers',
  NODE_INITIALIZATION_DURATION: 'ccm_node_initialization_duration_seconds',
  BUILD_INFO: 'kubernetes_build_info',
} as const;

/** Plugin call latency buckets: 0.5 ms (a local socket round trip) to 60 s (the default mutation deadline). */
const PLUGIN_RPC_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Upstream node controller buckets (controllers/node/metrics.go): 1 s × 4^n. */
const NODE_DELAY_BUCKETS = [1, 4, 16, 64, 256, 1024];

/** Node initialization buckets: one plugin call (tens of ms) to a slow cloud (10 min). */
const NODE_INITIALIZATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * `plugin`: the provider's name (--cloud-provider, or its name in
 * --providers-config). `provider`: the same name, set only when the host runs
 * several providers (so a one-provider host's series are unchanged).
 */
type PluginRpcLabels = 'plugin' | 'provider' | 'method' | 'code';

/**
 * The host's registry: its text on /metrics is the host's metrics followed by
 * `append`'s (the plugin's own metrics, see plugin/plugin-metrics.ts).
 */
export class HostRegistry extends Registry {
  /** Text to serve after the host's own; gets the host's text to avoid its names. Never throws. */
  append?: (hostText: string) => Promise<string>;

  override async metrics(): Promise<string> {
    const own = await super.metrics();
    if (!this.append) return own;
    const more = await this.append(own);
    return more ? `${own}${own.endsWith('\n') ? '' : '\n'}${more}` : own;
  }
}

/** The registry and the host's own metric objects. */
export interface HostMetrics {
  /** Serve this on /metrics; pass it to host/kube so its metrics join. */
  readonly registry: HostRegistry;
  /** Plugin call latency by gRPC status code name ("OK", "UNAVAILABLE", ...). */
  readonly pluginRpcDuration: Histogram<PluginRpcLabels>;
  /** Plugin calls that did not end with OK. */
  readonly pluginRpcErrors: Counter<PluginRpcLabels>;
  /** Plugin process restarts by the supervisor. */
  readonly pluginRestarts: Counter<'plugin' | 'provider'>;
  /** 1 while the plugin is connected and reports ready, else 0. */
  readonly pluginReady: Gauge<'plugin' | 'provider'>;
  /** Plugin stdout/stderr lines not logged because of the output rate limit. */
  readonly pluginOutputDropped: Counter<'plugin' | 'provider' | 'stream'>;
  /** Upstream: node creation → uninitialized taint removed. */
  readonly taintRemovalDelay: Histogram;
  /** Upstream: node creation → first successful sync by the node controller. */
  readonly initialNodeSyncDelay: Histogram;
  /** Upstream: 1 per running controller, `name` is the short upstream name (see managedControllerName). */
  readonly runningManagedControllers: Gauge<'manager' | 'name'>;
  /** Duration of one successful node initialization (lookup + API write), from first attempt. */
  readonly nodeInitializationDuration: Histogram;
}

/** Options of createHostMetrics. */
export interface HostMetricsOptions {
  /** Also register prom-client's process and Node.js runtime metrics. Default true. */
  defaultMetrics?: boolean;
}

/** Creates a registry with the host's metrics (and by default process metrics). */
export function createHostMetrics(opts: HostMetricsOptions = {}): HostMetrics {
  const registry = new HostRegistry();
  const registers = [registry];
  if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  registerBuildInfo(registry);
  const rpcLabels: PluginRpcLabels[] = ['plugin', 'provider', 'method', 'code'];
  return {
    registry,
    pluginRpcDuration: new Histogram({
      name: MetricNames.PLUGIN_RPC_DURATION,
      help: 'Duration of calls from the host to the provider plugin, by plugin, gRPC method and status code.',
      labelNames: rpcLabels,
      buckets: PLUGIN_RPC_BUCKETS,
      registers,
    }),
    pluginRpcErrors: new Counter({
      name: MetricNames.PLUGIN_RPC_ERRORS,
      help: 'Calls from the host to the provider plugin that ended with a status other than OK.',
      labelNames: rpcLabels,
      registers,
    }),
    pluginRestarts: new Counter({
      name: MetricNames.PLUGIN_RESTARTS,
      help: 'Times the host restarted the provider plugin process after it exited or stopped answering.',
      labelNames: ['plugin', 'provider'],
      registers,
    }),
    pluginReady: new Gauge({
      name: MetricNames.PLUGIN_READY,
      help: '1 when the provider plugin is connected and reports ready, 0 otherwise.',
      labelNames: ['plugin', 'provider'],
      registers,
    }),
    pluginOutputDropped: new Counter({
      name: MetricNames.PLUGIN_OUTPUT_DROPPED,
      help: 'Lines the provider plugin wrote to stdout or stderr that the host did not log because they exceeded the output rate limit.',
      labelNames: ['plugin', 'provider', 'stream'],
      registers,
    }),
    taintRemovalDelay: new Histogram({
      name: MetricNames.TAINT_REMOVAL_DELAY,
      help: 'Seconds from node creation until the cloud node controller removed the uninitialized taint.',
      buckets: NODE_DELAY_BUCKETS,
      registers,
    }),
    initialNodeSyncDelay: new Histogram({
      name: MetricNames.INITIAL_NODE_SYNC_DELAY,
      help: 'Seconds from node creation until the cloud node controller first synced the node.',
      buckets: NODE_DELAY_BUCKETS,
      registers,
    }),
    runningManagedControllers: new Gauge({
      name: MetricNames.RUNNING_MANAGED_CONTROLLERS,
      help: 'Controllers this manager runs: 1 per running controller.',
      labelNames: ['manager', 'name'],
      registers,
    }),
    nodeInitializationDuration: new Histogram({
      name: MetricNames.NODE_INITIALIZATION_DURATION,
      help: 'Seconds the cloud node controller spent initializing a node, from its first attempt to success.',
      buckets: NODE_INITIALIZATION_BUCKETS,
      registers,
    }),
  };
}

/**
 * Upstream's constant `kubernetes_build_info` (component-base), labelled with
 * this build: git_version is ours (`v` + package version), go_version and
 * compiler name the Node.js runtime, as dashboards only need the labels to
 * exist and say what runs.
 */
function registerBuildInfo(registry: Registry): void {
  const [major = '0', minor = '0'] = HOST_VERSION.split('.');
  new Gauge({
    name: MetricNames.BUILD_INFO,
    help: "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
    labelNames: ['major', 'minor', 'git_version', 'git_commit', 'git_tree_state', 'build_date', 'go_version', 'compiler', 'platform'],
    registers: [registry],
  }).set(
    {
      major,
      minor,
      git_version: `v${HOST_VERSION}`,
      git_commit: '',
      git_tree_state: '',
      build_date: '',
      go_version: process.version,
      compiler: 'node',
      platform: `${process.platform}/${process.arch}`,
    },
    1,
  );
}

/** Not in {@link MetricNames} (every host registers those): registered only where the share applies. */
export const CLOUD_API_BUDGET_SHARE = 'ccm_cloud_api_budget_share';

/**
 * With --shard-index=auto, --shard-count > 1 and --cloud-api-qps > 0: the
 * denominator k of this replica's share of the cloud-call budget (it spends
 * budget/k; kube/cloud-budget.ts), 0 while held.
 */
export function cloudApiBudgetShareGauge(registry: Registry): Gauge {
  return new Gauge({
    name: CLOUD_API_BUDGET_SHARE,
    help: "The denominator k of this replica's share of --cloud-api-qps and --cloud-api-burst (it spends budget/k), from the live shard Leases; 0 while held (its cloud calls wait).",
    registers: [registry],
  });
}

/** Upstream's `name` label of running_managed_controllers: the short alias ("cloud-node", "service", ...). */
export function managedControllerName(controller: ControllerName): string {
  return Object.keys(ControllerAliases).find((alias) => ControllerAliases[alias] === controller) ?? controller;
}

/** Sets running_managed_controllers for `controller` to 1 (running) or 0 (stopped). */
export function setControllerRunning(metrics: HostMetrics, controller: ControllerName, running: boolean): void {
  metrics.runningManagedControllers.set({ manager: COMPONENT_NAME, name: managedControllerName(controller) }, running ? 1 : 0);
}

/** Records one finished plugin call: its duration, and an error unless `code` is "OK". */
export function observePluginRpc(
  metrics: HostMetrics,
  labels: { plugin: string; provider?: string; method: string; code: string },
  seconds: number,
): void {
  metrics.pluginRpcDuration.observe(labels, seconds);
  if (labels.code !== 'OK') metrics.pluginRpcErrors.inc(labels);
}
