/** Parsing of /proc/<pid>/stat (host/plugin/process-tree.ts); the /proc scan itself is tested with real processes in test/integration/plugin-process-tree.test.ts. */
import test from 'ava';
import { parseProcStat } from '../../../host/plugin/process-tree.js';

/** /proc/<pid>/stat lines: pid, (comm), state, ppid, pgrp, ..., the 22nd field the start time. */
const rest = (state: string, ppid: number, pgrp: number) => `${state} ${ppid} ${pgrp} 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 1000 10`;
const cases = [
  { line: `123 (node) ${rest('S', 1, 123)}`, want: { pid: 123, state: 'S', ppid: 1, pgrp: 123, startTime: '4242' } },
  { line: `9 (a (b) c) ${rest('Z', 8, 7)}`, want: { pid: 9, state: 'Z', ppid: 8, pgrp: 7, startTime: '4242' } },
  { line: `10 (sp ace) ${rest('R', 2, 2)}`, want: { pid: 10, state: 'R', ppid: 2, pgrp: 2, startTime: '4242' } },
  { line: 'garbage', want: undefined },
  { line: '11 (short) S 1 1', want: undefined },
];

for (const c of cases) {
  test(`parseProcStat: ${JSON.stringify(c.line.slice(0, 24))}`, (t) => {
    t.deepEqual(parseProcStat(c.line), c.want);
  });
}
