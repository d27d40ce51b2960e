/**
 * Validation of provider answers (host/plugin/validate.ts): tables of valid
 * and invalid values for every checker, and a property test that arbitrary
 * strings never make the checks throw and that every IP they accept is an IP
 * for node:net.
 */
import test from 'ava';
import fc from 'fast-check';
import { isIP } from 'node:net';
import type { InstanceMetadata, NodeAddress, NodeAddressType } from '../../../host/cloud.js';
import {
  addressesProblems,
  dnsNameProblem,
  instanceMetadataProblems,
  ipProblem,
  labelKeyProblem,
  labelValueProblem,
  MAX_ADDITIONAL_LABELS,
  MAX_ADDRESSES,
  providerIdProblem,
} from '../../../host/plugin/validate.js';

/** A checker case: `problem` undefined = valid, else a regex the problem must match. */
interface Case {
  value: string;
  problem?: RegExp;
  why?: string;
}

function checkerTable(name: string, fn: (v: string) => string | undefined, cases: Case[]): void {
  for (const c of cases) {
    const label = JSON.stringify(c.value.length > 40 ? `${c.value.slice(0, 40)}… (${c.value.length} chars)` : c.value);
    test(`${name}(${label}) is ${c.problem ? 'invalid' : 'valid'}${c.why ? `: ${c.why}` : ''}`, (t) => {
      const p = fn(c.value);
      if (c.problem) {
        t.is(typeof p, 'string');
        t.regex(p!, c.problem);
        t.true(p!.length < 300, 'problems quote long values truncated');
      } else {
        t.is(p, undefined);
      }
    });
  }
}

checkerTable('ipProblem', ipProblem, [
  { value: '10.0.0.1' },
  { value: '0.0.0.0' },
  { value: '255.255.255.255' },
  { value: '::1' },
  { value: '::' },
  { value: 'fd00::1' },
  { value: '2001:db8:0:0:0:0:0:1' },
  { value: '1:2:3:4:5:6:7:8' },
  { value: '::ffff:10.0.0.1', problem: /IPv4-mapped IPv6 address.*answer "10\.0\.0\.1"/, why: 'IPv4-mapped IPv6 (KEP-4858)' },
  { value: 'FD00::ABCD', why: 'upper-case hex' },
  { value: '', problem: /is not an IP address/ },
  { value: '1.2.3', problem: /not a dotted-quad/, why: 'three parts' },
  { value: '1.2.3.4.5', problem: /not an IP address/ },
  { value: '256.1.1.1', problem: /not an IP address/ },
  { value: '01.2.3.4', problem: /ambiguous: IPv4 with leading zeros/, why: 'leading zero (octal in some parsers)' },
  { value: '0x7f.0.0.1', problem: /not a dotted-quad/, why: 'hex part' },
  { value: '2130706433', problem: /not/, why: 'IPv4 as one number' },
  { value: '::zz', problem: /not an IP address/ },
  { value: ':::1', problem: /not an IP address/ },
  { value: '1::2::3', problem: /not an IP address/ },
  { value: '00000::1', problem: /not an IP address/, why: 'five hex digits' },
  { value: '10.0.0.1/24', problem: /not an IP address/, why: 'CIDR' },
  { value: 'fd00::/64', problem: /not an IP address/, why: 'CIDR' },
  { value: 'fe80::1%eth0', problem: /not an IP address/, why: 'zone index' },
  { value: 'fe80::1%', problem: /not an IP address/ },
  { value: ' 10.0.0.1', problem: /not an IP address/, why: 'leading space' },
  { value: '10.0.0.1\n', problem: /not an IP address/, why: 'trailing newline' },
  { value: '::ffff:0x7f.0.0.1', problem: /not an IP address/, why: 'hex part in embedded IPv4' },
  { value: '::ffff:01.2.3.4', problem: /not an IP address/, why: 'leading zero in embedded IPv4' },
  { value: '::ffff:1.2.3', problem: /not an IP address/ },
  { value: 'localhost', problem: /not an IP address/ },
  { value: '1.2.3.' + '4'.repeat(500), problem: /not an IP address/, why: 'huge value is quoted truncated' },
]);

