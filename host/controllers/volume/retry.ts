/**
 * Retry pacing and metric labels of the volume controllers' queues: per item, 100 ms doubling
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
 * The labels that tell apart the work queues of one volume controller when
 * the host runs one instance per (provider, provisioner name)
 * (host/controllers/volume/start.ts), as the Nodes and service queues do:
 * the queue `name` stays the controller's, `provider` is set with several
 * providers and `provisioner` with several volume instances. Both absent
 * with one instance, so its series are exactly as before.
 */
export interface VolumeQueueLabels {
  provider?: string;
  provisioner?: string;
}
