import { stat } from 'node:fs/promises';
import test from 'ava';
import { Code, fromStatus, InstanceNotFoundError, ProviderError, RateLimitedError } from '../../../sdk/errors.js';
import { ErrorReason } from '../../../sdk/protocol.js';
import { NodeAddressType } from '../../../proto/gen/ccm/provider/v1/common.js';
import { IpMode } from '../../../proto/gen/ccm/provider/v1/load_balancers.js';
import type { Route } from '../../../proto/gen/ccm/provider/v1/routes.js';
import { addInstances, setInstanceState } from '../../../plugins/local/inventory.js';
import { updateKnobs } from '../../../plugins/local/knobs.js';
import { loadBalancerName } from '../../../plugins/local/names.js';
import type { LocalCloud } from '../../../plugins/local/cloud.js';
import { ctx, meta, newCloud, node, service } from './_helpers.js';

const DEFAULTS = { zone: 'local-a', region: 'local', nodeCidr: '127.1.0.0/16' };
const MiB = 1024 * 1024;

/** Adds instances n1 (running), n2 (stopped) and n3 (zone b); returns their ids by name. */
async function seed(cloud: LocalCloud): Promise<Record<string, string>> {
  const added = await addInstances(
    cloud.store,
    [
      { name: 'n1', labels: { 'example.com/pool': 'blue' }, addresses: [{ type: 'ExternalIP', address: '203.0.113.1' }] },
      { name: 'n2', type: 'local.large' },
      { name: 'n3', zone: 'local-b' },
    ],
    DEFAULTS,
  );
  await setInstanceState(cloud.store, 'n2', 'stopped');
  return Object.fromEntries(added.map((i) => [i.name, i.id]));
}

function route(targetNode: string, destinationCidr: string, name = ''): Route {
  return { name, targetNode, targetNodeAddresses: [], destinationCidr, blackhole: false };
}

/** The code (and reason) a call rejects with. */
async function failure(p: Promise<unknown>): Promise<{ code: Code; reason?: string; retryAfterMs?: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ProviderError) return { code: err.code, reason: err.reason, retryAfterMs: err.retryAfterMs, message: err.message };
    throw err;
  }
  throw new Error('call succeeded, expected a failure');
}

test('info declares the local provider', async (t) => {
  const cloud = await newCloud(t);
  t.is(cloud.info.providerName, 'local');
  t.truthy(cloud.instances?.getInstancesStatus && cloud.loadBalancers?.updateLoadBalancerHosts && cloud.routes?.reconcileRoutes);
  t.truthy(cloud.volumes?.getVolumeLabels && cloud.zones?.getZoneByNodeName && cloud.clusters?.scrubDns && cloud.instances?.currentNodeName);
});

test('instance lookups by providerID and by name', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const inst = cloud.instances!;
  const cases: { title: string; ref: ReturnType<typeof node>; exists: boolean; shutdown?: boolean }[] = [
    { title: 'running by name', ref: node('n1'), exists: true, shutdown: false },
    { title: 'running by providerID', ref: node('renamed', `local://${ids.n1}`), exists: true, shutdown: false },
    { title: 'stopped exists', ref: node('n2'), exists: true, shutdown: true },
    { title: 'stopped by providerID', ref: node('', `local://${ids.n2}`), exists: true, shutdown: true },
    { title: 'absent name', ref: node('ghost'), exists: false },
    { title: 'absent providerID', ref: node('n1', 'local://i-00000000'), exists: false },
  ];
  for (const c of cases) {
    t.is((await inst.instanceExists!({ meta: meta(), node: c.ref }, ctx())).exists, c.exists, c.title);
    if (c.exists) {
      t.is((await inst.instanceShutdown!({ meta: meta(), node: c.ref }, ctx())).shutdown, c.shutdown ?? false, c.title);
    } else {
      const f = await failure(inst.instanceShutdown!({ meta: meta(), node: c.ref }, ctx()));
      t.is(f.reason, ErrorReason.INSTANCE_NOT_FOUND, c.title);
      await t.throwsAsync(inst.instanceMetadata!({ meta: meta(), node: c.ref }, ctx()), { instanceOf: InstanceNotFoundError }, c.title);
    }
  }
  const foreign = await failure(inst.instanceExists!({ meta: meta(), node: node('n1', 'aws:///us-east-1a/i-1') }, ctx()));
  t.is(foreign.code, Code.INVALID_ARGUMENT);
  t.is((await failure(inst.instanceExists!({ meta: meta(), node: node('') }, ctx()))).code, Code.INVALID_ARGUMENT);
});

test('InstanceMetadata reports providerID, type, addresses, zone, region and labels', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const { metadata } = await cloud.instances!.instanceMetadata!({ meta: meta(), node: node('n1') }, ctx());
  t.deepEqual(metadata, {
    providerId: `local://${ids.n1}`,
    instanceType: 'local.small',
    nodeAddresses: [
      { type: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP, address: '127.1.0.1' },
      { type: NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_IP, address: '203.0.113.1' },
      { type: NodeAddressType.NODE_ADDRESS_TYPE_HOSTNAME, address: 'n1' },
    ],
    zone: 'local-a',
    region: 'local',
    additionalLabels: { 'example.com/pool': 'blue' },
  });
  t.regex(ids.n1!, /^i-[0-9a-f]{8}$/);
});

test('an instance added with noHostname reports its IPs only (a cloud without Hostname addresses)', async (t) => {
  const cloud = await newCloud(t);
  await addInstances(cloud.store, [{ name: 'ips-only', addresses: [{ type: 'InternalIP', address: '127.1.9.9' }], noHostname: true }], DEFAULTS);
  const { metadata } = await cloud.instances!.instanceMetadata!({ meta: meta(), node: node('ips-only') }, ctx());
  t.deepEqual(metadata?.nodeAddresses, [{ type: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP, address: '127.1.9.9' }]);
});

