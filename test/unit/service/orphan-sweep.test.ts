/**
 * OrphanSweeper (host/controllers/service/orphan-sweep.ts) with fakes: a
 * listing the test sets, a cache of Services, a live read the test answers.
 * Only load balancers tagged with this cluster's UID are deleted; foreign and
 * untagged ones are counted and logged once each; --lb-orphan-sweep-limit
 * caps the deletions of one sweep; the delete call carries the ServiceRef the
 * host last knew, else what the provider listed; a live read that shows the
 * Service still wanting its load balancer stops the delete.
 */
import test from 'ava';
import type { V1Service } from '@kubernetes/client-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { LbSummary, LoadBalancers, ServiceRef } from '../../../host/cloud-load-balancers.js';
import type { LiveServiceReads } from '../../../host/controllers/service/live-read.js';
import { LastKnownRefs, OrphanSweeper, listedRef, type OrphanSweepOptions } from '../../../host/controllers/service/orphan-sweep.js';
import type { EventRecorder } from '../../../host/kube/events.js';
import type { Informer } from '../../../host/kube/informer.js';
import { KeyedMutex } from '../../../host/util/keyed-mutex.js';

const OURS = 'uid-of-kube-system-a';
const THEIRS = 'uid-of-kube-system-b';

const lb = (name: string, clusterUid: string, ns = 'ns'): LbSummary => ({
  name: `lb-${name}`,
  serviceUid: `svc-${name}`,
  serviceNamespace: ns,
  serviceName: name,
  clusterUid,
});

const service = (name: string, o: { type?: string; annotations?: Record<string, string>; uid?: string } = {}): V1Service => ({
  metadata: { name, namespace: 'ns', uid: o.uid ?? `svc-${name}`, annotations: o.annotations ?? {} },
  spec: { type: o.type ?? 'LoadBalancer', ports: [{ port: 80, protocol: 'TCP', nodePort: 30080 }] },
});

interface Fixture {
  sweeper: OrphanSweeper;
  listed: LbSummary[];
  deletes: ServiceRef[];
  /** Live answers by name; absent = 404. */
  live: Map<string, V1Service>;
  readFails: boolean;
  decided: boolean[];
  logs: { msg: string; loadBalancer?: string }[];
  count(outcome: string): Promise<number>;
}

function fixture(o: { cached?: V1Service[]; limit?: number; lastKnown?: LastKnownRefs; clusterUid?: string } = {}): Fixture {
  const f = {
    listed: [] as LbSummary[],
    deletes: [] as ServiceRef[],
    live: new Map<string, V1Service>(),
    readFails: false,
    decided: [] as boolean[],
  };
  const logs: Fixture['logs'] = [];
  const cache = new Map((o.cached ?? []).map((s) => [`ns/${s.metadata!.name}`, s]));
  const lbs = {
    canList: true,
    listLoadBalancers: async () => [...f.listed],
    ensureLoadBalancerDeleted: async (_cluster: string, ref: ServiceRef) => {
      f.deletes.push(ref);
      f.listed = f.listed.filter((l) => l.serviceUid !== ref.uid);
    },
  } as unknown as LoadBalancers;
  const services = { hasSynced: () => true, get: (key: string) => cache.get(key) } as unknown as Informer<V1Service>;
  const reads: LiveServiceReads = {
    read: async (_path, _ns, name) => {
      if (f.readFails) throw new Error('connection refused');
      return f.live.get(name);
    },
    decided: (_path, _live, keeps) => void f.decided.push(!keeps),
  };
  const registry = new Registry();
  const log = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as Fixture['logs'][number]) });
  const lastKnown = o.lastKnown ?? new LastKnownRefs();
  const opts: OrphanSweepOptions = {
    periodMs: 1000,
    graceMs: 0,
    dryRun: false,
    limit: o.limit ?? 10,
    namespace: '',
    lbs,
    clusterName: 'same-name',
    clusterUid: o.clusterUid ?? OURS,
    services,
    lock: new KeyedMutex<string>(),
    busyUids: () => new Set(),
    reads,
    lastKnownRef: (uid) => lastKnown.get(uid),
    recorder: { event: () => undefined } as unknown as EventRecorder,
    log,
    registry,
  };
  const sweeper = new OrphanSweeper(opts);
  return Object.assign(f, {
    sweeper,
    logs,
    async count(outcome: string) {
      const m = await registry.getSingleMetric('ccm_orphan_load_balancers_total')?.get();
      return (m?.values ?? []).filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
    },
  });
}

