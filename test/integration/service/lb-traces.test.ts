/**
 * Traces across the plugin boundary (issue 33 item 5), end to end: the real
 * host (in process, --controllers=service), the local cloud as a real plugin
 * process, the real kube-apiserver, and an OTLP/HTTP receiver in the test
 * that both processes export to (the host passes its OTEL_* variables on to
 * the plugin, with its own service.name).
 *  - Tracing on: one trace links the service sync span, the host's client
 *    span of the ensure RPC, the provider's server span (in the plugin
 *    process: another service.name, parent = the host's client span, so the
 *    traceparent crossed in the gRPC metadata), and the Service status write.
 *  - Tracing off (an endpoint set but OTEL_TRACES_EXPORTER=none): the
 *    Service still gets its address and nothing reaches the receiver.
 *  - The Go and Python SDKs (plugins/go "memgo", plugins/python "mempy", exec
 *    mode) continue the trace too: each
 *    server span of the ensure RPC (OTLP/HTTP protobuf, decoded by the
 *    receiver) has the host's client span as parent.
 *
 * Scoping: namespace lb-traces, nodes labelled lbtest=traces, ingress pool
 * 127.0.147.0/24, node 127.0.148.1. Serial: the tests set process.env.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { COMPONENT_NAME } from '../../../host/names.js';
import { tracingStarted } from '../../../sdk/tracing.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { startProviderHost } from '../../helpers/provider-host.js';
import { GO_PROVIDER, PYTHON_PROVIDER, type ProviderUnderTest } from '../../helpers/providers.js';
import { createBackendNode, ensureNamespace, lbService } from '../../helpers/lb.js';
import { OtlpReceiver, type ReceivedSpan } from '../../helpers/otlp-receiver.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-traces';
const NODE = 'lb-traces-node';
const SERVER = 2;
const CLIENT = 3;
const test = anyTest as TestFn<{ core: CoreV1Api; receiver: OtlpReceiver }>;

const OTEL_VARS = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_TRACES_EXPORTER', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_TRACES_SAMPLER'];

test.before(async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE, '127.0.148.1', { lbtest: 'traces' });
  t.context = { core, receiver: await OtlpReceiver.start() };
});

test.after.always(async (t) => {
  for (const k of OTEL_VARS) delete process.env[k];
  await t.context.receiver?.stop();
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

async function startServiceHost(): Promise<TestHost> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-traces-'));
  return startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=traces',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.147.0/24',
  ]);
}

/** Creates a LoadBalancer Service and waits for its address. */
async function served(core: CoreV1Api, host: TestHost, name: string): Promise<void> {
  await core.createNamespacedService({ namespace: NS, body: lbService(name, NS) });
  await waitFor(async () => (await core.readNamespacedService({ name, namespace: NS })).status?.loadBalancer?.ingress?.[0]?.ip, {
    what: `${name} has an address`,
    log: host.logPath,
  });
}

/** Deletes the Service and waits until it is gone (the host removes its finalizer). */
async function deleted(core: CoreV1Api, host: TestHost, name: string): Promise<void> {
  await core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(
    () =>
      core.readNamespacedService({ name, namespace: NS }).then(
        () => false,
        () => true,
      ),
    { what: `${name} gone`, log: host.logPath },
  );
}

/**
 * The links of the one trace that reached the status write for `key`, as a
 * table (one row per link; each true when it holds): undefined while no
 * sync span of `key` has a client span of the ensure RPC in its trace.
 */
function traceLinks(spans: ReceivedSpan[], key: string): Record<string, boolean> | undefined {
  for (const sync of spans.filter((s) => s.name === 'service.sync' && s.attributes['ccm.key'] === key)) {
    const inTrace = spans.filter((s) => s.traceId === sync.traceId);
    const rpc = inTrace.find((s) => s.kind === CLIENT && /LoadBalancersService\/EnsureLoadBalancers?$/.test(s.name));
    const write = inTrace.find((s) => s.name === 'kube PATCH services/status');
    if (!rpc || !write) continue;
    const server = spans.find((s) => s.kind === SERVER && s.parentSpanId === rpc.spanId);
    return {
      'sync span: a root, from the host, with the queue wait and retries':
        sync.parentSpanId === '' &&
        sync.service === COMPONENT_NAME &&
        'ccm.queue.wait_ms' in sync.attributes &&
        sync.attributes['ccm.sync.retries'] !== undefined,
      'client span of the ensure RPC: in the host, under the sync span': rpc.service === COMPONENT_NAME && isUnder(inTrace, rpc, sync),
      'provider server span: parent = the host client span (traceparent in the metadata)': server !== undefined,
      'provider server span: same trace, in the plugin process (its own service.name)':
        server?.traceId === sync.traceId && server.service === 'ccm-provider-local',
      'status write span: in the host, under the sync span': write.kind === CLIENT && isUnder(inTrace, write, sync),
    };
  }
  return undefined;
}