test('legacy instance RPCs and zones', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const inst = cloud.instances!;
  const pid = `local://${ids.n3}`;
  t.is((await inst.instanceId!({ meta: meta(), nodeName: 'n3' }, ctx())).instanceId, ids.n3);
  t.is((await inst.instanceType!({ meta: meta(), nodeName: 'n2' }, ctx())).instanceType, 'local.large');
  t.is((await inst.instanceTypeByProviderId!({ meta: meta(), providerId: pid }, ctx())).instanceType, 'local.small');
  t.is((await inst.nodeAddresses!({ meta: meta(), nodeName: 'n3' }, ctx())).addresses.length, 2);
  t.deepEqual(
    (await inst.nodeAddressesByProviderId!({ meta: meta(), providerId: pid }, ctx())).addresses,
    (await inst.nodeAddresses!({ meta: meta(), nodeName: 'n3' }, ctx())).addresses,
  );
  t.is((await failure(inst.instanceId!({ meta: meta(), nodeName: 'ghost' }, ctx()))).reason, ErrorReason.INSTANCE_NOT_FOUND);
  t.is((await inst.currentNodeName!({ meta: meta(), hostname: 'n1' }, ctx())).nodeName, 'n1');
  t.is((await inst.currentNodeName!({ meta: meta(), hostname: 'elsewhere' }, ctx())).nodeName, 'elsewhere');
  for (let i = 0; i < 2; i++) {
    await inst.addSshKeyToAllInstances!({ meta: meta(), user: 'core', keyData: Buffer.from('ssh-ed25519 AAAA') }, ctx());
  }
  t.is(cloud.store.read().sshKeys.length, 1);

  const zones = cloud.zones!;
  t.deepEqual((await zones.getZone!({ meta: meta() }, ctx())).zone, { failureDomain: 'local-a', region: 'local' });
  t.deepEqual((await zones.getZoneByProviderId!({ meta: meta(), providerId: pid }, ctx())).zone, { failureDomain: 'local-b', region: 'local' });
  t.deepEqual((await zones.getZoneByNodeName!({ meta: meta(), nodeName: 'n3' }, ctx())).zone, { failureDomain: 'local-b', region: 'local' });
  t.is((await failure(zones.getZoneByNodeName!({ meta: meta(), nodeName: 'ghost' }, ctx()))).reason, ErrorReason.INSTANCE_NOT_FOUND);

  const clusters = cloud.clusters!;
  t.deepEqual((await clusters.listClusters!({ meta: meta('c1') }, ctx())).clusters, ['c1']);
  t.is((await clusters.master!({ meta: meta(), clusterName: 'c1' }, ctx())).address, '127.0.0.1');
  t.deepEqual(await clusters.scrubDns!({ meta: meta(), nameservers: ['1.1.1.1'], searches: ['a.b'] }, ctx()), {
    nameservers: ['1.1.1.1'],
    searches: ['a.b'],
  });
});

test('batch RPCs return one result per node, in order, with per-item errors', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const nodes = [node('n2'), node('ghost'), node('x', 'gce://p/z/x'), node('n1', `local://${ids.n1}`)];
  const { results } = await cloud.instances!.getInstancesStatus!({ meta: meta(), nodes }, ctx());
  t.deepEqual(
    results.map((r) => [r.nodeName, r.exists, r.shutdown, r.error ? fromStatus(r.error).code : undefined]),
    [
      ['n2', true, true, undefined],
      ['ghost', false, false, undefined],
      ['x', false, false, Code.INVALID_ARGUMENT],
      ['n1', true, false, undefined],
    ],
  );
  const md = await cloud.instances!.getInstancesMetadata!({ meta: meta(), nodes }, ctx());
  t.is(md.results.length, 4);
  t.is(md.results[0]!.metadata?.instanceType, 'local.large');
  t.is(md.results[1]!.metadata, undefined);
  t.deepEqual(fromStatus(md.results[1]!.error!).reason, ErrorReason.INSTANCE_NOT_FOUND);
  t.is(fromStatus(md.results[1]!.error!).code, Code.NOT_FOUND);
  t.is(fromStatus(md.results[2]!.error!).code, Code.INVALID_ARGUMENT);
  t.is(md.results[3]!.metadata?.providerId, `local://${ids.n1}`);
  const tooMany = Array.from({ length: 501 }, (_, i) => node(`n${i}`));
  t.is((await failure(cloud.instances!.getInstancesStatus!({ meta: meta(), nodes: tooMany }, ctx()))).code, Code.INVALID_ARGUMENT);
});

