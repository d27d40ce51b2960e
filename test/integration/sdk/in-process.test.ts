/**
 * startInProcess: a provider served inside the test process, the way authors
 * unit-test their providers.
 */
import test from 'ava';
import { existsSync } from 'node:fs';
import type { ServiceError } from '@grpc/grpc-js';
import { pino } from 'pino';
import { Capability, Service } from '../../../proto/gen/ccm/provider/v1/identity.js';
import { Code, fromServiceError, ProviderError } from '../../../sdk/errors.js';
import type { CallContext, CloudProvider } from '../../../sdk/provider.js';
import { ErrorReason, MAX_MESSAGE_BYTES } from '../../../sdk/protocol.js';
import { startInProcess, unary } from '../../../sdk/testing.js';
import { createEchoProvider, echoMetadata } from '../../fixtures/echo-provider-lib.js';
import { withTimeout, WAIT_MS } from './plugin-process.js';

const silent = pino({ level: 'silent' });

async function failure(call: Promise<unknown>) {
  try {
    await call;
  } catch (err) {
    return fromServiceError(err as ServiceError);
  }
  throw new Error('call succeeded, expected an error');
}

/** A promise plus its resolver. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A provider whose listRoutes waits for its signal and reports the abort reason. */
function abortRecorder() {
  const started = deferred<void>();
  const aborted = deferred<unknown>();
  const provider: CloudProvider = {
    info: { name: 'rec.ccm.dev', vendorVersion: '1', providerName: 'rec' },
    routes: {
      async listRoutes(_req, ctx: CallContext) {
        started.resolve();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, WAIT_MS);
          ctx.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
        aborted.resolve(ctx.signal.reason);
        throw ctx.signal.reason;
      },
    },
  };
  return { provider, started: started.promise, aborted: aborted.promise };
}

test('serves the echo provider over typed clients', async (t) => {
  const p = await startInProcess(createEchoProvider(silent), { logger: silent });
  t.teardown(() => p.close());
  t.regex(p.endpoint, /^unix:\/\/\/.+\.sock$/);
  const { identity, instances } = p.clients;
  t.is((await unary(identity.getPluginInfo.bind(identity), {})).instanceId, 'in-process');
  const caps = await unary(identity.getPluginCapabilities.bind(identity), {});
  t.deepEqual(caps.services, [Service.SERVICE_INSTANCES, Service.SERVICE_ZONES, Service.SERVICE_ROUTES]);
  t.deepEqual(caps.capabilities, [Capability.CAPABILITY_INSTANCES_BATCH, Capability.CAPABILITY_INSTANCES_LEGACY]);
  const md = await unary(instances.instanceMetadata.bind(instances), {
    node: {
      name: 'n2',
      providerId: '',
      addresses: [],
      labels: {},
      uid: '',
      annotations: {},
      podCidrs: [],
      taints: [],
      unschedulable: false,
      conditions: [],
    },
  });
  t.deepEqual(md.metadata, echoMetadata('n2'));
  t.deepEqual(await unary(instances.instanceId.bind(instances), { nodeName: 'x' }), { instanceId: 'x' });
  const gone = await failure(
    unary(instances.instanceShutdown.bind(instances), {
      node: {
        name: 'gone-2',
        providerId: '',
        addresses: [],
        labels: {},
        uid: '',
        annotations: {},
        podCidrs: [],
        taints: [],
        unschedulable: false,
        conditions: [],
      },
    }),
  );
  t.is(gone.reason, ErrorReason.INSTANCE_NOT_FOUND);
});

test("client cancel aborts the provider's signal with CANCELLED", async (t) => {
  const rec = abortRecorder();
  const p = await startInProcess(rec.provider, { logger: silent });
  t.teardown(() => p.close());
  const ac = new AbortController();
  const call = failure(unary(p.clients.routes.listRoutes.bind(p.clients.routes), { pageSize: 0, pageToken: '' }, { signal: ac.signal }));
  await withTimeout(rec.started, WAIT_MS, 'the call to start');
  ac.abort();
  t.is((await call).code, Code.CANCELLED);
  const reason = await withTimeout(rec.aborted, WAIT_MS, 'the provider to see the abort');
  t.true(reason instanceof ProviderError);
  t.is((reason as ProviderError).code, Code.CANCELLED);
});

test('Shutdown aborts in-flight calls with UNAVAILABLE and, outside exec mode, keeps serving', async (t) => {
  const rec = abortRecorder();
  const p = await startInProcess(rec.provider, { logger: silent });
  t.teardown(() => p.close());
  const { routes, lifecycle, identity } = p.clients;
  const call = failure(unary(routes.listRoutes.bind(routes), { pageSize: 0, pageToken: '' }));
  await withTimeout(rec.started, WAIT_MS, 'the call to start');
  await unary(lifecycle.shutdown.bind(lifecycle), {});
  const err = await call;
  t.is(err.code, Code.UNAVAILABLE);
  t.is(err.message, 'provider is shutting down');
  t.is((await unary(identity.getPluginInfo.bind(identity), {})).name, 'rec.ccm.dev');
});

