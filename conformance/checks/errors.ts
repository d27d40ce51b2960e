/** Error-model checks: RetryInfo under a throttle, and the details of every error seen. */
import { setTimeout as delay } from 'node:timers/promises';
import { Service } from '../../proto/gen/ccm/provider/v1/identity.js';
import { DEFERRED_REASON_KEY, DEFERRED_REASON_PATTERN, ERROR_DOMAIN, ErrorReason } from '../../sdk/protocol.js';
import { expect, skip, type Check, type Kit } from '../kit.js';
import { Code, RpcError } from '../rpc.js';
import { probeCall } from './identity.js';

const THROTTLE_DELAY_MS = 1_500;
const KNOWN_REASONS = new Set<string>(Object.values(ErrorReason));

/** A cheap read of the first cloud service the provider declares. */
function cloudRead(k: Kit): [object, string, object] {
  const s = [Service.SERVICE_INSTANCES, Service.SERVICE_ROUTES, Service.SERVICE_VOLUMES, Service.SERVICE_LOAD_BALANCERS, Service.SERVICE_ZONES].find(
    (x) => k.caps.services.includes(x),
  );
  if (s === undefined) skip('the provider declares no cloud service');
  return probeCall(k, s)!;
}

export const errorChecks: Check[] = [
  {
    id: 'errors/retry-info',
    title: 'a throttled cloud API answers RESOURCE_EXHAUSTED or UNAVAILABLE with ErrorInfo RATE_LIMITED and a RetryInfo delay',
    run: async (k) => {
      const hooks = k.hooks;
      const [client, method, req] = cloudRead(k);
      if (!(await hooks.setThrottle(true, THROTTLE_DELAY_MS))) skip(`the test hook (${hooks.description}) cannot simulate a throttle`);
      let seen: RpcError | undefined;
      try {
        for (let i = 0; i < 5 && !seen; i++) {
          try {
            await k.rpc.call(client, method, req);
          } catch (err) {
            if (!(err instanceof RpcError)) throw err;
            seen = err;
          }
        }
      } finally {
        await hooks.setThrottle(false, 0);
      }
      expect(seen, `${method} kept succeeding while the cloud was throttled`);
      expect(
        seen.code === Code.RESOURCE_EXHAUSTED || seen.code === Code.UNAVAILABLE,
        `throttled ${method} answered ${seen.codeName}; want RESOURCE_EXHAUSTED or UNAVAILABLE`,
      );
      expect(
        seen.reason === ErrorReason.RATE_LIMITED && seen.domain === ERROR_DOMAIN,
        `throttled ${method} has ErrorInfo ${seen.reason ?? 'none'}/${seen.domain ?? 'none'}; want ${ErrorReason.RATE_LIMITED}/${ERROR_DOMAIN}`,
      );
      expect(
        seen.retryAfterMs !== undefined && seen.retryAfterMs > 0,
        `throttled ${method} has no positive RetryInfo.retry_delay (got ${seen.retryAfterMs ?? 'none'})`,
      );
      // Once the throttle is off, calls succeed again.
      for (let i = 0; ; i++) {
        try {
          await k.rpc.call(client, method, req);
          return;
        } catch (err) {
          expect(i < 20, `${method} still fails 10 s after the throttle was lifted: ${(err as Error).message}`);
          await delay(500);
        }
      }
    },
  },
  {
    id: 'errors/details',
    title:
      'every error of the run has a valid code and well-formed details (ErrorInfo domain ccm.provider.v1, known reasons; DEFERRED: UNAVAILABLE, its own reason, a RetryInfo)',
    run: async (k) => {
      const failures = k.rpc.failures;
      if (failures.length === 0) skip('no errors were seen');
      for (const e of failures) {
        expect(e.detailProblems.length === 0, `${e.method}: ${e.detailProblems.join('; ')}`);
        expect(e.code > 0 && e.code <= 16, `${e.method}: code ${e.code} is not a canonical gRPC code`);
        if (e.reason !== undefined) {
          expect(e.domain === ERROR_DOMAIN, `${e.method}: ErrorInfo domain ${JSON.stringify(e.domain)}; want ${ERROR_DOMAIN}`);
          expect(
            KNOWN_REASONS.has(e.reason),
            `${e.method}: ErrorInfo reason ${JSON.stringify(e.reason)} is not one of ${[...KNOWN_REASONS].join(', ')}`,
          );
        }
        if (e.reason === ErrorReason.INSTANCE_NOT_FOUND)
          expect(e.code === Code.NOT_FOUND, `${e.method}: INSTANCE_NOT_FOUND with code ${e.codeName}; want NOT_FOUND`);
        if (e.retryAfterMs !== undefined) expect(e.retryAfterMs >= 0, `${e.method}: RetryInfo without a valid retry_delay`);
        if (e.reason === ErrorReason.DEFERRED) {
          // Protocol 1.1 "not now": UNAVAILABLE (a 1.0 host then retries after the delay), its own CamelCase reason, an earliest retry.
          expect(e.code === Code.UNAVAILABLE, `${e.method}: DEFERRED with code ${e.codeName}; want UNAVAILABLE`);
          const own = e.metadata[DEFERRED_REASON_KEY] ?? '';
          expect(
            DEFERRED_REASON_PATTERN.test(own),
            `${e.method}: DEFERRED with ErrorInfo metadata ${DEFERRED_REASON_KEY}=${JSON.stringify(own)}; want a CamelCase word of at most 64 characters`,
          );
          expect(e.retryAfterMs !== undefined && e.retryAfterMs > 0, `${e.method}: DEFERRED without a positive RetryInfo.retry_delay`);
        }
      }
    },
  },
];