test('load balancers: deterministic name, idempotent ensure, requested IP, update (Nodes of another provider skipped), delete', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const lbs = cloud.loadBalancers!;
  const uid = '0c9d3f0e-1b2a-4c5d-8e7f-000000000001';
  const svc = service(uid);
  const { name } = await lbs.getLoadBalancerName!({ meta: meta(), service: svc }, ctx());
  t.is(name, loadBalancerName('test-cluster', uid));
  t.true(name.length <= 63);
  t.is(loadBalancerName('x'.repeat(200), uid).length <= 63, true);
  t.not(loadBalancerName('x'.repeat(200) + 'a', uid), loadBalancerName('x'.repeat(200) + 'b', uid));
  t.deepEqual(await lbs.getLoadBalancer!({ meta: meta(), service: svc }, ctx()), { exists: false });

  const first = await lbs.ensureLoadBalancer!({ meta: meta(), service: svc, nodes: [node('n2'), node('n1')] }, ctx());
  const again = await lbs.ensureLoadBalancer!({ meta: meta(), service: svc, nodes: [node('n1'), node('n2')] }, ctx());
  t.deepEqual(again, first);
  t.is(first.status?.ingress[0]?.ip, '127.0.10.1');
  t.is(first.status?.ingress[0]?.ipMode, IpMode.IP_MODE_VIP);
  t.is(cloud.store.read().loadBalancers.length, 1);
  const rec = cloud.store.read().loadBalancers[0]!;
  t.deepEqual(rec.backends, [
    { nodeName: 'n1', address: '127.1.0.1' },
    { nodeName: 'n2', address: '127.1.0.2' },
  ]);
  t.deepEqual(rec.ports, [{ name: 'p80', protocol: 'TCP', port: 80, nodePort: 30080 }]);
  t.deepEqual((await lbs.getLoadBalancer!({ meta: meta(), service: svc }, ctx())).status, first.status);

  // Another cluster gets another load balancer for the same uid.
  const other = await lbs.ensureLoadBalancer!({ meta: meta('other'), service: svc, nodes: [] }, ctx());
  t.is(other.status?.ingress[0]?.ip, '127.0.10.2');

  // A requested IP is honoured when free, refused when taken or outside the pool.
  const svc2 = service('uid-2', { loadBalancerIp: '127.0.10.77', annotations: { 'local.ccm.dev/ip-mode': 'Proxy' } });
  const r2 = await lbs.ensureLoadBalancer!({ meta: meta(), service: svc2, nodes: [] }, ctx());
  t.is(r2.status?.ingress[0]?.ip, '127.0.10.77');
  t.is(r2.status?.ingress[0]?.ipMode, IpMode.IP_MODE_PROXY);
  // The deprecated earlier name is read when ip-mode is absent, and ip-mode wins over it.
  for (const [annotations, want] of [
    [{ 'local.ccm.dev/ingress-ip-mode': 'Proxy' }, IpMode.IP_MODE_PROXY],
    [{ 'local.ccm.dev/ingress-ip-mode': 'Proxy', 'local.ccm.dev/ip-mode': 'VIP' }, IpMode.IP_MODE_VIP],
  ] as const) {
    const r = await lbs.ensureLoadBalancer!({ meta: meta('deprecated'), service: service('uid-dep', { annotations }), nodes: [] }, ctx());
    t.is(r.status?.ingress[0]?.ipMode, want, JSON.stringify(annotations));
  }
  const taken = await failure(
    lbs.ensureLoadBalancer!({ meta: meta(), service: service('uid-3', { loadBalancerIp: '127.0.10.77' }), nodes: [] }, ctx()),
  );
  t.is(taken.code, Code.FAILED_PRECONDITION);
  t.is(taken.reason, ErrorReason.IN_USE);
  t.is(
    (await failure(lbs.ensureLoadBalancer!({ meta: meta(), service: service('uid-3', { loadBalancerIp: '10.0.0.1' }), nodes: [] }, ctx()))).code,
    Code.INVALID_ARGUMENT,
  );
  t.is(
    (await failure(lbs.ensureLoadBalancer!({ meta: meta(), service: service('uid-3', { ports: [] }), nodes: [] }, ctx()))).code,
    Code.INVALID_ARGUMENT,
  );

  // Another provider's Node (a cluster mixing clouds) is no backend: this cloud cannot reach it.
  await lbs.updateLoadBalancer!(
    { meta: meta(), service: svc, nodes: [node('aws-1', 'aws:///us-east-1a/i-0abc'), node('n2', `local://${ids.n2}`)] },
    ctx(),
  );
  t.deepEqual(
    cloud.store.view().loadBalancer(name)?.backends,
    [{ nodeName: 'n2', address: '127.1.0.2' }],
    "only the cloud's own and unclaimed Nodes",
  );

  // Update: replaces backends; absent → NOT_FOUND.
  await lbs.updateLoadBalancer!({ meta: meta(), service: svc, nodes: [node('n3')] }, ctx());
  await lbs.updateLoadBalancer!({ meta: meta(), service: svc, nodes: [node('n3')] }, ctx());
  t.deepEqual(cloud.store.view().loadBalancer(name)?.backends, [{ nodeName: 'n3', address: '127.1.0.3' }]);
  t.is((await failure(lbs.updateLoadBalancer!({ meta: meta(), service: service('nope'), nodes: [] }, ctx()))).code, Code.NOT_FOUND);

  // Batch host update: per-service results.
  const hosts = await lbs.updateLoadBalancerHosts!({ meta: meta(), services: [svc, service('nope'), svc2], nodes: [node('n1')] }, ctx());
  t.deepEqual(
    hosts.results.map((r) => [r.serviceUid, r.error ? fromStatus(r.error).code : 'ok']),
    [
      [uid, 'ok'],
      ['nope', Code.NOT_FOUND],
      ['uid-2', 'ok'],
    ],
  );
  t.deepEqual(cloud.store.view().loadBalancer(name)?.backends, [{ nodeName: 'n1', address: '127.1.0.1' }]);

  // Delete twice, then the address is free again.
  await lbs.ensureLoadBalancerDeleted!({ meta: meta(), service: svc }, ctx());
  await lbs.ensureLoadBalancerDeleted!({ meta: meta(), service: svc }, ctx());
  t.false((await lbs.getLoadBalancer!({ meta: meta(), service: svc }, ctx())).exists);
  const reuse = await lbs.ensureLoadBalancer!({ meta: meta(), service: service('uid-4'), nodes: [] }, ctx());
  t.is(reuse.status?.ingress[0]?.ip, '127.0.10.1');
});

test('load balancers are tagged with the cluster UID of each ensure (adoption re-tags; none keeps the tag) and listed with it', async (t) => {
  const cloud = await newCloud(t);
  const lbs = cloud.loadBalancers!;
  const listed = async () =>
    (await lbs.listLoadBalancers!({ meta: meta(), pageSize: 0, pageToken: '' }, ctx())).loadBalancers.map((l) => l.clusterUid);
  const rows: [string, string[]][] = [];
  for (const [what, clusterUid] of [
    ['created by cluster A', 'uid-a'],
    ['ensured again by A', 'uid-a'],
    ['adopted by A restored from backup (--cluster-uid)', 'uid-restored'],
    ['ensured by a host that sends no UID', ''],
  ] as const) {
    await lbs.ensureLoadBalancer!({ meta: meta('test-cluster', clusterUid), service: service('uid-tagged'), nodes: [] }, ctx());
    rows.push([what, await listed()]);
  }
  t.deepEqual(rows, [
    ['created by cluster A', ['uid-a']],
    ['ensured again by A', ['uid-a']],
    ['adopted by A restored from backup (--cluster-uid)', ['uid-restored']],
    ['ensured by a host that sends no UID', ['uid-restored']],
  ]);
});

test('load balancer pool exhaustion answers QUOTA_EXCEEDED', async (t) => {
  const cloud = await newCloud(t, { loadBalancerCidr: '127.0.10.0/30' });
  const lbs = cloud.loadBalancers!;
  await lbs.ensureLoadBalancer!({ meta: meta(), service: service('a'), nodes: [] }, ctx());
  await lbs.ensureLoadBalancer!({ meta: meta(), service: service('b'), nodes: [] }, ctx());
  const f = await failure(lbs.ensureLoadBalancer!({ meta: meta(), service: service('c'), nodes: [] }, ctx()));
  t.is(f.code, Code.RESOURCE_EXHAUSTED);
  t.is(f.reason, ErrorReason.QUOTA_EXCEEDED);
});

