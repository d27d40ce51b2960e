/**
 * Property test: random interleavings (driven by fast-check's scheduler) of
 * adds and of several async workers doing get → work → done.
 */
import test from 'ava';
import fc from 'fast-check';
import { WorkQueue } from '../../../host/kube/workqueue.js';

const KEYS = ['a', 'b', 'c', 'd', 'e'];

/** Lets pending microtasks and immediates run, so newly scheduled tasks are registered. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('random schedules: no key on two workers at once; every key processed after its last add', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.scheduler(),
      fc.array(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 40 }),
      fc.integer({ min: 1, max: 4 }),
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 10 }),
      async (s, adds, workers, workSteps) => {
        const q = new WorkQueue();
        let clock = 0;
        const lastAdd = new Map<string, number>();
        const lastStart = new Map<string, number>();
        const addCount = new Map<string, number>();
        const startCount = new Map<string, number>();
        const active = new Set<string>();
        const violations: string[] = [];
        let job = 0;

        for (const key of adds) {
          void s.schedule(Promise.resolve(key), `add ${key}`).then((k) => {
            lastAdd.set(k, ++clock);
            addCount.set(k, (addCount.get(k) ?? 0) + 1);
            q.add(k);
          });
        }

        const worker = async (id: number): Promise<void> => {
          for (;;) {
            const r = await q.get();
            if (r.shutdown) return;
            const k = r.item;
            if (active.has(k)) violations.push(`${k} on two workers (worker ${id})`);
            active.add(k);
            lastStart.set(k, ++clock);
            startCount.set(k, (startCount.get(k) ?? 0) + 1);
            const steps = workSteps[job++ % workSteps.length]!;
            for (let i = 0; i < steps; i++) await s.schedule(Promise.resolve(), `work ${k} step ${i}`);
            active.delete(k);
            q.done(k);
          }
        };
        const running = Promise.all(Array.from({ length: workers }, (_, i) => worker(i)));

        for (;;) {
          await settle();
          if (s.count() === 0) break;
          await s.waitOne();
        }

        if (q.len() !== 0) violations.push(`idle with ${q.len()} items queued`);
        if (active.size !== 0) violations.push(`idle with ${[...active].join(',')} in flight`);
        for (const [k, added] of lastAdd) {
          const started = lastStart.get(k) ?? 0;
          if (started <= added) violations.push(`${k} last added at ${added} but last started at ${started}`);
          if ((startCount.get(k) ?? 0) > (addCount.get(k) ?? 0)) violations.push(`${k} processed more often than added`);
        }
        await q.shutDownWithDrain();
        await running;
        if (violations.length > 0)
          throw new Error(
            `${violations.join('; ')}\n${s
              .report()
              .map((r) => r.label)
              .join(' | ')}`,
          );
      },
    ),
    { numRuns: 300 },
  );
  t.pass();
});
