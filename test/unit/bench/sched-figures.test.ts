/**
 * The bench's scheduler figures (test/bench/ccm-sides.ts schedFigures): from
 * two /proc schedstat snapshots of a CCM's threads, the time they waited for a
 * CPU together and the busiest thread's share of the wall time.
 */
import test from 'ava';
import { schedFigures, type SchedSnapshot } from '../../bench/ccm-sides.js';

const snap = (threads: Record<number, [run: number, wait: number]>): SchedSnapshot =>
  new Map(Object.entries(threads).map(([tid, [run, wait]]) => [Number(tid), { run, wait }]));

const CASES: { name: string; before: SchedSnapshot; after: SchedSnapshot; wall: number; wait: number; busiest: number }[] = [
  {
    name: 'one thread (Node.js): its run and wait over the wall time',
    before: snap({ 1: [1, 2] }),
    after: snap({ 1: [3, 10] }),
    wall: 20,
    wait: 8,
    busiest: 0.5,
  },
  {
    name: 'several threads (Go): waits add up, the busiest is one of them',
    before: snap({ 1: [0, 0], 2: [0, 0], 3: [0, 0] }),
    after: snap({ 1: [1, 1], 2: [2, 3], 3: [0.5, 0.5] }),
    wall: 10,
    wait: 4.5,
    busiest: 0.5,
  },
  {
    name: 'a thread started between the snapshots counts from zero',
    before: snap({ 1: [5, 5] }),
    after: snap({ 1: [6, 6], 7: [2, 2] }),
    wall: 8,
    wait: 3,
    busiest: 0.5,
  },
  {
    name: 'a thread that ended meanwhile is left out',
    before: snap({ 1: [1, 1], 2: [9, 9] }),
    after: snap({ 1: [2, 2] }),
    wall: 4,
    wait: 1,
    busiest: 0.5,
  },
];

for (const c of CASES) {
  test(`schedFigures: ${c.name}`, (t) => {
    const f = schedFigures(c.before, c.after, c.wall);
    t.deepEqual({ wait: f.waitSeconds, busiest: f.busiestShare }, { wait: c.wait, busiest: c.busiest });
  });
}

test('schedFigures: no wall time gives NaN, not a share', (t) => {
  t.true(Number.isNaN(schedFigures(snap({}), snap({ 1: [1, 1] }), 0).busiestShare));
});
