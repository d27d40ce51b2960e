/**
 * How cloud addresses become status.addresses (host/controllers/node/addresses.ts):
 * the kubelet's Hostname is kept; with --node-ip (provided-node-ip annotation)
 * every cloud address equal to it goes first and is the only address of its
 * type, whatever the family (upstream GetNodeAddressesFromNodeIP); a provided IP
 * the cloud does not report, or an annotation upstream would not parse, is an error.
 */
import test from 'ava';
import type { NodeAddress, NodeAddressType } from '../../../host/cloud.js';
import { addressesChanged, desiredAddresses, ProvidedNodeIpError } from '../../../host/controllers/node/addresses.js';

const a = (type: NodeAddressType, address: string): NodeAddress => ({ type, address });
const H = (x: string) => a('Hostname', x);
const I = (x: string) => a('InternalIP', x);
const E = (x: string) => a('ExternalIP', x);
const D = (x: string) => a('InternalDNS', x);

interface Case {
  description: string;
  cloud: NodeAddress[];
  current?: NodeAddress[];
  provided?: string;
  /** Expected result, in order; or the error message pattern. */
  want: NodeAddress[] | RegExp;
}

const cases: Case[] = [
  { description: 'no cloud addresses and no current ones', cloud: [], want: [] },
  {
    description: 'cloud addresses pass through in order',
    cloud: [I('10.0.0.1'), E('203.0.113.1'), D('n.internal')],
    want: [I('10.0.0.1'), E('203.0.113.1'), D('n.internal')],
  },
  {
    description: "the kubelet's Hostname is kept (appended) when the cloud reports none",
    cloud: [I('10.0.0.1')],
    current: [H('node-1'), I('192.168.0.9')],
    want: [I('10.0.0.1'), H('node-1')],
  },
  {
    description: "the cloud's Hostname wins over the kubelet's",
    cloud: [H('cloud-name'), I('10.0.0.1')],
    current: [H('node-1')],
    want: [H('cloud-name'), I('10.0.0.1')],
  },
  { description: 'no cloud addresses: the Hostname alone is kept', cloud: [], current: [H('node-1')], want: [H('node-1')] },
  { description: 'other current addresses are not kept', cloud: [E('203.0.113.1')], current: [I('192.168.0.9')], want: [E('203.0.113.1')] },
  {
    description: 'provided IP goes first and is the only InternalIP, whatever the family (upstream drops fd00::1 too)',
    cloud: [I('10.0.0.1'), I('10.0.0.2'), E('203.0.113.1'), I('fd00::1')],
    provided: '10.0.0.2',
    want: [I('10.0.0.2'), E('203.0.113.1')],
  },
  {
    description: 'provided ExternalIP: it is the only ExternalIP; InternalIPs stay',
    cloud: [I('10.0.0.1'), E('203.0.113.1'), E('203.0.113.2'), E('2001:db8::1')],
    provided: '203.0.113.2',
    want: [E('203.0.113.2'), I('10.0.0.1')],
  },
  {
    description: 'provided IPv6 drops every other InternalIP, IPv4 too',
    cloud: [I('10.0.0.1'), I('fd00::1'), I('fd00::2')],
    provided: 'fd00::2',
    want: [I('fd00::2')],
  },
  {
    description: 'every cloud address equal to the provided IP is promoted, of each type, in cloud order',
    cloud: [E('10.0.0.2'), I('10.0.0.1'), I('10.0.0.2'), D('n.internal')],
    provided: '10.0.0.2',
    want: [E('10.0.0.2'), I('10.0.0.2'), D('n.internal')],
  },
  {
    description: 'dual-stack provided IPs: both first, in the given order; other InternalIPs dropped',
    cloud: [I('fd00::1'), I('fd00::2'), I('10.0.0.1'), I('10.0.0.2'), E('203.0.113.1'), H('node-1')],
    provided: '10.0.0.2,fd00::1',
    want: [I('10.0.0.2'), I('fd00::1'), E('203.0.113.1'), H('node-1')],
  },
  {
    description: 'dual-stack provided IPs of different types: neither type keeps another address',
    cloud: [I('10.0.0.1'), I('10.0.0.2'), E('2001:db8::1'), E('2001:db8::2'), D('n.internal')],
    provided: '2001:db8::2,10.0.0.1',
    want: [E('2001:db8::2'), I('10.0.0.1'), D('n.internal')],
  },
  {
    description: 'provided IP matches the cloud address as an address, not as text',
    cloud: [I('10.0.0.1'), I('fd00::2'), I('fd00::1')],
    provided: 'fd00:0:0::1',
    want: [I('fd00::1')],
  },
  {
    description: 'an IPv4-mapped IPv6 provided IP equals its IPv4 address (as Go compares IPs)',
    cloud: [I('10.0.0.1'), I('10.0.0.2')],
    provided: '::ffff:10.0.0.2',
    want: [I('10.0.0.2')],
  },
  {
    description: 'an IPv4-compatible IPv6 provided IP is not its IPv4 address (Go: ::1.2.3.4 is not 1.2.3.4)',
    cloud: [I('10.0.0.1'), I('10.0.0.2')],
    provided: '::10.0.0.2',
    want: /node IP ::10\.0\.0\.2 .* not among the addresses/,
  },
  {
    description: 'an IPv4-compatible IPv6 provided IP matches the same IPv6 address in canonical text',
    cloud: [I('10.0.0.1'), I('::a00:2')],
    provided: '::10.0.0.2',
    want: [I('::a00:2')],
  },
  {
    description: 'an IPv4 with leading zeros is read as decimal (Go ParseIPSloppy)',
    cloud: [I('10.0.0.1'), I('10.0.0.10')],
    provided: '010.000.000.010',
    want: [I('10.0.0.10')],
  },
  {
    description: 'dual-stack provided IPs with IPv6 first',
    cloud: [I('10.0.0.1'), I('fd00::1')],
    provided: 'fd00::1,10.0.0.1',
    want: [I('fd00::1'), I('10.0.0.1')],
  },
  {
    description: 'provided IP with kept Hostname',
    cloud: [I('10.0.0.1'), I('10.0.0.2')],
    current: [H('node-1')],
    provided: '10.0.0.1',
    want: [I('10.0.0.1'), H('node-1')],
  },
  {
    description: 'a DNS address that is the provided IP literal matches too, as upstream (any address equal as an IP)',
    cloud: [D('10.0.0.1'), I('10.0.0.2')],
    provided: '10.0.0.1',
    want: [D('10.0.0.1'), I('10.0.0.2')],
  },
  {
    description: 'provided IP not reported by the cloud',
    cloud: [I('10.0.0.1')],
    provided: '10.0.0.9',
    want: /node IP 10\.0\.0\.9 .* not among the addresses/,
  },
  { description: 'dual-stack: the second provided IP is missing', cloud: [I('10.0.0.1')], provided: '10.0.0.1,fd00::1', want: /node IP fd00::1/ },
  { description: 'no cloud addresses but a provided IP', cloud: [], current: [I('10.0.0.1')], provided: '10.0.0.1', want: /not among/ },
  // The annotation is parsed as upstream's ParseNodeIPAnnotation: strictly, one IP or a dual-stack pair.
  { description: 'an empty annotation is invalid', cloud: [I('10.0.0.1')], provided: '', want: /could not parse ""/ },
  { description: 'spaces are not trimmed', cloud: [I('10.0.0.1')], provided: ' 10.0.0.1', want: /could not parse " 10\.0\.0\.1"/ },
  { description: 'not an IP', cloud: [I('10.0.0.1')], provided: 'node-1', want: /could not parse "node-1"/ },
  {
    description: 'two IPs of one family',
    cloud: [I('10.0.0.1'), I('10.0.0.2')],
    provided: '10.0.0.1,10.0.0.2',
    want: /single IP or a dual-stack pair/,
  },
  { description: 'three IPs', cloud: [I('10.0.0.1'), I('fd00::1')], provided: '10.0.0.1,fd00::1,10.0.0.2', want: /single IP or a dual-stack pair/ },
  { description: 'a dual-stack pair with an unspecified address', cloud: [I('fd00::1')], provided: '0.0.0.0,fd00::1', want: /cannot include/ },
];