test('batch ensure: one result per entry in order, each as the single call answers; a uid twice or too many entries is INVALID_ARGUMENT', async (t) => {
  const cloud = await newCloud(t, { loadBalancerCidr: '127.0.10.0/30' });
  const lbs = cloud.loadBalancers!;
  const existing = await lbs.ensureLoadBalancer!({ meta: meta(), service: service('a'), nodes: [] }, ctx());
  const services = [service('a'), service('bad', { ports: [] }), service('b'), service('c')];
  const r = await lbs.ensureLoadBalancers!({ meta: meta(), services, nodes: [node('n1')] }, ctx());
  t.deepEqual(
    r.results.map((x) => [x.serviceUid, x.error ? fromStatus(x.error).code : x.status?.ingress[0]?.ip]),
    [
      ['a', existing.status?.ingress[0]?.ip],
      ['bad', Code.INVALID_ARGUMENT],
      ['b', '127.0.10.2'],
      ['c', Code.RESOURCE_EXHAUSTED],
    ],
  );
  t.is(fromStatus(r.results[3]!.error!).reason, ErrorReason.QUOTA_EXCEEDED);
  t.deepEqual(
    cloud.store.view().state.loadBalancers.map((l) => [l.serviceUid, l.backends.map((b) => b.nodeName)]),
    [
      ['a', ['n1']],
      ['b', ['n1']],
    ],
  );
  t.is(
    (await failure(lbs.ensureLoadBalancers!({ meta: meta(), services: [service('d'), service('d')], nodes: [] }, ctx()))).code,
    Code.INVALID_ARGUMENT,
  );
  const many = Array.from({ length: 501 }, (_, i) => service(`m${i}`));
  t.is((await failure(lbs.ensureLoadBalancers!({ meta: meta(), services: many, nodes: [] }, ctx()))).code, Code.INVALID_ARGUMENT);
});

test('batch ensure and host updates see what the same batch wrote: a requested IP taken earlier in the batch, its own IP kept, backends of a load balancer created in the batch', async (t) => {
  const cloud = await newCloud(t, { loadBalancerCidr: '127.0.10.0/29' });
  const lbs = cloud.loadBalancers!;
  const services = [
    service('x', { loadBalancerIp: '127.0.10.5' }),
    service('y', { loadBalancerIp: '127.0.10.5' }),
    service('z'),
    // The same Service again with its own address: not "in use" by itself.
    service('w', { loadBalancerIp: '127.0.10.6' }),
  ];
  const r = await lbs.ensureLoadBalancers!({ meta: meta(), services, nodes: [node('n1')] }, ctx());
  t.deepEqual(
    r.results.map((x) => [x.serviceUid, x.error ? fromStatus(x.error).code : x.status?.ingress[0]?.ip]),
    [
      ['x', '127.0.10.5'],
      ['y', Code.FAILED_PRECONDITION],
      ['z', '127.0.10.1'],
      ['w', '127.0.10.6'],
    ],
  );
  const again = await lbs.ensureLoadBalancers!({ meta: meta(), services: [services[3]!, service('v')], nodes: [node('n1')] }, ctx());
  t.deepEqual(
    again.results.map((x) => x.status?.ingress[0]?.ip),
    ['127.0.10.6', '127.0.10.2'],
  );
  const hosts = await lbs.updateLoadBalancerHosts!(
    { meta: meta(), services: [services[0]!, service('v'), service('gone')], nodes: [node('n2'), node('n1')] },
    ctx(),
  );
  t.deepEqual(
    hosts.results.map((x) => (x.error ? fromStatus(x.error).code : 'ok')),
    ['ok', 'ok', Code.NOT_FOUND],
  );
  t.deepEqual(
    cloud.store.view().state.loadBalancers.map((l) => [l.serviceUid, l.ingressIp, l.backends.map((b) => b.nodeName)]),
    [
      ['x', '127.0.10.5', ['n1', 'n2']],
      ['z', '127.0.10.1', ['n1']],
      ['w', '127.0.10.6', ['n1']],
      ['v', '127.0.10.2', ['n1', 'n2']],
    ],
  );
});

test('routes: idempotent create, conflict, delete absent, blackhole', async (t) => {
  const cloud = await newCloud(t);
  await seed(cloud);
  const routes = cloud.routes!;
  const a = await routes.createRoute!({ meta: meta(), nameHint: 'uid-n1', route: route('n1', '10.244.1.0/24') }, ctx());
  const b = await routes.createRoute!({ meta: meta(), nameHint: 'uid-n1', route: route('n1', '10.244.1.0/24') }, ctx());
  t.deepEqual(b, a);
  t.true(a.route!.name.length <= 63);
  t.is(a.route!.targetNodeAddresses.length, 3);
  // Host bits are cleared: the same destination.
  t.deepEqual(await routes.createRoute!({ meta: meta(), nameHint: 'x', route: route('n1', '10.244.1.7/24') }, ctx()), a);
  const conflict = await failure(routes.createRoute!({ meta: meta(), nameHint: 'uid-n2', route: route('n2', '10.244.1.0/24') }, ctx()));
  t.is(conflict.code, Code.ALREADY_EXISTS);
  t.is((await failure(routes.createRoute!({ meta: meta(), nameHint: '', route: route('n1', '10.244.1.0') }, ctx()))).code, Code.INVALID_ARGUMENT);
  // Other clusters have their own table.
  await routes.createRoute!({ meta: meta('other'), nameHint: '', route: route('n2', '10.244.1.0/24') }, ctx());

  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('gone', '10.244.9.0/24') }, ctx());
  const listed = await routes.listRoutes!({ meta: meta(), pageSize: 0, pageToken: '' }, ctx());
  t.deepEqual(listed.routes.map((r) => [r.targetNode, r.destinationCidr, r.blackhole]).sort(), [
    ['gone', '10.244.9.0/24', true],
    ['n1', '10.244.1.0/24', false],
  ]);

  await routes.deleteRoute!({ meta: meta(), route: a.route! }, ctx());
  await routes.deleteRoute!({ meta: meta(), route: a.route! }, ctx());
  await routes.deleteRoute!({ meta: meta(), route: route('', '10.99.0.0/16', 'never-existed') }, ctx());
  t.deepEqual(
    (await routes.listRoutes!({ meta: meta(), pageSize: 0, pageToken: '' }, ctx())).routes.map((r) => r.targetNode),
    ['gone'],
  );
  t.is((await routes.listRoutes!({ meta: meta('other'), pageSize: 0, pageToken: '' }, ctx())).routes.length, 1);
});

