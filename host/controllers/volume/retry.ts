/**
 * Retry pacing and names of the volume controllers' queues: per item, 100 ms doubling
 * to 5 min, as the CSI sidecars (1 s → 5 min) but starting sooner so a plugin
 * restart costs little. No overall bucket: hundreds of claims failing
 * together (a cloud outage) must all be retried once it ends, not at 10/s.
 */
import { ItemExponentialRateLimiter, type RateLimiter } from '../../kube/ratelimiter.js';

const VOLUME_RETRY_BASE_MS = 100;
const VOLUME_RETRY_MAX_MS = 5 * 60_000;

export function volumeRateLimiter<T>(): RateLimiter<T> {
  return new ItemExponentialRateLimiter<T>(VOLUME_RETRY_BASE_MS, VOLUME_RETRY_MAX_MS);
}

/**
 * A volume controller's work-queue name (the `name` label of the workqueue
 * metrics): `base` with one instance, `base-<provisioner>` when the host runs
 * one instance per provisioner name (host/controllers/volume/start.ts).
 */
export function queueName(base: string, suffix: string | undefined): string {
  return suffix ? `${base}-${suffix}` : base;
}