for (const c of cases) {
  test(`desiredAddresses: ${c.description}`, (t) => {
    const cloud = structuredClone(c.cloud);
    const current = structuredClone(c.current ?? []);
    const run = () => desiredAddresses(cloud, current, c.provided);
    if (c.want instanceof RegExp) {
      const err = t.throws(run, { instanceOf: ProvidedNodeIpError });
      t.regex(err!.message, c.want);
    } else {
      t.deepEqual(run(), c.want);
    }
    t.deepEqual(cloud, c.cloud, 'input is not modified');
    t.deepEqual(current, c.current ?? [], 'input is not modified');
  });
}

test('desiredAddresses: without the annotation (undefined) nothing is enforced', (t) => {
  t.deepEqual(desiredAddresses([I('10.0.0.1'), I('10.0.0.2')], [], undefined), [I('10.0.0.1'), I('10.0.0.2')]);
});

interface ChangedCase {
  description: string;
  a: NodeAddress[];
  b: NodeAddress[];
  changed: boolean;
}

const changedCases: ChangedCase[] = [
  { description: 'both empty', a: [], b: [], changed: false },
  { description: 'equal lists', a: [I('10.0.0.1'), H('n')], b: [I('10.0.0.1'), H('n')], changed: false },
  { description: 'different length', a: [I('10.0.0.1')], b: [I('10.0.0.1'), H('n')], changed: true },
  {
    description: 'same set, different order (the first address of a type matters)',
    a: [I('10.0.0.1'), I('10.0.0.2')],
    b: [I('10.0.0.2'), I('10.0.0.1')],
    changed: true,
  },
  { description: 'same address, different type', a: [I('10.0.0.1')], b: [E('10.0.0.1')], changed: true },
  { description: 'same type, different address', a: [I('10.0.0.1')], b: [I('10.0.0.2')], changed: true },
];

for (const c of changedCases) {
  test(`addressesChanged: ${c.description}`, (t) => {
    t.is(addressesChanged(c.a, c.b), c.changed);
    t.is(addressesChanged(c.b, c.a), c.changed, 'symmetric');
  });
}

test('addressesChanged(desiredAddresses(x), x) is false once the node has the desired addresses', (t) => {
  const cloud = [I('10.0.0.1'), I('fd00::1'), E('203.0.113.1')];
  const first = desiredAddresses(cloud, [H('node-1')], '10.0.0.1,fd00::1');
  const second = desiredAddresses(cloud, first, '10.0.0.1,fd00::1');
  t.false(addressesChanged(second, first), 'stable: no write on the next sync');
});