test('routes: paging visits every route once; bad tokens answer ABORTED', async (t) => {
  const cloud = await newCloud(t);
  const routes = cloud.routes!;
  const total = 250;
  await cloud.store.update((draft) => {
    for (let i = 0; i < total; i++) {
      draft.routes.push({
        name: `r-${String(i).padStart(4, '0')}`,
        clusterName: 'test-cluster',
        targetNode: `n${i}`,
        destinationCidr: `10.${i >> 8}.${i & 255}.0/24`,
        targetNodeAddresses: [],
        createdAt: '',
      });
    }
  });
  const seen: string[] = [];
  let token = '';
  let pages = 0;
  do {
    const page = await routes.listRoutes!({ meta: meta(), pageSize: 100, pageToken: token }, ctx());
    seen.push(...page.routes.map((r) => r.name));
    token = page.nextPageToken;
    pages++;
    // A route deleted between pages does not disturb the walk.
    if (pages === 1) await routes.deleteRoute!({ meta: meta(), route: route('', '', 'r-0000') }, ctx());
  } while (token);
  t.is(pages, 3);
  t.is(seen.length, total);
  t.is(new Set(seen).size, total);

  const first = await routes.listRoutes!({ meta: meta(), pageSize: 10, pageToken: '' }, ctx());
  for (const bad of ['garbage!', 'bm90LWpzb24', Buffer.from('{"l":"volumes","s":"","k":"x"}').toString('base64url')]) {
    t.is((await failure(routes.listRoutes!({ meta: meta(), pageSize: 10, pageToken: bad }, ctx()))).code, Code.ABORTED, bad);
  }
  // A token of another cluster's listing is not valid here.
  t.is((await failure(routes.listRoutes!({ meta: meta('other'), pageSize: 10, pageToken: first.nextPageToken }, ctx()))).code, Code.ABORTED);
  t.is((await failure(routes.listRoutes!({ meta: meta(), pageSize: -1, pageToken: '' }, ctx()))).code, Code.INVALID_ARGUMENT);
});

test('ReconcileRoutes creates, deletes inside cluster CIDRs only, reports failures, converges', async (t) => {
  const cloud = await newCloud(t);
  await seed(cloud);
  const routes = cloud.routes!;
  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('n1', '10.244.1.0/24') }, ctx()); // kept
  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('n2', '10.244.2.0/24') }, ctx()); // retargeted
  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('gone', '10.244.9.0/24') }, ctx()); // deleted (blackhole)
  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('n3', '192.168.0.0/24') }, ctx()); // outside: untouched
  const desired = [
    route('n1', '10.244.1.0/24'),
    route('n3', '10.244.2.0/24'),
    route('n3', '10.244.3.0/24'),
    route('n2', '172.16.0.0/24'),
    route('n2', 'bad'),
  ];
  const req = { meta: meta(), desired, clusterCidrs: ['10.244.0.0/16'] };
  const res = await routes.reconcileRoutes!(req, ctx());
  t.deepEqual(res.created.map((r) => `${r.targetNode}:${r.destinationCidr}`).sort(), ['n3:10.244.2.0/24', 'n3:10.244.3.0/24']);
  t.deepEqual(res.deleted.map((r) => `${r.targetNode}:${r.destinationCidr}`).sort(), ['gone:10.244.9.0/24', 'n2:10.244.2.0/24']);
  t.deepEqual(
    res.failed.map((f) => [f.route?.destinationCidr, fromStatus(f.error!).code]),
    [
      ['172.16.0.0/24', Code.INVALID_ARGUMENT],
      ['bad', Code.INVALID_ARGUMENT],
    ],
  );
  const again = await routes.reconcileRoutes!(req, ctx());
  t.deepEqual([again.created.length, again.deleted.length, again.failed.length], [0, 0, 2]);
  const all = (await routes.listRoutes!({ meta: meta(), pageSize: 0, pageToken: '' }, ctx())).routes
    .map((r) => `${r.targetNode}:${r.destinationCidr}`)
    .sort();
  t.deepEqual(all, ['n1:10.244.1.0/24', 'n3:10.244.2.0/24', 'n3:10.244.3.0/24', 'n3:192.168.0.0/24']);
  t.is((await failure(routes.reconcileRoutes!({ meta: meta(), desired: [], clusterCidrs: [] }, ctx()))).code, Code.INVALID_ARGUMENT);
});

