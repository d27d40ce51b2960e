/**
 * The bounds on plugin output: readBoundedLines (host/plugin/lines.ts) keeps
 * at most maxBytes of a line and counts the rest; OutputLimiter
 * (host/plugin/output-limiter.ts) admits a burst, then the sustained rate,
 * and summarizes what it dropped.
 */
import test from 'ava';
import { PassThrough } from 'node:stream';
import type { Logger } from '../../../host/log.js';
import { readBoundedLines } from '../../../host/plugin/lines.js';
import { OutputLimiter, type PluginStream } from '../../../host/plugin/output-limiter.js';
import { waitFor } from '../../helpers/wait.js';

interface LinesCase {
  description: string;
  chunks: (string | Buffer)[];
  maxBytes: number;
  want: [line: string, cutBytes: number][];
}

const linesCases: LinesCase[] = [
  {
    description: 'short lines',
    chunks: ['abc\ndef\n'],
    maxBytes: 8,
    want: [
      ['abc', 0],
      ['def', 0],
    ],
  },
  {
    description: 'a last line without newline',
    chunks: ['abc\nde'],
    maxBytes: 8,
    want: [
      ['abc', 0],
      ['de', 0],
    ],
  },
  {
    description: 'empty lines',
    chunks: ['\n\n'],
    maxBytes: 8,
    want: [
      ['', 0],
      ['', 0],
    ],
  },
  {
    description: 'CRLF',
    chunks: ['a\r\nb\r\n'],
    maxBytes: 8,
    want: [
      ['a', 0],
      ['b', 0],
    ],
  },
  { description: 'exactly maxBytes', chunks: ['abcdefgh\n'], maxBytes: 8, want: [['abcdefgh', 0]] },
  { description: 'one byte over', chunks: ['abcdefghi\n'], maxBytes: 8, want: [['abcdefgh', 1]] },
  {
    description: 'an overlong line across chunks, then a short one',
    chunks: ['abcd', 'efghij', 'kl\nx'],
    maxBytes: 8,
    want: [
      ['abcdefgh', 4],
      ['x', 0],
    ],
  },
  { description: 'an overlong last line without newline', chunks: ['abcdefghijkl'], maxBytes: 8, want: [['abcdefgh', 4]] },
  { description: 'a cut between whole UTF-8 characters', chunks: ['ééééé\n'], maxBytes: 8, want: [['éééé', 2]] },
  { description: 'a cut inside a UTF-8 character', chunks: ['ééééé\n'], maxBytes: 7, want: [['ééé\uFFFD', 3]] },
  { description: 'a character split across chunks', chunks: [Buffer.from([0xc3]), Buffer.from([0xa9, 0x0a])], maxBytes: 8, want: [['é', 0]] },
];

for (const c of linesCases) {
  test(`readBoundedLines: ${c.description}`, async (t) => {
    const stream = new PassThrough();
    const got: [string, number][] = [];
    const done = readBoundedLines(stream, (line, cut) => got.push([line, cut]), c.maxBytes);
    for (const chunk of c.chunks) stream.write(chunk);
    stream.end();
    await done;
    t.deepEqual(got, c.want);
  });
}

test('readBoundedLines: 64 MiB without a newline become one cut line', async (t) => {
  const stream = new PassThrough();
  const got: [number, number][] = [];
  const done = readBoundedLines(stream, (line, cut) => got.push([line.length, cut]), 1024);
  const mib = Buffer.alloc(1 << 20, 'x');
  for (let i = 0; i < 64; i++) if (!stream.write(mib)) await new Promise((r) => stream.once('drain', r));
  stream.end('\nafter\n');
  await done;
  t.deepEqual(got, [
    [1024, 64 * (1 << 20) - 1024],
    [5, 0],
  ]);
});

function recordingLogger() {
  const records: { fields: Record<string, unknown>; msg: string }[] = [];
  const log = { warn: (fields: Record<string, unknown>, msg: string) => records.push({ fields, msg }) } as unknown as Logger;
  return { log, records };
}

test('OutputLimiter: a burst, then the sustained rate; drops are counted per stream and summarized once', (t) => {
  let now = 0;
  const { log, records } = recordingLogger();
  const dropped: PluginStream[] = [];
  const limiter = new OutputLimiter({ log, burst: 3, linesPerSecond: 2, now: () => now, onDropped: (s) => dropped.push(s) });
  const admitted = (stream: PluginStream, n: number) => Array.from({ length: n }, () => limiter.admit(stream)).filter(Boolean).length;
  t.is(admitted('stderr', 5), 3, 'the burst');
  t.is(admitted('stdout', 2), 0);
  now += 1000;
  t.is(admitted('stderr', 5), 2, 'two lines per second');
  t.deepEqual(dropped, ['stderr', 'stderr', 'stdout', 'stdout', 'stderr', 'stderr', 'stderr']);
  t.is(records.length, 0, 'no summary before the interval ends');
  limiter.close();
  t.is(records.length, 1);
  t.like(records[0]!.fields, { droppedStdoutLines: 2, droppedStderrLines: 5, linesPerSecond: 2, burst: 3 });
  limiter.close();
  t.is(records.length, 1, 'nothing new dropped: no second summary');
});

test('OutputLimiter: one summary per interval while lines are dropped', async (t) => {
  const { log, records } = recordingLogger();
  const limiter = new OutputLimiter({ log, burst: 1, linesPerSecond: 0.001, summaryIntervalMs: 20 });
  for (let i = 0; i < 1000; i++) limiter.admit('stderr');
  await waitFor(() => records.length === 1, { what: 'the first summary', timeoutMs: 10_000 });
  t.like(records[0]!.fields, { droppedStderrLines: 999, droppedStdoutLines: 0 });
  limiter.admit('stdout');
  await waitFor(() => records.length === 2, { what: 'the second summary', timeoutMs: 10_000 });
  t.like(records[1]!.fields, { droppedStderrLines: 0, droppedStdoutLines: 1 });
});
