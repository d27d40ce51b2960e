/**
 * startHealthServer over real HTTPS on 127.0.0.1 with a free port and a
 * self-signed certificate: health check aggregation, per-check paths,
 * metrics, 404s, timeouts; the guard decides before any of them
 * (delegated authentication and authorization are tested against the real
 * API server in test/integration/secure-serving.test.ts).
 */
import anyTest, { type TestFn } from 'ava';
import { silentLogger } from '../../../host/log.js';
import { createHostMetrics, MetricNames, setControllerRunning } from '../../../host/metrics.js';
import { Controllers } from '../../../host/names.js';
import type { RequestGuard } from '../../../host/server/guard.js';
import { generateSelfSigned } from '../../../host/server/self-signed.js';
import { startHealthServer, type HealthServer, type ServingTls } from '../../../host/server/server.js';
import { httpsRequest } from '../../helpers/https.js';

const test = anyTest as TestFn<{ server: HealthServer; url: string }>;

/** A guard that trusts no client certificates. */
const NO_CERTS = { requestsClientCerts: false, clientCaPems: [], onTrustChange: () => () => {} };
const ALLOW_ALL: RequestGuard = { ...NO_CERTS, admit: async () => true };
let tls: ServingTls;

test.before(async () => {
  tls = await generateSelfSigned({ commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
});

test.beforeEach(async (t) => {
  const metrics = createHostMetrics();
  setControllerRunning(metrics, Controllers.CLOUD_NODE, true);
  const server = await startHealthServer({
    bindAddress: '127.0.0.1',
    port: 0,
    tls,
    guard: ALLOW_ALL,
    registry: metrics.registry,
    log: silentLogger(),
    checkTimeoutMs: 200,
  });
  t.context = { server, url: `https://127.0.0.1:${server.port}` };
});

test.afterEach.always(async (t) => {
  await t.context.server?.close();
});

async function get(url: string, init?: { method: string }): Promise<{ status: number; body: string; type: string | undefined }> {
  return httpsRequest(url, { ca: tls.cert, method: init?.method });
}

test('binds a free port when asked for port 0', (t) => {
  t.true(t.context.server.port > 0);
});

test('healthz is ok with only the built-in ping check', async (t) => {
  t.deepEqual(await get(`${t.context.url}/healthz`), { status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });
});

test('healthz?verbose lists the checks', async (t) => {
  t.context.server.addCheck('plugin', () => {});
  const res = await get(`${t.context.url}/healthz?verbose`);
  t.is(res.status, 200);
  t.is(res.body, '[+]ping ok\n[+]plugin ok\nhealthz check passed\n');
});

test('a failing check makes healthz 500 and names the reason', async (t) => {
  t.context.server.addCheck('plugin', () => {});
  t.context.server.addCheck('cloud-node-controller', async () => {
    throw new Error('plugin not ready:\nhandshake pending');
  });
  const res = await get(`${t.context.url}/healthz`);
  t.is(res.status, 500);
  t.is(res.body, '[+]ping ok\n[+]plugin ok\n[-]cloud-node-controller failed: plugin not ready: handshake pending\nhealthz check failed\n');
});

test('a synchronous throw fails the check too', async (t) => {
  t.context.server.addCheck('sync', () => {
    throw new Error('boom');
  });
  const res = await get(`${t.context.url}/healthz`);
  t.is(res.status, 500);
  t.regex(res.body, /^\[-\]sync failed: boom$/m);
});

test('a check slower than the timeout fails', async (t) => {
  t.context.server.addCheck('slow', () => new Promise((resolve) => setTimeout(resolve, 2_000).unref()));
  const res = await get(`${t.context.url}/healthz`);
  t.is(res.status, 500);
  t.regex(res.body, /^\[-\]slow failed: timed out after 200ms$/m);
});

test('exclude skips a failing check', async (t) => {
  t.context.server.addCheck('bad', () => Promise.reject(new Error('down')));
  const res = await get(`${t.context.url}/healthz?exclude=bad&verbose`);
  t.is(res.status, 200);
  t.is(res.body, '[+]ping ok\n[+]bad excluded: ok\nhealthz check passed\n');
});

test('per-check path runs one check', async (t) => {
  t.context.server.addCheck('good', () => {});
  t.context.server.addCheck('bad', () => Promise.reject(new Error('down')));
  t.deepEqual(await get(`${t.context.url}/healthz/good`), { status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });
  const bad = await get(`${t.context.url}/healthz/bad`);
  t.is(bad.status, 500);
  t.is(bad.body, 'internal server error: down\n');
  t.is((await get(`${t.context.url}/healthz/absent`)).status, 404);
});

test('readyz runs the same checks', async (t) => {
  t.is((await get(`${t.context.url}/readyz`)).body, 'ok');
  t.context.server.addCheck('bad', () => Promise.reject(new Error('down')));
  const res = await get(`${t.context.url}/readyz`);
  t.is(res.status, 500);
  t.regex(res.body, /\[-\]bad failed: down\nreadyz check failed\n$/);
  t.is((await get(`${t.context.url}/readyz/ping`)).status, 200);
});

test('a check limited to one endpoint runs only there', async (t) => {
  const { server, url } = t.context;
  server.addCheck(
    'live-only',
    () => {
      throw new Error('stuck renew loop');
    },
    'healthz',
  );
  server.addCheck(
    'ready-only',
    () => {
      throw new Error('caches not synced');
    },
    'readyz',
  );
  const health = await get(`${url}/healthz?verbose`);
  t.is(health.status, 500);
  t.regex(health.body, /\[-\]live-only failed: stuck renew loop/);
  t.notRegex(health.body, /ready-only/);
  const ready = await get(`${url}/readyz?verbose`);
  t.is(ready.status, 500);
  t.regex(ready.body, /\[-\]ready-only failed: caches not synced/);
  t.notRegex(ready.body, /live-only/);
  t.is((await get(`${url}/readyz/live-only`)).status, 404);
  t.is((await get(`${url}/healthz/live-only`)).status, 500);
  // /livez is kube's name for the same liveness checks.
  const live = await get(`${url}/livez?verbose`);
  t.is(live.status, 500);
  t.regex(live.body, /\[-\]live-only failed: stuck renew loop\nlivez check failed\n$/);
  t.notRegex(live.body, /ready-only/);
  t.is((await get(`${url}/livez/live-only`)).status, 500);
  t.is((await get(`${url}/livez/ping`)).status, 200);
  t.is((await get(`${url}/livez/ready-only`)).status, 404);
});

test('metrics serves the registry in Prometheus text format', async (t) => {
  const res = await get(`${t.context.url}/metrics`);
  t.is(res.status, 200);
  t.regex(res.type ?? '', /^text\/plain; version=0\.0\.4/);
  t.regex(res.body, /# HELP ccm_plugin_rpc_duration_seconds /);
  t.regex(res.body, /# TYPE node_controller_cloud_provider_taint_removal_delay_seconds histogram/);
  t.regex(res.body, /running_managed_controllers\{manager="cloud-controller-manager",name="cloud-node"\} 1/);
  t.regex(res.body, /process_cpu_user_seconds_total/);
  t.true(res.body.includes(MetricNames.NODE_INITIALIZATION_DURATION));
});

test('unknown paths are 404', async (t) => {
  for (const p of ['/', '/foo', '/healthz/a/b', '/metrics/x', '/configz']) {
    t.is((await get(`${t.context.url}${p}`)).status, 404, p);
  }
});

test('other methods are 405', async (t) => {
  const res = await get(`${t.context.url}/healthz`, { method: 'POST' });
  t.is(res.status, 405);
});

test('addCheck refuses duplicates and bad names', (t) => {
  t.context.server.addCheck('a', () => {});
  t.throws(() => t.context.server.addCheck('a', () => {}), { message: /already registered/ });
  t.throws(() => t.context.server.addCheck('ping', () => {}), { message: /already registered/ });
  t.throws(() => t.context.server.addCheck('a/b', () => {}), { message: /is invalid/ });
});

test('close is idempotent and stops serving', async (t) => {
  const { server, url } = t.context;
  await server.close();
  await server.close();
  await t.throwsAsync(get(`${url}/healthz`));
});

test('a busy port is reported with the flag to change', async (t) => {
  const registry = createHostMetrics({ defaultMetrics: false }).registry;
  await t.throwsAsync(
    startHealthServer({ bindAddress: '127.0.0.1', port: t.context.server.port, tls, guard: ALLOW_ALL, registry, log: silentLogger() }),
    { message: /cannot serve \/healthz and \/metrics on 127\.0\.0\.1:\d+: .*--secure-port/ },
  );
});

test('an invalid certificate is reported with the flags to check', async (t) => {
  const registry = createHostMetrics({ defaultMetrics: false }).registry;
  await t.throwsAsync(
    startHealthServer({
      bindAddress: '127.0.0.1',
      port: 0,
      tls: { cert: 'not a certificate', key: tls.key },
      guard: ALLOW_ALL,
      registry,
      log: silentLogger(),
    }),
    { message: /cannot serve HTTPS on --secure-port: .*--tls-cert-file/ },
  );
});

test('the guard answers before routing: a refused request never reaches /metrics or a 404', async (t) => {
  const registry = createHostMetrics({ defaultMetrics: false }).registry;
  const guard: RequestGuard = {
    ...NO_CERTS,
    admit: async (req, res) => {
      if (req.headers.authorization === 'Bearer ok') return true;
      res.writeHead(401).end('Unauthorized');
      return false;
    },
  };
  const server = await startHealthServer({ bindAddress: '127.0.0.1', port: 0, tls, guard, registry, log: silentLogger() });
  t.teardown(() => server.close());
  const url = `https://127.0.0.1:${server.port}`;
  t.is((await httpsRequest(`${url}/metrics`, { ca: tls.cert })).status, 401);
  t.is((await httpsRequest(`${url}/nowhere`, { ca: tls.cert })).status, 401);
  t.is((await httpsRequest(`${url}/metrics`, { ca: tls.cert, token: 'ok' })).status, 200);
  t.is((await httpsRequest(`${url}/nowhere`, { ca: tls.cert, token: 'ok' })).status, 404);
});

test('--tls-min-version is honoured: a client limited to TLS 1.2 cannot connect to a TLS 1.3-only server', async (t) => {
  const registry = createHostMetrics({ defaultMetrics: false }).registry;
  const server = await startHealthServer({
    bindAddress: '127.0.0.1',
    port: 0,
    tls: { ...tls, minVersion: 'TLSv1.3' },
    guard: ALLOW_ALL,
    registry,
    log: silentLogger(),
  });
  t.teardown(() => server.close());
  const url = `https://127.0.0.1:${server.port}/healthz`;
  t.is((await httpsRequest(url, { ca: tls.cert })).status, 200);
  const tls12 = await import('node:https').then(
    ({ default: https }) =>
      new Promise<string>((resolve) => {
        https
          .get(url, { ca: tls.cert, maxVersion: 'TLSv1.2', agent: false }, (res) => resolve(String(res.statusCode)))
          .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      }),
  );
  t.regex(tls12, /ERR_SSL|EPROTO|alert/i);
});
