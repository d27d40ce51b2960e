import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import test from 'ava';
import { HttpMethod, RequestContext } from '@kubernetes/client-node';
import { MAX_RESPONSE_BYTES, NodeHttpLibrary } from '../../../host/kube/http-library.js';

/**
 * A server that answers the first request on each connection and resets the
 * connection (RST, no response) on the second: what a client sees when the
 * server dropped an idle keep-alive connection just as a request went out on it.
 */
async function resettingServer(): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  const served = new WeakMap<Socket, number>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const n = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, n);
    if (n > 1) {
      req.socket.resetAndDestroy();
      return;
    }
    req.resume();
    req.on('end', () => res.end(JSON.stringify({ ok: true })));
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

const replayTable: { method: HttpMethod; replayed: boolean }[] = [
  { method: HttpMethod.GET, replayed: true },
  { method: HttpMethod.POST, replayed: false },
  { method: HttpMethod.PATCH, replayed: false },
];

for (const { method, replayed } of replayTable) {
  test(`NodeHttpLibrary: ${method} on a keep-alive connection the server reset is ${replayed ? 'sent again' : 'not sent again'}`, async (t) => {
    const server = await resettingServer();
    t.teardown(() => server.close());
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    const lib = new NodeHttpLibrary();
    const request = (m: HttpMethod) => {
      const ctx = new RequestContext(`${server.url}/x`, m);
      ctx.setAgent(agent);
      if (m !== HttpMethod.GET) ctx.setBody('{}');
      return lib.send(ctx);
    };
    t.is((await request(HttpMethod.GET)).httpStatusCode, 200);
    if (replayed) {
      const second = await request(method);
      t.is(second.httpStatusCode, 200);
      t.is(await second.body.text(), '{"ok":true}');
      t.is(server.connections(), 2);
    } else {
      await t.throwsAsync(request(method), { code: 'ECONNRESET' });
    }
  });
}

test('NodeHttpLibrary: a response larger than the bound fails with an error saying so', async (t) => {
  const chunk = Buffer.alloc(4 * 2 ** 20);
  const server = http.createServer((_req, res) => {
    const write = (left: number): void => {
      if (left <= 0 || res.destroyed) return void res.end();
      res.write(chunk, () => write(left - chunk.length));
    };
    write(MAX_RESPONSE_BYTES + chunk.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const ctx = new RequestContext(`http://127.0.0.1:${(server.address() as AddressInfo).port}/big`, HttpMethod.GET);
  await t.throwsAsync(new NodeHttpLibrary().send(ctx), { message: /exceeds \d+ bytes; narrow the request/ });
});

test('NodeHttpLibrary: an aborted signal ends the request with an AbortError', async (t) => {
  const server = http.createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const ctx = new RequestContext(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hang`, HttpMethod.GET);
  const abort = new AbortController();
  ctx.setSignal(abort.signal);
  const sent = new NodeHttpLibrary().send(ctx);
  setTimeout(() => abort.abort(), 50);
  await t.throwsAsync(sent, { name: 'AbortError' });
});