checkerTable('dnsNameProblem', dnsNameProblem, [
  { value: 'node-1' },
  { value: 'node-1.example.com' },
  { value: 'a' },
  { value: '1.2.3.4', why: 'digits-only labels are DNS-1123 subdomains' },
  { value: `${'a'.repeat(63)}.example.com`, why: '63-character label' },
  {
    value: Array.from({ length: 4 }, () => 'a'.repeat(63))
      .join('.')
      .slice(0, 253),
    why: 'exactly 253 characters',
  },
  { value: '', problem: /1\.\.253/ },
  { value: Array.from({ length: 5 }, () => 'a'.repeat(63)).join('.'), problem: /1\.\.253/, why: 'longer than 253' },
  { value: `${'a'.repeat(64)}.example.com`, problem: /label longer than 63/ },
  { value: 'Node-1.example.com', problem: /lowercase DNS name/ },
  { value: 'node_1', problem: /lowercase DNS name/ },
  { value: '-node', problem: /lowercase DNS name/ },
  { value: 'node-', problem: /lowercase DNS name/ },
  { value: 'node..example', problem: /lowercase DNS name/ },
  { value: 'node.example.', problem: /lowercase DNS name/, why: 'trailing dot' },
  { value: 'node example', problem: /lowercase DNS name/ },
]);

checkerTable('labelValueProblem', labelValueProblem, [
  { value: '' },
  { value: 'a' },
  { value: 'us-east-1a' },
  { value: 'm5.large' },
  { value: 'A_b-C.9' },
  { value: 'x'.repeat(63) },
  { value: 'x'.repeat(64), problem: /longer than 63/ },
  { value: '-leading', problem: /start and end alphanumeric/ },
  { value: 'trailing.', problem: /start and end alphanumeric/ },
  { value: 'has space', problem: /outside/ },
  { value: 'slash/x', problem: /outside/ },
  { value: 'ünicode', problem: /outside/ },
  { value: 'new\nline', problem: /outside/ },
]);

checkerTable('labelKeyProblem', labelKeyProblem, [
  { value: 'pool' },
  { value: 'example.com/pool' },
  { value: 'a.b.example.com/Pool_1.x' },
  { value: 'kubernetes.io/x', why: 'reserved namespaces are filtered later, not by validation' },
  { value: 'node.kubernetes.io/instance-type' },
  { value: 'k8s.io/x' },
  { value: 'n'.repeat(63) },
  { value: `${'p'.repeat(253)}/name`, why: '253-character prefix' },
  { value: '', problem: /invalid name part/ },
  { value: 'n'.repeat(64), problem: /invalid name part/, why: 'name longer than 63' },
  { value: `example.com/${'n'.repeat(64)}`, problem: /invalid name part/ },
  { value: 'example.com/', problem: /invalid name part/ },
  { value: '/pool', problem: /invalid prefix/ },
  { value: `${'p'.repeat(254)}/name`, problem: /invalid prefix/, why: 'prefix longer than 253' },
  { value: 'Example.com/pool', problem: /invalid prefix/, why: 'upper-case prefix' },
  { value: 'exa_mple.com/pool', problem: /invalid prefix/ },
  { value: 'a/b/c', problem: /invalid name part/ },
  { value: 'has space', problem: /invalid name part/ },
  { value: '-pool', problem: /invalid name part/ },
]);

checkerTable('providerIdProblem', providerIdProblem, [
  { value: 'aws://i-123' },
  { value: 'gce://project/zone/name' },
  { value: 'aws:///us-east-1a/i-0abc', why: 'AWS style with empty host' },
  { value: 'my-cloud.v2://x' },
  { value: '', problem: /not of the form/ },
  { value: 'i-123', problem: /not of the form/, why: 'no scheme' },
  { value: '://i-123', problem: /not of the form/, why: 'empty scheme' },
  { value: 'aws://', problem: /not of the form/, why: 'empty id' },
  { value: 'AWS://i-1', problem: /not of the form/, why: 'upper-case scheme' },
  { value: 'aws:/i-1', problem: /not of the form/ },
  { value: 'aws://i 1', problem: /not of the form/, why: 'whitespace in id' },
  { value: 'aws://i-1\n', problem: /not of the form/, why: 'trailing newline' },
  { value: `aws://${'i'.repeat(600)}`, problem: /longer than 512/ },
  // The API server stores any providerID once and refuses every change after: these would be permanent.
  { value: 'aws://i-1\u0000', problem: /"aws:\/\/i-1\\u0000" is not of the form/, why: 'NUL (escaped in the problem)' },
  { value: 'aws://i-\u001b[31m1', problem: /not of the form/, why: 'ESC' },
  { value: 'aws://i-1\u007f', problem: /not of the form/, why: 'DEL' },
  { value: 'aws://i-\u202e1', problem: /"aws:\/\/i-\\u202e1" is not of the form/, why: 'right-to-left override' },
  { value: 'aws://i-東京', problem: /not of the form/, why: 'CJK' },
  { value: 'aws://i-\u00a01', problem: /not of the form/, why: 'no-break space' },
  { value: 'aws://i-\ud8001', problem: /not of the form/, why: 'lone surrogate' },
]);

