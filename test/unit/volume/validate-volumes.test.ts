import test from 'ava';
import {
  labelMapProblems,
  volumeLabelsProblems,
  stringMapProblems,
  topologyProblems,
  volumeHandleProblem,
  volumeIdProblem,
  volumeProblems,
} from '../../../host/plugin/validate-volumes.js';

const ok = { volumeId: 'vol-1', capacityBytes: 1024, volumeContext: { a: 'b' }, accessibleTopology: [{ 'topology.kubernetes.io/zone': 'a' }] };

test('a good volume has no problems', (t) => t.deepEqual(volumeProblems(ok, { requiredBytes: 1024, limitBytes: 0 }), []));

test('volume problems are named', (t) => {
  t.truthy(volumeIdProblem(''));
  t.truthy(volumeIdProblem('a\nb'));
  t.truthy(volumeIdProblem('x'.repeat(2000)));
  t.regex(volumeProblems({ ...ok, capacityBytes: 10 }, { requiredBytes: 1024, limitBytes: 0 }).join(), /below the requested/);
  t.regex(volumeProblems({ ...ok, capacityBytes: 4096 }, { requiredBytes: 1024, limitBytes: 2048 }).join(), /exceeds the limit/);
  t.regex(volumeProblems({ ...ok, capacityBytes: -1 }).join(), /whole number/);
  t.regex(volumeProblems({ ...ok, capacityBytes: 1.5 }).join(), /whole number/);
});

test('topology segments must be valid label keys and values', (t) => {
  t.deepEqual(topologyProblems([{ 'topology.kubernetes.io/zone': 'a' }]), []);
  t.regex(topologyProblems([{}]).join(), /no segments/);
  t.regex(topologyProblems([{ 'bad key!': 'a' }]).join(), /label key/);
  t.regex(topologyProblems([{ zone: 'not valid!' }]).join(), /label value/);
  t.regex(topologyProblems(Array.from({ length: 20 }, () => ({ z: 'a' }))).join(), /at most/);
});

test('maps are bounded', (t) => {
  t.regex(stringMapProblems('ctx', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']))).join(), /at most 64/);
  t.regex(stringMapProblems('ctx', { '': 'v' }).join(), /empty key/);
  t.regex(labelMapProblems('labels', { 'topology.kubernetes.io/zone': 'a b' }).join(), /label value/);
});

const idCases: { id: string; problem?: RegExp; why: string }[] = [
  { id: 'vol-1', why: 'plain' },
  { id: 'projects/p/zones/z/disks/d', why: 'path-like' },
  { id: 'vol 1', problem: /outside printable ASCII \(or spaces\)/, why: 'space' },
  { id: 'vol-\u0000', problem: /"vol-\\u0000"/, why: 'NUL, escaped in the problem' },
  { id: 'vol-\u202e1', problem: /outside printable ASCII/, why: 'right-to-left override' },
  { id: 'vol-東京', problem: /outside printable ASCII/, why: 'CJK' },
];
for (const c of idCases) {
  test(`volume_id ${JSON.stringify(c.id)} (${c.why}) is ${c.problem ? 'refused' : 'accepted'}`, (t) => {
    const p = volumeIdProblem(c.id);
    if (c.problem) t.regex(p ?? '', c.problem);
    else t.is(p, undefined);
  });
}

test('a volume handle from a PV only has to be bounded and free of hidden characters', (t) => {
  t.is(volumeHandleProblem('vol 東京'), undefined);
  t.regex(volumeHandleProblem('vol\u001b') ?? '', /hidden|control/);
  t.regex(volumeHandleProblem('') ?? '', /1\.\.1024/);
});

test('map text may not hide characters, and a map holds at most 256 KiB', (t) => {
  t.deepEqual(stringMapProblems('ctx', { path: '/dev/disk/by-id/x', note: 'zone 東京' }), []);
  t.regex(stringMapProblems('ctx', { 'k\n': 'v' }).join(), /ctx key "k\\n" contains control, bidi or invisible characters/);
  t.regex(stringMapProblems('ctx', { k: 'a\u202eb' }).join(), /ctx value of "k" .* contains control, bidi or invisible/);
  t.regex(stringMapProblems('ctx', { k: 'a\ud800' }).join(), /invisible/, 'lone surrogate');
  const big = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, 'v'.repeat(4096)]));
  t.regex(stringMapProblems('ctx', big).join(), /has 262\d+ bytes of keys and values \(at most 262144\)/);
});

test('volumeLabelsProblems: a zone list (a__b) may not have an empty zone, as upstream; other keys are plain label values', (t) => {
  t.deepEqual(volumeLabelsProblems({ 'topology.kubernetes.io/zone': 'a__b', 'topology.kubernetes.io/region': 'r' }), []);
  t.regex(volumeLabelsProblems({ 'topology.kubernetes.io/zone': 'a____b' }).join(), /empty zone/);
  t.regex(volumeLabelsProblems({ 'failure-domain.beta.kubernetes.io/zone': 'a____b' }).join(), /empty zone/);
  t.deepEqual(volumeLabelsProblems({ 'example.com/x': 'a____b' }), []);
  t.regex(volumeLabelsProblems({ 'topology.kubernetes.io/zone': 'a b' }).join(), /label value/);
});
