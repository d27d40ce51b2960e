/**
 * host/kube/informer.ts against a real kube-apiserver + etcd: ConfigMaps in
 * a namespace of this file's own. Other test files share the cluster and ava
 * runs these tests concurrently, so every test works on its own objects,
 * picked out by a label value unique to the test and a label selector.
 */
import anyTest, { type TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, type V1ConfigMap, type V1ConfigMapList } from '@kubernetes/client-node';
import { makeClients } from '../../host/kube/client.js';
import { currentCluster, currentUser, singleConfig } from '../../host/kube/kubeconfig.js';
import { dropManagedFields } from '../../host/kube/cache-transforms.js';
import type { RestClient } from '../../host/kube/rest.js';
import { Informer, type InformerHandler, type InformerOptions, type ListResult } from '../../host/kube/informer.js';
import { silentLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const LABEL = 'kube-informer-it/test';
const test = anyTest as TestFn<{ rest: RestClient; core: CoreV1Api; ns: string; informers: Informer<V1ConfigMap>[] }>;

/** A short random name part, valid in object names and label values. */
const uniq = (): string => randomBytes(4).toString('hex');

test.before(async (t) => {
  const kc = await testKubeConfig();
  const { rest } = makeClients(kc, { userAgent: 'kube-informer-it', qps: 1000, burst: 1000 });
  const core = kc.makeApiClient(CoreV1Api);
  const ns = `kube-informer-it-${uniq()}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  t.context = { rest, core, ns, informers: [] };
});

test.after.always(async (t) => {
  const { core, ns, informers } = t.context;
  await Promise.all(informers.map((i) => i.stop()));
  // No namespace controller runs in the test control plane: the namespace
  // stays Terminating, which is harmless; its objects are gone with the cluster.
  await core?.deleteNamespace({ name: ns }).catch(() => undefined);
});

/** One handler call, as seen by a {@link Recorder}. */
interface Call {
  type: 'add' | 'update' | 'delete';
  name: string;
  obj: V1ConfigMap;
  /** For updates: the previous object. */
  old?: V1ConfigMap;
}

/** A handler that remembers every call. */
class Recorder implements InformerHandler<V1ConfigMap> {
  readonly calls: Call[] = [];
  onAdd(obj: V1ConfigMap): void {
    this.calls.push({ type: 'add', name: obj.metadata!.name!, obj });
  }
  onUpdate(old: V1ConfigMap, obj: V1ConfigMap): void {
    this.calls.push({ type: 'update', name: obj.metadata!.name!, obj, old });
  }
  onDelete(obj: V1ConfigMap): void {
    this.calls.push({ type: 'delete', name: obj.metadata!.name!, obj });
  }
  /** Calls since index `from`, as sorted `type name` strings. */
  summary(from = 0): string[] {
    return this.calls
      .slice(from)
      .map((c) => `${c.type} ${c.name}`)
      .sort();
  }
  find(type: Call['type'], name: string): Call | undefined {
    return this.calls.find((c) => c.type === type && c.name === name);
  }
  /** Waits until a call of `type` for `name` has been made, and returns the first. */
  async waitFor(type: Call['type'], name: string): Promise<Call> {
    return waitFor(() => this.find(type, name), { what: `${type} ${name}`, timeoutMs: 30_000, intervalMs: 50 });
  }
}

/** What one test works with: its label value, selector and object name prefix. */
interface Scope {
  id: string;
  selector: string;
  /** Full object name for the short name `n`. */
  name(n: string): string;
  create(n: string, data?: Record<string, string>, labels?: Record<string, string>): Promise<V1ConfigMap>;
  /** Replaces the object's data (a real update with a new resourceVersion). */
  setData(n: string, data: Record<string, string>): Promise<V1ConfigMap>;
  setLabels(n: string, labels: Record<string, string>): Promise<V1ConfigMap>;
  remove(n: string): Promise<void>;
  list(): Promise<ListResult<V1ConfigMap>>;
  /** An informer of this scope's objects; its watches go over `watchRest` (default the test's client). */
  informer(
    listFn?: () => Promise<ListResult<V1ConfigMap>>,
    opts?: Partial<InformerOptions<V1ConfigMap>>,
    watchRest?: RestClient,
  ): Informer<V1ConfigMap>;
}

function scope(t: { context: { rest: RestClient; core: CoreV1Api; ns: string; informers: Informer<V1ConfigMap>[] } }): Scope {
  const { rest, core, ns, informers } = t.context;
  const id = uniq();
  const selector = `${LABEL}=${id}`;
  const name = (n: string): string => `${id}-${n}`;
  const list = () => rest.request<V1ConfigMapList>('GET', `/api/v1/namespaces/${ns}/configmaps`, { query: { labelSelector: selector } });
  return {
    id,
    selector,
    name,
    create: (n, data = { v: '1' }, labels = { [LABEL]: id }) =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: name(n), labels }, data } }),
    setData: async (n, data) => {
      const cur = await core.readNamespacedConfigMap({ namespace: ns, name: name(n) });
      return core.replaceNamespacedConfigMap({ namespace: ns, name: name(n), body: { ...cur, data } });
    },
    setLabels: async (n, labels) => {
      const cur = await core.readNamespacedConfigMap({ namespace: ns, name: name(n) });
      return core.replaceNamespacedConfigMap({ namespace: ns, name: name(n), body: { ...cur, metadata: { ...cur.metadata, labels } } });
    },
    remove: async (n) => {
      await core.deleteNamespacedConfigMap({ namespace: ns, name: name(n) });
    },
    list,
    informer: (listFn = list, opts = {}, watchRest = rest) => {
      const inf = new Informer<V1ConfigMap>(watchRest, `/api/v1/namespaces/${ns}/configmaps`, listFn, {
        log: silentLogger(),
        labelSelector: selector,
        // No jitter: backoff delays are exactly 800 ms, 1.6 s, 3.2 s, ...
        random: () => 0,
        ...opts,
      });
      informers.push(inf);
      return inf;
    },
  };
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SETTLE_MS = 1500;

test('initial sync: objects that exist before start() arrive as adds; hasSynced and waitForSync turn true', async (t) => {
  const s = scope(t);
  const names = ['a', 'b', 'c'];
  for (const n of names) await s.create(n, { v: n });
  const inf = s.informer();
  const rec = new Recorder();
  inf.addEventHandler(rec);
  t.false(inf.hasSynced());
  t.deepEqual(inf.list(), []);

  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));
  t.true(inf.hasSynced());
  t.deepEqual(
    rec.summary(),
    names.map((n) => `add ${s.name(n)}`),
  );
  const a = inf.get(`${t.context.ns}/${s.name('a')}`);
  t.is(a?.data?.v, 'a');
  t.is(a?.kind, 'ConfigMap', 'list items get their kind from the list');
  t.is(a?.apiVersion, 'v1');
  t.deepEqual(
    inf
      .list()
      .map((o) => o.metadata?.name)
      .sort(),
    names.map(s.name),
  );
  // Already synced: resolves true at once, whatever the signal says.
  t.true(await inf.waitForSync(AbortSignal.abort()));

  const late = new Recorder();
  inf.addEventHandler(late);
  t.deepEqual(
    late.summary(),
    names.map((n) => `add ${s.name(n)}`),
    'a handler added later gets the cache as adds',
  );
});

test('waitForSync returns false on abort or timeout while the list keeps failing', async (t) => {
  const s = scope(t);
  let calls = 0;
  const inf = s.informer(async () => {
    calls++;
    throw new Error('injected: list refused');
  });
  inf.start();
  t.false(await inf.waitForSync(AbortSignal.abort()), 'already aborted');
  t.false(await inf.waitForSync(undefined, 300), 'timeout');
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 300);
  t.false(await inf.waitForSync(ac.signal), 'aborted while waiting');
  t.false(await inf.waitForSync(AbortSignal.timeout(300), 60_000), 'signal wins over a longer timeout');
  t.false(inf.hasSynced());
  t.true(calls >= 1);
  await inf.stop();
  t.false(inf.hasSynced());
});

test('add, update (old and new object) and delete (last known object) from the watch', async (t) => {
  const s = scope(t);
  const inf = s.informer();
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));
  t.deepEqual(rec.calls, []);
  const key = `${t.context.ns}/${s.name('x')}`;

  const created = await s.create('x', { v: '1' });
  const add = await rec.waitFor('add', s.name('x'));
  t.is(add.obj.data?.v, '1');
  t.is(add.obj.metadata?.uid, created.metadata?.uid);
  t.is(add.obj.metadata?.resourceVersion, created.metadata?.resourceVersion);
  t.is(inf.get(key)?.metadata?.resourceVersion, created.metadata?.resourceVersion);

  const updated = await s.setData('x', { v: '2' });
  t.not(updated.metadata?.resourceVersion, created.metadata?.resourceVersion);
  const upd = await rec.waitFor('update', s.name('x'));
  t.is(upd.old?.data?.v, '1', 'old object has the previous data');
  t.is(upd.old?.metadata?.resourceVersion, created.metadata?.resourceVersion, 'old object has the previous resourceVersion');
  t.is(upd.obj.data?.v, '2');
  t.is(upd.obj.metadata?.resourceVersion, updated.metadata?.resourceVersion);
  t.is(inf.get(key)?.data?.v, '2');

  await s.remove('x');
  const del = await rec.waitFor('delete', s.name('x'));
  t.is(del.obj.data?.v, '2', 'delete carries the last known state');
  t.is(del.obj.metadata?.uid, created.metadata?.uid);
  t.is(inf.get(key), undefined);

  await delay(SETTLE_MS);
  t.deepEqual(
    rec.calls.map((c) => c.type),
    ['add', 'update', 'delete'],
    'nothing else was reported',
  );
});

test('a list that fails the first N times is retried with backoff and the informer syncs anyway', async (t) => {
  const s = scope(t);
  const N = 3;
  let calls = 0;
  await s.create('before');
  const inf = s.informer(async () => {
    calls++;
    if (calls === 1) await s.create('during'); // created between failed attempts
    if (calls <= N) throw new Error(`injected: list failure ${calls}`);
    return s.list();
  });
  const rec = new Recorder();
  inf.addEventHandler(rec);
  const started = performance.now();
  inf.start();
  t.true(await inf.waitForSync(undefined, 60_000));
  const elapsed = performance.now() - started;
  t.true(calls > N, `list called ${calls} times`);
  // Without jitter the waits are 800 + 1600 + 3200 ms.
  t.true(elapsed >= 5600 - 50, `synced after ${Math.round(elapsed)} ms`);
  t.deepEqual(rec.summary(), [`add ${s.name('before')}`, `add ${s.name('during')}`]);

  await s.create('after');
  await rec.waitFor('add', s.name('after'));
  t.pass('the watch runs after the late sync');
});

test('stop() then changes then start(): exactly the differences are reported, nothing while stopped', async (t) => {
  const s = scope(t);
  for (const n of ['keep', 'upd', 'del']) await s.create(n, { v: '1' });
  const inf = s.informer();
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));
  t.deepEqual(rec.summary(), ['keep', 'del', 'upd'].map((n) => `add ${s.name(n)}`).sort());
  const delObj = inf.get(`${t.context.ns}/${s.name('del')}`);

  await inf.stop();
  const atStop = rec.calls.length;
  await s.setData('upd', { v: '2' });
  await s.remove('del');
  await s.create('new', { v: '1' });
  await s.create('gone', { v: '1' });
  await s.remove('gone');
  await delay(SETTLE_MS);
  t.is(rec.calls.length, atStop, 'no callbacks while stopped');
  t.is(inf.list().length, 3, 'the cache keeps its contents while stopped');

  inf.start();
  await rec.waitFor('add', s.name('new'));
  await rec.waitFor('update', s.name('upd'));
  await rec.waitFor('delete', s.name('del'));
  await delay(SETTLE_MS);
  t.deepEqual(rec.summary(atStop), [`add ${s.name('new')}`, `delete ${s.name('del')}`, `update ${s.name('upd')}`]);
  const upd = rec.find('update', s.name('upd'))!;
  t.is(upd.old?.data?.v, '1');
  t.is(upd.obj.data?.v, '2');
  t.not(upd.old?.metadata?.resourceVersion, upd.obj.metadata?.resourceVersion);
  const del = rec.find('delete', s.name('del'))!;
  t.is(del.obj.metadata?.uid, delObj?.metadata?.uid, 'delete carries the last cached object');
  t.is(del.obj.data?.v, '1');
  t.deepEqual(
    inf
      .list()
      .map((o) => o.metadata?.name)
      .sort(),
    ['keep', 'new', 'upd'].map(s.name).sort(),
  );

  // Watching again after the restart.
  await s.setData('keep', { v: '2' });
  await rec.waitFor('update', s.name('keep'));

  await inf.stop();
  const atSecondStop = rec.calls.length;
  await s.setData('keep', { v: '3' });
  await s.create('late');
  await delay(SETTLE_MS);
  t.is(rec.calls.length, atSecondStop, 'no callbacks after the second stop');
});

test('a handler that throws does not keep other handlers or later events from being delivered', async (t) => {
  const s = scope(t);
  const inf = s.informer();
  let thrown = 0;
  const boom = (): never => {
    thrown++;
    throw new Error('injected: handler failure');
  };
  inf.addEventHandler({ onAdd: boom, onUpdate: boom, onDelete: boom });
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.addEventHandler({ onAdd: boom, onUpdate: boom, onDelete: boom });
  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));

  await s.create('a', { v: '1' });
  await rec.waitFor('add', s.name('a'));
  await s.setData('a', { v: '2' });
  await rec.waitFor('update', s.name('a'));
  await s.create('b');
  await rec.waitFor('add', s.name('b'));
  await s.remove('a');
  await rec.waitFor('delete', s.name('a'));
  t.deepEqual(
    rec.calls.map((c) => `${c.type} ${c.name}`),
    [`add ${s.name('a')}`, `update ${s.name('a')}`, `add ${s.name('b')}`, `delete ${s.name('a')}`],
  );
  t.is(thrown, 8, 'both throwing handlers were called for every event');
  t.deepEqual(
    inf.list().map((o) => o.metadata?.name),
    [s.name('b')],
  );
});

test('label selector: objects outside it never appear; leaving it is a delete, entering it an add', async (t) => {
  const s = scope(t);
  const other = { [LABEL]: `${s.id}-other` };
  await s.create('in-1');
  await s.create('out-1', { v: '1' }, other);
  await s.create('out-2', { v: '1' }, {});
  const inf = s.informer();
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));
  t.deepEqual(rec.summary(), [`add ${s.name('in-1')}`]);

  await s.create('out-3', { v: '1' }, other);
  await s.setData('out-1', { v: '2' });
  await s.remove('out-2');
  await s.create('in-2');
  await rec.waitFor('add', s.name('in-2'));
  await delay(SETTLE_MS);
  t.deepEqual(rec.summary(), [`add ${s.name('in-1')}`, `add ${s.name('in-2')}`]);
  t.deepEqual(
    inf
      .list()
      .map((o) => o.metadata?.name)
      .sort(),
    [s.name('in-1'), s.name('in-2')],
  );

  // Relabelling moves objects across the selector's edge.
  await s.setLabels('in-1', other);
  await rec.waitFor('delete', s.name('in-1'));
  await s.setLabels('out-3', { [LABEL]: s.id });
  await rec.waitFor('add', s.name('out-3'));
  await delay(SETTLE_MS);
  t.deepEqual(rec.summary(), [`add ${s.name('in-1')}`, `add ${s.name('in-2')}`, `add ${s.name('out-3')}`, `delete ${s.name('in-1')}`].sort());
  t.false(rec.calls.some((c) => c.name === s.name('out-1') || c.name === s.name('out-2')));
  t.deepEqual(
    inf
      .list()
      .map((o) => o.metadata?.name)
      .sort(),
    [s.name('in-2'), s.name('out-3')],
  );
});

test('transform: applied to listed and watched objects before they are cached or handed to handlers', async (t) => {
  const s = scope(t);
  const listed = await s.create('listed');
  t.truthy(listed.metadata?.managedFields, 'the server records managedFields');
  const inf = s.informer(undefined, { transform: dropManagedFields });
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  await rec.waitFor('add', s.name('listed'));
  await s.create('watched');
  await rec.waitFor('add', s.name('watched'));
  await s.setData('listed', { v: '2' });
  await rec.waitFor('update', s.name('listed'));
  await s.remove('watched');
  await rec.waitFor('delete', s.name('watched'));
  t.deepEqual(
    rec.calls.filter((c) => c.obj.metadata?.managedFields).map((c) => `${c.type} ${c.name}`),
    [],
  );
  t.deepEqual(
    inf.list().map((o) => [o.metadata?.name, o.metadata?.managedFields]),
    [[s.name('listed'), undefined]],
  );
});

test('dropsManagedFields: watched objects arrive without managedFields, every other field as the API server wrote it', async (t) => {
  const s = scope(t);
  const inf = s.informer(undefined, { dropsManagedFields: true });
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  await inf.waitForSync();
  await s.create('watched', { v: '1', 'x.json': '{"managedFields":[1],"a":"]}\\""}' });
  const added = await rec.waitFor('add', s.name('watched'));
  await s.setData('watched', { v: '2' });
  const updated = await rec.waitFor('update', s.name('watched'));
  // What a GET answers, as JSON, at the same resourceVersion: the watched objects are that without managedFields.
  const read = await t.context.rest.request<V1ConfigMap>('GET', `/api/v1/namespaces/${t.context.ns}/configmaps/${s.name('watched')}`);
  t.truthy(read.metadata?.managedFields, 'the server records managedFields');
  t.is(read.metadata?.resourceVersion, updated.obj.metadata?.resourceVersion);
  const metadata = { ...read.metadata };
  delete metadata.managedFields;
  t.deepEqual(updated.obj, { ...read, metadata });
  for (const obj of [added.obj, updated.obj]) t.false('managedFields' in obj.metadata!);
  t.deepEqual(added.obj.data, { v: '1', 'x.json': '{"managedFields":[1],"a":"]}\\""}' });
});

test('resync: every resyncPeriodMs each cached object is handed to onUpdate as both old and new (client-go resync)', async (t) => {
  const s = scope(t);
  for (const n of ['a', 'b']) await s.create(n);
  const inf = s.informer(undefined, { resyncPeriodMs: 300 });
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));
  const resyncs = (n: string) => rec.calls.filter((c) => c.type === 'update' && c.name === s.name(n) && c.old === c.obj).length;
  await waitFor(() => resyncs('a') >= 2 && resyncs('b') >= 2, { what: 'two resyncs of each object', timeoutMs: 30_000, intervalMs: 50 });
  t.is(rec.find('update', s.name('a'))!.obj.metadata?.resourceVersion, inf.get(`${t.context.ns}/${s.name('a')}`)!.metadata?.resourceVersion);
  // Without the option, no resync.
  const quiet = s.informer();
  const quietRec = new Recorder();
  quiet.addEventHandler(quietRec);
  quiet.start();
  t.true(await quiet.waitForSync(undefined, 30_000));
  await waitFor(() => resyncs('a') >= 4, { what: 'two more resyncs of the first informer', timeoutMs: 30_000, intervalMs: 50 });
  t.deepEqual(quietRec.summary(), [`add ${s.name('a')}`, `add ${s.name('b')}`], 'an informer without resyncPeriodMs only reports changes');
});

test('liveness: a black-holed watch is noticed within the bound, not synced until a relist; the relist sees what changed during the freeze, a new watch connection what changed after', async (t) => {
  const s = scope(t);
  // The watch goes through a TCP proxy; the list goes straight to the API server.
  const kc = await testKubeConfig();
  const proxy = await startTcpProxy(currentCluster(kc)!.server);
  t.teardown(() => proxy.close());
  const viaProxy = makeClients(singleConfig({ ...currentCluster(kc)!, server: proxy.url }, currentUser(kc)!), {
    userAgent: 'kube-informer-it-liveness',
    qps: 1000,
    burst: 1000,
  });
  t.teardown(() => viaProxy.connections.destroy());
  await s.create('before');
  let lists = 0;
  let releaseRelist!: () => void;
  const relistGate = new Promise<void>((resolve) => (releaseRelist = resolve));
  const inf = s.informer(
    async () => {
      // The relist waits until the test has seen the informer report not synced.
      if (++lists > 1) await relistGate;
      return s.list();
    },
    { watchLivenessTimeoutMs: 3000 },
    viaProxy.rest,
  );
  const rec = new Recorder();
  inf.addEventHandler(rec);
  inf.start();
  t.true(await inf.waitForSync(undefined, 30_000));
  await waitFor(() => proxy.open === 1, { what: 'the watch connection through the proxy', timeoutMs: 30_000, intervalMs: 20 });

  t.is(proxy.freeze(), 1, 'the watch connection is black-holed');
  await s.create('during');
  await waitFor(() => !inf.hasSynced(), { what: 'the informer to notice the frozen watch', timeoutMs: 30_000, intervalMs: 20 });
  t.is(rec.find('add', s.name('during')), undefined, 'the frozen watch delivered nothing');
  t.false(await inf.waitForSync(undefined, 100), 'not synced while the relist waits');
  releaseRelist();
  t.true(await inf.waitForSync(undefined, 30_000));
  t.truthy(rec.find('add', s.name('during')), 'the relist reported the object created during the freeze');
  t.is(lists, 2);

  await waitFor(() => proxy.accepted >= 2, { what: 'a new watch connection', timeoutMs: 30_000, intervalMs: 20 });
  await s.create('after');
  await rec.waitFor('add', s.name('after'));
  t.deepEqual(rec.summary(), [`add ${s.name('after')}`, `add ${s.name('before')}`, `add ${s.name('during')}`]);
});
