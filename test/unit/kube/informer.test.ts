/**
 * host/kube/informer.ts against a local server that plays scripted watch
 * streams (the list is a function of the test): the liveness bound of a
 * watch, and events that cannot be applied. The informer's behaviour against
 * a real API server is in test/integration/kube-informer.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { KubernetesObject } from '@kubernetes/client-node';
import { makeClients } from '../../../host/kube/client.js';
import { Informer, type InformerOptions, type ListResult } from '../../../host/kube/informer.js';
import { singleConfig } from '../../../host/kube/kubeconfig.js';
import { silentLogger } from '../../../host/log.js';
import { waitFor } from '../../helpers/wait.js';

/** One watch request the server got. */
interface WatchSeen {
  resourceVersion: string | null;
  /** Client port of its connection: another port, another connection. */
  port: number;
  /** Whether the client has closed it. */
  closed: boolean;
}

/** What the server does with the n-th watch (0-based): writes to it, and leaves it open unless it ends it. */
type WatchScript = (res: http.ServerResponse, n: number) => void;

async function watchServer(script: WatchScript): Promise<{ url: string; watches: WatchSeen[]; close(): Promise<void> }> {
  const watches: WatchSeen[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const seen: WatchSeen = { resourceVersion: url.searchParams.get('resourceVersion'), port: req.socket.remotePort ?? 0, closed: false };
    watches.push(seen);
    res.on('close', () => (seen.closed = true));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
    script(res, watches.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    watches,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const obj = (name: string, rv: string): KubernetesObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, resourceVersion: rv } });
const line = (type: string, o: KubernetesObject): string => `${JSON.stringify({ type, object: o })}\n`;
const listOf = (rv: string, ...items: KubernetesObject[]): ListResult<KubernetesObject> => ({ items, metadata: { resourceVersion: rv } });

/** An informer of `/api/v1/configmaps` on `url`, stopped at teardown. */
function informerFor(
  t: { teardown(fn: () => unknown): void },
  url: string,
  listFn: () => Promise<ListResult<KubernetesObject>>,
  opts: Partial<InformerOptions<KubernetesObject>> = {},
): Informer<KubernetesObject> {
  const { rest, connections } = makeClients(singleConfig({ name: 'c', server: url, skipTLSVerify: true }, { name: 'u', token: 't' }), {
    userAgent: 'informer-test',
    qps: 1000,
    burst: 1000,
  });
  const inf = new Informer<KubernetesObject>(rest, '/api/v1/configmaps', listFn, { log: silentLogger(), random: () => 0, ...opts });
  t.teardown(async () => {
    await inf.stop();
    connections.destroy();
  });
  return inf;
}

const names = (inf: Informer<KubernetesObject>): string[] =>
  inf
    .list()
    .map((o) => o.metadata!.name!)
    .sort();

test('liveness: a watch that delivers nothing within the bound is aborted; not synced until the relist over a new connection is applied', async (t) => {
  // Watch 0 says nothing (a black hole); later watches get a bookmark every 50 ms.
  const server = await watchServer((res, n) => {
    if (n === 0) return;
    const timer = setInterval(() => res.write(line('BOOKMARK', { metadata: { resourceVersion: '9' } })), 50);
    res.on('close', () => clearInterval(timer));
  });
  t.teardown(() => server.close());
  let lists = 0;
  let releaseRelist!: () => void;
  const relistGate = new Promise<void>((resolve) => (releaseRelist = resolve));
  const inf = informerFor(
    t,
    server.url,
    async () => {
      lists++;
      if (lists === 1) return listOf('5', obj('a', '5'));
      await relistGate;
      return listOf('8', obj('a', '5'), obj('during', '8'));
    },
    { watchLivenessTimeoutMs: 300 },
  );
  inf.start();
  t.true(await inf.waitForSync(undefined, 10_000));
  await waitFor(() => !inf.hasSynced(), { what: 'the silent watch noticed: not synced', timeoutMs: 10_000, intervalMs: 10 });
  await waitFor(() => lists === 2, { what: 'the relist started', timeoutMs: 10_000, intervalMs: 10 });
  t.false(inf.hasSynced(), 'not synced while the relist is under way');
  t.false(await inf.waitForSync(undefined, 50), 'waitForSync waits for the relist');
  t.true(server.watches[0]!.closed, 'the silent watch was closed');
  releaseRelist();
  t.true(await inf.waitForSync(undefined, 10_000));
  t.deepEqual(names(inf), ['a', 'during'], 'the relist brought what changed meanwhile');
  await waitFor(() => server.watches.length >= 2, { what: 'the second watch', timeoutMs: 10_000, intervalMs: 10 });
  t.deepEqual(
    server.watches.slice(0, 2).map((w) => w.resourceVersion),
    ['5', '8'],
    'the second watch starts from the relist',
  );
  t.not(server.watches[1]!.port, server.watches[0]!.port, 'over a new connection');
});