// ---------------------------------------------------------------------------
// addressesProblems

const addr = (type: NodeAddressType, address: string): NodeAddress => ({ type, address });

interface AddrCase {
  description: string;
  addrs: NodeAddress[];
  /** Each regex must match one problem; the number of problems must equal the number of regexes. */
  problems: RegExp[];
}

const addrCases: AddrCase[] = [
  { description: 'no addresses', addrs: [], problems: [] },
  {
    description: 'one of every type',
    addrs: [
      addr('Hostname', 'node-1'),
      addr('InternalIP', '10.0.0.1'),
      addr('ExternalIP', '203.0.113.9'),
      addr('InternalDNS', 'node-1.internal'),
      addr('ExternalDNS', 'node-1.example.com'),
    ],
    problems: [],
  },
  { description: 'dual-stack internal IPs', addrs: [addr('InternalIP', '10.0.0.1'), addr('InternalIP', 'fd00::1')], problems: [] },
  { description: 'upper-case Hostname (kubelets report those)', addrs: [addr('Hostname', 'NODE-1.Example')], problems: [] },
  {
    description: 'Hostname with a Kelvin sign (lower-cases to "k")',
    addrs: [addr('Hostname', 'node-\u212a')],
    problems: [/^Hostname address: .*not a valid lowercase DNS name/],
  },
  { description: 'Hostname with a dotted capital I', addrs: [addr('Hostname', '\u0130node')], problems: [/^Hostname address: /] },
  {
    description: 'same address under two types is not a duplicate',
    addrs: [addr('InternalIP', '10.0.0.1'), addr('ExternalIP', '10.0.0.1')],
    problems: [],
  },
  { description: 'invalid InternalIP', addrs: [addr('InternalIP', '1.2.3')], problems: [/^InternalIP address: .*dotted-quad/] },
  { description: 'invalid ExternalIP', addrs: [addr('ExternalIP', '::zz')], problems: [/^ExternalIP address: .*not an IP/] },
  { description: 'CIDR as InternalIP', addrs: [addr('InternalIP', '10.0.0.1/24')], problems: [/not an IP/] },
  { description: 'zoned IPv6 as InternalIP', addrs: [addr('InternalIP', 'fe80::1%eth0')], problems: [/not an IP/] },
  {
    description: 'an IP is not a DNS-name check for InternalDNS',
    addrs: [addr('InternalDNS', 'Node_1')],
    problems: [/^InternalDNS address: .*lowercase DNS/],
  },
  {
    description: 'hostname longer than 253',
    addrs: [addr('Hostname', `${'a'.repeat(60)}.`.repeat(5) + 'x')],
    problems: [/^Hostname address: .*1\.\.253/],
  },
  { description: 'ExternalDNS longer than 253', addrs: [addr('ExternalDNS', `${'a'.repeat(60)}.`.repeat(5) + 'x')], problems: [/1\.\.253/] },
  { description: 'empty Hostname', addrs: [addr('Hostname', '')], problems: [/1\.\.253/] },
  {
    description: 'duplicate address',
    addrs: [addr('InternalIP', '10.0.0.1'), addr('InternalIP', '10.0.0.1')],
    problems: [/duplicate address InternalIP "10.0.0.1"/],
  },
  {
    description: 'two spellings of one IPv6 address are a duplicate',
    addrs: [addr('InternalIP', 'fd00::1'), addr('InternalIP', 'FD00:0::1')],
    problems: [/duplicate address InternalIP "FD00:0::1"/],
  },
  {
    description: 'duplicate invalid address: both problems',
    addrs: [addr('InternalIP', 'bogus'), addr('InternalIP', 'bogus')],
    problems: [/not an IP/, /not an IP/, /duplicate address/],
  },
  {
    description: `${MAX_ADDRESSES} addresses (the maximum)`,
    addrs: Array.from({ length: MAX_ADDRESSES }, (_, i) => addr('InternalIP', `10.0.${i >> 8}.${i & 255}`)),
    problems: [],
  },
  {
    description: `${MAX_ADDRESSES + 1} addresses: one problem, addresses not examined one by one`,
    addrs: Array.from({ length: MAX_ADDRESSES + 1 }, () => addr('InternalIP', 'bogus')),
    problems: [new RegExp(`^${MAX_ADDRESSES + 1} addresses, at most ${MAX_ADDRESSES} allowed$`)],
  },
];

