/**
 * fast-check arbitraries for provider answers (instance metadata, volumes,
 * publish contexts, routes, error text), shared by the unit properties
 * (test/unit/host/validate-apiserver.test.ts) and the check against the real
 * API server (test/integration/validation-apiserver.test.ts).
 *
 * Each field mixes plausible valid values, valid values with one hostile
 * character spliced in (controls, bidi overrides, CJK, look-alikes such as
 * the Kelvin sign), arbitrary strings and very long ones, so that both
 * acceptance and refusal are exercised often.
 */
import fc from 'fast-check';
import type { InstanceMetadata, NodeAddress, NodeAddressType } from '../../host/cloud.js';
import type { CloudVolume } from '../../host/cloud-volumes.js';
import type { LbIngress, LbStatus } from '../../host/cloud-load-balancers.js';
import { NodeAddressType as PbAddrType } from '../../proto/gen/ccm/provider/v1/common.js';
import type { Route as PbRoute } from '../../proto/gen/ccm/provider/v1/routes.js';

/** Characters that must never reach an object unescaped, and look-alikes that case mapping turns into ASCII. */
export const HOSTILE_CHARS = [
  '\u0000',
  '\u0007',
  '\t',
  '\n',
  '\r',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u009b',
  '\u00a0',
  '\u00e9',
  '\u0130',
  '\u061c',
  '\u200b',
  '\u200e',
  '\u2028',
  '\u202a',
  '\u202e',
  '\u2066',
  '\u2069',
  '\u212a',
  '\ufeff',
  '\ufffd',
  '東',
  '京',
  '👍',
  '\ud800',
  '\udc00',
  ' ',
  '/',
  ':',
  '%',
  '.',
  '-',
  '_',
  'A',
];

/** `valid` with one hostile character inserted at an arbitrary place (or replacing one). */
function spliced(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(valid, fc.constantFrom(...HOSTILE_CHARS), fc.nat(), fc.boolean()).map(([v, c, at, replace]) => {
    const i = v.length === 0 ? 0 : at % (v.length + 1);
    return v.slice(0, i) + c + v.slice(replace ? i + 1 : i);
  });
}

/** A field: mostly plausible values, often spliced ones, sometimes arbitrary or very long text. */
export function field(valid: fc.Arbitrary<string>, maxLong = 600): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: valid },
    { weight: 4, arbitrary: spliced(valid) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...HOSTILE_CHARS), maxLength: 20 }) },
    {
      weight: 1,
      arbitrary: fc.tuple(valid, fc.integer({ min: 50, max: maxLong })).map(([v, n]) => (v || 'a').repeat(Math.ceil(n / Math.max(1, v.length)))),
    },
  );
}

/** How a generator draws one field from that field's valid values. */
type Field = (valid: fc.Arbitrary<string>, maxLong: number) => fc.Arbitrary<string>;
const valid: Field = (v) => v;

const alnum = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'.split(''));
const labelChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.'.split(''));
const dnsLabel = fc
  .tuple(alnum, fc.string({ unit: fc.constantFrom(...'abcdefghij0123456789-'.split('')), maxLength: 12 }), alnum)
  .map(([a, m, z]) => a + m + z);
const dnsName = fc.array(dnsLabel, { minLength: 1, maxLength: 4 }).map((ls) => ls.join('.'));
const plainLabelValue = fc.tuple(alnum, fc.string({ unit: labelChar, maxLength: 20 }), alnum).map(([a, m, z]) => a + m + z);

const validLabelValue = fc.oneof(fc.constant(''), plainLabelValue);
const validLabelKey = fc.oneof(
  plainLabelValue,
  fc.tuple(dnsName, plainLabelValue).map(([p, n]) => `${p}/${n}`),
);
export const labelValueArb = field(validLabelValue, 100);
export const labelKeyArb = field(validLabelKey, 300);
/** Labels (e.g. GetVolumeLabels): half valid throughout, half with any key or value hostile. */
export const labelMapArb = fc.oneof(
  fc.dictionary(validLabelKey, validLabelValue, { maxKeys: 3 }),
  fc.dictionary(labelKeyArb, labelValueArb, { maxKeys: 3 }),
);
const validProviderId = (provider: string) =>
  fc
    .string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-_/.:'.split('')), minLength: 1, maxLength: 40 })
    .map((id) => `${provider}://${id}`);

const ipArb = fc.oneof(fc.ipV4(), fc.ipV6(), fc.ipV4Extended());
const TYPES: NodeAddressType[] = ['Hostname', 'InternalIP', 'ExternalIP', 'InternalDNS', 'ExternalDNS'];
const validAddress = (type: NodeAddressType) =>
  type === 'InternalIP' || type === 'ExternalIP'
    ? fc.oneof(fc.ipV4(), fc.ipV6())
    : type === 'Hostname'
      ? dnsName.map((d) => d.toUpperCase())
      : dnsName;
const addressOf = (f: Field): fc.Arbitrary<NodeAddress> =>
  fc.constantFrom(...TYPES).chain((type) => fc.record({ type: fc.constant(type), address: f(validAddress(type), 300) }));

/** Metadata where every field is drawn by `f` from its valid values (`valid`: all valid; `field`: each may be hostile). */
function metadataOf(provider: string, f: Field): fc.Arbitrary<InstanceMetadata> {
  return fc.record({
    providerId: f(validProviderId(provider), 700),
    instanceType: f(validLabelValue, 100),
    zone: f(validLabelValue, 100),
    region: f(validLabelValue, 100),
    nodeAddresses: fc.uniqueArray(addressOf(f), { maxLength: 4, selector: (a) => `${a.type}/${a.address}` }),
    additionalLabels: fc.dictionary(f(validLabelKey, 300), f(validLabelValue, 100), { maxKeys: 3 }),
  });
}

