import test from 'ava';
import type { V1PersistentVolume, V1VolumeNodeAffinity } from '@kubernetes/client-node';
import { affinityWithLabels, labelPatch, pointerSegment } from '../../../host/controllers/volume/pv-labels.js';
import { admit } from '../../../host/controllers/volume/webhook.js';
import type { Volumes } from '../../../host/cloud-volumes.js';
import { CloudCallError } from '../../../host/errors.js';

const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const BETA_ZONE = 'failure-domain.beta.kubernetes.io/zone';
const LABELS = { [ZONE]: 'a', [REGION]: 'r' };

const pv = (over: Partial<V1PersistentVolume> = {}): V1PersistentVolume => ({
  metadata: { name: 'p' },
  spec: { csi: { driver: 'd.x', volumeHandle: 'vol-1' } },
  ...over,
});

test('pointerSegment escapes ~ and /', (t) => t.is(pointerSegment('a/b~c'), 'a~1b~0c'));

test('labelPatch on a bare PV: labels object and a new affinity term', (t) => {
  const ops = labelPatch(pv(), LABELS);
  t.deepEqual(ops[0], { op: 'add', path: '/metadata/labels', value: LABELS });
  t.deepEqual(ops[1], {
    op: 'add',
    path: '/spec/nodeAffinity',
    value: {
      required: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: REGION, operator: 'In', values: ['r'] },
              { key: ZONE, operator: 'In', values: ['a'] },
            ],
          },
        ],
      },
    },
  });
});

test('labelPatch keeps other labels and adds only missing ones', (t) => {
  const ops = labelPatch(pv({ metadata: { name: 'p', labels: { app: 'x', [ZONE]: 'a' } } }), LABELS);
  t.deepEqual(
    ops.filter((o) => o.path.startsWith('/metadata')),
    [{ op: 'add', path: '/metadata/labels/topology.kubernetes.io~1region', value: 'r' }],
  );
});

// Upstream's PersistentVolumeLabel admission: a zone label `a__b` (several
// zones) becomes `In [a, b]`; the requirements are added to every term, or to
// none when any term already constrains any of their keys.
const affinities: { description: string; current?: V1VolumeNodeAffinity; labels: Record<string, string>; want: V1VolumeNodeAffinity | undefined }[] =
  [
    {
      description: 'multi-zone value split into sorted In values',
      labels: { [ZONE]: 'b__a', [REGION]: 'r' },
      want: {
        required: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: REGION, operator: 'In', values: ['r'] },
                { key: ZONE, operator: 'In', values: ['a', 'b'] },
              ],
            },
          ],
        },
      },
    },
    {
      description: 'beta zone key split too, spaces trimmed, duplicates dropped',
      labels: { [BETA_ZONE]: 'a__ b__a' },
      want: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: BETA_ZONE, operator: 'In', values: ['a', 'b'] }] }] } },
    },
    {
      description: 'region value kept whole',
      labels: { [REGION]: 'r__s' },
      want: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: REGION, operator: 'In', values: ['r__s'] }] }] } },
    },
    {
      description: 'no conflict: every term gets every requirement',
      current: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] }, { matchExpressions: [] }] },
      },
      labels: LABELS,
      want: {
        required: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: 'disk', operator: 'In', values: ['ssd'] },
                { key: REGION, operator: 'In', values: ['r'] },
                { key: ZONE, operator: 'In', values: ['a'] },
              ],
            },
            {
              matchExpressions: [
                { key: REGION, operator: 'In', values: ['r'] },
                { key: ZONE, operator: 'In', values: ['a'] },
              ],
            },
          ],
        },
      },
    },
    {
      description: 'one key constrained in one term: nothing added anywhere',
      current: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: ['a', 'b'] }] }, { matchExpressions: [] }] },
      },
      labels: LABELS,
      want: undefined,
    },
    { description: 'no labels', labels: {}, want: undefined },
  ];
for (const c of affinities) {
  test(`affinityWithLabels: ${c.description}`, (t) => t.deepEqual(affinityWithLabels(c.current, c.labels), c.want));
}

test('labelPatch keeps the multi-zone label value as the cloud gave it', (t) => {
  const ops = labelPatch(pv(), { [ZONE]: 'a__b' });
  t.deepEqual(ops[0], { op: 'add', path: '/metadata/labels', value: { [ZONE]: 'a__b' } });
});

function fakeVolumes(labels: () => Promise<Record<string, string>>): Volumes {
  return { getVolumeLabels: labels } as unknown as Volumes;
}
const request = (obj: V1PersistentVolume, operation = 'CREATE') => ({ uid: 'u', kind: { kind: 'PersistentVolume' }, operation, object: obj });

test('admit: a PV of our driver gets a base64 JSON patch', async (t) => {
  const r = await admit(
    request(pv()),
    'd.x',
    fakeVolumes(async () => LABELS),
  );
  t.true(r.allowed);
  t.is(r.patchType, 'JSONPatch');
  const ops = JSON.parse(Buffer.from(r.patch!, 'base64').toString()) as { path: string }[];
  t.deepEqual(
    ops.map((o) => o.path),
    ['/metadata/labels', '/spec/nodeAffinity'],
  );
});

test('admit: other drivers and other operations pass untouched without a cloud call', async (t) => {
  const volumes = fakeVolumes(async () => t.fail('no call expected') as never);
  t.deepEqual(await admit(request(pv({ spec: { csi: { driver: 'other', volumeHandle: 'v' } } })), 'd.x', volumes), { uid: 'u', allowed: true });
  t.deepEqual(await admit(request(pv(), 'UPDATE'), 'd.x', volumes), { uid: 'u', allowed: true });
});

test('admit: a volume the cloud does not know is denied with one line', async (t) => {
  const r = await admit(
    request(pv()),
    'd.x',
    fakeVolumes(async () => Promise.reject(new CloudCallError('GetVolumeLabels', 'NOT_FOUND', 'volume vol-1 not found'))),
  );
  t.false(r.allowed);
  t.regex(r.status!.message, /vol-1/);
});

test('admit: an unavailable or slow cloud allows without labels and warns', async (t) => {
  const down = await admit(
    request(pv()),
    'd.x',
    fakeVolumes(async () => Promise.reject(new CloudCallError('GetVolumeLabels', 'UNAVAILABLE', 'down'))),
  );
  t.true(down.allowed);
  t.is(down.patch, undefined);
  t.regex(down.warnings![0]!, /later/);
  const slow = await admit(
    request(pv()),
    'd.x',
    fakeVolumes(() => new Promise(() => undefined)),
    20,
  );
  t.true(slow.allowed);
  t.regex(slow.warnings![0]!, /no answer within 20 ms/);
});
