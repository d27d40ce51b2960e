/**
 * host/kube/watch.ts against a local server streaming canned watch answers:
 * events split across chunks, a refused watch, an oversized event.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { makeClients } from '../../../host/kube/client.js';
import { singleConfig } from '../../../host/kube/kubeconfig.js';
import { ApiError } from '../../../host/kube/rest.js';
import { MAX_WATCH_LINE_BYTES, watch } from '../../../host/kube/watch.js';

/** A server answering every request with `status` and the body chunks `chunks`, written one by one. */
async function streamingServer(status: number, chunks: (string | Buffer)[]): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    void (async () => {
      for (const c of chunks) {
        if (!res.write(c)) await new Promise((r) => res.once('drain', r));
      }
      res.end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

function clientFor(url: string) {
  return makeClients(singleConfig({ name: 'c', server: url, skipTLSVerify: true }, { name: 'u', token: 't' }), {
    userAgent: 'watch-test',
    qps: 1000,
    burst: 1000,
  });
}

test('watch: events split across chunks arrive whole, in order, with the query sent', async (t) => {
  const added = JSON.stringify({
    type: 'ADDED',
    object: { metadata: { name: 'a', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' } },
  });
  const bookmark = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } });
  const server = await streamingServer(200, [added.slice(0, 10), `${added.slice(10)}\n${bookmark.slice(0, 5)}`, `${bookmark.slice(5)}\n`]);
  t.teardown(() => server.close());
  const { rest, connections } = clientFor(server.url);
  t.teardown(() => connections.destroy());
  const seen: [string, unknown][] = [];
  await watch(
    rest,
    '/api/v1/nodes',
    { resourceVersion: '1', allowWatchBookmarks: true },
    (type, obj) => seen.push([type, obj]),
    new AbortController().signal,
  );
  t.deepEqual(seen, [
    ['ADDED', { metadata: { name: 'a', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' } }],
    ['BOOKMARK', { metadata: { resourceVersion: '7' } }],
  ]);
  t.is(server.paths[0], '/api/v1/nodes?resourceVersion=1&allowWatchBookmarks=true&watch=true');
});

const failTable: {
  name: string;
  status: number;
  chunks: (string | Buffer)[];
  want: (t: { is: (a: unknown, b: unknown) => void; regex: (a: string, r: RegExp) => void }, err: Error) => void;
}[] = [
  {
    name: 'a refused watch rejects with its HTTP status and Status body',
    status: 410,
    chunks: [JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' })],
    want: (t, err) => {
      t.is(err instanceof ApiError && err.code, 410);
      t.regex(err.message, /too old resource version/);
    },
  },
  {
    name: 'an event longer than the bound ends the watch with an error saying so',
    status: 200,
    chunks: [
      Buffer.alloc(MAX_WATCH_LINE_BYTES / 4, 'x'),
      Buffer.alloc(MAX_WATCH_LINE_BYTES / 4, 'x'),
      Buffer.alloc(MAX_WATCH_LINE_BYTES / 4, 'x'),
      Buffer.alloc(MAX_WATCH_LINE_BYTES / 2, 'x'),
    ],
    want: (t, err) => t.regex(err.message, /an event exceeds \d+ bytes/),
  },
  {
    name: 'a line that is not JSON ends the watch',
    status: 200,
    chunks: ['{oops\n'],
    want: (t, err) => t.regex(err.message, /an event is not JSON/),
  },
];

for (const { name, status, chunks, want } of failTable) {
  test(`watch: ${name}`, async (t) => {
    const server = await streamingServer(status, chunks);
    t.teardown(() => server.close());
    const { rest, connections } = clientFor(server.url);
    t.teardown(() => connections.destroy());
    const err = await t.throwsAsync(watch(rest, '/api/v1/nodes', {}, () => undefined, new AbortController().signal));
    want(t, err!);
  });
}
