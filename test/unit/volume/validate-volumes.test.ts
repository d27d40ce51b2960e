import test from 'ava';
import { labelMapProblems, stringMapProblems, topologyProblems, volumeIdProblem, volumeProblems } from '../../../host/plugin/validate-volumes.js';

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
