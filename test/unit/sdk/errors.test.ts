import test from 'ava';
import { Metadata } from '@grpc/grpc-js';
import {
  AlreadyExistsError,
  Code,
  fromServiceError,
  fromStatus,
  ImplementedElsewhereError,
  InstanceNotFoundError,
  InUseError,
  InvalidArgumentError,
  NotFoundError,
  NotImplementedError,
  ProviderError,
  QuotaExceededError,
  RateLimitedError,
  RetryError,
  toServiceError,
  toStatus,
  UnavailableError,
} from '../../../sdk/errors.js';
import { ErrorReason } from '../../../sdk/protocol.js';
import { Status } from '../../../proto/gen/google/rpc/status.js';

interface ErrorCase {
  err: ProviderError;
  code: Code;
  reason?: string;
  retryAfterMs?: number;
  metadata?: Record<string, string>;
}

const cases: ErrorCase[] = [
  { err: new InstanceNotFoundError('no vm', { vm: 'i-1' }), code: Code.NOT_FOUND, reason: ErrorReason.INSTANCE_NOT_FOUND, metadata: { vm: 'i-1' } },
  { err: new InstanceNotFoundError(), code: Code.NOT_FOUND, reason: ErrorReason.INSTANCE_NOT_FOUND },
  { err: new NotFoundError('no lb'), code: Code.NOT_FOUND },
  { err: new AlreadyExistsError('exists'), code: Code.ALREADY_EXISTS },
  { err: new InvalidArgumentError('bad'), code: Code.INVALID_ARGUMENT },
  { err: new RateLimitedError('throttled', 1500), code: Code.RESOURCE_EXHAUSTED, reason: ErrorReason.RATE_LIMITED, retryAfterMs: 1500 },
  { err: new RateLimitedError('throttled', 0), code: Code.RESOURCE_EXHAUSTED, reason: ErrorReason.RATE_LIMITED, retryAfterMs: 0 },
  { err: new RetryError('not yet', 250), code: Code.UNAVAILABLE, retryAfterMs: 250 },
  { err: new RetryError('later', 61_001), code: Code.UNAVAILABLE, retryAfterMs: 61_001 },
  { err: new QuotaExceededError('quota'), code: Code.RESOURCE_EXHAUSTED, reason: ErrorReason.QUOTA_EXCEEDED },
  { err: new ImplementedElsewhereError(), code: Code.FAILED_PRECONDITION, reason: ErrorReason.IMPLEMENTED_ELSEWHERE },
  { err: new InUseError('attached'), code: Code.FAILED_PRECONDITION, reason: ErrorReason.IN_USE },
  { err: new UnavailableError('cloud down'), code: Code.UNAVAILABLE, reason: ErrorReason.CLOUD_API_ERROR },
  { err: new NotImplementedError(), code: Code.UNIMPLEMENTED },
  {
    err: new ProviderError(Code.ABORTED, 'custom', { reason: 'CUSTOM', retryAfterMs: 10, metadata: { a: 'b' } }),
    code: Code.ABORTED,
    reason: 'CUSTOM',
    retryAfterMs: 10,
    metadata: { a: 'b' },
  },
];

/** What a decoded status must contain for `c`. */
function expected(c: ErrorCase) {
  const want: Record<string, unknown> = { code: c.code, message: c.err.message };
  if (c.reason !== undefined) want.reason = c.reason;
  if (c.retryAfterMs !== undefined) want.retryAfterMs = c.retryAfterMs;
  if (c.metadata !== undefined) want.metadata = c.metadata;
  return want;
}

for (const [i, c] of cases.entries()) {
  const label = `#${i} ${c.err.name}(${c.err.message})`;

  test(`toStatus/fromStatus round trip: ${label}`, (t) => {
    const status = toStatus(c.err);
    // Through the wire encoding, as batch results travel.
    const decoded = fromStatus(Status.decode(Status.encode(status).finish()));
    t.deepEqual(decoded, expected(c));
  });

  test(`toServiceError/fromServiceError round trip: ${label}`, (t) => {
    const se = toServiceError(c.err);
    t.is(se.code, c.code);
    t.is(se.details, c.err.message);
    // Through a copy of the trailers, as grpc-js hands them to the client.
    const md = new Metadata();
    for (const [k, v] of Object.entries(se.metadata!.toJSON())) for (const x of v) md.add(k, x);
    const decoded = fromServiceError({ code: se.code, details: se.details, metadata: md });
    t.deepEqual(decoded, expected(c));
  });
}

test('a plain Error becomes INTERNAL with its message and no details', (t) => {
  const se = toServiceError(new Error('kaboom'));
  t.is(se.code, Code.INTERNAL);
  t.is(se.details, 'kaboom');
  t.deepEqual(fromServiceError(se), { code: Code.INTERNAL, message: 'kaboom' });
  t.deepEqual(toStatus('a string'), { code: Code.INTERNAL, message: 'a string', details: [] });
});

test('fromServiceError survives a corrupt details trailer', (t) => {
  const md = new Metadata();
  md.set('grpc-status-details-bin', Buffer.from([0xff, 0xff, 0xff]));
  t.deepEqual(fromServiceError({ code: Code.NOT_FOUND, details: 'x', metadata: md }), { code: Code.NOT_FOUND, message: 'x' });
});

test('fromStatus ignores unknown detail types', (t) => {
  const decoded = fromStatus({
    code: Code.INTERNAL,
    message: 'm',
    details: [{ typeUrl: 'type.googleapis.com/x.Unknown', value: Buffer.from([1, 2]) }],
  });
  t.deepEqual(decoded, { code: Code.INTERNAL, message: 'm' });
});
