import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import { dropManagedFields, slimNode } from '../../../host/kube/cache-transforms.js';

const node = (): V1Node => ({
  metadata: {
    name: 'n1',
    uid: 'u1',
    resourceVersion: '7',
    labels: { 'topology.kubernetes.io/zone': 'z1' },
    annotations: { a: 'b' },
    managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': {} } }],
  },
  spec: { providerID: 'local://n1', podCIDR: '10.0.0.0/24', podCIDRs: ['10.0.0.0/24'], taints: [{ key: 'k', effect: 'NoSchedule' }] },
  status: {
    addresses: [{ type: 'InternalIP', address: '10.1.0.1' }],
    conditions: [{ type: 'Ready', status: 'True' }],
    capacity: { cpu: '4' },
    nodeInfo: {
      machineID: 'm',
      systemUUID: 's',
      bootID: 'b',
      kernelVersion: 'k',
      osImage: 'o',
      containerRuntimeVersion: 'c',
      kubeletVersion: 'v',
      kubeProxyVersion: 'v',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
    images: [{ names: ['registry.example.com/app:v1'], sizeBytes: 1 }],
    volumesInUse: ['kubernetes.io/csi/d^v1'],
    volumesAttached: [{ name: 'kubernetes.io/csi/d^v1', devicePath: '' }],
  },
});

const table: { name: string; transform: (n: V1Node) => V1Node; dropped: [string, string][] }[] = [
  { name: 'dropManagedFields', transform: dropManagedFields, dropped: [['metadata', 'managedFields']] },
  {
    name: 'slimNode',
    transform: slimNode,
    dropped: [
      ['metadata', 'managedFields'],
      ['status', 'images'],
      ['status', 'volumesInUse'],
      ['status', 'volumesAttached'],
    ],
  },
];

for (const { name, transform, dropped } of table) {
  test(`${name}: drops exactly ${dropped.map((p) => p.join('.')).join(', ')}; everything else stays`, (t) => {
    const want = node() as unknown as Record<string, Record<string, unknown>>;
    for (const [outer, inner] of dropped) want[outer]![inner] = undefined;
    t.deepEqual(transform(node()), want as V1Node);
  });
}

test('slimNode: a node without status or managedFields is left as it is', (t) => {
  t.deepEqual(slimNode({ metadata: { name: 'bare' } }), { metadata: { name: 'bare' } });
});
