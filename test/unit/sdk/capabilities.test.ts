import test from 'ava';
import { Capability, Service } from '../../../proto/gen/ccm/provider/v1/identity.js';
import { deriveCapabilities, LEGACY_INSTANCES_METHODS } from '../../../sdk/capabilities.js';
import type { CloudProvider } from '../../../sdk/provider.js';

const info = { name: 't.ccm.dev', vendorVersion: '1', providerName: 't' };
const fn = async () => ({}) as never;

interface Case {
  name: string;
  provider: CloudProvider;
  services: Service[];
  capabilities: Capability[];
}

const cases: Case[] = [
  { name: 'nothing but info', provider: { info }, services: [], capabilities: [] },
  {
    name: 'empty service objects still announce the service',
    provider: { info, instances: {}, zones: {}, clusters: {}, loadBalancers: {}, routes: {}, volumes: {} },
    services: [
      Service.SERVICE_INSTANCES,
      Service.SERVICE_ZONES,
      Service.SERVICE_CLUSTERS,
      Service.SERVICE_LOAD_BALANCERS,
      Service.SERVICE_ROUTES,
      Service.SERVICE_VOLUMES,
    ],
    capabilities: [],
  },
  {
    name: 'one batch method is not batch',
    provider: { info, instances: { getInstancesStatus: fn } },
    services: [Service.SERVICE_INSTANCES],
    capabilities: [],
  },
  {
    name: 'both batch methods',
    provider: { info, instances: { getInstancesStatus: fn, getInstancesMetadata: fn } },
    services: [Service.SERVICE_INSTANCES],
    capabilities: [Capability.CAPABILITY_INSTANCES_BATCH],
  },
  ...LEGACY_INSTANCES_METHODS.map((m) => ({
    name: `legacy method ${m}`,
    provider: { info, instances: { [m]: fn } },
    services: [Service.SERVICE_INSTANCES],
    capabilities: [Capability.CAPABILITY_INSTANCES_LEGACY],
  })),
  {
    name: 'load balancer batch hosts and ip mode proxy',
    provider: { info: { ...info, loadBalancerIpModeProxy: true }, loadBalancers: { updateLoadBalancerHosts: fn } },
    services: [Service.SERVICE_LOAD_BALANCERS],
    capabilities: [Capability.CAPABILITY_LOAD_BALANCER_BATCH_HOSTS, Capability.CAPABILITY_LOAD_BALANCER_IP_MODE_PROXY],
  },
  {
    name: 'load balancer batch ensure; the single ensure alone is not batch',
    provider: { info, loadBalancers: { ensureLoadBalancers: fn, ensureLoadBalancer: fn } },
    services: [Service.SERVICE_LOAD_BALANCERS],
    capabilities: [Capability.CAPABILITY_LOAD_BALANCER_BATCH_ENSURE],
  },
  {
    name: 'single ensure only',
    provider: { info, loadBalancers: { ensureLoadBalancer: fn } },
    services: [Service.SERVICE_LOAD_BALANCERS],
    capabilities: [],
  },
  {
    name: 'ip mode proxy without the service is dropped',
    provider: { info: { ...info, loadBalancerIpModeProxy: true } },
    services: [],
    capabilities: [],
  },
  {
    name: 'routes reconcile',
    provider: { info, routes: { reconcileRoutes: fn, listRoutes: fn } },
    services: [Service.SERVICE_ROUTES],
    capabilities: [Capability.CAPABILITY_ROUTES_RECONCILE],
  },
  {
    name: 'volumes list and expand online',
    provider: { info: { ...info, volumesExpandOnline: true }, volumes: { listVolumes: fn } },
    services: [Service.SERVICE_VOLUMES],
    capabilities: [Capability.CAPABILITY_VOLUMES_LIST_PUBLISHED_NODES, Capability.CAPABILITY_VOLUMES_EXPAND_ONLINE],
  },
  { name: 'expand online without volumes is dropped', provider: { info: { ...info, volumesExpandOnline: true } }, services: [], capabilities: [] },
  {
    name: 'a non-function property is not a method',
    provider: { info, instances: { getInstancesStatus: fn, getInstancesMetadata: 'yes' as never } },
    services: [Service.SERVICE_INSTANCES],
    capabilities: [],
  },
];

for (const c of cases) {
  test(`deriveCapabilities: ${c.name}`, (t) => {
    const got = deriveCapabilities(c.provider);
    t.deepEqual(got.services, c.services);
    t.deepEqual(got.capabilities, c.capabilities);
  });
}

test('deriveCapabilities sees methods of class instances (prototype methods)', (t) => {
  class Instances {
    async getInstancesStatus() {
      return { results: [] };
    }
    async getInstancesMetadata() {
      return { results: [] };
    }
  }
  const got = deriveCapabilities({ info, instances: new Instances() });
  t.deepEqual(got.capabilities, [Capability.CAPABILITY_INSTANCES_BATCH]);
});

test('deriveCapabilities copies provider name and cluster id flag', (t) => {
  t.like(deriveCapabilities({ info }), { providerName: 't', hasClusterId: false });
  t.like(deriveCapabilities({ info: { ...info, hasClusterId: true } }), { hasClusterId: true });
});

const ownership: { name: string; info: CloudProvider['info']; prefixes: string[]; selector: string }[] = [
  { name: 'none declared (the host defaults to <providerName>://)', info, prefixes: [], selector: '' },
  {
    name: 'two prefixes and a selector',
    info: { ...info, providerIdPrefixes: ['t://', 'tmetal://'], nodeSelector: 'cloud=t' },
    prefixes: ['t://', 'tmetal://'],
    selector: 'cloud=t',
  },
];
for (const c of ownership) {
  test(`node ownership declarations: ${c.name}`, (t) => {
    const caps = deriveCapabilities({ info: c.info });
    t.deepEqual([caps.providerIdPrefixes, caps.nodeSelector], [c.prefixes, c.selector]);
  });
}
test('deriveCapabilities sends the load balancer class declaration with a load balancer service only', (t) => {
  const classes = { ...info, loadBalancerClasses: ['example.com/a'], loadBalancerClassesOnly: true };
  const rows = [
    ['with load balancers', deriveCapabilities({ info: classes, loadBalancers: {} })],
    ['without load balancers', deriveCapabilities({ info: classes })],
    ['declaring nothing', deriveCapabilities({ info, loadBalancers: {} })],
  ] as const;
  t.deepEqual(
    rows.map(([what, c]) => [what, c.loadBalancerClasses, c.loadBalancerClassesOnly]),
    [
      ['with load balancers', ['example.com/a'], true],
      ['without load balancers', [], false],
      ['declaring nothing', [], false],
    ],
  );
});

test('deriveCapabilities sends the volume provisioner names with a volume service only', (t) => {
  const named = { ...info, volumeProvisioners: ['disk.example.com'] };
  const rows = [
    ['with volumes', deriveCapabilities({ info: named, volumes: {} })],
    ['without volumes', deriveCapabilities({ info: named, routes: {} })],
    ['declaring nothing', deriveCapabilities({ info, volumes: {} })],
  ] as const;
  t.deepEqual(
    rows.map(([what, c]) => [what, c.volumeProvisioners]),
    [
      ['with volumes', ['disk.example.com']],
      ['without volumes', []],
      ['declaring nothing', []],
    ],
  );
});
