/**
 * Plugin stderr forwarding (host/plugin/stderr.ts): how one line becomes a
 * log record (parseStderrLine), how forwardStderr switches to error level
 * once the output looks like a crash, and how it cuts overlong lines.
 */
import test from 'ava';
import { PassThrough } from 'node:stream';
import type { Logger } from '../../../host/log.js';
import { forwardStderr, parseStderrLine } from '../../../host/plugin/stderr.js';
import { OutputLimiter } from '../../../host/plugin/output-limiter.js';
import { MAX_PLUGIN_LINE_BYTES } from '../../../host/plugin/lines.js';
import { REDACTED, registerSecret } from '../../../host/redact.js';

const MAX = MAX_PLUGIN_LINE_BYTES;

/** A limiter that admits every line of these small inputs. */
const unlimited = () => new OutputLimiter({ log: recordingLogger().log, burst: 1e9 });

interface Case {
  description: string;
  line: string;
  crashed?: boolean;
  level: ReturnType<typeof parseStderrLine>['level'];
  msg: string;
  fields?: Record<string, unknown>;
}

const cases: Case[] = [
  { description: 'plain text', line: 'hello world', level: 'info', msg: 'hello world' },
  { description: 'plain text after a crash', line: '    at foo (bar.js:1:2)', crashed: true, level: 'error', msg: '    at foo (bar.js:1:2)' },
  {
    description: 'SDK JSON line with string level',
    line: '{"level":"warn","msg":"disk slow","disk":"sda"}',
    level: 'warn',
    msg: 'disk slow',
    fields: { disk: 'sda' },
  },
  { description: 'upper-case string level', line: '{"level":"ERROR","msg":"boom"}', level: 'error', msg: 'boom' },
  { description: 'every string level', line: '{"level":"trace","msg":"t"}', level: 'trace', msg: 't' },
  { description: 'fatal string level', line: '{"level":"fatal","msg":"f"}', level: 'fatal', msg: 'f' },
  { description: 'unknown string level → info', line: '{"level":"verbose","msg":"v"}', level: 'info', msg: 'v' },
  { description: 'pino numeric level 10', line: '{"level":10,"msg":"t"}', level: 'trace', msg: 't' },
  { description: 'pino numeric level 20', line: '{"level":20,"msg":"d"}', level: 'debug', msg: 'd' },
  { description: 'pino numeric level 30', line: '{"level":30,"msg":"i"}', level: 'info', msg: 'i' },
  { description: 'pino numeric level 40', line: '{"level":40,"msg":"w"}', level: 'warn', msg: 'w' },
  { description: 'pino numeric level 50', line: '{"level":50,"msg":"e"}', level: 'error', msg: 'e' },
  { description: 'pino numeric level 60', line: '{"level":60,"msg":"f"}', level: 'fatal', msg: 'f' },
  { description: 'unknown numeric level → info', line: '{"level":35,"msg":"x"}', level: 'info', msg: 'x' },
  {
    description: 'pino bookkeeping fields are dropped, others kept',
    line: '{"level":30,"time":1700000000000,"pid":42,"hostname":"h","msg":"ready","port":8080,"nested":{"a":[1]}}',
    level: 'info',
    msg: 'ready',
    fields: { port: 8080, nested: { a: [1] } },
  },
  {
    description: '"message" when there is no "msg"',
    line: '{"level":"info","message":"from message","timestamp":"t"}',
    level: 'info',
    msg: 'from message',
  },
  { description: 'non-string msg is stringified', line: '{"msg":42}', level: 'info', msg: '42' },
  { description: 'JSON without level or msg', line: '{"a":1}', level: 'info', msg: '', fields: { a: 1 } },
  {
    description: 'JSON line keeps its level after a crash',
    line: '{"level":"info","msg":"still fine"}',
    crashed: true,
    level: 'info',
    msg: 'still fine',
  },
  { description: 'broken JSON is plain text', line: '{"level":"warn","msg":', level: 'info', msg: '{"level":"warn","msg":' },
  { description: 'broken JSON after a crash is an error', line: '{not json', crashed: true, level: 'error', msg: '{not json' },
  { description: 'JSON array is plain text', line: '[1,2,3]', level: 'info', msg: '[1,2,3]' },
  { description: '[DEBUG] prefix', line: '[DEBUG] cache miss', level: 'debug', msg: 'cache miss' },
  { description: '[TRACE] prefix', line: '[TRACE]x', level: 'trace', msg: 'x' },
  { description: '[WARN] prefix', line: '[WARN] slow', level: 'warn', msg: 'slow' },
  { description: '[WARNING] prefix → warn', line: '[WARNING] slow', level: 'warn', msg: 'slow' },
  { description: '[ERROR] prefix', line: '[ERROR]   spaced', level: 'error', msg: 'spaced' },
  { description: '[FATAL] prefix', line: '[FATAL] gone', level: 'fatal', msg: 'gone' },
  { description: 'lower-case prefix', line: '[info] hi', level: 'info', msg: 'hi' },
  { description: 'prefix keeps its level after a crash', line: '[DEBUG] detail', crashed: true, level: 'debug', msg: 'detail' },
  { description: 'unknown bracket prefix is plain text', line: '[NOTICE] x', level: 'info', msg: '[NOTICE] x' },
  { description: 'prefix not at the start is plain text', line: 'x [ERROR] y', level: 'info', msg: 'x [ERROR] y' },
];

