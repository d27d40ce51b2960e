import test from 'ava';
import {
  CORE_PROTOCOL_VERSION,
  formatHandshake,
  HANDSHAKE_PREFIX,
  MAX_HANDSHAKE_LINE_BYTES,
  negotiateVersion,
  parseHandshake,
  parseVersionList,
  unixSocketPath,
  type HandshakeParse,
} from '../../../sdk/protocol.js';

interface HandshakeCase {
  name: string;
  line: string;
  offered?: number[];
  kind: HandshakeParse['kind'];
  /** Substring the invalid reason must contain. */
  reason?: string;
}

const handshakeCases: HandshakeCase[] = [
  { name: 'valid unix', line: 'CCMPLUGIN|1|1|unix|/tmp/x/p.sock|grpc', kind: 'handshake' },
  { name: 'valid with trailing newline', line: 'CCMPLUGIN|1|1|unix|/tmp/x/p.sock|grpc\n', kind: 'handshake' },
  { name: 'valid with CRLF', line: 'CCMPLUGIN|1|1|unix|/tmp/x/p.sock|grpc\r\n', kind: 'handshake' },
  { name: 'valid tcp loopback', line: 'CCMPLUGIN|1|1|tcp|127.0.0.1:4242|grpc', kind: 'handshake' },
  { name: 'valid tcp ipv6 loopback', line: 'CCMPLUGIN|1|1|tcp|[::1]:4242|grpc', kind: 'handshake' },
  { name: 'no prefix is other', line: 'starting up...', kind: 'other' },
  { name: 'json log line is other', line: '{"level":"info","msg":"hello"}', kind: 'other' },
  { name: 'prefix without separator is other', line: 'CCMPLUGIN', kind: 'other' },
  { name: 'empty line is other', line: '', kind: 'other' },
  { name: 'too few fields', line: 'CCMPLUGIN|1|1|unix|/tmp/p.sock', kind: 'invalid', reason: 'want 6' },
  { name: 'too many fields', line: 'CCMPLUGIN|1|1|unix|/tmp/p.sock|grpc|extra', kind: 'invalid', reason: 'has 7 fields' },
  { name: 'core version 2', line: 'CCMPLUGIN|2|1|unix|/tmp/p.sock|grpc', kind: 'invalid', reason: 'core version' },
  { name: 'core version not a number', line: 'CCMPLUGIN|x|1|unix|/tmp/p.sock|grpc', kind: 'invalid', reason: 'core version' },
  { name: 'protocol 2 when host offers 1', line: 'CCMPLUGIN|1|2|unix|/tmp/p.sock|grpc', offered: [1], kind: 'invalid', reason: 'upgrade the host' },
  { name: 'protocol 0 when host offers 1', line: 'CCMPLUGIN|1|0|unix|/tmp/p.sock|grpc', offered: [1], kind: 'invalid', reason: 'upgrade the plugin' },
  { name: 'protocol 2 when host offers 1,2', line: 'CCMPLUGIN|1|2|unix|/tmp/p.sock|grpc', offered: [1, 2], kind: 'handshake' },
  { name: 'protocol garbage', line: 'CCMPLUGIN|1|one|unix|/tmp/p.sock|grpc', kind: 'invalid', reason: 'not a number' },
  { name: 'network garbage', line: 'CCMPLUGIN|1|1|udp|/tmp/p.sock|grpc', kind: 'invalid', reason: 'not unix or tcp' },
  { name: 'empty address', line: 'CCMPLUGIN|1|1|unix||grpc', kind: 'invalid', reason: 'address is empty' },
  { name: 'transport garbage', line: 'CCMPLUGIN|1|1|unix|/tmp/p.sock|netrpc', kind: 'invalid', reason: 'not grpc' },
  { name: 'all garbage after prefix', line: 'CCMPLUGIN|\u0000|\u00ff|?|?|?', kind: 'invalid' },
  { name: 'tcp non-loopback', line: 'CCMPLUGIN|1|1|tcp|10.0.0.5:4242|grpc', kind: 'invalid', reason: 'not a loopback' },
  { name: 'tcp all interfaces', line: 'CCMPLUGIN|1|1|tcp|0.0.0.0:4242|grpc', kind: 'invalid', reason: 'not a loopback' },
  { name: 'tcp without port', line: 'CCMPLUGIN|1|1|tcp|127.0.0.1|grpc', kind: 'invalid', reason: 'not a loopback' },
  {
    name: 'oversize line',
    line: `CCMPLUGIN|1|1|unix|/${'a'.repeat(MAX_HANDSHAKE_LINE_BYTES)}|grpc`,
    kind: 'invalid',
    reason: `longer than ${MAX_HANDSHAKE_LINE_BYTES} bytes`,
  },
];

