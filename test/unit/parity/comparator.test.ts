/**
 * The differential suite's comparator (test/helpers/parity.ts): it accepts
 * exactly the differences a row allows, fails on any other (a changed value
 * at an allowed path included), reports rows nothing needed, and normalizes
 * each side's names, instance ids and UIDs. And docs/upstream-parity.md's
 * table lists exactly the suite's rows, in order.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { differences, judge, normalizer, withoutErrorWording, type AllowedDifference, type Snapshot } from '../../helpers/parity.js';
import { ALLOWED } from '../../integration/parity/parity-allowed.js';

const DOC = fileURLToPath(new URL('../../../../docs/upstream-parity.md', import.meta.url));

const snap = (o: Record<string, string>): Snapshot => new Map(Object.entries(o));

const ROWS: AllowedDifference[] = [
  { id: 'event-ours', path: /^event\/Node\/n\/FailedToSyncNode$/, ours: /^Warning /, upstream: null },
  { id: 'reads', path: /^cloud\/reads$/, ours: /^metadata$/, upstream: /^metadata, routes$/ },
  {
    id: 'backends',
    path: /^cloud\/lb\/web\/backends$/,
    ours: /^(?!.*\bu=)/,
    upstream: /\bu=/,
    relation: (o, u) => o === u?.replace(/, u=[^,]*/, ''),
  },
];

const BASE = { 'node/n/providerID': 'local://<id:n>', 'cloud/reads': 'metadata', 'cloud/lb/web/backends': 'a=1, b=2' };

const CASES: { description: string; ours: Record<string, string>; upstream: Record<string, string>; unexpected: string[]; unused: string[] }[] = [
  {
    description: 'equal snapshots: nothing to allow, every row unused',
    ours: BASE,
    upstream: BASE,
    unexpected: [],
    unused: ['event-ours', 'reads', 'backends'],
  },
  {
    description: 'exactly the listed differences: accepted, every row used',
    ours: { ...BASE, 'event/Node/n/FailedToSyncNode': 'Warning from x: y' },
    upstream: { ...BASE, 'cloud/reads': 'metadata, routes', 'cloud/lb/web/backends': 'a=1, b=2, u=3' },
    unexpected: [],
    unused: [],
  },
  {
    description: "a row's relation must hold too: ours with an extra entry besides the allowed one fails",
    ours: { ...BASE, 'cloud/lb/web/backends': 'a=1, b=2, x=9' },
    upstream: { ...BASE, 'cloud/lb/web/backends': 'a=1, b=2, u=3' },
    unexpected: ['cloud/lb/web/backends'],
    unused: ['event-ours', 'reads', 'backends'],
  },
  {
    description: 'a difference no row lists fails',
    ours: { ...BASE, 'node/n/providerID': 'local://<id:m>' },
    upstream: BASE,
    unexpected: ['node/n/providerID'],
    unused: ['event-ours', 'reads', 'backends'],
  },
  {
    description: 'an allowed path with another value fails (the row pins the values too)',
    ours: { ...BASE, 'event/Node/n/FailedToSyncNode': 'Normal from x: y' },
    upstream: BASE,
    unexpected: ['event/Node/n/FailedToSyncNode'],
    unused: ['event-ours', 'reads', 'backends'],
  },
  {
    description: 'present on the side the row says is absent fails',
    ours: { ...BASE, 'event/Node/n/FailedToSyncNode': 'Warning from x: y' },
    upstream: { ...BASE, 'event/Node/n/FailedToSyncNode': 'Normal from x: z' },
    unexpected: ['event/Node/n/FailedToSyncNode'],
    unused: ['event-ours', 'reads', 'backends'],
  },
  {
    description: 'a path only one side has is a difference',
    ours: BASE,
    upstream: { ...BASE, 'node/n/label/extra': 'x' },
    unexpected: ['node/n/label/extra'],
    unused: ['event-ours', 'reads', 'backends'],
  },
];