test('only load balancers of this cluster UID are deleted; foreign and untagged ones are counted and logged once each', async (t) => {
  const f = fixture();
  f.listed = [lb('mine', OURS), lb('theirs', THEIRS), lb('old', '')];
  const reports = [];
  for (let i = 0; i < 5; i++) reports.push(await f.sweeper.sweep());
  t.deepEqual(
    f.deletes.map((r) => r.uid),
    ['svc-mine'],
  );
  t.deepEqual(
    f.listed.map((l) => l.name),
    ['lb-theirs', 'lb-old'],
    'the neighbour’s and the untagged load balancer are still listed',
  );
  t.deepEqual(
    reports.map((r) => [r.deleted.length, r.foreign, r.untagged]),
    [
      [1, 1, 1],
      [0, 1, 1],
      [0, 1, 1],
      [0, 1, 1],
      [0, 1, 1],
    ],
  );
  t.is(await f.count('foreign'), 1, 'counted once, not once per sweep');
  t.is(await f.count('untagged'), 1);
  t.is(await f.count('deleted'), 1);
  t.deepEqual(
    f.logs.filter((l) => /never deleted by the orphan sweep/.test(l.msg)).map((l) => l.loadBalancer),
    ['lb-theirs', 'lb-old'],
    'one log line each over five sweeps',
  );
});

test('a host without a cluster UID deletes nothing', async (t) => {
  const f = fixture({ clusterUid: '' });
  f.listed = [lb('a', OURS), lb('b', '')];
  const r = await f.sweeper.sweep();
  t.deepEqual(f.deletes, []);
  t.deepEqual([r.foreign, r.untagged], [1, 1]);
});

test('--lb-orphan-sweep-limit caps the deletions of one sweep; the rest wait for the next, with a log line', async (t) => {
  const f = fixture({ limit: 10 });
  f.listed = Array.from({ length: 25 }, (_, i) => lb(`o${i}`, OURS));
  const rows = [];
  for (let i = 0; i < 4; i++) {
    const r = await f.sweeper.sweep();
    rows.push([r.orphans, r.deleted.length, r.deferred]);
  }
  t.deepEqual(rows, [
    [25, 10, 15],
    [15, 10, 5],
    [5, 5, 0],
    [0, 0, 0],
  ]);
  t.is(f.logs.filter((l) => /--lb-orphan-sweep-limit/.test(l.msg)).length, 2, 'a line for each sweep that left orphans waiting');
});

test('the delete carries the ServiceRef the host last knew, else the current Service, else what the provider listed', async (t) => {
  const known = new LastKnownRefs();
  known.remember(service('deleted', { annotations: { 'example.com/preserve': 'true' } }));
  const f = fixture({ cached: [service('flipped', { type: 'ClusterIP', annotations: { 'example.com/keep-ip': 'yes' } })], lastKnown: known });
  f.listed = [lb('deleted', OURS), lb('flipped', OURS), lb('never-seen', OURS)];
  f.live.set('flipped', service('flipped', { type: 'ClusterIP', annotations: { 'example.com/keep-ip': 'yes' } }));
  await f.sweeper.sweep();
  const byName = new Map(f.deletes.map((r) => [r.name, r]));
  t.deepEqual(byName.get('deleted')?.annotations, { 'example.com/preserve': 'true' }, 'the deleted Service as last known');
  t.deepEqual(
    byName.get('deleted')?.ports.map((p) => p.port),
    [80],
  );
  t.deepEqual(byName.get('flipped')?.annotations, { 'example.com/keep-ip': 'yes' }, 'the Service as it is now');
  t.deepEqual(byName.get('never-seen'), listedRef(lb('never-seen', OURS)), 'a Service the host never saw: what the provider listed');
  t.is(byName.get('never-seen')?.uid, 'svc-never-seen');
});

test('LastKnownRefs is bounded: the oldest entries go first', (t) => {
  const known = new LastKnownRefs(3);
  for (const n of ['a', 'b', 'c', 'd']) known.remember(service(n));
  t.is(known.size, 3);
  t.is(known.get('svc-a'), undefined);
  t.is(known.get('svc-d')?.name, 'd');
});

test('a live read that shows the Service still wanting its load balancer stops the delete; a failed read deletes nothing', async (t) => {
  const rows: [string, string[], number, number, boolean[]][] = [];
  for (const [what, live, fails] of [
    ['gone', undefined, false],
    ['recreated (another uid)', service('s', { uid: 'another' }), false],
    ['still wants it (stale cache)', service('s'), false],
    ['read fails', undefined, true],
  ] as const) {
    const f = fixture();
    f.listed = [lb('s', OURS)];
    if (live) f.live.set('s', live);
    f.readFails = fails;
    const r = await f.sweeper.sweep();
    rows.push([what, f.deletes.map((d) => d.uid), r.refuted, r.failed, f.decided]);
  }
  t.deepEqual(rows, [
    ['gone', ['svc-s'], 0, 0, [true]],
    ['recreated (another uid)', ['svc-s'], 0, 0, [true]],
    ['still wants it (stale cache)', [], 1, 0, [false]],
    ['read fails', [], 0, 1, []],
  ]);
});
