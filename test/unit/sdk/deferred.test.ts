/**
 * Protocol 1.1 "not now" (DEFERRED): the TypeScript SDK's DeferredError on
 * the wire, and how the host reads it (host/plugin/connection.ts): a
 * DeferredError with the provider's reason and delay; a 1.0-style reading
 * (UNAVAILABLE + RetryInfo) stays possible; a reason that is not CamelCase is
 * refused by the SDK and read as Unspecified by the host.
 */
import test from 'ava';
import { Code, DeferredError as SdkDeferredError, fromStatus, toStatus } from '../../../sdk/errors.js';
import { DEFERRED_REASON_KEY, ErrorReason } from '../../../sdk/protocol.js';
import { decodedToCloudError } from '../../../host/plugin/connection.js';
import { DeferredError } from '../../../host/errors.js';

test('DeferredError: UNAVAILABLE, ErrorInfo DEFERRED with its reason, RetryInfo', (t) => {
  const s = fromStatus(toStatus(new SdkDeferredError('QuotaExhausted', 'quota of 2 reached', 7000)));
  t.deepEqual(s, {
    code: Code.UNAVAILABLE,
    message: 'quota of 2 reached',
    reason: ErrorReason.DEFERRED,
    retryAfterMs: 7000,
    metadata: { [DEFERRED_REASON_KEY]: 'QuotaExhausted' },
  });
});

test('the SDK refuses a reason that is not a CamelCase word', (t) => {
  for (const bad of ['', 'quota exhausted', '9Lives', 'A'.repeat(65), 'Trailing,'])
    t.throws(() => new SdkDeferredError(bad, 'm', 1000), { instanceOf: RangeError }, JSON.stringify(bad));
  t.notThrows(() => new SdkDeferredError('A', 'm', 1000));
});

const table: { name: string; metadata?: Record<string, string>; retryAfterMs?: number; reason: string; delay: number | undefined }[] = [
  { name: 'reason and delay', metadata: { reason: 'QuotaExhausted' }, retryAfterMs: 3000, reason: 'QuotaExhausted', delay: 3000 },
  { name: 'no RetryInfo: the backoff', metadata: { reason: 'WaitingForSubnet' }, reason: 'WaitingForSubnet', delay: undefined },
  { name: 'no reason', retryAfterMs: 1000, reason: 'Unspecified', delay: 1000 },
  { name: 'an invalid reason', metadata: { reason: 'not camel case!' }, retryAfterMs: 1000, reason: 'Unspecified', delay: 1000 },
];

for (const c of table) {
  test(`the host reads DEFERRED (${c.name}) as a DeferredError: ${c.reason}, ${c.delay ?? 'no'} delay`, (t) => {
    const err = decodedToCloudError('EnsureLoadBalancer', {
      code: Code.UNAVAILABLE,
      message: 'not now',
      reason: ErrorReason.DEFERRED,
      retryAfterMs: c.retryAfterMs,
      metadata: c.metadata,
    });
    t.true(err instanceof DeferredError);
    t.is((err as DeferredError).deferredReason, c.reason);
    t.is((err as DeferredError).retryAfterMs, c.delay);
    t.is(err.message, 'EnsureLoadBalancer: not now');
  });
}
