/**
 * The local cloud's own metrics, served through the host's /metrics
 * (CloudProvider.metrics → IdentityService.GetMetrics): calls per method and
 * outcome, calls waiting on the `hold` knob, and the objects the cloud
 * holds, read from the state at scrape time.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { StateStore } from './state.js';

/** Metrics of one local cloud. */
export class LocalCloudMetrics {
  private readonly registry = new Registry();
  private readonly calls = new Counter({
    name: 'localcloud_calls_total',
    help: 'Cloud calls the local cloud answered, by method and outcome (ok or error).',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });

  private readonly heldCalls = new Gauge({
    name: 'localcloud_held_calls',
    help: 'Calls waiting on the hold knob now, by method (tests wait for it before acting on a held call).',
    labelNames: ['method'] as const,
    registers: [this.registry],
  });

  constructor(store: StateStore) {
    new Gauge({
      name: 'localcloud_objects',
      help: 'Objects the local cloud holds, by kind.',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect() {
        const state = store.read();
        this.set({ kind: 'instances' }, state.instances.length);
        this.set({ kind: 'load_balancers' }, state.loadBalancers.length);
        this.set({ kind: 'routes' }, state.routes.length);
        this.set({ kind: 'volumes' }, state.volumes.length);
      },
    });
  }

  /** Counts one answered call of `method` (`service.method`). */
  called(method: string, ok: boolean): void {
    this.calls.inc({ method, outcome: ok ? 'ok' : 'error' });
  }

  /** A call of `method` started (`true`) or stopped (`false`) waiting on the hold knob. */
  held(method: string, waiting: boolean): void {
    this.heldCalls.inc({ method }, waiting ? 1 : -1);
  }

  /** The Prometheus text of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