test('volumes: sparse file, idempotent create, expand, attach rules, delete', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const vols = cloud.volumes!;
  const create = (name: string, requiredBytes: number, parameters: Record<string, string> = {}) =>
    vols.createVolume!(
      { meta: meta(), name, capacityRange: { requiredBytes, limitBytes: 0 }, parameters, accessibilityRequirements: undefined },
      ctx(),
    );
  const { volume } = await create('pvc-1', 64 * MiB);
  t.regex(volume!.volumeId, /^vol-[0-9a-f]{8}$/);
  t.is(volume!.capacityBytes, 64 * MiB);
  t.deepEqual(volume!.accessibleTopology, [{ segments: { 'topology.kubernetes.io/zone': 'local-a', 'topology.kubernetes.io/region': 'local' } }]);
  const path = cloud.store.volumePath(volume!.volumeId);
  const st = await stat(path);
  t.is(st.size, 64 * MiB);
  t.true(st.blocks * 512 < st.size, 'the image is sparse');

  t.deepEqual((await create('pvc-1', 64 * MiB)).volume, volume);
  t.is(cloud.store.read().volumes.length, 1);
  t.is((await failure(create('pvc-1', 128 * MiB))).code, Code.ALREADY_EXISTS);
  t.is((await failure(create('pvc-1', 64 * MiB, { type: 'ssd' }))).code, Code.ALREADY_EXISTS);
  t.is((await failure(create('bad/name', MiB))).code, Code.INVALID_ARGUMENT);

  const expand = (requiredBytes: number, limitBytes = 0) =>
    vols.controllerExpandVolume!({ meta: meta(), volumeId: volume!.volumeId, capacityRange: { requiredBytes, limitBytes } }, ctx());
  t.is((await expand(128 * MiB)).capacityBytes, 128 * MiB);
  t.is((await expand(128 * MiB)).capacityBytes, 128 * MiB);
  t.is((await stat(path)).size, 128 * MiB);
  // required_bytes is a minimum: a volume already that large is success, at its size; only a limit below it is a shrink.
  t.is((await expand(MiB)).capacityBytes, 128 * MiB);
  t.is((await stat(path)).size, 128 * MiB);
  t.is((await failure(expand(MiB, 2 * MiB))).code, Code.INVALID_ARGUMENT);
  t.is(
    (
      await failure(
        vols.controllerExpandVolume!({ meta: meta(), volumeId: 'vol-00000000', capacityRange: { requiredBytes: MiB, limitBytes: 0 } }, ctx()),
      )
    ).code,
    Code.NOT_FOUND,
  );

  const publish = (nodeId: string, volumeId = volume!.volumeId) =>
    vols.controllerPublishVolume!({ meta: meta(), volumeId, nodeId, readonly: false, volumeContext: {} }, ctx());
  const missing = await failure(publish('local://i-00000000'));
  t.is(missing.code, Code.NOT_FOUND);
  t.is(missing.reason, ErrorReason.INSTANCE_NOT_FOUND);
  t.is((await failure(publish(`local://${ids.n1}`, 'vol-00000000'))).code, Code.NOT_FOUND);
  const pc = await publish(`local://${ids.n1}`);
  t.deepEqual(await publish(`local://${ids.n1}`), pc);
  t.is(pc.publishContext['local.ccm.dev/image'], path);
  t.is((await failure(publish(`local://${ids.n2}`))).code, Code.FAILED_PRECONDITION, 'attached elsewhere');
  t.is((await failure(publish(`local://${ids.n3}`))).code, Code.FAILED_PRECONDITION, 'other zone');

  const inUse = await failure(vols.deleteVolume!({ meta: meta(), volumeId: volume!.volumeId }, ctx()));
  t.is(inUse.code, Code.FAILED_PRECONDITION);
  t.is(inUse.reason, ErrorReason.IN_USE);

  const listed = await vols.listVolumes!({ meta: meta(), pageSize: 0, pageToken: '' }, ctx());
  t.deepEqual(listed.entries[0]?.publishedNodeIds, [`local://${ids.n1}`]);
  t.deepEqual((await vols.getVolumeLabels!({ meta: meta(), volumeId: volume!.volumeId }, ctx())).labels, {
    'topology.kubernetes.io/zone': 'local-a',
    'topology.kubernetes.io/region': 'local',
  });
  t.is((await failure(vols.getVolumeLabels!({ meta: meta(), volumeId: 'vol-00000000' }, ctx()))).code, Code.NOT_FOUND);

  for (let i = 0; i < 2; i++) await vols.controllerUnpublishVolume!({ meta: meta(), volumeId: volume!.volumeId, nodeId: `local://${ids.n1}` }, ctx());
  await vols.controllerUnpublishVolume!({ meta: meta(), volumeId: 'vol-00000000', nodeId: 'local://i-00000000' }, ctx());
  for (let i = 0; i < 2; i++) await vols.deleteVolume!({ meta: meta(), volumeId: volume!.volumeId }, ctx());
  await t.throwsAsync(stat(path), { code: 'ENOENT' });
  t.is(cloud.store.read().volumes.length, 0);
});

test('volumes: placement follows topology; multiAttach; paging', async (t) => {
  const cloud = await newCloud(t);
  const ids = await seed(cloud);
  const vols = cloud.volumes!;
  const zone = (z: string) => ({ segments: { 'topology.kubernetes.io/zone': z } });
  const { volume } = await vols.createVolume!(
    {
      meta: meta(),
      name: 'pvc-b',
      capacityRange: { requiredBytes: MiB, limitBytes: 0 },
      parameters: { multiAttach: 'true' },
      accessibilityRequirements: { requisite: [zone('local-b'), zone('local-a')], preferred: [zone('local-c'), zone('local-a')] },
    },
    ctx(),
  );
  t.is(volume!.accessibleTopology[0]?.segments['topology.kubernetes.io/zone'], 'local-a');
  await vols.controllerPublishVolume!(
    { meta: meta(), volumeId: volume!.volumeId, nodeId: `local://${ids.n1}`, readonly: false, volumeContext: {} },
    ctx(),
  );
  await vols.controllerPublishVolume!(
    { meta: meta(), volumeId: volume!.volumeId, nodeId: `local://${ids.n2}`, readonly: false, volumeContext: {} },
    ctx(),
  );
  t.is(cloud.store.read().volumes[0]?.attachments.length, 2);
  // An empty node_id detaches everywhere.
  await vols.controllerUnpublishVolume!({ meta: meta(), volumeId: volume!.volumeId, nodeId: '' }, ctx());
  t.is(cloud.store.read().volumes[0]?.attachments.length, 0);

  for (let i = 0; i < 5; i++) {
    await vols.createVolume!(
      { meta: meta(), name: `pvc-${i}`, capacityRange: { requiredBytes: 0, limitBytes: 0 }, parameters: {}, accessibilityRequirements: undefined },
      ctx(),
    );
  }
  const seen: string[] = [];
  let token = '';
  do {
    const page = await vols.listVolumes!({ meta: meta(), pageSize: 2, pageToken: token }, ctx());
    t.true(page.entries.length <= 2);
    seen.push(...page.entries.map((e) => e.volume!.volumeId));
    token = page.nextPageToken;
  } while (token);
  t.is(new Set(seen).size, 6);
  t.is((await failure(vols.listVolumes!({ meta: meta(), pageSize: 2, pageToken: 'nope' }, ctx()))).code, Code.ABORTED);
  t.is(cloud.store.read().volumes.find((v) => v.name === 'pvc-0')?.capacityBytes, 1024 ** 3);
});

test('knobs: latency is added and aborts with the call', async (t) => {
  const cloud = await newCloud(t, { knobs: { latencyMs: 60 } });
  const start = Date.now();
  await cloud.zones!.getZone!({ meta: meta() }, ctx());
  t.true(Date.now() - start >= 55);

  const ac = new AbortController();
  setTimeout(() => ac.abort(), 20);
  await cloud.store.update((d) => void (d.knobs.latencyMs = 5_000));
  const t0 = Date.now();
  t.is((await failure(cloud.zones!.getZone!({ meta: meta() }, ctx(ac)))).code, Code.CANCELLED);
  t.true(Date.now() - t0 < 1_000);
});

test('knobs: error rate fails that fraction of calls with UNAVAILABLE', async (t) => {
  let r = 0;
  const sequence = [0.05, 0.5, 0.95, 0.2];
  const cloud = await newCloud(t, { env: { LOCALCLOUD_ERROR_RATE: '0.3' }, random: () => sequence[r++ % sequence.length]! });
  t.is(cloud.currentKnobs().errorRate, 0.3);
  const outcomes: string[] = [];
  for (let i = 0; i < 4; i++) {
    try {
      await cloud.zones!.getZone!({ meta: meta() }, ctx());
      outcomes.push('ok');
    } catch (err) {
      outcomes.push(String((err as ProviderError).code));
    }
  }
  t.deepEqual(outcomes, [String(Code.UNAVAILABLE), 'ok', 'ok', String(Code.UNAVAILABLE)]);
});