for (const c of handshakeCases) {
  test(`parseHandshake: ${c.name}`, (t) => {
    const got = parseHandshake(c.line, c.offered);
    t.is(got.kind, c.kind, JSON.stringify(got));
    if (c.reason !== undefined && got.kind === 'invalid') t.true(got.reason.includes(c.reason), got.reason);
  });
}

test('parseHandshake returns the parsed fields', (t) => {
  const got = parseHandshake('CCMPLUGIN|1|1|unix|/tmp/x/p.sock|grpc');
  t.deepEqual(got, {
    kind: 'handshake',
    handshake: { core: 1, protocol: 1, network: 'unix', address: '/tmp/x/p.sock', transport: 'grpc' },
  });
});

test('formatHandshake round-trips through parseHandshake', (t) => {
  const line = formatHandshake({ protocol: 1, network: 'unix', address: '/run/ccm/p.sock' });
  t.is(line, `${HANDSHAKE_PREFIX}|${CORE_PROTOCOL_VERSION}|1|unix|/run/ccm/p.sock|grpc`);
  t.false(line.includes('\n'));
  const got = parseHandshake(line);
  t.is(got.kind, 'handshake');
  if (got.kind === 'handshake') t.is(got.handshake.address, '/run/ccm/p.sock');
});

const negotiateCases: { host: number[]; plugin: number[]; want: number | undefined }[] = [
  { host: [1], plugin: [1], want: 1 },
  { host: [1, 2], plugin: [1], want: 1 },
  { host: [1, 2], plugin: [1, 2], want: 2 },
  { host: [2, 1], plugin: [2, 1, 3], want: 2 },
  { host: [2], plugin: [1], want: undefined },
  { host: [], plugin: [1], want: undefined },
  { host: [1], plugin: [], want: undefined },
];

for (const c of negotiateCases) {
  test(`negotiateVersion host=[${c.host}] plugin=[${c.plugin}] → ${c.want}`, (t) => {
    t.is(negotiateVersion(c.host, c.plugin), c.want);
  });
}

const versionListCases: { value: string | undefined; want: number[] }[] = [
  { value: undefined, want: [] },
  { value: '', want: [] },
  { value: '1', want: [1] },
  { value: '1,2', want: [1, 2] },
  { value: ' 1 , 2 ', want: [1, 2] },
  { value: '1,x,3', want: [1, 3] },
  { value: '1.5,-2,,7', want: [7] },
];

for (const c of versionListCases) {
  test(`parseVersionList(${JSON.stringify(c.value)})`, (t) => {
    t.deepEqual(parseVersionList(c.value), c.want);
  });
}

const socketCases: { endpoint: string; want: string | undefined }[] = [
  { endpoint: 'unix:///tmp/x/p.sock', want: '/tmp/x/p.sock' },
  { endpoint: 'unix:/tmp/x/p.sock', want: '/tmp/x/p.sock' },
  { endpoint: 'unix://relative/p.sock', want: undefined },
  { endpoint: 'unix:relative.sock', want: undefined },
  { endpoint: 'tcp://127.0.0.1:1', want: undefined },
  { endpoint: '/tmp/x/p.sock', want: undefined },
  { endpoint: 'unix://', want: undefined },
];

for (const c of socketCases) {
  test(`unixSocketPath(${JSON.stringify(c.endpoint)})`, (t) => {
    t.is(unixSocketPath(c.endpoint), c.want);
  });
}