/** Instance metadata: a third valid throughout, a third with at most one hostile field, a third with any field hostile. */
export const instanceMetadataArb = (provider: string): fc.Arbitrary<InstanceMetadata> =>
  fc.oneof(
    metadataOf(provider, valid),
    fc
      .tuple(
        metadataOf(provider, valid),
        metadataOf(provider, field),
        fc.constantFrom('providerId', 'instanceType', 'zone', 'region', 'nodeAddresses', 'additionalLabels') as fc.Arbitrary<keyof InstanceMetadata>,
      )
      .map(([good, bad, k]) => ({ ...good, [k]: bad[k] })),
    metadataOf(provider, field),
  );

/** Free text as a provider might put in volume_context or publish_context. */
const freeText = field(fc.string({ unit: fc.constantFrom(...'abcXYZ019 =:/.,-_'.split('')), maxLength: 30 }), 5000);
export const stringMapArb = fc.dictionary(freeText, freeText, { maxKeys: 4 });

const topologyOf = (f: Field) =>
  fc.dictionary(
    fc.constantFrom('topology.kubernetes.io/zone', 'topology.kubernetes.io/region').chain((k) => f(fc.constant(k), 300)),
    f(plainLabelValue, 100),
    {
      minKeys: 1,
      maxKeys: 2,
    },
  );

function volumeOf(f: Field): fc.Arbitrary<CloudVolume> {
  const text = f(fc.string({ unit: fc.constantFrom(...'abcXYZ019 =:/.,-_'.split('')), maxLength: 30 }), 5000);
  return fc.record({
    volumeId: f(
      fc.string({ unit: fc.constantFrom(...'abcdef0123456789-/:'.split('')), minLength: 1, maxLength: 40 }).map((s) => `vol-${s}`),
      1500,
    ),
    capacityBytes: fc.oneof(fc.constantFrom(0, 1, 1024, 2 ** 30, 10 * 2 ** 40), fc.nat()),
    volumeContext: fc.dictionary(text, text, { maxKeys: 4 }),
    accessibleTopology: fc.array(topologyOf(f), { maxLength: 3 }),
  });
}

/** Volumes: a third valid throughout, a third with at most one hostile field, a third with any field hostile. */
export const cloudVolumeArb: fc.Arbitrary<CloudVolume> = fc.oneof(
  volumeOf(valid),
  fc
    .tuple(volumeOf(valid), volumeOf(field), fc.constantFrom('volumeId', 'volumeContext', 'accessibleTopology') as fc.Arbitrary<keyof CloudVolume>)
    .map(([good, bad, k]) => ({ ...good, [k]: bad[k] })),
  volumeOf(field),
);

/** A route as a provider answers it (protocol types); address types include unknown numbers. */
export const pbRouteArb: fc.Arbitrary<PbRoute> = fc.record({
  name: field(fc.string({ unit: fc.constantFrom(...'abcdef0123456789-'.split('')), maxLength: 30 }), 1500),
  targetNode: field(dnsName, 1500),
  targetNodeAddresses: fc.array(
    fc.record({
      type: fc.constantFrom(PbAddrType.NODE_ADDRESS_TYPE_INTERNAL_IP, PbAddrType.NODE_ADDRESS_TYPE_HOSTNAME, 0, 99),
      address: field(ipArb),
    }),
    { maxLength: 3 },
  ),
  destinationCidr: field(
    fc
      .oneof(fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })), fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 128 })))
      .map(([ip, n]) => `${ip}/${n}`),
  ),
  blackhole: fc.boolean(),
});

const camelReason = fc
  .tuple(fc.constantFrom(...'ABCXYZ'.split('')), fc.string({ unit: fc.constantFrom(...'abcXYZ019'.split('')), maxLength: 30 }))
  .map(([a, b]) => a + b);

function ingressOf(f: Field): fc.Arbitrary<LbIngress> {
  return fc.record(
    {
      ip: f(fc.oneof(fc.ipV4(), fc.ipV6()), 100),
      hostname: f(dnsName, 300),
      ipMode: fc.constantFrom('VIP' as const, 'Proxy' as const),
      ports: fc.array(
        fc.record(
          {
            port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: -1, max: 70000 })),
            protocol: fc.constantFrom('TCP' as const, 'UDP' as const, 'SCTP' as const),
            error: f(camelReason, 400),
          },
          { requiredKeys: ['port', 'protocol'] },
        ),
        { maxLength: 3 },
      ),
    },
    { requiredKeys: [] },
  );
}

/** Load balancer statuses: a third valid throughout, a third with one hostile ingress, a third with anything hostile. */
export const lbStatusArb: fc.Arbitrary<LbStatus> = fc.oneof(
  fc.record({ ingress: fc.array(ingressOf(valid), { maxLength: 3 }) }),
  fc.tuple(fc.array(ingressOf(valid), { maxLength: 2 }), ingressOf(field)).map(([good, bad]) => ({ ingress: [...good, bad] })),
  fc.record({ ingress: fc.array(ingressOf(field), { maxLength: 3 }) }),
);

/** Error text a plugin might send back (it reaches Events and VolumeAttachment errors). */
export const errorTextArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 2000 }),
  fc.string({ unit: fc.constantFrom(...HOSTILE_CHARS, 'x', 'y'), maxLength: 3000 }),
  fc.string({ unit: 'grapheme', maxLength: 500 }),
  fc.constant(`failed\nNormal  Synced  ok\r\n\u001b[2J${'x'.repeat(8192)}`),
);