test('liveness: events and bookmarks keep a quiet watch alive past the bound', async (t) => {
  const bound = 1000;
  const server = await watchServer((res) => {
    let rv = 5;
    const timer = setInterval(() => {
      rv++;
      res.write(rv % 2 ? line('BOOKMARK', { metadata: { resourceVersion: String(rv) } }) : line('MODIFIED', obj('a', String(rv))));
    }, bound / 10);
    res.on('close', () => clearInterval(timer));
  });
  t.teardown(() => server.close());
  let lists = 0;
  const inf = informerFor(
    t,
    server.url,
    async () => {
      lists++;
      return listOf('5', obj('a', '5'));
    },
    { watchLivenessTimeoutMs: bound },
  );
  inf.start();
  t.true(await inf.waitForSync(undefined, 10_000));
  await new Promise((r) => setTimeout(r, 3 * bound));
  t.is(server.watches.length, 1, 'one watch');
  t.false(server.watches[0]!.closed);
  t.is(lists, 1, 'no relist');
  t.true(inf.hasSynced());
});

test('an event that cannot be applied does not advance the resourceVersion: the watch ends, the relist brings the object', async (t) => {
  // Watch 0 delivers `bad` (which the transform refuses once) and then `c`, and stays open.
  const server = await watchServer((res, n) => {
    if (n === 0) res.write(line('ADDED', obj('bad', '6')) + line('ADDED', obj('c', '7')));
  });
  t.teardown(() => server.close());
  let lists = 0;
  let refusals = 0;
  const added: string[] = [];
  const inf = informerFor(
    t,
    server.url,
    async () => {
      lists++;
      return lists === 1 ? listOf('5', obj('a', '5')) : listOf('7', obj('a', '5'), obj('bad', '6'), obj('c', '7'));
    },
    {
      transform: (o) => {
        if (o.metadata?.name === 'bad' && refusals++ === 0) throw new Error('injected: transform refused');
        return o;
      },
    },
  );
  inf.addEventHandler({ onAdd: (o) => added.push(o.metadata!.name!) });
  inf.start();
  await waitFor(() => inf.get('bad'), { what: 'the refused object in the cache', timeoutMs: 10_000, intervalMs: 10 });
  t.true(await inf.waitForSync(undefined, 10_000));
  t.deepEqual(names(inf), ['a', 'bad', 'c']);
  t.deepEqual(added, ['a', 'bad', 'c'], 'each object added once, by the relist (the watch stopped at the refused event)');
  t.is(lists, 2);
  await waitFor(() => server.watches.length >= 2, { what: 'the second watch', timeoutMs: 10_000, intervalMs: 10 });
  t.deepEqual(
    server.watches.map((w) => w.resourceVersion),
    ['5', '7'],
    "no watch from the refused event's resourceVersion",
  );
});

test('mutationCount changes with every change of the cache (list, add, update, delete) and with nothing else (a bookmark, an unchanged resourceVersion)', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = await watchServer((res, n) => {
    if (n !== 0) return;
    void gate.then(() =>
      res.write(
        line('BOOKMARK', { metadata: { resourceVersion: '5' } }) +
          line('ADDED', obj('b', '6')) +
          line('MODIFIED', obj('b', '6')) +
          line('MODIFIED', obj('b', '7')) +
          line('DELETED', obj('a', '8')) +
          line('ADDED', obj('done', '9')),
      ),
    );
  });
  t.teardown(() => server.close());
  const inf = informerFor(t, server.url, async () => listOf('5', obj('a', '5')));
  const counts: number[] = [inf.mutationCount()];
  inf.addEventHandler({
    onAdd: () => counts.push(inf.mutationCount()),
    onUpdate: () => counts.push(inf.mutationCount()),
    onDelete: () => counts.push(inf.mutationCount()),
  });
  inf.start();
  t.true(await inf.waitForSync(undefined, 10_000));
  const afterList = inf.mutationCount();
  release();
  await waitFor(() => inf.get('done'), { what: 'the last event applied', timeoutMs: 10_000, intervalMs: 10 });
  // Handlers see the cache already changed: each event's count is new, and the count never repeats a value.
  // start 0; the list (add a) 1; add b 2; b again at the same resourceVersion 3 (cached anew, no handler);
  // update b 4; delete a 5; add done 6. The bookmark changed nothing.
  t.deepEqual(counts, [0, 1, 2, 4, 5, 6]);
  t.is(afterList, 1);
});
