import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import test from 'ava';
import { MAX_RESPONSE_BYTES, sendRequest } from '../../../host/kube/http-library.js';

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

const replayTable: { method: string; replayed: boolean }[] = [
  { method: 'GET', replayed: true },
  { method: 'POST', replayed: false },
  { method: 'PATCH', replayed: false },
];

for (const { method, replayed } of replayTable) {
  test(`sendRequest: ${method} on a keep-alive connection the server reset is ${replayed ? 'sent again' : 'not sent again'}`, async (t) => {
    const server = await resettingServer();
    t.teardown(() => server.close());
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    const request = (m: string) =>
      sendRequest({ method: m, url: new URL(`${server.url}/x`), headers: {}, agent, body: m === 'GET' ? undefined : '{}' });
    t.is((await request('GET')).status, 200);
    if (replayed) {
      const second = await request(method);
      t.is(second.status, 200);
      t.is(second.body.toString(), '{"ok":true}');
      t.is(server.connections(), 2);
    } else {
      await t.throwsAsync(request(method), { code: 'ECONNRESET' });
    }
  });
}

test('sendRequest: a response larger than the bound fails with an error saying so', async (t) => {
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
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/big`);
  await t.throwsAsync(sendRequest({ method: 'GET', url, headers: {} }), { message: /exceeds \d+ bytes; narrow the request/ });
});

test('sendRequest: an aborted signal ends the request with an AbortError', async (t) => {
  const server = http.createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hang`);
  const abort = new AbortController();
  const sent = sendRequest({ method: 'GET', url, headers: {}, signal: abort.signal });
  setTimeout(() => abort.abort(), 50);
  await t.throwsAsync(sent, { name: 'AbortError' });
});
