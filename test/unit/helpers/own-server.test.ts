/**
 * The readiness probes that tell a server this test started from another
 * test's server on the same port (a port picked free is released before the
 * child binds it; docs/testing.md, "Ports picked free"): etcdAnswersAs (the
 * control plane's etcd, by its --name) and motoAnswersAs (moto, by the id
 * moto-server.py puts in every response). Each row is a server on the port.
 */
import test from 'ava';
import http from 'node:http';
import { etcdAnswersAs } from '../../controlplane/probe.js';
import { motoAnswersAs } from '../../helpers/moto.js';

/** An HTTP server on a loopback port 0 answering every request with `answer(path)`; returns its URL. */
async function serve(
  t: { teardown(fn: () => void): void },
  answer: (path: string) => { status: number; body: string; headers?: Record<string, string> },
): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const a = answer(req.url ?? '');
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const addr = server.address() as { port: number };
  return `http://127.0.0.1:${addr.port}`;
}

const members = (...names: string[]) => JSON.stringify({ header: {}, members: names.map((name) => ({ name })) });

const etcds = [
  { server: 'ours: healthy, one member named as we started it', health: '{"health":"true"}', list: members('ccm-ours'), ours: true },
  { server: "another test's etcd: healthy, but its own name", health: '{"health":"true"}', list: members('ccm-other'), ours: false },
  { server: 'ours, name not yet published (it still shows the resumed name)', health: '{"health":"true"}', list: members('ccm-before'), ours: false },
  { server: 'named as ours but unhealthy', health: '{"health":"false"}', list: members('ccm-ours'), ours: false },
  { server: 'healthy, member list not JSON', health: '{"health":"true"}', list: 'nope', ours: false },
  { server: 'healthy, two members', health: '{"health":"true"}', list: members('ccm-ours', 'ccm-other'), ours: false },
];

for (const row of etcds) {
  test(`etcdAnswersAs: ${row.server} → ${row.ours}`, async (t) => {
    const url = await serve(t, (path) =>
      path === '/health'
        ? { status: 200, body: row.health }
        : path === '/v3/cluster/member/list'
          ? { status: 200, body: row.list }
          : { status: 404, body: '' },
    );
    t.is(await etcdAnswersAs(url, 'ccm-ours'), row.ours);
  });
}

test('etcdAnswersAs: nothing listening → false', async (t) => {
  const url = await serve(t, () => ({ status: 200, body: '' }));
  const closed = url.replace(/:\d+$/, ':1');
  t.false(await etcdAnswersAs(closed, 'ccm-ours'));
});

const motos = [
  { server: 'ours: 200 with our id', status: 200, id: 'abc123' as string | undefined, ours: true },
  { server: "another test's moto: 200 with its id", status: 200, id: 'def456', ours: false },
  { server: 'a moto started without an id (or any other HTTP server): 200, no id', status: 200, id: undefined, ours: false },
  { server: 'ours, not serving yet: 503 with our id', status: 503, id: 'abc123', ours: false },
];

for (const row of motos) {
  test(`motoAnswersAs: ${row.server} → ${row.ours}`, async (t) => {
    const url = await serve(t, () => ({ status: row.status, body: '{}', headers: row.id ? { 'X-Ccm-Test-Moto-Id': row.id } : undefined }));
    t.is(await motoAnswersAs(url, 'abc123'), row.ours);
  });
}