for (const c of cases) {
  test(`parseStderrLine: ${c.description}`, (t) => {
    const r = parseStderrLine(c.line, c.crashed ?? false);
    t.is(r.level, c.level);
    t.is(r.msg, c.msg);
    t.deepEqual(r.fields, c.fields ?? {});
  });
}

/** A logger double that records (level, fields, msg). */
function recordingLogger() {
  const records: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const log: Record<string, unknown> = {};
  for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    log[level] = (fields: Record<string, unknown>, msg: string) => records.push({ level, fields, msg });
  }
  return { log: log as unknown as Logger, records };
}

interface ForwardCase {
  description: string;
  input: string;
  want: { level: string; msg: string; truncatedBytes?: number }[];
}

const forwardCases: ForwardCase[] = [
  {
    description: 'lines before a crash keep their levels; plain lines after "Error: " are errors',
    input: 'starting\n{"level":"debug","msg":"d"}\nTypeError: x is not a function\n    at main (main.js:3:1)\n[DEBUG] still debug\n',
    want: [
      { level: 'info', msg: 'starting' },
      { level: 'debug', msg: 'd' },
      { level: 'error', msg: 'TypeError: x is not a function' },
      { level: 'error', msg: '    at main (main.js:3:1)' },
      { level: 'debug', msg: 'still debug' },
    ],
  },
  {
    description: 'a Go panic switches to error level',
    input: 'ok\npanic: runtime error: index out of range\n\ngoroutine 1 [running]:\n',
    want: [
      { level: 'info', msg: 'ok' },
      { level: 'error', msg: 'panic: runtime error: index out of range' },
      { level: 'error', msg: 'goroutine 1 [running]:' },
    ],
  },
  {
    description: 'a Python traceback switches to error level',
    input: 'Traceback (most recent call last):\n  File "x.py", line 1\r\nValueError: bad\n',
    want: [
      { level: 'error', msg: 'Traceback (most recent call last):' },
      { level: 'error', msg: '  File "x.py", line 1' },
      { level: 'error', msg: 'ValueError: bad' },
    ],
  },
  {
    description: '"Error:" in the middle of a line is not a crash; empty lines are skipped',
    input: 'retrying after Error: timeout\n\n\nnext\n',
    want: [
      { level: 'info', msg: 'retrying after Error: timeout' },
      { level: 'info', msg: 'next' },
    ],
  },
  {
    description: 'a last line without newline is forwarded',
    input: 'no newline at end',
    want: [{ level: 'info', msg: 'no newline at end' }],
  },
  { description: `a line of exactly ${MAX} bytes is kept whole`, input: 'a'.repeat(MAX) + '\n', want: [{ level: 'info', msg: 'a'.repeat(MAX) }] },
  {
    description: 'an oversize plain line is cut, marked with an ellipsis and counted',
    input: 'b'.repeat(MAX + 5000) + '\nnext\n',
    want: [
      { level: 'info', msg: 'b'.repeat(MAX) + '…', truncatedBytes: 5000 },
      { level: 'info', msg: 'next' },
    ],
  },
  {
    description: 'an oversize JSON line is cut and then not JSON: logged as text at info',
    input: `{"level":"error","msg":"${'c'.repeat(MAX)}"}\n`,
    want: [{ level: 'info', msg: `{"level":"error","msg":"${'c'.repeat(MAX - 24)}…`, truncatedBytes: 26 }],
  },
  {
    description: 'an oversize [ERROR] line keeps its prefix level',
    input: `[ERROR] ${'d'.repeat(MAX * 2)}\n`,
    want: [{ level: 'error', msg: 'd'.repeat(MAX - 8) + '…', truncatedBytes: MAX + 8 }],
  },
];

for (const c of forwardCases) {
  test(`forwardStderr: ${c.description}`, async (t) => {
    const { log, records } = recordingLogger();
    const stream = new PassThrough();
    const done = forwardStderr(stream, log, unlimited());
    // Written in small chunks so lines are split across writes.
    for (let i = 0; i < c.input.length; i += 7) stream.write(c.input.slice(i, i + 7));
    stream.end();
    await done;
    t.deepEqual(
      records.map((r) => ({
        level: r.level,
        msg: r.msg,
        ...(r.fields.truncatedBytes === undefined ? {} : { truncatedBytes: r.fields.truncatedBytes }),
      })),
      c.want,
    );
    t.true(
      records.every((r) => r.fields.source === 'plugin-stderr'),
      'every record is marked as plugin stderr',
    );
  });
}

test('forwardStderr: JSON fields reach the log record next to source', async (t) => {
  const { log, records } = recordingLogger();
  const stream = new PassThrough();
  const done = forwardStderr(stream, log, unlimited());
  stream.end('{"level":"warn","msg":"m","node":"n1","source":"provider"}\n');
  await done;
  t.deepEqual(records, [{ level: 'warn', msg: 'm', fields: { node: 'n1', source: 'plugin-stderr' } }]);
});

test('forwardStderr: a secret split by the line length cut is hidden, not logged by its start', async (t) => {
  const secret = 'stderr-cut-secret-0123456789';
  registerSecret(secret);
  const { log, records } = recordingLogger();
  const stream = new PassThrough();
  const done = forwardStderr(stream, log, unlimited());
  // The cut falls 10 characters into the secret.
  stream.end(`${'a'.repeat(MAX - 10)}${secret}\n`);
  await done;
  t.is(records.length, 1);
  t.false(records[0]!.msg.includes(secret.slice(0, 10)));
  t.true(records[0]!.msg.endsWith(`${REDACTED}…`));
});
