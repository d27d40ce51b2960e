/**
 * What every service of the local cloud shares: the state store, the current
 * settings and a logger; plus small helpers used by several services.
 */
import { InvalidArgumentError, type ProviderError } from '../../sdk/errors.js';
import type { RequestMeta } from '../../proto/gen/ccm/provider/v1/common.js';
import type { CloudSettings } from './config.js';
import { DEFAULT_CLUSTER_NAME } from './names.js';
import type { StateStore } from './state.js';

/** The subset of a pino logger the local cloud uses (`log.info({ fields }, 'msg')`). */
export interface LocalCloudLogger {
  debug(fields: object, msg: string): void;
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
}

/** A logger that drops everything. */
export const silentLogger: LocalCloudLogger = { debug() {}, info() {}, warn() {} };

/** Shared by the services; `settings` is replaced by Configure. */
export interface CloudContext {
  store: StateStore;
  settings: CloudSettings;
  log: LocalCloudLogger;
  /** The load balancer data plane, when this process runs one (the provider executable does). */
  forwarder?: { sync(): Promise<void> };
  /**
   * The error the `fail` knob (knobs.ts) gives the part of a call of `method`
   * (`service.method`) about `object`, or undefined. For batch calls that
   * cannot be split by request alone (ReconcileRoutes: which routes it would
   * create or delete is only known inside the state update).
   */
  faultFor?: (method: string, object: string) => ProviderError | undefined;
  /** The load-balancer quota knobs (knobs.ts `lbQuota`, `lbQuotaRetryMs`) as the current call sees them. */
  lbQuota?: () => { limit: number; retryMs: number };
}

/** Topology label of a zone. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** Topology label of a region. */
export const REGION_LABEL = 'topology.kubernetes.io/region';

/** The cluster a request is for: its meta, else the configured name, else "kubernetes". */
export function clusterOf(c: CloudContext, meta: RequestMeta | undefined): string {
  return meta?.clusterName || c.settings.clusterName || DEFAULT_CLUSTER_NAME;
}

/** Returns `value`, or throws InvalidArgumentError naming the missing field. */
export function required<T>(value: T | undefined | null, field: string): T {
  if (value === undefined || value === null || value === '') throw new InvalidArgumentError(`${field} is required`);
  return value;
}

/** ISO-8601 now. */
export function nowIso(): string {
  return new Date().toISOString();
}
