/**
 * ClusterLoader2's ServiceCreationLatency for LoadBalancer Services, the
 * phases a cloud-controller-manager decides (kubernetes/perf-tests,
 * clusterloader2 measurement `ServiceCreationLatency`), per Service:
 * - `created`: the Service first seen by the bench's watch (ClusterLoader2
 *   takes its metadata.creationTimestamp, one-second resolution);
 * - `assigned` (ClusterLoader2's ipAssigning): the first watch event with
 *   `status.loadBalancer.ingress`;
 * - `available` (its reachability): a request through the ingress address and
 *   the Service's first port answered by the backend three times in a row,
 *   probing from `assigned` on, one second after every failure (as its ping
 *   checker, which curls from an exec pod; here a TCP exchange with the
 *   backend, the load balancer being L4);
 * - `deleting`: the first event with `metadata.deletionTimestamp`
 *   (ClusterLoader2 takes the timestamp itself), `deleted`: the DELETED event.
 * Transitions: {@link LB_TRANSITIONS}. Each Service gets a TCP backend on the
 * backend node's address and its node port as soon as the watch sees it, so
 * the backend is never what the probe waits for.
 */
import { CoreV1Api, type KubeConfig, type V1Service } from '@kubernetes/client-node';
import { NodePortBackends, tcpRequest } from '../helpers/backends.js';
import { PhaseWatch, summarize, type LatencySummary } from './latency.js';

/** ClusterLoader2's LoadBalancer transitions: name → [from, to] phases. */
export const LB_TRANSITIONS = {
  create_to_assigned_loadbalancer: ['created', 'assigned'],
  assigned_to_available_loadbalancer: ['assigned', 'available'],
  create_to_available_loadbalancer: ['created', 'available'],
  delete_loadbalancer: ['deleting', 'deleted'],
} as const;
export type LbTransition = keyof typeof LB_TRANSITIONS;

/** ClusterLoader2's ping checker: successes in a row that make a Service available, and the pause after a failure. */
export const PING_CHECKS = 3;
export const PING_BACKOFF_MS = 1000;
/** One probe's bound: a connection the load balancer accepts but never answers is a failure. */
const PROBE_TIMEOUT_MS = 3000;

export const ingressOf = (s: V1Service): string | undefined => s.status?.loadBalancer?.ingress?.[0]?.ip;

/**
 * Probes `ip:port` until `checks` answers come in a row; resolves with the
 * bench clock at the last one, or undefined once `stopped()` says so. A
 * failure (refused, reset, no answer) starts the count again after `backoffMs`.
 */
export async function probeUntilAvailable(
  request: () => Promise<unknown>,
  stopped: () => boolean,
  checks = PING_CHECKS,
  backoffMs = PING_BACKOFF_MS,
): Promise<number | undefined> {
  let ok = 0;
  while (!stopped()) {
    try {
      await request();
      if (++ok === checks) return Date.now();
    } catch {
      ok = 0;
      await new Promise((r) => setTimeout(r, backoffMs));
    }
  }
  return undefined;
}

/** The Services of one namespace, their phases as above; start() before the first create, stop() at the end. */
export class ServiceCreationLatency {
  readonly watch: PhaseWatch<V1Service>;
  private readonly backends: NodePortBackends;
  private readonly started = new Set<string>();
  private readonly work = new Set<Promise<unknown>>();
  private stopped = false;

  /** `backendIp`: the address of the one backend node every load balancer forwards to (node ports there). */
  constructor(kc: KubeConfig, namespace: string, backendIp: string) {
    this.backends = new NodePortBackends(backendIp);
    this.watch = new PhaseWatch<V1Service>(
      kc,
      `/api/v1/namespaces/${namespace}/services`,
      undefined,
      { assigned: (s) => ingressOf(s) !== undefined, deleting: (s) => Boolean(s.metadata?.deletionTimestamp) },
      () => kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace }),
      (key, s, type) => this.onService(key, s, type),
    );
  }

  start(): Promise<void> {
    return this.watch.start();
  }

  /** Services with an ingress, and those answering through it. */
  get assigned(): number {
    return this.watch.count('assigned');
  }
  get available(): number {
    return this.watch.count('available');
  }

  /** Percentiles of every transition (count 0 and NaN for one no Service made). */
  summaries(): Record<LbTransition, LatencySummary> {
    const out = {} as Record<LbTransition, LatencySummary>;
    for (const [name, [from, to]] of Object.entries(LB_TRANSITIONS)) out[name as LbTransition] = summarize(this.watch.between(from, to));
    return out;
  }

  /** Ends the watch and the probes, closes the backends. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.watch.stop();
    await Promise.allSettled([...this.work]);
    await this.backends.closeAll();
  }

  private track(p: Promise<unknown>): void {
    const q = p.catch(() => undefined).finally(() => this.work.delete(q));
    this.work.add(q);
  }

  private onService(key: string, s: V1Service, type: string): void {
    if (this.stopped || type === 'DELETED') return;
    const port = s.spec?.ports?.[0];
    if (!port?.nodePort) return;
    if (!this.started.has(`backend:${key}`)) {
      this.started.add(`backend:${key}`);
      this.track(this.backends.start(key, port.nodePort));
    }
    const ip = ingressOf(s);
    if (ip && !this.started.has(`probe:${key}`)) {
      this.started.add(`probe:${key}`);
      this.track(
        probeUntilAvailable(
          () => tcpRequest(ip, port.port, PROBE_TIMEOUT_MS),
          () => this.stopped,
        ).then((at) => {
          if (at !== undefined) this.watch.mark(key, 'available', at);
        }),
      );
    }
  }
}
