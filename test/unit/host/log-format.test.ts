/**
 * The host's default log format is klog's text format, as the upstream CCM's:
 * pipelines that parse `Lmmdd hh:mm:ss.uuuuuu pid file:line] msg` headers and
 * `key=value` pairs read the host's lines unchanged.
 */
import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger, klogLine } from '../../../host/log.js';
import { REDACTED, registerSecret } from '../../../host/redact.js';

/** klog's header, as log shippers parse it (fluent-bit's and Loki's klog patterns). */
const KLOG_HEADER = /^([IWEF])(\d{4} \d{2}:\d{2}:\d{2}\.\d{6})\s+(\d+)\s+([^ \]]+):(\d+)\] (.*)$/;

const TIME = Date.UTC(2026, 10, 25, 5, 6, 7, 89);

const CASES: { name: string; record: Record<string, unknown>; want: string }[] = [
  {
    name: 'info with a string and a number',
    record: { time: TIME, level: 'info', msg: 'initialized node', node: 'n1', ms: 12 },
    want: 'I1125 05:06:07.089000    4242 main:0] "initialized node" node="n1" ms=12',
  },
  {
    name: 'the component is the header source',
    record: { time: TIME, level: 'warn', msg: 'slow', component: 'service-controller' },
    want: 'W1125 05:06:07.089000    4242 service-controller:0] "slow"',
  },
  {
    name: 'error; objects as JSON, booleans bare',
    record: { time: TIME, level: 'error', msg: 'failed', err: { code: 14 }, ok: false },
    want: 'E1125 05:06:07.089000    4242 main:0] "failed" err={"code":14} ok=false',
  },
  { name: 'debug and trace are I lines', record: { time: TIME, level: 'debug', msg: 'd' }, want: 'I1125 05:06:07.089000    4242 main:0] "d"' },
  {
    name: 'quotes and newlines in text are escaped',
    record: { time: TIME, level: 'info', msg: 'a "b"\nc', v: 'x\ny' },
    want: 'I1125 05:06:07.089000    4242 main:0] "a \\"b\\"\\nc" v="x\\ny"',
  },
];

for (const c of CASES) {
  test(`klogLine: ${c.name}`, (t) => {
    const line = klogLine(c.record, 4242);
    t.is(line, c.want + '\n');
    t.regex(line.trimEnd(), KLOG_HEADER);
  });
}

test('a text logger writes one klog line per record, known secrets redacted', (t) => {
  registerSecret('hunter2-log-format');
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const log = createLogger({ format: 'text', destination }).child({ component: 'route-controller' });
  log.info({ route: 'r1', password: 'hunter2-log-format' }, 'route created');
  t.is(lines.length, 1);
  const m = KLOG_HEADER.exec(lines[0]!);
  if (!m) return t.fail(lines[0]);
  t.is(m[1], 'I');
  t.is(m[3], String(process.pid));
  t.is(m[4], 'route-controller');
  t.is(m[6], `"route created" route="r1" password="${REDACTED}"`);
});
