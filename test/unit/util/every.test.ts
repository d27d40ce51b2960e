/** host/util/every.ts: the controllers' periodic loop, with a scripted clock and wait (no real time). */
import test from 'ava';
import { every, type EveryOptions } from '../../../host/util/every.js';

/**
 * Runs `every` with period 100 on a clock that each run advances by the next
 * of `runTimes`; the wait records what it was asked for, advances the clock by
 * it, and aborts after `runTimes.length` runs. Returns the log of runs and waits.
 */
async function script(runTimes: number[], opts: EveryOptions = {}): Promise<string[]> {
  const log: string[] = [];
  const ac = new AbortController();
  let clock = 0;
  let runs = 0;
  await every(
    100,
    ac.signal,
    () => {
      log.push(`run@${clock}`);
      clock += runTimes[runs++] ?? 0;
      if (runs === runTimes.length) ac.abort();
    },
    {
      ...opts,
      now: () => clock,
      sleep: async (ms, signal) => {
        if (signal.aborted) return false;
        log.push(`wait ${ms}`);
        clock += ms;
        return true;
      },
    },
  );
  return log;
}

const cases: { what: string; runTimes: number[]; opts?: EveryOptions; want: string[] }[] = [
  {
    what: 'sliding (default): the period counts from each end',
    runTimes: [30, 250, 0],
    want: ['run@0', 'wait 100', 'run@130', 'wait 100', 'run@480'],
  },
  {
    what: 'fixed rate: the period counts from each start; a long run is followed at once',
    runTimes: [30, 250, 0],
    opts: { fixedRate: true },
    want: ['run@0', 'wait 70', 'run@100', 'wait 0', 'run@350'],
  },
  {
    what: 'delayFirst: one period before the first run',
    runTimes: [10, 0],
    opts: { delayFirst: true },
    want: ['wait 100', 'run@100', 'wait 100', 'run@210'],
  },
];
for (const c of cases) {
  test(`every: ${c.what}`, async (t) => {
    t.deepEqual(await script(c.runTimes, c.opts), c.want);
  });
}

test('every: an aborted signal runs nothing and resolves; a rejection of fn ends the loop with it', async (t) => {
  let runs = 0;
  await every(100, AbortSignal.abort(), () => void runs++);
  t.is(runs, 0);
  await t.throwsAsync(
    every(100, new AbortController().signal, () => Promise.reject(new Error('boom'))),
    { message: 'boom' },
  );
});

test('every: an abort during the real wait ends the loop at once', async (t) => {
  const ac = new AbortController();
  let runs = 0;
  const loop = every(3_600_000, ac.signal, () => void runs++);
  await new Promise((r) => setImmediate(r));
  ac.abort();
  await loop;
  t.is(runs, 1);
});