test('knobs: rate limit answers RateLimitedError with retryAfterMs until a token is back', async (t) => {
  let now = 1_000_000;
  const cloud = await newCloud(t, { now: () => now });
  await cloud.store.update((d) => void (d.knobs = { rateLimitQps: 2 }));
  const call = () => cloud.instances!.instanceExists!({ meta: meta(), node: node('n1') }, ctx());
  await call();
  await call(); // burst = qps = 2
  const err = await t.throwsAsync(call(), { instanceOf: RateLimitedError });
  t.is(err?.code, Code.RESOURCE_EXHAUSTED);
  t.is(err?.reason, ErrorReason.RATE_LIMITED);
  t.is(err?.retryAfterMs, 500);
  now += 250;
  t.is((await t.throwsAsync(call(), { instanceOf: RateLimitedError }))?.retryAfterMs, 250);
  now += 250;
  await t.notThrowsAsync(call());
});

test('knobs: failAll flips at runtime through the state and back', async (t) => {
  const cloud = await newCloud(t);
  await seed(cloud);
  const call = () => cloud.instances!.instanceExists!({ meta: meta(), node: node('n1') }, ctx());
  t.true((await call()).exists);
  t.deepEqual(await updateKnobs(cloud.store, { failAll: true }), { failAll: true });
  const down = await failure(call());
  t.is(down.code, Code.UNAVAILABLE);
  t.is(down.reason, ErrorReason.CLOUD_API_ERROR);
  t.deepEqual(await updateKnobs(cloud.store, {}, ['failAll']), {});
  t.true((await call()).exists);
  await t.throwsAsync(updateKnobs(cloud.store, { errorRate: 1.5 }), { message: /between 0 and 1/ });
  // Env knobs are read too; invalid ones are refused at creation.
  t.true((await newCloud(t, { env: { LOCALCLOUD_FAIL_ALL: '1' } })).currentKnobs().failAll);
  await t.throwsAsync(newCloud(t, { env: { LOCALCLOUD_RATE_LIMIT_QPS: '-1' } }), { message: /LOCALCLOUD_RATE_LIMIT_QPS/ });
});

test('knobs: hold keeps a named call waiting until unset, and ends with the call', async (t) => {
  const cloud = await newCloud(t);
  await seed(cloud);
  await updateKnobs(cloud.store, { hold: 'InstanceExists, routes.createRoute' });
  let done = false;
  const held = cloud.instances!.instanceExists!({ meta: meta(), node: node('n1') }, ctx()).then((r) => ((done = true), r));
  // Other methods are not held.
  t.true((await cloud.instances!.instanceShutdown!({ meta: meta(), node: node('n1') }, ctx())).shutdown === false);
  t.false(done);
  await updateKnobs(cloud.store, {}, ['hold']);
  t.true((await held).exists);
  await updateKnobs(cloud.store, { hold: 'instanceExists' });
  const aborted = new AbortController();
  const cancelled = failure(cloud.instances!.instanceExists!({ meta: meta(), node: node('n1') }, ctx(aborted)));
  aborted.abort();
  t.is((await cancelled).code, Code.CANCELLED);
  await t.throwsAsync(updateKnobs(cloud.store, { hold: 'x'.repeat(2000) }), { message: /at most 1024/ });
});

test('knobs: fail gives the named object the named error, in single and batch calls, and nothing else', async (t) => {
  const cloud = await newCloud(t);
  await seed(cloud);
  const lbs = cloud.loadBalancers!;
  const svc = service('00000000-0000-0000-0000-0000000000aa', { name: 'web' });
  const other = service('00000000-0000-0000-0000-0000000000bb', { name: 'api' });
  const cases: { rule: string; call: () => Promise<unknown>; code: Code; reason?: string; retryAfterMs?: number }[] = [
    {
      rule: 'instanceMetadata@n1=NOT_FOUND',
      call: () => cloud.instances!.instanceMetadata!({ meta: meta(), node: node('n1') }, ctx()),
      code: Code.NOT_FOUND,
    },
    {
      rule: 'ensureLoadBalancer@web=UNIMPLEMENTED',
      call: () => lbs.ensureLoadBalancer!({ meta: meta(), service: svc, nodes: [node('n1')] }, ctx()),
      code: Code.UNIMPLEMENTED,
    },
    {
      rule: 'loadBalancers.ensureLoadBalancerDeleted@web=IMPLEMENTED_ELSEWHERE',
      call: () => lbs.ensureLoadBalancerDeleted!({ meta: meta(), service: svc }, ctx()),
      code: Code.FAILED_PRECONDITION,
      reason: ErrorReason.IMPLEMENTED_ELSEWHERE,
    },
    {
      rule: 'instanceExists@n1=UNAVAILABLE',
      call: () => cloud.instances!.instanceExists!({ meta: meta(), node: node('n1') }, ctx()),
      code: Code.UNAVAILABLE,
    },
    {
      rule: 'EnsureLoadBalancer@web=RETRY:1500',
      call: () => lbs.ensureLoadBalancer!({ meta: meta(), service: svc, nodes: [] }, ctx()),
      code: Code.RESOURCE_EXHAUSTED,
      retryAfterMs: 1500,
    },
  ];
  for (const c of cases) {
    await updateKnobs(cloud.store, { fail: c.rule });
    const f = await failure(c.call());
    t.is(f.code, c.code, c.rule);
    if (c.reason) t.is(f.reason, c.reason, c.rule);
    if (c.retryAfterMs !== undefined) t.is(f.retryAfterMs, c.retryAfterMs, c.rule);
  }
  // Other objects and other methods go through.
  await updateKnobs(cloud.store, { fail: 'ensureLoadBalancers@web=NOT_FOUND,getInstancesMetadata@n1=NOT_FOUND' });
  t.truthy((await lbs.ensureLoadBalancer!({ meta: meta(), service: other, nodes: [node('n1')] }, ctx())).status);
  // A batch answers the named entry with the error, does the rest, in request order.
  const batch = await lbs.ensureLoadBalancers!({ meta: meta(), services: [svc, other], nodes: [node('n1')] }, ctx());
  t.deepEqual(
    batch.results.map((r) => [r.serviceUid, r.error ? fromStatus(r.error).code : 'ok']),
    [
      [svc.uid, Code.NOT_FOUND],
      [other.uid, 'ok'],
    ],
  );
  const md = await cloud.instances!.getInstancesMetadata!({ meta: meta(), nodes: [node('n1'), node('n3')] }, ctx());
  t.deepEqual(
    md.results.map((r) => [r.nodeName, r.error ? fromStatus(r.error).code : r.metadata?.zone]),
    [
      ['n1', Code.NOT_FOUND],
      ['n3', 'local-b'],
    ],
  );
  await updateKnobs(cloud.store, {}, ['fail']);
  t.truthy((await lbs.ensureLoadBalancer!({ meta: meta(), service: svc, nodes: [] }, ctx())).status);
  await t.throwsAsync(updateKnobs(cloud.store, { fail: 'ensureLoadBalancer@web=TEAPOT' }), { message: /METHOD@OBJECT=ERROR/ });
});

