/**
 * The canonical text of an IP (host/util/canonical-ip.ts, KEP-4858): a table
 * of spellings, what the host writes for each or why it refuses it, and
 * properties: the canonical text is a fixed point, means the same 16 bytes
 * as the input, and is what Go's netip.Addr.String would print (lowercase,
 * RFC 5952 compression, no dotted quad in IPv6).
 */
import test from 'ava';
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { canonicalIp, isCanonicalIp } from '../../../host/util/canonical-ip.js';

interface Row {
  input: string;
  /** The text written; undefined when refused. */
  canonical?: string;
  /** When refused: the one-line problem must match, and it names the input. */
  problem?: RegExp;
  why: string;
}

const rows: Row[] = [
  // Already canonical: unchanged.
  { input: '10.0.0.1', canonical: '10.0.0.1', why: 'plain IPv4' },
  { input: '0.0.0.0', canonical: '0.0.0.0', why: 'IPv4 zeros are single digits' },
  { input: '255.255.255.255', canonical: '255.255.255.255', why: 'IPv4 broadcast' },
  { input: '2001:db8::1', canonical: '2001:db8::1', why: 'canonical IPv6' },
  { input: '::', canonical: '::', why: 'unspecified IPv6' },
  { input: '::1', canonical: '::1', why: 'loopback IPv6' },
  { input: '1:2:3:4:5:6:7:8', canonical: '1:2:3:4:5:6:7:8', why: 'no zero group' },
  { input: '1:2:3:4:5:6:7:0', canonical: '1:2:3:4:5:6:7:0', why: 'a single zero group is not compressed (RFC 5952 4.2.2)' },
  // Unambiguous, non-canonical spellings: the canonical text is written.
  { input: '2001:DB8:0:0::1', canonical: '2001:db8::1', why: 'upper case and an uncompressed zero run' },
  { input: '2001:0db8:0000:0000:0000:0000:0000:0001', canonical: '2001:db8::1', why: 'fully expanded, leading zeros in groups' },
  { input: 'FD00::ABCD', canonical: 'fd00::abcd', why: 'upper-case hex (RFC 5952 4.3)' },
  { input: '0:0:0:0:0:0:0:1', canonical: '::1', why: 'expanded loopback' },
  { input: '2001:db8:0:1:0:0:0:1', canonical: '2001:db8:0:1::1', why: 'the longest zero run is compressed (RFC 5952 4.2.3)' },
  { input: '2001:0:0:1:0:0:1:1', canonical: '2001::1:0:0:1:1', why: 'of equal runs, the first is compressed' },
  { input: '2001:db8::0:1', canonical: '2001:db8::1', why: 'compression not maximal' },
  { input: '::1.2.3.4', canonical: '::102:304', why: 'IPv4-compatible (deprecated) IPv6: an IPv6 address, no dotted quad in canonical IPv6' },
  { input: '64:ff9b::192.0.2.33', canonical: '64:ff9b::c000:221', why: 'NAT64 prefix with a dotted tail' },
  // Ambiguous: refused, never guessed.
  {
    input: '010.001.002.003',
    problem: /^"010\.001\.002\.003" is ambiguous: IPv4 with leading zeros .* answer "10\.1\.2\.3"/,
    why: 'octal to libc, decimal to Go',
  },
  { input: '01.2.3.4', problem: /^"01\.2\.3\.4" is ambiguous/, why: 'one leading zero' },
  { input: '10.0.0.00', problem: /^"10\.0\.0\.00" is ambiguous/, why: 'a double zero' },
  { input: '::ffff:1.2.3.4', problem: /^"::ffff:1\.2\.3\.4" is an IPv4-mapped IPv6 address.*answer "1\.2\.3\.4"/, why: 'IPv4-mapped IPv6' },
  { input: '::FFFF:102:304', problem: /IPv4-mapped IPv6 address.*answer "1\.2\.3\.4"/, why: 'IPv4-mapped IPv6 in hex' },
  { input: '0:0:0:0:0:ffff:a00:1', problem: /IPv4-mapped IPv6 address.*answer "10\.0\.0\.1"/, why: 'IPv4-mapped IPv6, expanded' },
  // Not an IP.
  { input: '', problem: /^"" is not an IP address$/, why: 'empty' },
  { input: '256.1.1.1', problem: /not an IP address/, why: 'octet over 255' },
  { input: '1.2.3', problem: /not a dotted-quad IPv4 address|not an IP address/, why: 'three parts' },
  { input: '0x7f.0.0.1', problem: /not an IP address|not a dotted-quad/, why: 'hex octet' },
  { input: 'fe80::1%eth0', problem: /not an IP address/, why: 'zone' },
  { input: '10.0.0.0/24', problem: /not an IP address/, why: 'a CIDR' },
  { input: '::ffff:01.2.3.4', problem: /not an IP address/, why: 'leading zero in an embedded IPv4' },
  { input: ' 10.0.0.1', problem: /not an IP address/, why: 'leading space' },
  { input: '2001:db8::1\u202e', problem: /^"2001:db8::1\\u202e" is not an IP address$/, why: 'a bidi override is escaped in the problem' },
];

for (const r of rows) {
  test(`canonicalIp(${JSON.stringify(r.input)}): ${r.canonical !== undefined ? `writes ${r.canonical}` : 'refused'} (${r.why})`, (t) => {
    const got = canonicalIp(r.input);
    if (r.canonical !== undefined) {
      t.deepEqual(got, { ip: r.canonical });
      t.true(isCanonicalIp(r.canonical));
      t.is(isCanonicalIp(r.input), r.input === r.canonical);
    } else {
      t.true('problem' in got, `refused, got ${JSON.stringify(got)}`);
      const problem = (got as { problem: string }).problem;
      t.regex(problem, r.problem!);
      t.false(problem.includes('\n'), 'one line');
      t.false(isCanonicalIp(r.input));
    }
  });
}

/** Go's netip.Addr.String for 16 bytes of an IPv6 address: lowercase, longest (first) run of >= 2 zero groups as "::". */
function goIpv6String(bytes: number[]): string {
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[2 * i]! << 8) | bytes[2 * i + 1]!);
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.len < 2) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

const ipv6Bytes = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 255 })), { minLength: 16, maxLength: 16 });

test('property: every IPv6 address, spelled expanded and upper-case, is written as Go prints it, unless IPv4-mapped', (t) => {
  fc.assert(
    fc.property(ipv6Bytes, fc.boolean(), (bytes, upper) => {
      const expanded = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16).padStart(4, '0')).join(':');
      const input = upper ? expanded.toUpperCase() : expanded;
      const got = canonicalIp(input);
      const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
      if (mapped) return 'problem' in got && /IPv4-mapped/.test(got.problem);
      return 'ip' in got && got.ip === goIpv6String(bytes) && isCanonicalIp(got.ip);
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('property: the canonical text is a fixed point and means the same address', (t) => {
  fc.assert(
    fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), (ip) => {
      const got = canonicalIp(ip);
      if ('problem' in got) return /IPv4-mapped/.test(got.problem);
      const again = canonicalIp(got.ip);
      const same = ipaddr.parse(ip).toNormalizedString() === ipaddr.parse(got.ip).toNormalizedString() || ip.includes('.');
      return 'ip' in again && again.ip === got.ip && same;
    }),
    { numRuns: 3000 },
  );
  t.pass();
});
