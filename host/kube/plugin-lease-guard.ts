/**
 * Leadership that follows the provider's readiness (beyond upstream, whose
 * cloud provider runs in-process and cannot be wedged on its own): a leader
 * whose plugin stays unready (the supervisor is not `ready`: health not
 * SERVING, Probe not ready, or its checks time out because the process is
 * alive but not answering) for longer than
 * --plugin-unready-lease-release-timeout gives its Lease up so a replica with
 * a healthy provider takes over; a replica whose plugin is unready does not
 * campaign, so the one that gave up does not take the Lease straight back.
 * It campaigns again as soon as its plugin is ready (e.g. the kubelet
 * restarted a wedged sidecar and the supervisor redialed it).
 *
 * Cloud outages (calls answered UNAVAILABLE or timing out while the provider
 * itself answers its checks) deliberately do not count: every replica shares
 * the cloud, so handing the Lease around would only add churn, and a standby
 * makes no cloud calls from which it could see the cloud come back.
 */
import { performance } from 'node:perf_hooks';
import type { PluginState } from '../plugin/supervisor.js';

/** What a replica does about the Lease, given its provider's readiness. */
export type PluginLeaseAction =
  /** Leading: keep renewing. */
  | 'keep'
  /** Leading with a provider unready past the bound: stop the controllers, then release the Lease. */
  | 'release'
  /** Not leading: try to acquire as usual. */
  | 'campaign'
  /** Not leading with an unready provider: do not try to acquire. */
  | 'hold-off';

export interface PluginLeaseInput {
  leading: boolean;
  ready: boolean;
  /** How long the plugin has been unready without a break (0 when ready). */
  unreadyForMs: number;
  /** --plugin-unready-lease-release-timeout; 0 disables both the release and the hold-off (upstream's behaviour). */
  timeoutMs: number;
}

/** The decision, a pure function of its input (test/unit/kube/plugin-lease-guard.test.ts has its table). */
export function pluginLeaseAction(s: PluginLeaseInput): PluginLeaseAction {
  if (s.timeoutMs <= 0 || s.ready) return s.leading ? 'keep' : 'campaign';
  if (!s.leading) return 'hold-off';
  return s.unreadyForMs >= s.timeoutMs ? 'release' : 'keep';
}

/** The plugin's readiness as the guard sees it: its supervisor's state and state changes. */
export interface PluginReadiness {
  readonly state: PluginState;
  on(event: 'state', listener: (s: PluginState) => void): unknown;
}

/**
 * Tracks since when the plugin has been unready (local monotonic clock) and
 * answers the elector's two questions; also the `leaderCandidacy` readiness
 * check's text.
 */
export class PluginLeaseGuard {
  /** Monotonic time the plugin left `ready` (undefined while ready). */
  private unreadySince?: number;
  /** Why this replica last gave the Lease up, until its plugin is ready again. */
  private releasedBecause?: string;

  constructor(
    private readonly plugin: PluginReadiness,
    private readonly pluginName: string,
    private readonly timeoutMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (plugin.state !== 'ready') this.unreadySince = this.now();
    plugin.on('state', (s) => {
      if (s === 'ready') {
        this.unreadySince = undefined;
        this.releasedBecause = undefined;
      } else this.unreadySince ??= this.now();
    });
  }

  private input(leading: boolean): PluginLeaseInput {
    const ready = this.plugin.state === 'ready';
    return { leading, ready, unreadyForMs: ready || this.unreadySince === undefined ? 0 : this.now() - this.unreadySince, timeoutMs: this.timeoutMs };
  }

  /** Asked by the leader before each renewal: a reason means release now. Idempotent. */
  releaseReason(): string | undefined {
    const s = this.input(true);
    if (pluginLeaseAction(s) !== 'release') return undefined;
    this.releasedBecause = `plugin ${this.pluginName} was ${this.plugin.state} (not ready) for ${Math.round(s.unreadyForMs / 1000)}s, longer than --plugin-unready-lease-release-timeout=${this.timeoutMs / 1000}s`;
    return this.releasedBecause;
  }

  /** Asked by a candidate before each acquire attempt: a reason means do not campaign now. */
  campaignBlocker(): string | undefined {
    if (pluginLeaseAction(this.input(false)) !== 'hold-off') return undefined;
    return `plugin ${this.pluginName} is ${this.plugin.state} (not ready)`;
  }

  /**
   * The `leaderCandidacy` readiness check: throws, saying why, while this
   * replica stays out of the election because of its plugin, or leads with
   * an unready plugin and is counting down to the release.
   */
  check(leading: boolean): void {
    const s = this.input(leading);
    const action = pluginLeaseAction(s);
    if (action === 'hold-off') {
      const why = this.releasedBecause ? `; gave up the leader lease because ${this.releasedBecause}` : '';
      throw new Error(
        `not campaigning for the leader lease while plugin ${this.pluginName} is ${this.plugin.state} (not ready)${why}; campaigns again once it is ready`,
      );
    }
    if (leading && !s.ready && s.timeoutMs > 0) {
      throw new Error(
        `leading with plugin ${this.pluginName} ${this.plugin.state} (not ready) for ${Math.round(s.unreadyForMs / 1000)}s; the leader lease is released at ${this.timeoutMs / 1000}s (--plugin-unready-lease-release-timeout)`,
      );
    }
  }
}