test("knobs: fail in ReconcileRoutes fails the named node's route changes as entries (neither created nor deleted) and does the rest", async (t) => {
  const cloud = await newCloud(t);
  await seed(cloud);
  const routes = cloud.routes!;
  const cidrs = { clusterCidrs: ['10.244.0.0/16'] };
  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('n1', '10.244.1.0/24') }, ctx()); // kept: already there
  await routes.createRoute!({ meta: meta(), nameHint: '', route: route('n2', '10.244.2.0/24') }, ctx()); // not desired: its delete fails
  await updateKnobs(cloud.store, { fail: 'reconcileRoutes@n1=UNAVAILABLE,reconcileRoutes@n2=RETRY:1500,reconcileRoutes@n3=UNIMPLEMENTED' });
  // n1's existing route is kept, not failed (no change needed); its second CIDR fails; n3's create fails; n4's is made.
  const desired = [route('n1', '10.244.1.0/24'), route('n1', '10.244.11.0/24'), route('n3', '10.244.3.0/24'), route('n4', '10.244.4.0/24')];
  const res = await routes.reconcileRoutes!({ meta: meta(), desired, ...cidrs }, ctx());
  const entry = (r: Route) => `${r.targetNode}:${r.destinationCidr}`;
  t.deepEqual(res.created.map(entry), ['n4:10.244.4.0/24']);
  t.deepEqual(res.deleted.map(entry), []);
  t.deepEqual(
    res.failed.map((f) => [entry(f.route!), fromStatus(f.error!).code, fromStatus(f.error!).retryAfterMs]),
    [
      ['n2:10.244.2.0/24', Code.RESOURCE_EXHAUSTED, 1500],
      ['n1:10.244.11.0/24', Code.UNAVAILABLE, undefined],
      ['n3:10.244.3.0/24', Code.UNIMPLEMENTED, undefined],
    ],
  );
  const list = async () => (await routes.listRoutes!({ meta: meta(), pageSize: 0, pageToken: '' }, ctx())).routes.map(entry).sort();
  t.deepEqual(await list(), ['n1:10.244.1.0/24', 'n2:10.244.2.0/24', 'n4:10.244.4.0/24']);
  // Cleared: the same call does what was held back.
  await updateKnobs(cloud.store, {}, ['fail']);
  const after = await routes.reconcileRoutes!({ meta: meta(), desired, ...cidrs }, ctx());
  t.deepEqual(
    [after.created.map(entry).sort(), after.deleted.map(entry), after.failed],
    [['n1:10.244.11.0/24', 'n3:10.244.3.0/24'], ['n2:10.244.2.0/24'], []],
  );
  t.deepEqual(await list(), ['n1:10.244.1.0/24', 'n1:10.244.11.0/24', 'n3:10.244.3.0/24', 'n4:10.244.4.0/24']);
});

test('Configure applies JSON cloud config, warns on unknown keys, rejects garbage', async (t) => {
  const cloud = await newCloud(t);
  const res = await cloud.configure!(
    {
      cloudConfig: Buffer.from('{"zone":"z9","region":"r9","extra":1}'),
      clusterName: 'prod',
      clusterUid: '',
      hostVersion: 'test',
      providerArgs: [],
      controllers: [],
      nodeSelector: '',
      watchNamespace: '',
    },
    ctx(),
  );
  t.deepEqual(res?.warnings, ['cloud config key "extra" is unknown and ignored']);
  t.deepEqual((await cloud.zones!.getZone!({ meta: meta() }, ctx())).zone, { failureDomain: 'z9', region: 'r9' });
  t.is(cloud.currentSettings().clusterName, 'prod');
  t.is((await cloud.loadBalancers!.getLoadBalancerName!({ service: service('u1') }, ctx())).name, loadBalancerName('prod', 'u1'));
  t.is(
    (
      await failure(
        cloud.configure!(
          {
            cloudConfig: Buffer.from('zone: z9'),
            clusterName: '',
            clusterUid: '',
            hostVersion: '',
            providerArgs: [],
            controllers: [],
            nodeSelector: '',
            watchNamespace: '',
          },
          ctx(),
        ),
      )
    ).code,
    Code.INVALID_ARGUMENT,
  );
  // An empty config restores the defaults (Configure replaces, it does not merge).
  await cloud.configure!(
    {
      cloudConfig: Buffer.alloc(0),
      clusterName: 'prod',
      clusterUid: '',
      hostVersion: '',
      providerArgs: [],
      controllers: [],
      nodeSelector: '',
      watchNamespace: '',
    },
    ctx(),
  );
  t.is(cloud.currentSettings().zone, 'local-a');
  t.true(await cloud.probe!(ctx()));
});

test('volumes without topology go to a zone that has instances', async (t) => {
  const { placementFor } = await import('../../../plugins/local/volumes.js');
  const at = (zone: string) => ({ zone, region: `r-${zone}` });
  t.deepEqual(placementFor(undefined, 'local-a', 'local', []), { zone: 'local-a', region: 'local' }, 'no instances: the default');
  t.deepEqual(
    placementFor(undefined, 'local-a', 'local', [at('local-b'), at('local-a')]),
    { zone: 'local-a', region: 'local' },
    'the default has an instance',
  );
  t.deepEqual(placementFor(undefined, 'local-a', 'local', [at('z2'), at('z1'), at('z2')]), { zone: 'z2', region: 'r-z2' }, 'the most populated zone');
  t.deepEqual(placementFor(undefined, 'local-a', 'local', [at('z2'), at('z1')]), { zone: 'z1', region: 'r-z1' }, 'ties: by name');
});