test('undefined answers encode as empty responses; non-Error throws become INTERNAL', async (t) => {
  const provider: CloudProvider = {
    info: { name: 'odd.ccm.dev', vendorVersion: '1', providerName: 'odd' },
    routes: {
      async deleteRoute() {
        return undefined as never;
      },
      async listRoutes() {
        return { nextPageToken: 'n', routes: undefined as never };
      },
      async createRoute() {
        throw 'a bare string';
      },
    },
    instances: {
      async instanceExists() {
        return true as never;
      },
    },
  };
  const p = await startInProcess(provider, { logger: silent });
  t.teardown(() => p.close());
  const { routes, instances, lifecycle } = p.clients;
  t.deepEqual(await unary(routes.deleteRoute.bind(routes), {}), {});
  t.deepEqual(await unary(routes.listRoutes.bind(routes), { pageSize: 0, pageToken: '' }), { routes: [], nextPageToken: 'n' });
  t.deepEqual(await failure(unary(routes.createRoute.bind(routes), { nameHint: '' })), { code: Code.INTERNAL, message: 'a bare string' });
  const bad = await failure(unary(instances.instanceExists.bind(instances), {}));
  t.is(bad.code, Code.INTERNAL);
  t.true(bad.message.includes('returned a boolean'), bad.message);
  // No configure: Configure still answers, with no warnings.
  t.deepEqual(
    await unary(lifecycle.configure.bind(lifecycle), {
      cloudConfig: Buffer.from('x'),
      clusterName: '',
      clusterUid: '',
      hostVersion: '',
      providerArgs: [],
      controllers: [],
      nodeSelector: '',
      watchNamespace: '',
    }),
    {
      warnings: [],
    },
  );
});

test('probe: absent means ready, false means not ready, a throw is the error', async (t) => {
  let mode: 'ready' | 'not-ready' | 'throw' = 'not-ready';
  const provider: CloudProvider = {
    info: { name: 'p.ccm.dev', vendorVersion: '1', providerName: 'p' },
    async probe() {
      if (mode === 'throw') throw new ProviderError(Code.FAILED_PRECONDITION, 'credentials rejected');
      return mode === 'ready';
    },
  };
  const p = await startInProcess(provider, { logger: silent });
  t.teardown(() => p.close());
  const { identity } = p.clients;
  t.false((await unary(identity.probe.bind(identity), {})).ready);
  mode = 'ready';
  t.true((await unary(identity.probe.bind(identity), {})).ready);
  mode = 'throw';
  t.deepEqual(await failure(unary(identity.probe.bind(identity), {})), { code: Code.FAILED_PRECONDITION, message: 'credentials rejected' });

  const bare = await startInProcess({ info: provider.info }, { logger: silent });
  t.teardown(() => bare.close());
  t.true((await unary(bare.clients.identity.probe.bind(bare.clients.identity), {})).ready);
  const caps = await unary(bare.clients.identity.getPluginCapabilities.bind(bare.clients.identity), {});
  t.deepEqual(caps, {
    services: [],
    capabilities: [],
    providerName: 'p',
    hasClusterId: false,
    providerIdPrefixes: [],
    nodeSelector: '',
    loadBalancerClasses: [],
    loadBalancerClassesOnly: false,
    volumeProvisioners: [],
  });
});

test('messages up to MAX_MESSAGE_BYTES pass both ways (above the grpc-js 4 MiB default)', async (t) => {
  const big = 6 * 1024 * 1024;
  t.true(big < MAX_MESSAGE_BYTES);
  const provider: CloudProvider = {
    info: { name: 'big.ccm.dev', vendorVersion: '1', providerName: 'big' },
    async configure(req) {
      return { warnings: [`got ${req.cloudConfig.length} bytes`, 'x'.repeat(big)] };
    },
  };
  const p = await startInProcess(provider, { logger: silent });
  t.teardown(() => p.close());
  const { lifecycle } = p.clients;
  const res = await unary(lifecycle.configure.bind(lifecycle), {
    cloudConfig: Buffer.alloc(big, 1),
    clusterName: '',
    clusterUid: '',
    hostVersion: '',
    providerArgs: [],
    controllers: [],
    nodeSelector: '',
    watchNamespace: '',
  });
  t.is(res.warnings[0], `got ${big} bytes`);
  t.is(res.warnings[1]!.length, big);
});

test('close() runs provider.close, removes the socket, and is idempotent', async (t) => {
  let closed = 0;
  const p = await startInProcess(
    { info: { name: 'c.ccm.dev', vendorVersion: '1', providerName: 'c' }, close: async () => void closed++ },
    { logger: silent },
  );
  const path = p.endpoint.replace(/^unix:\/\//, '');
  t.true(existsSync(path));
  await Promise.all([p.close(), p.close()]);
  await p.close();
  t.is(closed, 1);
  t.false(existsSync(path));
});

test('configure: false leaves the provider unconfigured: cloud calls answer NOT_CONFIGURED until a Configure', async (t) => {
  const p = await startInProcess(createEchoProvider(silent), { logger: silent, configure: false });
  t.teardown(() => p.close());
  const { instances, lifecycle, identity } = p.clients;
  const req = {
    node: {
      name: 'n1',
      providerId: '',
      addresses: [],
      labels: {},
      uid: '',
      annotations: {},
      podCidrs: [],
      taints: [],
      unschedulable: false,
      conditions: [],
    },
  };
  const err = await failure(unary(instances.instanceExists.bind(instances), req));
  t.is(err.code, Code.FAILED_PRECONDITION);
  t.is(err.reason, ErrorReason.NOT_CONFIGURED);
  t.false((await unary(identity.probe.bind(identity), {})).ready);
  await unary(lifecycle.configure.bind(lifecycle), {
    cloudConfig: Buffer.alloc(0),
    clusterName: '',
    clusterUid: '',
    hostVersion: '',
    providerArgs: [],
    controllers: [],
    nodeSelector: '',
    watchNamespace: '',
  });
  t.true((await unary(instances.instanceExists.bind(instances), req)).exists);
});
