/**
 * The text format's fast path (host/log.ts klogLineFromJson): the common shape of a pino line (a flat
 * record) becomes its klog line without JSON.parse, byte for byte what `klogLine(JSON.parse(line))`
 * writes; every other line (nested values, a repeated key, keys JSON.parse reorders, surrogates, text
 * that is not JSON) is left to the parse.
 */
import test from 'ava';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { createLogger, klogLine, klogLineFromJson } from '../../../host/log.js';

/** pino set up as the host's text logger is (createLogger), writing its JSON lines into `lines`. */
function jsonLines(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level: 'trace', base: undefined, formatters: { level: (label: string) => ({ level: label }) }, timestamp: pino.stdTimeFunctions.epochTime },
    { write: (line: string) => lines.push(line) },
  );
  return { log, lines };
}

const LONG = 'x'.repeat(150) + ' "quoted" \\ end';

const ROWS: { name: string; emit: (log: Logger) => void; fast: boolean }[] = [
  {
    name: 'the node controller line',
    emit: (l) => l.child({ component: 'node-controller' }).info({ node: 'n1', providerID: 'local://i-1' }, 'initialized node'),
    fast: true,
  },
  {
    name: 'numbers, booleans, null',
    emit: (l) => l.info({ ms: 12.5, n: -3, big: 1e21, small: 5e-7, ok: false, yes: true, none: null }, 'numbers'),
    fast: true,
  },
  { name: 'quotes, backslashes, newlines, tabs', emit: (l) => l.warn({ v: 'a "b" \\c\nd\te', path: 'C:\\x' }, 'say "hi"\n'), fast: true },
  { name: 'a string pino escapes with JSON.stringify (over 100 characters)', emit: (l) => l.info({ long: LONG }, LONG), fast: true },
  { name: 'non-ASCII text outside the surrogates', emit: (l) => l.error({ who: 'héllo ✓ 日本' }, 'über'), fast: true },
  { name: 'no message', emit: (l) => l.info({ a: 1 }), fast: true },
  { name: 'an empty message and empty strings', emit: (l) => l.debug({ e: '' }, ''), fast: true },
  { name: 'no fields', emit: (l) => l.trace('bare'), fast: true },
  { name: 'an empty component is main', emit: (l) => l.child({ component: '' }).info('x'), fast: true },
  { name: 'a key named __proto__', emit: (l) => l.info(JSON.parse('{"__proto__":"p","q":1}') as object, 'proto'), fast: true },
  { name: 'a nested object', emit: (l) => l.error({ err: { code: 14, details: 'x' } }, 'failed'), fast: false },
  { name: 'an array', emit: (l) => l.info({ nodes: ['a', 'b'] }, 'batch'), fast: false },
  {
    name: 'a key repeated by a child binding (the last value wins)',
    emit: (l) => l.child({ node: 'old' }).info({ node: 'new' }, 'dup'),
    fast: false,
  },
  { name: 'integer keys, which JSON.parse puts first', emit: (l) => l.info({ b: 1, 10: 'ten', 2: 'two' }, 'ints'), fast: false },
  { name: 'a character outside the BMP (surrogate pair)', emit: (l) => l.info({ s: 'ok 🚀' }, 'emoji'), fast: false },
  { name: 'a lone surrogate (pino writes it raw, JSON.stringify escapes it)', emit: (l) => l.info({ s: 'a\ud800b' }, 'lone'), fast: false },
];

for (const row of ROWS) {
  test(`klogLineFromJson: ${row.name}`, (t) => {
    const { log, lines } = jsonLines();
    row.emit(log);
    t.is(lines.length, 1);
    const line = lines[0]!;
    const fast = klogLineFromJson(line, 4242);
    t.is(fast !== undefined, row.fast, `fast path taken for: ${line}`);
    if (fast !== undefined) t.is(fast, klogLine(JSON.parse(line) as Record<string, unknown>, 4242));
  });
}

const TEXT_ROWS: { name: string; line: string; want: string | undefined | 'throws' }[] = [
  { name: 'an empty record', line: '{}\n', want: 'ok' },
  { name: 'no trailing newline', line: '{"level":"info","time":0,"msg":"m"}', want: 'ok' },
  { name: 'whitespace between tokens', line: '{"level": "info","msg":"m"}\n', want: undefined },
  { name: 'a number with a leading zero', line: '{"a":01}\n', want: undefined },
  { name: 'text after the record', line: '{"a":1}x\n', want: undefined },
  { name: 'an unterminated string', line: '{"a":"b}\n', want: undefined },
  { name: 'a raw control character', line: '{"a":"b\u0001"}\n', want: undefined },
  { name: 'an escaped key', line: '{"a\\"b":1}\n', want: undefined },
  { name: 'not an object', line: '[1]\n', want: undefined },
  { name: 'an invalid escape throws, as JSON.parse does', line: '{"a":"\\q"}\n', want: 'throws' },
];

for (const row of TEXT_ROWS) {
  test(`klogLineFromJson on text: ${row.name}`, (t) => {
    if (row.want === 'throws') {
      t.throws(() => klogLineFromJson(row.line, 1));
      t.throws(() => JSON.parse(row.line));
    } else if (row.want === undefined) {
      t.is(klogLineFromJson(row.line, 1), undefined);
    } else {
      // Time 0 or absent: an absent time is now, so compare the parts after the stamp.
      const fast = klogLineFromJson(row.line, 1);
      const slow = klogLine(JSON.parse(row.line) as Record<string, unknown>, 1);
      t.is(fast?.slice(0, 1), slow.slice(0, 1));
      t.is(fast?.slice(21), slow.slice(21));
    }
  });
}

test('the text logger writes the common line without JSON.parse', (t) => {
  const out: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      out.push(chunk.toString('utf8'));
      done();
    },
  });
  const log = createLogger({ format: 'text', destination }).child({ component: 'node-controller' });
  const parse = JSON.parse;
  let parses = 0;
  JSON.parse = ((text: string, reviver?: (this: unknown, key: string, value: unknown) => unknown) => {
    parses++;
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    log.info({ node: 'n1', providerID: 'local://i-1' }, 'initialized node');
  } finally {
    JSON.parse = parse;
  }
  t.is(parses, 0);
  t.regex(out.join(''), /^I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ node-controller:0\] "initialized node" node="n1" providerID="local:\/\/i-1"\n$/);
});
