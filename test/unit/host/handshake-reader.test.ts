/**
 * readHandshake (host/plugin/handshake.ts) over in-memory streams: lines
 * before the handshake go to onOtherLine, a malformed handshake or the
 * process exiting or the timeout ends the wait with a PluginStartError that
 * says why.
 */
import test from 'ava';
import { PassThrough } from 'node:stream';
import { PluginStartError, readHandshake } from '../../../host/plugin/handshake.js';
import type { Handshake } from '../../../sdk/protocol.js';

const GOOD = 'CCMPLUGIN|1|1|unix|/tmp/p/provider.sock|grpc';
const GOOD_PARSED: Handshake = { core: 1, protocol: 1, network: 'unix', address: '/tmp/p/provider.sock', transport: 'grpc' };

/** A promise that never settles (the process has not exited). */
const never = new Promise<string>(() => undefined);

interface Harness {
  stdout: PassThrough;
  other: string[];
  result: Promise<{ ok: true; h: Handshake } | { ok: false; err: Error }>;
  exit: (how: string) => void;
}

function start(opts: { timeoutMs?: number; offered?: number[] } = {}): Harness {
  const stdout = new PassThrough();
  const other: string[] = [];
  let exit!: (how: string) => void;
  const exited = new Promise<string>((r) => (exit = r));
  const result = readHandshake(stdout, {
    timeoutMs: opts.timeoutMs ?? 10_000,
    exited,
    onOtherLine: (l) => other.push(l),
    offered: opts.offered,
  }).then(
    (h) => ({ ok: true as const, h }),
    (err: Error) => ({ ok: false as const, err }),
  );
  return { stdout, other, result, exit };
}

interface OkCase {
  description: string;
  /** Written to stdout in this order (chunks, not necessarily lines). */
  chunks: string[];
  want: Handshake;
  other: string[];
}

const okCases: OkCase[] = [
  { description: 'just the handshake', chunks: [GOOD + '\n'], want: GOOD_PARSED, other: [] },
  { description: 'CRLF line ending', chunks: [GOOD + '\r\n'], want: GOOD_PARSED, other: [] },
  {
    description: 'garbage lines before the handshake go to onOtherLine',
    chunks: ['loading config...\n', 'console.log output\n{"level":"info"}\n', GOOD + '\n'],
    want: GOOD_PARSED,
    other: ['loading config...', 'console.log output', '{"level":"info"}'],
  },
  {
    description: 'the handshake split across writes',
    chunks: ['noise\nCCMPLUGIN|1|1|un', 'ix|/tmp/p/provider.s', 'ock|grpc\n'],
    want: GOOD_PARSED,
    other: ['noise'],
  },
  {
    description: 'a line that merely contains the prefix is not a handshake',
    chunks: ['echo CCMPLUGIN|1|1|unix|/x|grpc\n', 'CCMPLUGIN\n', GOOD + '\n'],
    want: GOOD_PARSED,
    other: ['echo CCMPLUGIN|1|1|unix|/x|grpc', 'CCMPLUGIN'],
  },
  {
    description: 'tcp loopback handshake',
    chunks: ['CCMPLUGIN|1|1|tcp|127.0.0.1:4000|grpc\n'],
    want: { core: 1, protocol: 1, network: 'tcp', address: '127.0.0.1:4000', transport: 'grpc' },
    other: [],
  },
];

for (const c of okCases) {
  test(`readHandshake resolves: ${c.description}`, async (t) => {
    const h = start();
    for (const chunk of c.chunks) h.stdout.write(chunk);
    const r = await h.result;
    t.true(r.ok, r.ok ? '' : r.err.message);
    if (r.ok) t.deepEqual(r.h, c.want);
    t.deepEqual(h.other, c.other);
    h.stdout.end();
  });
}

interface BadCase {
  description: string;
  chunks: string[];
  offered?: number[];
  error: RegExp;
}

