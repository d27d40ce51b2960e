/** The local cloud's call journal: caller identity, mutating flag, key, times; modes. */
import test from 'ava';
import { readJournal } from '../../../plugins/local/journal.js';
import { createLocalCloud } from '../../../plugins/local/cloud.js';
import { updateKnobs } from '../../../plugins/local/knobs.js';
import { meta, node, service, tempDir } from './_helpers.js';

/** A desired route to `targetNode`, as the route controller sends it. */
const route = (targetNode: string, destinationCidr: string) => ({
  name: '',
  targetNode,
  targetNodeAddresses: [],
  destinationCidr,
  blackhole: false,
});

test('mutating calls are journaled with the caller, the object key and start/end times; reads are not by default', async (t) => {
  const dir = await tempDir(t);
  const cloud = createLocalCloud({ stateDir: dir, env: {} });
  const signal = new AbortController().signal;
  const before = Date.now();
  await cloud.loadBalancers!.ensureLoadBalancer!({ meta: meta(), service: service('uid-j1'), nodes: [node('n1')] }, { signal, caller: 'host-a_1' });
  await cloud.loadBalancers!.getLoadBalancer!({ meta: meta(), service: service('uid-j1') }, { signal, caller: 'host-a_1' });
  await t.throwsAsync(
    cloud.loadBalancers!.updateLoadBalancer!({ meta: meta(), service: service('uid-missing'), nodes: [] }, { signal, caller: 'host-b_2' }),
  );
  const entries = await readJournal(dir);
  t.is(entries.length, 2);
  t.like(entries[0], { caller: 'host-a_1', method: 'loadBalancers.ensureLoadBalancer', mutating: true, key: 'uid-j1', ok: true, pid: process.pid });
  t.like(entries[1], { caller: 'host-b_2', method: 'loadBalancers.updateLoadBalancer', mutating: true, key: 'uid-missing', ok: false });
  t.true(entries[0]!.start >= before && entries[0]!.end >= entries[0]!.start);
});

test('LOCALCLOUD_JOURNAL=all journals reads too; off journals nothing; a bad value is refused', async (t) => {
  const signal = new AbortController().signal;
  const all = await tempDir(t);
  await createLocalCloud({ stateDir: all, env: { LOCALCLOUD_JOURNAL: 'all' } }).loadBalancers!.getLoadBalancer!(
    { meta: meta(), service: service('uid-j2') },
    { signal },
  );
  t.like((await readJournal(all))[0], { caller: '', method: 'loadBalancers.getLoadBalancer', mutating: false });
  const off = await tempDir(t);
  await createLocalCloud({ stateDir: off, env: { LOCALCLOUD_JOURNAL: 'off' } }).loadBalancers!.ensureLoadBalancer!(
    { meta: meta(), service: service('uid-j3'), nodes: [] },
    { signal },
  );
  t.deepEqual(await readJournal(off), []);
  t.throws(() => createLocalCloud({ stateDir: off, env: { LOCALCLOUD_JOURNAL: 'sometimes' } }), {
    message: /LOCALCLOUD_JOURNAL="sometimes" is invalid/,
  });
});

test('a batch answer with failed entries names them (failedKeys); ReconcileRoutes names the target nodes of the routes it created and deleted', async (t) => {
  const dir = await tempDir(t);
  const cloud = createLocalCloud({ stateDir: dir, env: {} });
  const signal = new AbortController().signal;
  const lbs = cloud.loadBalancers!;
  await lbs.ensureLoadBalancers!({ meta: meta(), services: [service('uid-b1'), service('uid-b2')], nodes: [] }, { signal });
  // uid-b3 has no load balancer: its entry fails, uid-b1's does not.
  await lbs.updateLoadBalancerHosts!({ meta: meta(), services: [service('uid-b1'), service('uid-b3')], nodes: [node('n1')] }, { signal });
  const routes = cloud.routes!;
  await routes.reconcileRoutes!({ meta: meta(), desired: [route('n1', '10.244.1.0/24')], clusterCidrs: ['10.244.0.0/16'] }, { signal });
  await routes.reconcileRoutes!({ meta: meta(), desired: [route('n2', '10.244.2.0/24')], clusterCidrs: ['10.244.0.0/16'] }, { signal });
  const entries = await readJournal(dir);
  t.deepEqual(
    entries.map((e) => [e.method, e.keys, e.failedKeys, e.routesCreated, e.routesDeleted]),
    [
      ['loadBalancers.ensureLoadBalancers', ['uid-b1', 'uid-b2'], undefined, undefined, undefined],
      ['loadBalancers.updateLoadBalancerHosts', ['uid-b1', 'uid-b3'], ['uid-b3'], undefined, undefined],
      ['routes.reconcileRoutes', undefined, undefined, ['n1'], undefined],
      ['routes.reconcileRoutes', undefined, undefined, ['n2'], ['n1']],
    ],
  );
});

test('route changes answered with an error are named by target node, create or delete, for ReconcileRoutes entries and single calls', async (t) => {
  const dir = await tempDir(t);
  const cloud = createLocalCloud({ stateDir: dir, env: {} });
  const signal = new AbortController().signal;
  const routes = cloud.routes!;
  const cidrs = { clusterCidrs: ['10.244.0.0/16'] };
  await routes.reconcileRoutes!({ meta: meta(), desired: [route('old', '10.244.9.0/24')], ...cidrs }, { signal });
  await updateKnobs(cloud.store, {
    fail: 'reconcileRoutes@old=UNAVAILABLE,reconcileRoutes@new=UNAVAILABLE,createRoute@new=UNAVAILABLE,deleteRoute@old=UNAVAILABLE',
  });
  await routes.reconcileRoutes!({ meta: meta(), desired: [route('new', '10.244.1.0/24')], ...cidrs }, { signal });
  await t.throwsAsync(routes.createRoute!({ meta: meta(), nameHint: '', route: route('new', '10.244.1.0/24') }, { signal }));
  await t.throwsAsync(routes.deleteRoute!({ meta: meta(), route: route('old', '10.244.9.0/24') }, { signal }));
  t.deepEqual(
    (await readJournal(dir)).map((e) => [e.method, e.ok, e.routesCreated, e.routesCreateFailed, e.routesDeleteFailed]),
    [
      ['routes.reconcileRoutes', true, ['old'], undefined, undefined],
      ['routes.reconcileRoutes', true, undefined, ['new'], ['old']],
      ['routes.createRoute', false, undefined, ['new'], undefined],
      ['routes.deleteRoute', false, undefined, undefined, ['old']],
    ],
  );
});