for (const c of addrCases) {
  test(`addressesProblems: ${c.description}`, (t) => {
    const got = addressesProblems(c.addrs);
    t.is(got.length, c.problems.length, `problems: ${JSON.stringify(got)}`);
    c.problems.forEach((re, i) => t.regex(got[i] ?? '', re));
  });
}

// ---------------------------------------------------------------------------
// instanceMetadataProblems

const PROVIDER = 'acme';

function meta(over: Partial<InstanceMetadata> = {}): InstanceMetadata {
  return {
    providerId: 'acme://i-1',
    instanceType: 'm5.large',
    nodeAddresses: [addr('InternalIP', '10.0.0.1'), addr('Hostname', 'node-1')],
    zone: 'zone-a',
    region: 'region-1',
    additionalLabels: { 'acme.example.com/pool': 'blue' },
    ...over,
  };
}

interface MetaCase {
  description: string;
  metadata: InstanceMetadata;
  existingProviderId?: string;
  problems: RegExp[];
}

const manyLabels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`l${i}`, 'v']));

const metaCases: MetaCase[] = [
  { description: 'complete valid metadata', metadata: meta(), problems: [] },
  {
    description: 'optional fields empty',
    metadata: meta({ instanceType: '', zone: '', region: '', nodeAddresses: [], additionalLabels: {} }),
    problems: [],
  },
  {
    description: 'reserved kubernetes.io label keys are valid here (initLabels filters them)',
    metadata: meta({ additionalLabels: { 'kubernetes.io/x': 'y', 'node.kubernetes.io/z': '' } }),
    problems: [],
  },
  {
    description: 'empty providerID on a node without one',
    metadata: meta({ providerId: '' }),
    problems: [/providerID is empty and the node has none/],
  },
  { description: 'empty providerID on a node that has one', metadata: meta({ providerId: '' }), existingProviderId: 'acme://i-1', problems: [] },
  { description: 'providerID without scheme', metadata: meta({ providerId: 'i-1' }), problems: [/not of the form <provider>:\/\/<id>/] },
  {
    description: 'providerID of another provider',
    metadata: meta({ providerId: 'aws://i-1' }),
    problems: [/does not start with the plugin's provider name "acme:\/\/"/],
  },
  {
    description: 'providerID whose scheme only starts with the provider name',
    metadata: meta({ providerId: 'acme2://i-1' }),
    problems: [/does not start with/],
  },
  {
    description: "another provider's providerID is refused even when the node already has one",
    metadata: meta({ providerId: 'aws://i-1' }),
    existingProviderId: 'acme://i-1',
    problems: [/does not start with/],
  },
  {
    description: 'invalid IP address',
    metadata: meta({ nodeAddresses: [addr('InternalIP', '10.0.0.300')] }),
    problems: [/InternalIP address: "10.0.0.300" is not an IP address/],
  },
  {
    description: 'duplicate addresses',
    metadata: meta({ nodeAddresses: [addr('ExternalIP', '::1'), addr('ExternalIP', '::1')] }),
    problems: [/duplicate/],
  },
  {
    description: `${MAX_ADDRESSES + 1} addresses`,
    metadata: meta({ nodeAddresses: Array.from({ length: MAX_ADDRESSES + 1 }, (_, i) => addr('InternalIP', `10.1.0.${i}`)) }),
    problems: [/65 addresses, at most 64/],
  },
  { description: 'instance type with a space', metadata: meta({ instanceType: 'm5 large' }), problems: [/^instance type: label value/] },
  { description: 'zone longer than 63', metadata: meta({ zone: 'z'.repeat(64) }), problems: [/^zone: .*longer than 63/] },
  { description: 'region ending in a dash', metadata: meta({ region: 'region-' }), problems: [/^region: /] },
  {
    description: 'additional label with invalid key',
    metadata: meta({ additionalLabels: { 'bad key': 'v' } }),
    problems: [/^additional label: label key "bad key"/],
  },
  {
    description: 'additional label with invalid value',
    metadata: meta({ additionalLabels: { pool: 'v'.repeat(64) } }),
    problems: [/^additional label: label value .*longer than 63/],
  },
  {
    description: 'additional label with 64-character name',
    metadata: meta({ additionalLabels: { ['n'.repeat(64)]: 'v' } }),
    problems: [/invalid name part/],
  },
  {
    description: `${MAX_ADDITIONAL_LABELS} additional labels (the maximum)`,
    metadata: meta({ additionalLabels: manyLabels(MAX_ADDITIONAL_LABELS) }),
    problems: [],
  },
  {
    description: `${MAX_ADDITIONAL_LABELS + 1} additional labels`,
    metadata: meta({ additionalLabels: manyLabels(MAX_ADDITIONAL_LABELS + 1) }),
    problems: [/65 additional labels, at most 64/],
  },
  {
    description: 'every problem is reported, not only the first',
    metadata: meta({ providerId: 'x', nodeAddresses: [addr('InternalIP', 'nope')], zone: '-', additionalLabels: { '/k': 'v' } }),
    problems: [/providerID/, /InternalIP/, /^zone/, /^additional label/],
  },
];

for (const c of metaCases) {
  test(`instanceMetadataProblems: ${c.description}`, (t) => {
    const got = instanceMetadataProblems(c.metadata, c.existingProviderId ?? '', PROVIDER);
    t.is(got.length, c.problems.length, `problems: ${JSON.stringify(got)}`);
    c.problems.forEach((re, i) => t.regex(got[i] ?? '', re));
  });
}

// ---------------------------------------------------------------------------
// Properties

const TYPES: NodeAddressType[] = ['Hostname', 'InternalIP', 'ExternalIP', 'InternalDNS', 'ExternalDNS'];

/** Strings that look like IP addresses often enough to hit parser corner cases. */
const ipLike = fc.oneof(
  fc.string(),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefxABCDEFX.:%/ '.split('')), maxLength: 45 }),
  fc.ipV4(),
  fc.ipV4Extended(),
  fc.ipV6(),
  fc.tuple(fc.ipV6(), fc.ipV4Extended()).map(([a, b]) => `${a.replace(/:[^:]*$/, '')}:${b}`),
  fc.tuple(fc.constantFrom('::ffff:', '::', '1::'), fc.ipV4Extended()).map(([a, b]) => a + b),
);

const anyString = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme', maxLength: 80 }));

test('property: arbitrary strings never make the checks throw, and every accepted IP is an IP for node:net', (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ type: fc.constantFrom(...TYPES), address: ipLike }), { maxLength: 8 }),
      fc.record({ providerId: anyString, instanceType: anyString, zone: anyString, region: anyString }),
      fc.dictionary(anyString, anyString, { maxKeys: 6 }),
      anyString,
      (nodeAddresses, fields, additionalLabels, existing) => {
        const m: InstanceMetadata = { ...fields, nodeAddresses, additionalLabels };
        const problems = instanceMetadataProblems(m, existing, PROVIDER);
        if (!Array.isArray(problems) || problems.some((p) => typeof p !== 'string')) return false;
        for (const a of nodeAddresses) {
          const ipAccepted = ipProblem(a.address) === undefined;
          if (ipAccepted && isIP(a.address) === 0) throw new Error(`ipProblem accepted ${JSON.stringify(a.address)}, which node:net does not parse`);
        }
        if (problems.length === 0) {
          for (const a of nodeAddresses) {
            if ((a.type === 'InternalIP' || a.type === 'ExternalIP') && isIP(a.address) === 0) {
              throw new Error(`metadata accepted with ${a.type} ${JSON.stringify(a.address)}`);
            }
          }
        }
        return true;
      },
    ),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: every label key, value and address check returns undefined or a bounded string', (t) => {
  fc.assert(
    fc.property(anyString, (s) => {
      for (const fn of [labelKeyProblem, labelValueProblem, ipProblem, dnsNameProblem, providerIdProblem]) {
        const p = fn(s);
        if (p !== undefined && (typeof p !== 'string' || p.length > 400)) return false;
      }
      return true;
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: generated valid IPv4/IPv6 literals are accepted', (t) => {
  fc.assert(
    fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), (ip) => ipProblem(ip) === undefined),
    { numRuns: 1000 },
  );
  t.pass();
});
