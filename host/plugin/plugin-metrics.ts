/**
 * The provider's own metrics (IdentityService.GetMetrics, announced by
 * CAPABILITY_METRICS) appended to the host's /metrics: in exec mode the
 * operator has no other port to scrape the provider on. Scrapes share one
 * call, which happens at most once per MIN_INTERVAL_MS and has a deadline of
 * CALL_DEADLINE_MS; an answer that fails validate-metrics.ts is dropped whole
 * and the reason logged (each message at most once per LOG_INTERVAL_MS). A failed or
 * missing answer never fails the host's own scrape. Every served sample gets
 * the labels the host's own ccm_plugin_* metrics have (unless it has a label
 * of that name): plugin="<--cloud-provider>", and with several providers
 * also provider="<name>".
 */
import type { Logger } from 'pino';
import { Capability } from '../../proto/gen/ccm/provider/v1/identity.js';
import { errorMessage } from '../log.js';
import type { PluginSupervisor } from './supervisor.js';
import { addLabel, checkPluginMetrics, exposedNames } from './validate-metrics.js';

/** Scrapes closer together than this get the previous answer. */
const MIN_INTERVAL_MS = 1_000;
/** Deadline of one GetMetrics call. */
const CALL_DEADLINE_MS = 2_000;
/** Least time between two log lines about bad or failed answers. */
const LOG_INTERVAL_MS = 60_000;

export class PluginMetrics {
  private last = { at: -Infinity, text: '' };
  private inFlight: Promise<string> | undefined;
  /** When each message was last logged. */
  private readonly loggedAt = new Map<string, number>();

  constructor(
    private readonly supervisor: PluginSupervisor,
    private readonly log: Logger,
    /** Labels added to every sample, in this order: `plugin` (and `provider` with several providers). */
    private readonly labels: Readonly<Record<string, string>>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The provider's metrics to serve after `hostText`, or '' (not announced, not ready, failed, invalid). */
  async textAfter(hostText: string): Promise<string> {
    if (!this.supervisor.identity?.capabilities.capabilities.includes(Capability.CAPABILITY_METRICS)) return '';
    if (this.now() - this.last.at < MIN_INTERVAL_MS) return this.last.text;
    this.inFlight ??= this.fetch(exposedNames(hostText)).finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetch(reserved: Set<string>): Promise<string> {
    let text = '';
    try {
      const conn = this.supervisor.connection();
      const answer = await conn.unary<object, { text: string }>(conn.identity, 'GetMetrics', {}, CALL_DEADLINE_MS);
      const checked = checkPluginMetrics(answer.text, reserved);
      if ('problem' in checked) this.warn({ problem: checked.problem }, "dropping the plugin's metrics: not valid Prometheus text format");
      else {
        if (checked.shadowed.length)
          this.warn(
            { names: checked.shadowed.slice(0, 20) },
            'dropping plugin metric families that the host serves itself: prefix them with the provider name',
          );
        // addLabel puts its label first, so add them last to first.
        text = Object.entries(this.labels)
          .reverse()
          .reduce((acc, [name, value]) => addLabel(acc, name, value), checked.text);
      }
    } catch (err) {
      this.warn({ err: errorMessage(err) }, "cannot get the plugin's metrics; /metrics is served without them");
    }
    this.last = { at: this.now(), text };
    return text;
  }

  private warn(fields: Record<string, unknown>, msg: string): void {
    if (this.now() - (this.loggedAt.get(msg) ?? -Infinity) < LOG_INTERVAL_MS) return;
    this.loggedAt.set(msg, this.now());
    this.log.warn(fields, msg);
  }
}
