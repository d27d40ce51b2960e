import test from 'ava';
import { keyOf, splitKey } from '../../../host/kube/keys.js';

const keyTable: { name: string; obj: Parameters<typeof keyOf>[0]; want: string }[] = [
  { name: 'cluster-scoped', obj: { metadata: { name: 'node-1' } }, want: 'node-1' },
  { name: 'namespaced', obj: { metadata: { name: 'svc', namespace: 'kube-system' } }, want: 'kube-system/svc' },
  { name: 'empty namespace is cluster-scoped', obj: { metadata: { name: 'n', namespace: '' } }, want: 'n' },
];
for (const { name, obj, want } of keyTable) {
  test(`keyOf: ${name}`, (t) => {
    t.is(keyOf(obj), want);
  });
}

test('keyOf: throws without a name', (t) => {
  t.throws(() => keyOf({}));
  t.throws(() => keyOf({ metadata: { namespace: 'ns' } }));
});

const splitTable: { key: string; want: ReturnType<typeof splitKey> }[] = [
  { key: 'node-1', want: { namespace: undefined, name: 'node-1' } },
  { key: 'kube-system/svc', want: { namespace: 'kube-system', name: 'svc' } },
];
for (const { key, want } of splitTable) {
  test(`splitKey: ${key}`, (t) => {
    t.deepEqual(splitKey(key), want);
    t.is(keyOf({ metadata: { name: want.name, namespace: want.namespace } }), key, 'round-trips');
  });
}

for (const bad of ['', 'a/b/c', '/name', 'ns/', '/']) {
  test(`splitKey: rejects ${JSON.stringify(bad)}`, (t) => {
    t.throws(() => splitKey(bad));
  });
}
