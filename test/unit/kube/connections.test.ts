import https from 'node:https';
import test from 'ava';
import { ConnectionPool, MAX_REQUEST_SOCKETS, MAX_WATCH_SOCKETS } from '../../../host/kube/connections.js';
import { makeClients } from '../../../host/kube/client.js';
import type { TlsSettings } from '../../../host/kube/credentials.js';
import { startCaptureServer } from './capture-server.js';

const CA_A = Buffer.from('ca-a');
const CA_B = Buffer.from('ca-b');

type Side = { secure: boolean; tls: TlsSettings; purpose?: 'request' | 'watch' };
const https_ = (tls: TlsSettings): Side => ({ secure: true, tls });
const sameAgentTable: { name: string; first: Side; second: Side; same: boolean }[] = [
  { name: 'same TLS settings share one agent', first: https_({ ca: CA_A }), second: https_({ ca: Buffer.from('ca-a') }), same: true },
  { name: 'another CA gets another agent', first: https_({ ca: CA_A }), second: https_({ ca: CA_B }), same: false },
  {
    name: 'another client certificate gets another agent',
    first: https_({ ca: CA_A, cert: Buffer.from('c1'), key: Buffer.from('k') }),
    second: https_({ ca: CA_A, cert: Buffer.from('c2'), key: Buffer.from('k') }),
    same: false,
  },
  { name: 'skipTLSVerify gets another agent', first: https_({ ca: CA_A }), second: https_({ ca: CA_A, rejectUnauthorized: false }), same: false },
  { name: 'tls-server-name gets another agent', first: https_({ ca: CA_A }), second: https_({ ca: CA_A, servername: 'api' }), same: false },
  { name: 'plain HTTP and HTTPS do not share', first: https_({}), second: { secure: false, tls: {} }, same: false },
  { name: 'watches do not share with requests', first: https_({ ca: CA_A }), second: { ...https_({ ca: CA_A }), purpose: 'watch' }, same: false },
];

for (const { name, first, second, same } of sameAgentTable) {
  test(`ConnectionPool.agentFor: ${name}`, (t) => {
    const pool = new ConnectionPool();
    t.teardown(() => pool.destroy());
    const a = pool.agentFor(first.secure, first.tls, first.purpose);
    const b = pool.agentFor(second.secure, second.tls, second.purpose);
    t.is(a === b, same);
  });
}

test('ConnectionPool.agentFor: pooled agents keep connections alive, bounded, with the given TLS settings', (t) => {
  const pool = new ConnectionPool();
  t.teardown(() => pool.destroy());
  const request = pool.agentFor(true, { ca: CA_A, rejectUnauthorized: false });
  const watch = pool.agentFor(true, { ca: CA_A, rejectUnauthorized: false }, 'watch');
  t.true(request instanceof https.Agent);
  t.true((request as unknown as { keepAlive: boolean }).keepAlive);
  t.is(request.maxSockets, MAX_REQUEST_SOCKETS);
  t.is(watch.maxSockets, MAX_WATCH_SOCKETS);
  t.deepEqual((request as unknown as { options: https.AgentOptions }).options.ca, CA_A);
  t.false((request as unknown as { options: https.AgentOptions }).options.rejectUnauthorized);
});

test('makeClients: sequential requests reuse one connection; clients with other tokens sharing the pool share it', async (t) => {
  const server = await startCaptureServer(() => ({ status: 200, body: { kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [] } }));
  t.teardown(() => server.close());
  const pool = new ConnectionPool();
  t.teardown(() => pool.destroy());
  const a = makeClients(server.kubeConfig('token-a'), { userAgent: 'a', qps: 1000, burst: 1000, connections: pool });
  const b = makeClients(server.kubeConfig('token-b'), { userAgent: 'b', qps: 1000, burst: 1000, connections: pool });
  for (let i = 0; i < 5; i++) {
    await a.core.listNode({});
    await b.core.listNode({});
  }
  t.is(new Set(server.requests.map((r) => r.remotePort)).size, 1);
  t.deepEqual(
    server.requests.map((r) => r.headers.authorization),
    Array.from({ length: 10 }, (_, i) => `Bearer token-${i % 2 ? 'b' : 'a'}`),
  );
});

test('makeClients: concurrent requests open at most MAX_REQUEST_SOCKETS connections', async (t) => {
  const server = await startCaptureServer(() => ({ status: 200, body: { kind: 'NodeList', apiVersion: 'v1', metadata: {}, items: [] } }));
  t.teardown(() => server.close());
  const { core, connections } = makeClients(server.kubeConfig(), { userAgent: 'c', qps: 1000, burst: 1000 });
  t.teardown(() => connections.destroy());
  await Promise.all(Array.from({ length: MAX_REQUEST_SOCKETS * 3 }, () => core.listNode({})));
  const used = new Set(server.requests.map((r) => r.remotePort)).size;
  t.true(used <= MAX_REQUEST_SOCKETS, `${used} connections`);
  t.is(server.requests.length, MAX_REQUEST_SOCKETS * 3);
});
