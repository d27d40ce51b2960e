/**
 * CloudBudgetShare (host/kube/cloud-budget.ts): a held share makes cloud
 * calls wait (never "unlimited"), the rule's k sets every provider's bucket
 * to budget/k in place, a read that fails keeps k, a fence that closed makes
 * it held again, the term's end holds it; the gauge and one log line per
 * change of k. The rule itself: budget-share.test.ts.
 */
import test from 'ava';
import { Registry } from 'prom-client';
import type { Membership } from '../../../host/kube/budget-share.js';
import { CloudBudgetShare } from '../../../host/kube/cloud-budget.js';
import { createLogger } from '../../../host/log.js';
import { CLOUD_API_BUDGET_SHARE } from '../../../host/metrics.js';

function share(shards = 3) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    verbosity: 0,
    destination: { write: (l: string) => (lines.push(JSON.parse(l) as Record<string, unknown>), true) } as never,
  });
  const clock = { now: 0 };
  const registry = new Registry();
  const s = new CloudBudgetShare({ shards, budget: { qps: 12, burst: 7 }, registry, log, now: () => clock.now });
  const gauge = async () => (await registry.getSingleMetric(CLOUD_API_BUDGET_SHARE)!.get()).values[0]?.value;
  const logged = () =>
    lines.filter((l) => l.msg === 'cloud budget share').map(({ k, liveShards, qps, burst, reason }) => ({ k, liveShards, qps, burst, reason }));
  return { s, clock, gauge, logged };
}
const signal = new AbortController().signal;
const read = (m: Membership) => () => Promise.resolve(m);
const settled = async (p: Promise<void>) => Promise.race([p.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 20))]);

test('held: calls wait (a promise, not 0 or "no limit") until the rule gives a share; then each bucket runs at budget/k', async (t) => {
  const { s, gauge, logged } = share();
  const a = s.limiter();
  const b = s.limiter();
  t.is(await gauge(), 0);
  const waiting = a.when();
  t.true(waiting instanceof Promise);
  s.renewed(10_000);
  // First read of the term: nothing published yet, so still held.
  await s.round(signal, read({ others: [2] }));
  t.is(s.spendingK, undefined);
  t.false(await settled(waiting as Promise<void>), 'still waiting while held');
  t.deepEqual(s.annotations(), { 'sharding.ccm.dev/cloud-budget-shares': '2' }, 'publishes the floor it will take');
  await s.round(signal, read({ own: 2, others: [2] }));
  t.is(s.spendingK, 2);
  t.true(await settled(waiting as Promise<void>), 'the held call goes once the share is given');
  t.is(await gauge(), 2);
  // Each provider has its own bucket, now at budget/2: 6/s, burst floor(7/2) = 3. b's was made at budget/N
  // (burst 2, full) and a larger burst adds no tokens: two calls now, then one every 1/6 s.
  t.deepEqual([b.when(), b.when(), b.when(), b.when()], [0, 0, 1000 / 6, 2000 / 6]);
  t.deepEqual(logged(), [{ k: 2, liveShards: 2, qps: 6, burst: 3, reason: undefined }]);
});

test('a join raises k at once; a failed read keeps it; a closed fence and the end of the term hold it', async (t) => {
  const { s, clock, gauge, logged } = share();
  s.renewed(10_000);
  await s.round(signal, read({ own: 2, others: [2] }));
  t.is(s.spendingK, 2);
  await s.round(signal, read({ own: 2, others: [2, undefined] }));
  t.is(s.spendingK, 3, 'a join: spends less at once');
  await s.round(signal, () => Promise.reject(new Error('connection refused')));
  t.is(s.spendingK, 3, 'a failed read keeps k');
  // The fence closes (no renewal for 10 s): nothing is spent, and the next renewal holds the share.
  clock.now = 10_000;
  t.is(s.spendingK, undefined);
  t.true(s.limiter().when() instanceof Promise);
  s.renewed(10_000);
  t.is(s.spendingK, undefined, 'held after a closed fence, until the rule gives a share again');
  t.deepEqual(s.annotations(), { 'sharding.ccm.dev/cloud-budget-shares': undefined }, 'nothing published while held');
  await s.round(signal, read({ own: 3, others: [3, 3] }));
  t.is(s.spendingK, 3);
  // The term ends while a call waits for the fence: the call fails, never sent in a later term.
  clock.now = 30_000;
  const stranded = s.limiter().when();
  t.true(stranded instanceof Promise);
  const leading = new AbortController();
  const serving = s.serve(leading.signal, read({ own: 3, others: [3, 3] }), { retryPeriodMs: 5, renewDeadlineMs: 50 });
  leading.abort();
  await serving;
  await t.throwsAsync(stranded as Promise<void>, { name: 'PluginUnavailableError', message: /term ended/ });
  t.is(s.spendingK, undefined);
  t.is(await gauge(), 0);
  t.deepEqual(
    logged().map((l) => [l.k, l.reason]),
    [
      [2, undefined],
      [3, undefined],
      [0, 'the fence was closed'],
      [3, undefined],
      [0, 'the term ended'],
    ],
  );
});
