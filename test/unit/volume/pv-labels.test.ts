import test from 'ava';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { affinityWithLabels, labelPatch, pointerSegment } from '../../../host/controllers/volume/pv-labels.js';
import { admit } from '../../../host/controllers/volume/webhook.js';
import type { Volumes } from '../../../host/cloud-volumes.js';
import { CloudCallError } from '../../../host/errors.js';

const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
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
    value: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: REGION, operator: 'In', values: ['r'] }, { key: ZONE, operator: 'In', values: ['a'] }] }] } },
  });
});

test('labelPatch keeps other labels and adds only missing ones', (t) => {
  const ops = labelPatch(pv({ metadata: { name: 'p', labels: { app: 'x', [ZONE]: 'a' } } }), LABELS);
  t.deepEqual(ops.filter((o) => o.path.startsWith('/metadata')), [{ op: 'add', path: '/metadata/labels/topology.kubernetes.io~1region', value: 'r' }]);
});

test('affinityWithLabels adds missing keys to every term and leaves constrained keys alone', (t) => {
  const current = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: ['a', 'b'] }] }, { matchExpressions: [] }] } };
  const next = affinityWithLabels(current, LABELS)!;
  t.deepEqual(next.required!.nodeSelectorTerms[0]!.matchExpressions, [{ key: ZONE, operator: 'In', values: ['a', 'b'] }, { key: REGION, operator: 'In', values: ['r'] }]);
  t.is(next.required!.nodeSelectorTerms[1]!.matchExpressions!.length, 2);
  t.is(affinityWithLabels(next, LABELS), undefined, 'nothing left to add');
});

function fakeVolumes(labels: () => Promise<Record<string, string>>): Volumes {
  return { getVolumeLabels: labels } as unknown as Volumes;
}
const request = (obj: V1PersistentVolume, operation = 'CREATE') => ({ uid: 'u', kind: { kind: 'PersistentVolume' }, operation, object: obj });

test('admit: a PV of our driver gets a base64 JSON patch', async (t) => {
  const r = await admit(request(pv()), 'd.x', fakeVolumes(async () => LABELS));
  t.true(r.allowed);
  t.is(r.patchType, 'JSONPatch');
  const ops = JSON.parse(Buffer.from(r.patch!, 'base64').toString()) as { path: string }[];
  t.deepEqual(ops.map((o) => o.path), ['/metadata/labels', '/spec/nodeAffinity']);
});

test('admit: other drivers and other operations pass untouched without a cloud call', async (t) => {
  const volumes = fakeVolumes(async () => t.fail('no call expected') as never);
  t.deepEqual(await admit(request(pv({ spec: { csi: { driver: 'other', volumeHandle: 'v' } } })), 'd.x', volumes), { uid: 'u', allowed: true });
  t.deepEqual(await admit(request(pv(), 'UPDATE'), 'd.x', volumes), { uid: 'u', allowed: true });
});

test('admit: a volume the cloud does not know is denied with one line', async (t) => {
  const r = await admit(request(pv()), 'd.x', fakeVolumes(async () => Promise.reject(new CloudCallError('GetVolumeLabels', 'NOT_FOUND', 'volume vol-1 not found'))));
  t.false(r.allowed);
  t.regex(r.status!.message, /vol-1/);
});

test('admit: an unavailable or slow cloud allows without labels and warns', async (t) => {
  const down = await admit(request(pv()), 'd.x', fakeVolumes(async () => Promise.reject(new CloudCallError('GetVolumeLabels', 'UNAVAILABLE', 'down'))));
  t.true(down.allowed);
  t.is(down.patch, undefined);
  t.regex(down.warnings![0]!, /later/);
  const slow = await admit(request(pv()), 'd.x', fakeVolumes(() => new Promise(() => undefined)), 20);
  t.true(slow.allowed);
  t.regex(slow.warnings![0]!, /no answer within 20 ms/);
});
