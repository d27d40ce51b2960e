import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import test from 'ava';
import { MAX_RESPONSE_BYTES, sendRequest } from '../../../host/kube/http-library.js';
import { testCa } from '../../helpers/certs.js';

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

// The request bound (timeoutMs) is one timer per request, no AbortController (issue 34, per-object CPU): past it the
// request fails with the caller's timeout error whether nothing or part of the answer came; in time, it resolves and
// its timer never fires (released with the answer).
const boundTable: { name: string; answer: (res: http.ServerResponse) => void; timeoutMs: number; want: 'timeout' | 'answer' }[] = [
  { name: 'no answer at all', answer: () => undefined, timeoutMs: 150, want: 'timeout' },
  { name: 'headers and part of the body, then nothing', answer: (res) => (res.writeHead(200), res.write('{"a":')), timeoutMs: 150, want: 'timeout' },
  { name: 'the whole answer in time', answer: (res) => res.end('{}'), timeoutMs: 3_000, want: 'answer' },
];

for (const { name, answer, timeoutMs, want } of boundTable) {
  test(`sendRequest: timeoutMs, ${name}: ${want === 'timeout' ? 'fails with the timeout error' : 'resolves, no timer left'}`, async (t) => {
    const server = http.createServer((_req, res) => answer(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`);
    const agent = new http.Agent({ keepAlive: false });
    t.teardown(() => agent.destroy());
    const timeout = new Error('the bound passed');
    let fired = 0;
    const timeoutError = () => (fired++, timeout);
    const sent = sendRequest({ method: 'GET', url, headers: {}, agent, timeoutMs, timeoutError });
    if (want === 'timeout') {
      t.is(await t.throwsAsync(sent), timeout);
    } else {
      t.is((await sent).status, 200);
      await new Promise((resolve) => setTimeout(resolve, timeoutMs + 500));
      t.is(fired, 0, 'the bound timer was released with the answer');
    }
  });
}

/**
 * Write fencing's last check (beforeSend): asked once the request has a
 * connection that can carry it (TCP connected, TLS handshake done), and a
 * refusal sends nothing. Each kind of connection a request can get from a
 * keep-alive agent, refused and allowed.
 */
const fenceKinds = [
  'new TCP connection',
  'reused keep-alive connection',
  'connection handed over from the agent queue',
  'new TLS connection',
] as const;

async function fenceServer(tls: boolean): Promise<{ url: string; seen: (path: string) => number; close(): Promise<void> }> {
  const seen = new Map<string, number>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    req.on('end', () => {
      seen.set(req.url ?? '', (seen.get(req.url ?? '') ?? 0) + 1);
      // /slow keeps the agent's only socket busy, so the next request waits in the agent's queue.
      setTimeout(() => res.end('{}'), req.url === '/slow' ? 100 : 0);
    });
  };
  const server = tls ? https.createServer(await testCa('fence-server'), handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen: (path) => seen.get(path) ?? 0,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

for (const kind of fenceKinds) {
  for (const refuse of [true, false]) {
    test(`sendRequest: beforeSend on a ${kind} runs once it is connected; ${refuse ? 'a refusal sends nothing' : 'allowed, the request is sent'}`, async (t) => {
      const tls = kind === 'new TLS connection';
      const server = await fenceServer(tls);
      t.teardown(() => server.close());
      const agent = tls
        ? new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false })
        : new http.Agent({ keepAlive: true, maxSockets: 1 });
      t.teardown(() => agent.destroy());
      const sockets: Socket[] = [];
      const create = (agent as unknown as { createConnection: (...a: unknown[]) => Socket }).createConnection.bind(agent);
      (agent as unknown as { createConnection: (...a: unknown[]) => Socket }).createConnection = (...a: unknown[]) => {
        const s = create(...a);
        sockets.push(s);
        return s;
      };
      const get = (path: string) => sendRequest({ method: 'GET', url: new URL(server.url + path), headers: {}, agent });
      if (kind === 'reused keep-alive connection') await get('/first');
      const busy = kind === 'connection handed over from the agent queue' ? get('/slow') : undefined;
      const connectedAtCheck: boolean[] = [];
      const sent = sendRequest({
        method: 'PATCH',
        url: new URL(`${server.url}/fenced`),
        headers: { 'Content-Length': '2' },
        body: '{}',
        agent,
        beforeSend: () => {
          const s = sockets.at(-1)!;
          connectedAtCheck.push(s instanceof TLSSocket ? Object.keys(s.getPeerCertificate()).length > 0 : !s.connecting && !s.destroyed);
          return refuse ? new Error('lease not fresh') : undefined;
        },
      });
      if (refuse) await t.throwsAsync(sent, { message: 'lease not fresh' });
      else t.is((await sent).status, 200);
      await busy;
      // A later request on a connection of its own: the server has read whatever came before.
      await sendRequest({
        method: 'GET',
        url: new URL(`${server.url}/after`),
        headers: {},
        agent: tls ? new https.Agent({ rejectUnauthorized: false }) : undefined,
      });
      t.deepEqual(connectedAtCheck, [true], 'asked once, on a connected socket');
      t.is(sockets.length, 1, 'one connection for all requests');
      t.is(server.seen('/fenced'), refuse ? 0 : 1);
    });
  }
}
