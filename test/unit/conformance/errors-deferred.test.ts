/**
 * The conformance kit's errors/details check on protocol 1.1 "not now"
 * answers (conformance/checks/errors.ts): a DEFERRED error must be
 * UNAVAILABLE, carry a CamelCase reason in its ErrorInfo metadata and a
 * positive RetryInfo; each way of getting it wrong fails the check, with the
 * rule in the message.
 */
import test from 'ava';
import { errorChecks } from '../../../conformance/checks/errors.js';
import { CheckFailed, type Kit } from '../../../conformance/kit.js';
import { Code, RpcError } from '../../../conformance/rpc.js';
import { ERROR_DOMAIN, ErrorReason } from '../../../sdk/protocol.js';

const details = errorChecks.find((c) => c.id === 'errors/details')!;

function deferred(code: Code, metadata: Record<string, string>, retryAfterMs: number | undefined): RpcError {
  return new RpcError('EnsureLoadBalancer', code, 'not now', ErrorReason.DEFERRED, ERROR_DOMAIN, retryAfterMs, [], metadata);
}

const run = (e: RpcError) => details.run({ rpc: { failures: [e] } } as unknown as Kit);

test('a well-formed DEFERRED passes', async (t) => {
  await t.notThrowsAsync(run(deferred(Code.UNAVAILABLE, { reason: 'QuotaExhausted' }, 2000)));
});

const BAD: { name: string; err: RpcError; rule: RegExp }[] = [
  { name: 'another code', err: deferred(Code.FAILED_PRECONDITION, { reason: 'QuotaExhausted' }, 2000), rule: /want UNAVAILABLE/ },
  { name: 'no reason', err: deferred(Code.UNAVAILABLE, {}, 2000), rule: /CamelCase/ },
  { name: 'a reason that is not CamelCase', err: deferred(Code.UNAVAILABLE, { reason: 'quota exhausted' }, 2000), rule: /CamelCase/ },
  { name: 'no RetryInfo', err: deferred(Code.UNAVAILABLE, { reason: 'QuotaExhausted' }, undefined), rule: /RetryInfo/ },
];

for (const { name, err, rule } of BAD) {
  test(`DEFERRED with ${name} fails the check`, async (t) => {
    const e = await t.throwsAsync(run(err), { instanceOf: CheckFailed });
    t.regex(e!.message, rule);
  });
}
