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
 *
 * Several providers (issue 31 item 5, isolation): the guard follows them
 * together and counts the replica unready only while none of its providers
 * is ready (overProviders). One provider down, wedged or crash-looping on
 * every replica (a bad build, its cloud's own outage) would otherwise make
 * every leader give up and every candidate hold off, stopping the other
 * providers' Nodes and load balancers too; a provider wedged on this
 * replica alone is restarted by its supervisor or the kubelet's probe.
 */
import { EventEmitter } from 'node:events';
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
 * Several providers' readiness as one: `ready` while at least one of them
 * is; otherwise the first one's state. Tells its listeners each time a
 * provider's state changes.
 */
export class AnyProviderReady implements PluginReadiness {
  private readonly events = new EventEmitter();

  constructor(readonly providers: readonly { name: string; readiness: PluginReadiness }[]) {
    if (providers.length === 0) throw new Error('AnyProviderReady needs at least one provider');
    for (const p of providers) p.readiness.on('state', () => this.events.emit('state', this.state));
  }

  get state(): PluginState {
    return this.providers.some((p) => p.readiness.state === 'ready') ? 'ready' : this.providers[0]!.readiness.state;
  }

  on(event: 'state', listener: (s: PluginState) => void): this {
    this.events.on(event, listener);
    return this;
  }

  /** `east: backoff, west: starting`. */
  describe(): string {
    return this.providers.map((p) => `${p.name}: ${p.readiness.state}`).join(', ');
  }
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

  /** What the messages name: `plugin aws`, or `every provider`. */
  private readonly subject: string;

  /**
   * The guard over several providers: the replica counts as unready only
   * while none of them is ready (see the module comment).
   */
  static overProviders(providers: AnyProviderReady, timeoutMs: number, now?: () => number): PluginLeaseGuard {
    return new PluginLeaseGuard(providers, '', timeoutMs, now);
  }

  constructor(
    private readonly plugin: PluginReadiness,
    pluginName: string,
    private readonly timeoutMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.subject = plugin instanceof AnyProviderReady ? 'every provider' : `plugin ${pluginName}`;
    if (plugin.state !== 'ready') this.unreadySince = this.now();
    plugin.on('state', (s) => {
      if (s === 'ready') {
        this.unreadySince = undefined;
        this.releasedBecause = undefined;
      } else this.unreadySince ??= this.now();
    });
  }

  /** `backoff (not ready)`, or with several providers `not ready (east: backoff, west: starting)`. */
  private stateText(): string {
    return this.plugin instanceof AnyProviderReady ? `not ready (${this.plugin.describe()})` : `${this.plugin.state} (not ready)`;
  }

  private input(leading: boolean): PluginLeaseInput {
    const ready = this.plugin.state === 'ready';
    return { leading, ready, unreadyForMs: ready || this.unreadySince === undefined ? 0 : this.now() - this.unreadySince, timeoutMs: this.timeoutMs };
  }

  /** Asked by the leader before each renewal: a reason means release now. Idempotent. */
  releaseReason(): string | undefined {
    const s = this.input(true);
    if (pluginLeaseAction(s) !== 'release') return undefined;
    this.releasedBecause = `${this.subject} was ${this.stateText()} for ${Math.round(s.unreadyForMs / 1000)}s, longer than --plugin-unready-lease-release-timeout=${this.timeoutMs / 1000}s`;
    return this.releasedBecause;
  }

  /** Asked by a candidate before each acquire attempt: a reason means do not campaign now. */
  campaignBlocker(): string | undefined {
    if (pluginLeaseAction(this.input(false)) !== 'hold-off') return undefined;
    return `${this.subject} is ${this.stateText()}`;
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
        `not campaigning for the leader lease while ${this.subject} is ${this.stateText()}${why}; campaigns again once ${this.plugin instanceof AnyProviderReady ? 'one' : 'it'} is ready`,
      );
    }
    if (leading && !s.ready && s.timeoutMs > 0) {
      throw new Error(
        `leading with ${this.subject} ${this.stateText()} for ${Math.round(s.unreadyForMs / 1000)}s; the leader lease is released at ${this.timeoutMs / 1000}s (--plugin-unready-lease-release-timeout)`,
      );
    }
  }
}
