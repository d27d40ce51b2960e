/**
 * runConformance(options): drives one provider through every check and
 * returns the results. Always cleans up: the kit's cloud objects are removed
 * by cleanup/no-leftovers, and the provider process it started is ended.
 */
import { cleanupChecks, removeAll } from './checks/cleanup.js';
import { errorChecks } from './checks/errors.js';
import { identityChecks } from './checks/identity.js';
import { instanceChecks } from './checks/instances.js';
import { endChecks, hookSetupCheck, launchChecks } from './checks/launch.js';
import { loadBalancerChecks } from './checks/load-balancers.js';
import { routeChecks } from './checks/routes.js';
import { volumeChecks } from './checks/volumes.js';
import { zoneChecks } from './checks/zones.js';
import { Kit, runChecks, type Check, type KitOptions } from './kit.js';
import type { CheckResult } from './report.js';

/** Every check, in the order they run. */
const ALL_CHECKS: readonly Check[] = [
  ...launchChecks,
  ...identityChecks,
  hookSetupCheck, // after lifecycle/configure: hooks may be gated like a cloud service
  ...instanceChecks,
  ...zoneChecks,
  ...loadBalancerChecks,
  ...routeChecks,
  ...volumeChecks,
  errorChecks[0]!, // errors/retry-info
  ...cleanupChecks,
  errorChecks[1]!, // errors/details: every error of the run, cleanup included
  ...endChecks,
];

export async function runConformance(opts: KitOptions): Promise<CheckResult[]> {
  const k = new Kit(opts);
  try {
    return await runChecks(k, ALL_CHECKS);
  } finally {
    await removeAll(k).catch(() => undefined); // a second pass, in case a check threw midway
    k.rpcValue?.close();
    await k.proc?.kill();
  }
}
