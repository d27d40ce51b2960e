/**
 * CloudReachability (host/health.ts): readiness says "cloud unreachable" only
 * after OUTAGE_MIN_FAILURES cloud calls in a row over OUTAGE_MIN_MS got no
 * answer, and recovers at the first answered call. A fake clock; each row
 * feeds calls (method, code, at ms) and says whether the check then fails.
 */
import test from 'ava';
import { CloudReachability, OUTAGE_MIN_FAILURES, OUTAGE_MIN_MS } from '../../../host/health.js';

type Call = [method: string, code: string, atMs: number];

/** `n` calls of `method` answered `code`, spread evenly from `from` to `to` ms. */
function calls(n: number, code: string, from: number, to: number, method = 'InstanceMetadata'): Call[] {
  return Array.from({ length: n }, (_, i) => [method, code, from + ((to - from) * i) / Math.max(1, n - 1)] as Call);
}

const N = OUTAGE_MIN_FAILURES;
const SPAN = OUTAGE_MIN_MS;

const cases: { description: string; calls: Call[]; checkAt?: number; unreachable: boolean }[] = [
  { description: 'no calls', calls: [], unreachable: false },
  { description: 'every call answered', calls: calls(20, 'OK', 0, 2 * SPAN), unreachable: false },
  { description: `${N} UNAVAILABLE over the span`, calls: calls(N, 'UNAVAILABLE', 0, SPAN), unreachable: true },
  { description: 'timeouts count as no answer', calls: calls(N, 'DEADLINE_EXCEEDED', 0, SPAN), unreachable: true },
  { description: `${N - 1} failures are not enough`, calls: calls(N - 1, 'UNAVAILABLE', 0, 2 * SPAN), unreachable: false },
  {
    description: 'many failures within less than the span are not enough',
    calls: calls(50, 'UNAVAILABLE', 0, SPAN - 1),
    checkAt: SPAN - 1,
    unreachable: false,
  },
  { description: 'a streak old enough by the time of the check', calls: calls(N, 'UNAVAILABLE', 0, 100), checkAt: SPAN, unreachable: true },
  {
    description: 'one answered call ends the outage',
    calls: [...calls(N, 'UNAVAILABLE', 0, SPAN), ['InstanceMetadata', 'OK', SPAN + 1]],
    unreachable: false,
  },
  {
    description: 'an error the cloud answered (NOT_FOUND) ends it too',
    calls: [...calls(N, 'UNAVAILABLE', 0, SPAN), ['InstanceMetadata', 'NOT_FOUND', SPAN + 1]],
    unreachable: false,
  },
  {
    description: "the provider's own RPCs (Probe, Configure) say nothing about the cloud",
    calls: [...calls(N, 'UNAVAILABLE', 0, SPAN), ['Probe', 'OK', SPAN + 1], ['Configure', 'OK', SPAN + 2], ['GetPluginInfo', 'OK', SPAN + 3]],
    unreachable: true,
  },
  { description: 'failing provider RPCs alone are no cloud outage', calls: calls(N, 'UNAVAILABLE', 0, SPAN, 'Probe'), unreachable: false },
  {
    description: 'a new streak after an answered call starts its span again',
    calls: [...calls(N, 'UNAVAILABLE', 0, SPAN), ['GetZone', 'OK', SPAN + 1], ...calls(N, 'UNAVAILABLE', SPAN + 2, SPAN + 100)],
    unreachable: false,
  },
];

for (const c of cases) {
  test(c.description, (t) => {
    let now = 0;
    const r = new CloudReachability(() => now);
    for (const [method, code, at] of c.calls) {
      now = at;
      r.observe(method, code);
    }
    if (c.checkAt !== undefined) now = c.checkAt;
    if (c.unreachable) t.throws(() => r.check(), { message: /cloud calls over \d+s got no answer \(last: \w+ (UNAVAILABLE|DEADLINE_EXCEEDED)\)/ });
    else t.notThrows(() => r.check());
  });
}
