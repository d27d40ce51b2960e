/**
 * Which labels node initialization writes (initLabels) and which GA labels
 * reconciliation copies from their beta twins (reconcileLabels).
 */
import test from 'ava';
import type { InstanceMetadata } from '../../../host/cloud.js';
import { initLabels, reconcileLabels, type LabelPlan } from '../../../host/controllers/node/labels.js';

const TYPE = 'node.kubernetes.io/instance-type';
const TYPE_BETA = 'beta.kubernetes.io/instance-type';
const ZONE = 'topology.kubernetes.io/zone';
const ZONE_BETA = 'failure-domain.beta.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';
const REGION_BETA = 'failure-domain.beta.kubernetes.io/region';

function meta(over: Partial<InstanceMetadata> = {}): InstanceMetadata {
  return { providerId: 'acme://i-1', instanceType: '', nodeAddresses: [], zone: '', region: '', additionalLabels: {}, ...over };
}

const ALL_TOPOLOGY = {
  [TYPE]: 'm5.large',
  [TYPE_BETA]: 'm5.large',
  [ZONE]: 'zone-a',
  [ZONE_BETA]: 'zone-a',
  [REGION]: 'region-1',
  [REGION_BETA]: 'region-1',
};

interface InitCase {
  description: string;
  current?: Record<string, string>;
  metadata: InstanceMetadata;
  set: Record<string, string>;
  skipped?: LabelPlan['skipped'];
}

const initCases: InitCase[] = [
  { description: 'nothing known: nothing to set', metadata: meta(), set: {} },
  {
    description: 'instance type, zone and region get GA and beta labels',
    metadata: meta({ instanceType: 'm5.large', zone: 'zone-a', region: 'region-1' }),
    set: ALL_TOPOLOGY,
  },
  { description: 'only a zone', metadata: meta({ zone: 'zone-a' }), set: { [ZONE]: 'zone-a', [ZONE_BETA]: 'zone-a' } },
  {
    description: 'labels that already have the value are not rewritten',
    current: { [ZONE]: 'zone-a', [ZONE_BETA]: 'zone-a' },
    metadata: meta({ zone: 'zone-a', region: 'region-1' }),
    set: { [REGION]: 'region-1', [REGION_BETA]: 'region-1' },
  },
  {
    description: 'well-known labels with another value are overwritten (as upstream)',
    current: { [ZONE]: 'old', [TYPE_BETA]: 'old' },
    metadata: meta({ zone: 'zone-a', instanceType: 't3' }),
    set: { [ZONE]: 'zone-a', [ZONE_BETA]: 'zone-a', [TYPE]: 't3', [TYPE_BETA]: 't3' },
  },
  {
    description: 'an empty value never clears an existing well-known label',
    current: { [ZONE]: 'zone-a' },
    metadata: meta({ zone: '' }),
    set: {},
  },
  {
    description: 'additional labels are added when absent',
    metadata: meta({ additionalLabels: { 'acme.example.com/pool': 'blue', tier: 'gold', empty: '' } }),
    set: { 'acme.example.com/pool': 'blue', tier: 'gold', empty: '' },
  },
  {
    description: 'additional labels in reserved namespaces are skipped',
    metadata: meta({
      additionalLabels: {
        'kubernetes.io/hostname': 'evil',
        'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
        'k8s.io/x': 'y',
        'sub.k8s.io/x': 'y',
        'node-role.kubernetes.io/control-plane': '',
        'notkubernetes.io/ok': 'yes',
        'kubernetes.io.example.com/ok': 'yes',
      },
    }),
    set: { 'notkubernetes.io/ok': 'yes', 'kubernetes.io.example.com/ok': 'yes' },
    skipped: [
      { key: 'kubernetes.io/hostname', why: 'reserved kubernetes.io/k8s.io namespace' },
      { key: 'node.kubernetes.io/exclude-from-external-load-balancers', why: 'reserved kubernetes.io/k8s.io namespace' },
      { key: 'k8s.io/x', why: 'reserved kubernetes.io/k8s.io namespace' },
      { key: 'sub.k8s.io/x', why: 'reserved kubernetes.io/k8s.io namespace' },
      { key: 'node-role.kubernetes.io/control-plane', why: 'reserved kubernetes.io/k8s.io namespace' },
    ],
  },
  {
    description: 'an additional label cannot set a well-known topology label',
    metadata: meta({ zone: 'zone-a', additionalLabels: { [ZONE]: 'zone-evil' } }),
    set: { [ZONE]: 'zone-a', [ZONE_BETA]: 'zone-a' },
    skipped: [{ key: ZONE, why: 'reserved kubernetes.io/k8s.io namespace' }],
  },
  {
    description: 'existing labels are never overwritten by additional labels',
    current: { pool: 'red', same: 'v' },
    metadata: meta({ additionalLabels: { pool: 'blue', same: 'v', fresh: 'x' } }),
    set: { fresh: 'x' },
    skipped: [{ key: 'pool', why: 'label already set to a different value' }],
  },
  {
    description: 'an existing empty label is not overwritten',
    current: { pool: '' },
    metadata: meta({ additionalLabels: { pool: 'blue' } }),
    set: {},
    skipped: [{ key: 'pool', why: 'label already set to a different value' }],
  },
  {
    description: 'label keys named like Object.prototype members are ordinary labels',
    metadata: meta({ additionalLabels: { constructor: 'x', toString: 'y', hasOwnProperty: 'z' } }),
    set: { constructor: 'x', toString: 'y', hasOwnProperty: 'z' },
  },
];

for (const c of initCases) {
  test(`initLabels: ${c.description}`, (t) => {
    const current = { ...(c.current ?? {}) };
    const plan = initLabels(current, c.metadata);
    t.deepEqual(plan.set, c.set);
    t.deepEqual(plan.skipped, c.skipped ?? []);
    t.deepEqual(current, c.current ?? {}, 'current labels are not modified');
  });
}

interface ReconcileCase {
  description: string;
  current: Record<string, string>;
  set: Record<string, string>;
}

const reconcileCases: ReconcileCase[] = [
  { description: 'no labels', current: {}, set: {} },
  { description: 'GA and beta agree', current: ALL_TOPOLOGY, set: {} },
  {
    description: 'beta labels only: GA labels are copied',
    current: { [ZONE_BETA]: 'zone-a', [REGION_BETA]: 'region-1', [TYPE_BETA]: 'm5.large', other: 'x' },
    set: { [ZONE]: 'zone-a', [REGION]: 'region-1', [TYPE]: 'm5.large' },
  },
  { description: 'beta is the source of truth when they differ', current: { [ZONE_BETA]: 'zone-b', [ZONE]: 'zone-a' }, set: { [ZONE]: 'zone-b' } },
  { description: 'GA only: nothing to do (never GA → beta)', current: { [ZONE]: 'zone-a', [TYPE]: 't3' }, set: {} },
  { description: 'empty beta value is copied too', current: { [REGION_BETA]: '', [REGION]: 'r' }, set: { [REGION]: '' } },
];

for (const c of reconcileCases) {
  test(`reconcileLabels: ${c.description}`, (t) => {
    t.deepEqual(reconcileLabels(c.current), c.set);
  });
}