const badCases: BadCase[] = [
  { description: 'wrong field count', chunks: ['CCMPLUGIN|1|1|unix|/x\n'], error: /^invalid plugin handshake: handshake has 5 fields, want 6/ },
  {
    description: 'wrong core version',
    chunks: ['CCMPLUGIN|2|1|unix|/x|grpc\n'],
    error: /^invalid plugin handshake: handshake core version "2" is not 1/,
  },
  { description: 'protocol not a number', chunks: ['CCMPLUGIN|1|v1|unix|/x|grpc\n'], error: /protocol version "v1" is not a number/ },
  {
    description: 'newer protocol than the host',
    chunks: ['CCMPLUGIN|1|7|unix|/x|grpc\n'],
    error: /plugin speaks protocol 7, host speaks 1: upgrade the host/,
  },
  {
    description: 'older protocol than offered',
    chunks: ['CCMPLUGIN|1|1|unix|/x|grpc\n'],
    offered: [2, 3],
    error: /plugin speaks protocol 1, host speaks 2,3: upgrade the plugin/,
  },
  { description: 'unknown network', chunks: ['CCMPLUGIN|1|1|udp|/x|grpc\n'], error: /network "udp" is not unix or tcp/ },
  { description: 'empty address', chunks: ['CCMPLUGIN|1|1|unix||grpc\n'], error: /handshake address is empty/ },
  { description: 'non-loopback tcp address', chunks: ['CCMPLUGIN|1|1|tcp|10.0.0.1:80|grpc\n'], error: /is not a loopback host:port/ },
  { description: 'wrong transport', chunks: ['CCMPLUGIN|1|1|unix|/x|netrpc\n'], error: /transport "netrpc" is not grpc/ },
  { description: 'oversize handshake line', chunks: [`CCMPLUGIN|1|1|unix|/${'x'.repeat(2000)}|grpc\n`], error: /longer than 1024 bytes/ },
  { description: 'invalid handshake after garbage', chunks: ['hello\n', 'CCMPLUGIN|1|1|unix|/x|http\n', GOOD + '\n'], error: /transport "http"/ },
];

for (const c of badCases) {
  test(`readHandshake rejects: ${c.description}`, async (t) => {
    const h = start({ offered: c.offered });
    for (const chunk of c.chunks) h.stdout.write(chunk);
    const r = await h.result;
    t.false(r.ok, 'rejected');
    if (!r.ok) {
      t.true(r.err instanceof PluginStartError);
      t.is(r.err.name, 'PluginStartError');
      t.regex(r.err.message, c.error);
    }
  });
}

test('readHandshake rejects after the timeout when no handshake comes, naming the timeout', async (t) => {
  const h = start({ timeoutMs: 150 });
  h.stdout.write('still loading\n');
  const started = Date.now();
  const r = await h.result;
  t.false(r.ok);
  if (!r.ok) {
    t.true(r.err instanceof PluginStartError);
    t.regex(r.err.message, /plugin printed no handshake within 150 ms/);
  }
  t.true(Date.now() - started >= 100, 'not before the timeout');
  t.deepEqual(h.other, ['still loading']);
});

interface ExitCase {
  description: string;
  /** What happens: the process exits (with how), stdout closes, or both in some order. */
  act: (h: Harness) => void;
  error: RegExp;
}

const exitCases: ExitCase[] = [
  {
    description: 'process exits with a code while stdout stays open',
    act: (h) => h.exit('exit code 1'),
    error: /^plugin exited before its handshake \(exit code 1\)$/,
  },
  { description: 'process killed by a signal', act: (h) => h.exit('signal SIGKILL'), error: /\(signal SIGKILL\)/ },
  {
    description: 'stdout closes, then the exit status arrives within the grace period',
    act: (h) => {
      h.stdout.end('some output\n');
      setTimeout(() => h.exit('exit code 3'), 50);
    },
    error: /^plugin exited before its handshake \(exit code 3\)$/,
  },
  {
    description: 'stdout closes and the process does not exit: stdout closed is reported',
    act: (h) => h.stdout.end(),
    error: /^plugin closed stdout before printing its handshake$/,
  },
  {
    description: 'a partial handshake line then exit',
    act: (h) => {
      h.stdout.write('CCMPLUGIN|1|1|un');
      h.exit('exit code 2');
    },
    error: /exit code 2/,
  },
];

for (const c of exitCases) {
  test(`readHandshake rejects: ${c.description}`, async (t) => {
    const h = start({ timeoutMs: 30_000 });
    c.act(h);
    const r = await h.result;
    t.false(r.ok);
    if (!r.ok) {
      t.true(r.err instanceof PluginStartError);
      t.regex(r.err.message, c.error);
    }
  });
}

test('readHandshake: lines after the handshake keep going to onOtherLine; a later exit changes nothing', async (t) => {
  const h = start();
  h.stdout.write(GOOD + '\n');
  const r = await h.result;
  t.true(r.ok);
  h.stdout.write('printed after the handshake\n');
  h.stdout.write(GOOD + '\n');
  h.exit('exit code 0');
  h.stdout.end();
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(h.other, ['printed after the handshake', GOOD], 'a second handshake line is just another line');
  t.deepEqual(await h.result, r, 'the result stays resolved');
});

test('readHandshake: an exit that was already known rejects even before stdout says anything', async (t) => {
  const stdout = new PassThrough();
  await t.throwsAsync(readHandshake(stdout, { timeoutMs: 10_000, exited: Promise.resolve('exit code 127') }), {
    instanceOf: PluginStartError,
    message: 'plugin exited before its handshake (exit code 127)',
  });
});

test('readHandshake: without onOtherLine, garbage is ignored', async (t) => {
  const stdout = new PassThrough();
  const p = readHandshake(stdout, { timeoutMs: 10_000, exited: never });
  stdout.write('garbage\n' + GOOD + '\n');
  t.deepEqual(await p, GOOD_PARSED);
});
