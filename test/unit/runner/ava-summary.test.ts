/**
 * The runner's closing counts (test/ava-summary.ts), from ava outputs captured
 * from real runs: failed hooks, crashed files and tests pending after a
 * timeout each count, and a chunk boundary inside a character garbles nothing.
 */
import test from 'ava';
import { StreamText, summarize, type AvaCounts } from '../../ava-summary.js';

const RED = (s: string) => `\u001b[31m${s}\u001b[39m`;

/** A run with a failing before hook, failing afterEach hooks, a failing test and a file that exited with 3. */
const HOOKS_AND_CRASH = `
  ✔ crash › x
  ${RED('✘ Exiting due to process.exit() when running dist/test/scratch/crash.test.js')}
  ${RED('✘ dist/test/scratch/crash.test.js exited with a non-zero exit code: 3')}
  ✘ [fail]: hooks › before hook Error thrown in test
  ✘ 2 tests remaining in dist/test/scratch/hooks.test.js
  ✔ mixed › ok 3 tests passed
  ✘ [fail]: mixed › bad Test failed via \`t.fail()\`
  ✘ [fail]: mixed › afterEach.always hook for bad Error thrown in test
  ✘ [fail]: mixed › afterEach.always hook for ok 3 tests passed Error thrown in test
  ─

  ${RED('3 hooks failed')}
  ${RED('1 test failed')}
`;

/** A file whose two tests were still pending when ava's timeout hit. */
const TIMEOUT = `
  ✔ fine › fine
  ✔ slow › fast

  ${RED('✘ Timed out while running tests')}

  2 tests were pending in dist/test/scratch/slow.test.js

  ◌ slow › slow one
  ◌ slow › slow two

  ─

  2 tests passed
  ${RED('2 tests remained pending after a timeout')}
`;

const cases: { description: string; stdout: string; stderr?: string; want: AvaCounts }[] = [
  { description: 'all passed', stdout: '  ✔ a › one\n  ✔ a › two\n  ─\n\n  2 tests passed\n', want: { passed: 2, failed: 0, skipped: 0 } },
  {
    description: 'failed hooks and a crashed file count, one each (the old count said 1)',
    stdout: HOOKS_AND_CRASH,
    want: { passed: 2, failed: 5, skipped: 0 },
  },
  {
    description: 'tests pending after a timeout count, one each (the old count said 1)',
    stdout: TIMEOUT,
    want: { passed: 2, failed: 2, skipped: 0 },
  },
  {
    description: 'a title or a log line with summary words is not a summary line',
    stdout: '  ✔ a › 3 tests failed until the fix\n  ℹ 2 hooks failed (logged)\n  ─\n\n  1 test passed\n',
    want: { passed: 1, failed: 0, skipped: 0 },
  },
  {
    description: 'skipped tests',
    stdout: '  ✔ a › one\n  - a › two\n  ─\n\n  1 test passed\n  1 test skipped\n',
    want: { passed: 1, failed: 0, skipped: 1 },
  },
  {
    description: 'the report on stdout, tests writing on stderr: each stream is read on its own',
    stdout: '  ✔ a › one\n  ✘ [fail]: a › two\n  ─\n\n  1 test failed\n',
    stderr: 'some test output without a newline at the end',
    want: { passed: 1, failed: 1, skipped: 0 },
  },
];

for (const c of cases) {
  test(`summarize: ${c.description}`, (t) => {
    t.deepEqual(summarize(c.stdout, c.stderr ?? ''), c.want);
  });
}

test('StreamText: a character split between two chunks is decoded whole (a tick is still a tick)', (t) => {
  const bytes = Buffer.from('  ✔ a › one\n  ✔ a › two\n  ─\n\n  2 tests passed\n');
  const tick = bytes.indexOf(Buffer.from('✔'), 3);
  // Split inside the second tick's three bytes, and again inside the ─.
  const cuts = [0, tick + 1, bytes.indexOf(Buffer.from('─')) + 2, bytes.length];
  const chunks = cuts.slice(1).map((end, i) => bytes.subarray(cuts[i], end));
  const text = new StreamText();
  for (const c of chunks) text.push(c);
  t.is(text.value(), bytes.toString('utf8'));
  t.deepEqual(summarize(text.value()), { passed: 2, failed: 0, skipped: 0 });
  const naive = chunks.map((c) => c.toString()).join('');
  t.not(naive, bytes.toString('utf8'), 'decoding each chunk alone garbles it');
});