for (const c of CASES) {
  test(`judge: ${c.description}`, (t) => {
    const j = judge(differences(snap(c.ours), snap(c.upstream)), ROWS);
    t.deepEqual(
      j.unexpected.map((d) => d.path),
      c.unexpected,
    );
    t.deepEqual(j.unused, c.unused);
  });
}

test('normalizer: side names, instance ids, UIDs and UID-named load balancers', (t) => {
  const norm = normalizer('ours', new Map([['i-6375d690', 'parity-ours-init']]));
  const cases: [string, string][] = [
    ['node/parity-ours-init/providerID', 'node/parity-<side>-init/providerID'],
    ['local://i-6375d690', 'local://<id:parity-<side>-init>'],
    ['parity-upstream-init', 'parity-upstream-init'],
    ['uid 21e47a40-99ed-40c2-bbb2-8afe8a44ca23', 'uid <uid>'],
    ['lb-parity-21e47a4099ed40c2bbb28afe8a44ca23', 'lb-parity-<lb-name>'],
    ['a21e47a4099ed40c2bbb28afe8a44ca2', '<lb-name>'],
  ];
  for (const [input, want] of cases) t.is(norm(input), want, input);
});

test("withoutErrorWording: only a failure event's error tail is replaced, in upstream's and ours wording alike", (t) => {
  const cases: [string, string][] = [
    ['Error syncing load balancer: failed to ensure load balancer: rpc error: code = NotFound desc = gone', 'Error syncing load balancer: <error>'],
    ['Error syncing load balancer: EnsureLoadBalancer: gone', 'Error syncing load balancer: <error>'],
    [
      'Error updating load balancer with new hosts [a b], error: rpc error: code = Unavailable desc = down',
      'Error updating load balancer with new hosts [a b], error: <error>',
    ],
    ['Ensured load balancer', 'Ensured load balancer'],
    ['failed to initialize node: x', 'failed to initialize node: x'],
  ];
  for (const [input, want] of cases) t.is(withoutErrorWording(input), want, input);
});

test("the suite's failed-to-create-route-message row: the same CIDRs in each side's wording, whatever the time taken; not another CIDR nor wording", (t) => {
  const row = ALLOWED.find((r) => r.id === 'failed-to-create-route-message')!;
  const path = 'event/Node/parity-<side>-rt-x/FailedToCreateRoute';
  const ours = (cidr: string) => `Warning from route_controller: Could not create route ${cidr}: ReconcileRoutes: down`;
  const upstream = (cidr: string, after: string) =>
    `Warning from route_controller: Could not create route <uid> ${cidr} for node parity-<side>-rt-x after ${after}: rpc error: code = Unavailable desc = down`;
  const cases: [ours: string, upstream: string, allowed: boolean][] = [
    [ours('10.244.7.0/24'), upstream('10.244.7.0/24', '7.9ms'), true],
    [ours('10.244.7.0/24'), `${upstream('10.244.7.0/24', '1.2s')} ¦ ${upstream('10.244.7.0/24', '850µs')}`, true],
    [ours('10.244.7.0/24'), upstream('10.244.8.0/24', '7.9ms'), false],
    [ours('10.244.7.0/24'), `${upstream('10.244.7.0/24', '7.9ms')} ¦ ${upstream('10.244.8.0/24', '7.9ms')}`, false],
    [ours('10.244.7.0/24'), 'Warning from route_controller: Could not create route 10.244.7.0/24: down', false],
    ['Warning from somebody: Could not create route 10.244.7.0/24: down', upstream('10.244.7.0/24', '7.9ms'), false],
  ];
  for (const [o, u, want] of cases) {
    const { allowed } = judge(differences(snap({ [path]: o }), snap({ [path]: u })), [row]);
    t.is(allowed.get(row.id)!.length === 1, want, `${o} vs ${u}`);
  }
});

test('docs/upstream-parity.md lists exactly the allowed rows of the suite, in order', async (t) => {
  const doc = await readFile(DOC, 'utf8');
  const ids = [...doc.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]);
  t.deepEqual(
    ids,
    ALLOWED.map((r) => r.id),
  );
});
