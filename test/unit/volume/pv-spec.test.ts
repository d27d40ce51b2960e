import test from 'ava';
import type { V1Node, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import {
  BadClaimError,
  createRequestFor,
  nodeAffinityFor,
  persistentVolumeFor,
  topologiesFromClass,
} from '../../../host/controllers/volume/pv-spec.js';

const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';

const claim = (over: Partial<V1PersistentVolumeClaim['spec']> = {}): V1PersistentVolumeClaim => ({
  metadata: { name: 'data', namespace: 'ns', uid: 'u-1' },
  spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '1Gi' } }, ...over },
});
const sc = (over: Partial<V1StorageClass> = {}): V1StorageClass => ({ metadata: { name: 'fast' }, provisioner: 'disk.example.com', ...over });

test('request: name from the claim uid, size, parameters without reserved keys', (t) => {
  const r = createRequestFor(claim(), sc({ parameters: { type: 'ssd', 'csi.storage.k8s.io/fstype': 'xfs' } }));
  t.deepEqual(r, { name: 'pvc-u-1', requiredBytes: 1024 ** 3, limitBytes: 0, parameters: { type: 'ssd' }, requisite: [], preferred: [] });
});

test('request: allowedTopologies become requisite topologies (every combination)', (t) => {
  const r = createRequestFor(
    claim(),
    sc({
      allowedTopologies: [
        {
          matchLabelExpressions: [
            { key: ZONE, values: ['a', 'b'] },
            { key: REGION, values: ['r'] },
          ],
        },
      ],
    }),
  );
  t.deepEqual(r.requisite, [
    { [ZONE]: 'a', [REGION]: 'r' },
    { [ZONE]: 'b', [REGION]: 'r' },
  ]);
});

test('request: the selected node decides the topology (WaitForFirstConsumer)', (t) => {
  const node: V1Node = { metadata: { name: 'n', labels: { [ZONE]: 'c', [REGION]: 'r', other: 'x' } } };
  const r = createRequestFor(claim(), sc({ allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE, values: ['a'] }] }] }), node);
  t.deepEqual(r.requisite, [{ [ZONE]: 'c', [REGION]: 'r' }]);
  t.deepEqual(r.preferred, [{ [ZONE]: 'c', [REGION]: 'r' }]);
});

test('request: bad sizes are BadClaimError', (t) => {
  t.throws(() => createRequestFor(claim({ resources: { requests: {} } }), sc()), { instanceOf: BadClaimError, message: /positive size/ });
  t.throws(() => createRequestFor(claim({ resources: { requests: { storage: 'lots' } } }), sc()), { instanceOf: BadClaimError });
  t.throws(() => createRequestFor(claim({ resources: { requests: { storage: '2Gi' }, limits: { storage: '1Gi' } } }), sc()), {
    instanceOf: BadClaimError,
    message: /below its request/,
  });
});

test('PV: pre-bound, csi source, affinity, class policy and options, finalizer', (t) => {
  const pv = persistentVolumeFor(
    claim(),
    sc({ reclaimPolicy: 'Retain', mountOptions: ['noatime'], parameters: { 'csi.storage.k8s.io/fstype': 'xfs' } }),
    { volumeId: 'vol-1', capacityBytes: 2 * 1024 ** 3, volumeContext: { k: 'v' }, accessibleTopology: [{ [ZONE]: 'a' }] },
    'disk.example.com',
    'id-1',
  );
  t.is(pv.metadata?.name, 'pvc-u-1');
  t.deepEqual(pv.metadata?.finalizers, ['external-provisioner.volume.kubernetes.io/finalizer']);
  t.is(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'], 'disk.example.com');
  t.deepEqual(pv.spec?.claimRef, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'data', uid: 'u-1' });
  t.is(pv.spec?.capacity?.storage, '2Gi');
  t.is(pv.spec?.persistentVolumeReclaimPolicy, 'Retain');
  t.deepEqual(pv.spec?.mountOptions, ['noatime']);
  t.is(pv.spec?.storageClassName, 'fast');
  t.deepEqual(pv.spec?.csi, {
    driver: 'disk.example.com',
    volumeHandle: 'vol-1',
    fsType: 'xfs',
    volumeAttributes: { k: 'v', 'storage.kubernetes.io/csiProvisionerIdentity': 'id-1' },
  });
  t.deepEqual(pv.spec?.nodeAffinity, { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: ['a'] }] }] } });
});

test('PV: default reclaim policy Delete; no topology, no affinity', (t) => {
  const pv = persistentVolumeFor(claim(), sc(), { volumeId: 'v', capacityBytes: 1024 ** 3, volumeContext: {}, accessibleTopology: [] }, 'd.x', 'i');
  t.is(pv.spec?.persistentVolumeReclaimPolicy, 'Delete');
  t.is(pv.spec?.nodeAffinity, undefined);
  t.is(nodeAffinityFor([]), undefined);
});

test('topologiesFromClass ignores empty terms', (t) => {
  t.deepEqual(topologiesFromClass(sc({ allowedTopologies: [{ matchLabelExpressions: [] }] })), []);
});