/** Whether `span` descends from `ancestor` within `trace`. */
function isUnder(trace: ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  for (let at: ReceivedSpan | undefined = span; at; at = trace.find((s) => s.spanId === at!.parentSpanId))
    if (at.parentSpanId === ancestor.spanId) return true;
  return false;
}

test.serial('tracing off (exporter none, endpoint set): the Service is served and nothing reaches the receiver', async (t) => {
  const { core, receiver } = t.context;
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
  process.env.OTEL_TRACES_EXPORTER = 'none';
  const host = await startServiceHost();
  try {
    t.false(tracingStarted(), 'no SDK started in the host');
    await served(core, host, 'trace-off');
    await deleted(core, host, 'trace-off');
  } finally {
    // A stop flushes any exporter, the plugin's too (it exits): whatever was to be sent has been sent after it.
    await host.stop();
  }
  t.is(receiver.requests, 0);
});

test.serial('tracing on: one trace runs from the service sync through the provider to the status write', async (t) => {
  const { core, receiver } = t.context;
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
  delete process.env.OTEL_TRACES_EXPORTER;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
  process.env.OTEL_TRACES_SAMPLER = 'always_on';
  const host = await startServiceHost();
  try {
    t.true(tracingStarted(), 'the SDK started in the host');
    await served(core, host, 'trace-on');
    const links = await waitFor(
      () => {
        const l = traceLinks(receiver.spans, `${NS}/trace-on`);
        return l && Object.values(l).every(Boolean) ? l : undefined;
      },
      { what: 'one trace from sync to provider to status write', log: host.logPath, timeoutMs: 30_000 },
    ).catch(() => traceLinks(receiver.spans, `${NS}/trace-on`));
    t.deepEqual(links, {
      'sync span: a root, from the host, with the queue wait and retries': true,
      'client span of the ensure RPC: in the host, under the sync span': true,
      'provider server span: parent = the host client span (traceparent in the metadata)': true,
      'provider server span: same trace, in the plugin process (its own service.name)': true,
      'status write span: in the host, under the sync span': true,
    });
    await deleted(core, host, 'trace-on');
  } finally {
    await host.stop();
  }
});

/**
 * The link between the host's client span of `key`'s ensure RPC and
 * `service`'s server span of it, as a table (each row true when it holds).
 */
function providerLinks(spans: ReceivedSpan[], key: string, service: string): Record<string, boolean> {
  const server = spans.filter((s) => s.service === service && s.kind === SERVER);
  const clients = new Map(spans.filter((s) => s.service === COMPONENT_NAME && s.kind === CLIENT).map((s) => [s.spanId, s]));
  const syncs = new Set(spans.filter((s) => s.name === 'service.sync' && s.attributes['ccm.key'] === key).map((s) => s.traceId));
  const ensure = server.find((s) => /LoadBalancersService\/EnsureLoadBalancers?$/.test(s.name) && syncs.has(s.traceId));
  return {
    'ensure RPC: a provider server span in the sync trace': ensure !== undefined,
    'ensure RPC: its parent is the host client span (traceparent in the metadata)':
      ensure !== undefined && clients.get(ensure.parentSpanId)?.name === ensure.name,
  };
}

for (const provider of [GO_PROVIDER, PYTHON_PROVIDER] as ProviderUnderTest[]) {
  test.serial(`tracing on: the ${provider.name} provider (another SDK) continues the host's trace`, async (t) => {
    const { core, receiver } = t.context;
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
    delete process.env.OTEL_TRACES_EXPORTER;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    process.env.OTEL_TRACES_SAMPLER = 'always_on';
    const dir = await mkdtemp(join(tmpdir(), `ccm-lb-traces-${provider.name}-`));
    const running = await startProviderHost(dir, provider, 'exec', { zone: 'zone-1', region: 'region-x', instances: [] }, [
      '--controllers=service',
      `--watch-namespace=${NS}`,
      '--node-selector=lbtest=traces',
    ]);
    const name = `trace-${provider.name}`;
    const service = `ccm-provider-${provider.name}`;
    const want = {
      'ensure RPC: a provider server span in the sync trace': true,
      'ensure RPC: its parent is the host client span (traceparent in the metadata)': true,
    };
    try {
      await core.createNamespacedService({ namespace: NS, body: lbService(name, NS) });
      const links = await waitFor(
        () => {
          const l = providerLinks(receiver.spans, `${NS}/${name}`, service);
          return Object.values(l).every(Boolean) ? l : undefined;
        },
        { what: `${provider.name}'s server spans under the host's client spans`, log: join(dir, 'host.log'), timeoutMs: 30_000 },
      ).catch(() => providerLinks(receiver.spans, `${NS}/${name}`, service));
      t.deepEqual(links, want);
      await core.deleteNamespacedService({ name, namespace: NS });
      await waitFor(
        () =>
          core.readNamespacedService({ name, namespace: NS }).then(
            () => false,
            () => true,
          ),
        { what: `${name} gone`, log: join(dir, 'host.log') },
      );
    } finally {
      await running.stop();
    }
  });
}
