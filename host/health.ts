/**
 * What the health endpoints mean, so the kubelet's probes act on the right
 * signal (docs/health-and-metrics.md):
 *
 * - liveness, `/healthz` and `/livez`: the host process only (the built-in
 *   `ping` and, with leader election, `leaderElection`: the leader stopped
 *   renewing its lease). A restart cures these.
 * - readiness, `/readyz`: whether this replica does its job. `plugin` (the
 *   provider is ready; false while it restarts with backoff), `cloud` (the
 *   cloud answers: false during an outage in which every call fails
 *   UNAVAILABLE or times out); with several providers (--providers-config)
 *   these are `plugin-<name>` and `cloud-<name>`, one pair per provider; `informer-sync` and one check per started
 *   controller (running and making progress; a controller that stopped with
 *   an error, e.g. a PersistentVolume label webhook that could not bind its
 *   port, fails its check), and with --plugin-unready-lease-release-timeout
 *   `leaderCandidacy` (app.ts, kube/plugin-lease-guard.ts: this replica is
 *   out of the election because its plugin is unready, and why). A restart
 *   cures none of these, so they must
 *   never fail liveness; they show in /readyz and in the metrics
 *   (ccm_plugin_ready, ccm_plugin_rpc_errors_total{code},
 *   running_managed_controllers).
 */
import { IdentityServiceService } from '../proto/gen/ccm/provider/v1/identity.js';
import { LifecycleServiceService } from '../proto/gen/ccm/provider/v1/lifecycle.js';
import type { RunnableController } from './controllers/context.js';
import type { ControllerName } from './names.js';
import type { PluginSupervisor } from './plugin/supervisor.js';
import type { HealthServer } from './server/server.js';

/** A cloud outage is this many calls in a row failing UNAVAILABLE or DEADLINE_EXCEEDED ... */
export const OUTAGE_MIN_FAILURES = 5;
/** ... over at least this long, so a few unlucky retries of a flaky cloud do not flip readiness. */
export const OUTAGE_MIN_MS = 10_000;

/** Codes meaning the cloud did not answer; any other outcome means it did. */
const NO_ANSWER = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);

/** The provider's own RPCs (identity, lifecycle), which say nothing about the cloud. */
const PROVIDER_METHODS = new Set(
  [...Object.values(IdentityServiceService), ...Object.values(LifecycleServiceService)].map((m) => m.path.slice(m.path.lastIndexOf('/') + 1)),
);

/**
 * Whether the cloud behind the plugin answers, from the outcomes of the cloud
 * calls the controllers make anyway (no calls of its own). Ready until
 * OUTAGE_MIN_FAILURES calls in a row over OUTAGE_MIN_MS got no answer; ready
 * again at the first answered call.
 */
export class CloudReachability {
  private failures = 0;
  private firstFailureAt = 0;
  private lastCode = '';
  private lastMethod = '';

  constructor(private readonly now: () => number = Date.now) {}

  /** Feeds one finished plugin call (the supervisor's observeCall). */
  observe(method: string, code: string): void {
    if (PROVIDER_METHODS.has(method)) return;
    if (!NO_ANSWER.has(code)) {
      this.failures = 0;
      return;
    }
    if (this.failures === 0) this.firstFailureAt = this.now();
    this.failures++;
    this.lastCode = code;
    this.lastMethod = method;
  }

  /** The readiness check: throws while the cloud looks unreachable. */
  check(): void {
    const span = this.now() - this.firstFailureAt;
    if (this.failures >= OUTAGE_MIN_FAILURES && span >= OUTAGE_MIN_MS) {
      throw new Error(
        `the last ${this.failures} cloud calls over ${Math.round(span / 1000)}s got no answer (last: ${this.lastMethod} ${this.lastCode}); ready again once a call is answered`,
      );
    }
  }
}

/** One controller's readiness in the current term of leadership. */
interface ControllerState {
  healthy?: () => boolean;
  problem?: () => string | undefined;
  /** Why it stopped while it should run. */
  stopped?: string;
}

/** Registers the readiness checks of the plugin, the cloud and the controllers on `server`. */
export class HostHealth {
  readonly cloud = new CloudReachability();
  private readonly controllers = new Map<ControllerName, ControllerState>();

  constructor(private readonly server: HealthServer | undefined) {}

  /**
   * The `plugin` and `cloud` readiness checks of one provider; with several
   * providers (`several`), `plugin-<name>` and `cloud-<name>` for each, so
   * /readyz says which provider is not ready. Returns the reachability to
   * feed with that provider's calls (`cloud` for a single provider).
   */
  watchPlugin(supervisor: PluginSupervisor, name: string, several = false): CloudReachability {
    const reachability = several ? new CloudReachability() : this.cloud;
    const suffix = several ? `-${name}` : '';
    this.server?.addCheck(
      `plugin${suffix}`,
      () => {
        if (supervisor.state !== 'ready') throw new Error(`plugin ${name} is ${supervisor.state}`);
      },
      'readyz',
    );
    this.server?.addCheck(`cloud${suffix}`, () => reachability.check(), 'readyz');
    return reachability;
  }

  /**
   * A controller started (again, in a new term of leadership): its readiness
   * check reads this state from now on. Returns the callback to call when its
   * run ends while it should still run.
   */
  controllerStarted(name: ControllerName, made: Pick<RunnableController, 'healthy' | 'problem'>): (reason: string) => void {
    const state: ControllerState = { healthy: made.healthy && (() => made.healthy!()), problem: made.problem && (() => made.problem!()) };
    const first = !this.controllers.has(name);
    this.controllers.set(name, state);
    if (first) {
      this.server?.addCheck(
        name,
        () => {
          const s = this.controllers.get(name)!;
          if (s.stopped !== undefined) throw new Error(`${name} stopped: ${s.stopped}`);
          if (s.healthy && !s.healthy()) throw new Error(`${name} is not making progress`);
          const problem = s.problem?.();
          if (problem !== undefined) throw new Error(`${name}: ${problem}`);
        },
        'readyz',
      );
    }
    return (reason) => {
      state.stopped = reason;
    };
  }
}
