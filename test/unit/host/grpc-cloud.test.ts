/**
 * GrpcCloud (host/plugin/grpc-cloud.ts) against real providers served
 * in-process by the SDK (sdk/testing.ts startInProcess), reached through a
 * PluginSupervisor in socket mode: the real gRPC path. Providers answer
 * malformed data on purpose; GrpcCloud must turn every such answer into
 * InvalidCloudResponseError and never hand it to a controller.
 */
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import fc from 'fast-check';
import { isIP } from 'node:net';
import { pino } from 'pino';
import type { InstanceMetadata as HostMetadata, Instances, NodeRef } from '../../../host/cloud.js';
import type { ServiceRef as HostServiceRef } from '../../../host/cloud-load-balancers.js';
import {
  CloudCallError,
  ImplementedElsewhereError as HostImplementedElsewhereError,
  InstanceNotFoundError as HostInstanceNotFoundError,
  InvalidCloudResponseError,
  NotImplementedError as HostNotImplementedError,
  PluginUnavailableError,
  RetryAfterError,
} from '../../../host/errors.js';
import { createLogger } from '../../../host/log.js';
import { GrpcCloud } from '../../../host/plugin/grpc-cloud.js';
import { PluginSupervisor } from '../../../host/plugin/supervisor.js';
import { instanceMetadataProblems } from '../../../host/plugin/validate.js';
import { NodeAddressType } from '../../../proto/gen/ccm/provider/v1/common.js';
import type { InstanceMetadata, InstanceMetadataResult, InstanceStatusResult } from '../../../proto/gen/ccm/provider/v1/instances.js';
import {
  ImplementedElsewhereError,
  InstanceNotFoundError,
  NotConfiguredError,
  RateLimitedError,
  RetryError,
  toStatus,
  UnavailableError,
  type CloudProvider,
} from '../../../sdk/index.js';
import { startInProcess } from '../../../sdk/testing.js';
import { waitFor } from '../../helpers/wait.js';

const test = anyTest as TestFn<unknown>;
const PROVIDER = 'acme';
const silentSdk = pino({ level: 'silent' });
const silentHost = createLogger({ level: 'silent' });

const node = (name: string, providerId = ''): NodeRef => ({ name, providerId, addresses: [{ type: 'Hostname', address: name }], labels: {} });

/** A valid answer for `name`. */
function good(name: string): InstanceMetadata {
  return {
    providerId: `${PROVIDER}://i-${name}`,
    instanceType: 'm5.large',
    nodeAddresses: [
      { type: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP, address: '10.0.0.1' },
      { type: NodeAddressType.NODE_ADDRESS_TYPE_HOSTNAME, address: `${name}.internal` },
    ],
    zone: 'zone-a',
    region: 'region-1',
    additionalLabels: { 'acme.example.com/pool': 'blue' },
  };
}

/** Starts `provider` in-process and a socket-mode supervisor + GrpcCloud on it; torn down with the test. */
async function cloudFor(t: ExecutionContext<unknown>, provider: Omit<CloudProvider, 'info'>): Promise<{ cloud: GrpcCloud; instances: Instances }> {
  const p = await startInProcess(
    { info: { name: 'acme.example.com', vendorVersion: '1.0.0', providerName: PROVIDER }, ...provider },
    { logger: silentSdk },
  );
  const supervisor = new PluginSupervisor({
    name: PROVIDER,
    mode: { kind: 'socket', endpoint: p.endpoint },
    startTimeoutMs: 10_000,
    shutdownGraceMs: 100,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'test', hostVersion: 'test' },
    probeIntervalMs: 60_000,
    log: silentHost,
  });
  t.teardown(async () => {
    await supervisor.stop();
    await p.close();
  });
  await supervisor.start();
  const cloud = new GrpcCloud(supervisor, { readMs: 5_000, mutateMs: 5_000 });
  const instances = cloud.instances();
  if (!instances) throw new Error('provider has no instances service');
  return { cloud, instances };
}

/** Runs `call` and returns its rejection; fails the test when it resolves. */
async function rejection(t: ExecutionContext<unknown>, call: Promise<unknown>): Promise<Error> {
  try {
    const v = await call;
    t.fail(`resolved with ${JSON.stringify(v).slice(0, 300)}, expected a rejection`);
    return new Error('resolved');
  } catch (err) {
    return err as Error;
  }
}

// ---------------------------------------------------------------------------
// Single InstanceMetadata answers that are malformed.

interface SingleCase {
  description: string;
  /** The provider's answer (InstanceMetadataResponse.metadata); undefined = no metadata at all. */
  answer: InstanceMetadata | undefined;
  node?: NodeRef;
  problems: RegExp;
}

const withGood = (over: Partial<InstanceMetadata>): InstanceMetadata => ({ ...good('n1'), ...over });
const A = (type: number, address: string) => ({ type: type as NodeAddressType, address });

const singleCases: SingleCase[] = [
  { description: 'missing metadata', answer: undefined, problems: /metadata is missing/ },
  {
    description: 'invalid IP address',
    answer: withGood({ nodeAddresses: [A(2, '10.0.0.300')] }),
    problems: /InternalIP address: "10\.0\.0\.300" is not an IP address/,
  },
  { description: 'three-part IPv4', answer: withGood({ nodeAddresses: [A(3, '1.2.3')] }), problems: /ExternalIP address: .*dotted-quad/ },
  { description: 'CIDR as an address', answer: withGood({ nodeAddresses: [A(2, '10.0.0.1/24')] }), problems: /not an IP address/ },
  {
    description: 'unknown address type enum value 99',
    answer: withGood({ nodeAddresses: [A(2, '10.0.0.1'), A(99, '10.0.0.2')] }),
    problems: /1 address\(es\) with unknown or unspecified type/,
  },
  {
    description: 'negative address type enum value',
    answer: withGood({ nodeAddresses: [A(-1, '10.0.0.2')] }),
    problems: /unknown or unspecified type/,
  },
  { description: 'UNSPECIFIED address type', answer: withGood({ nodeAddresses: [A(0, '10.0.0.2')] }), problems: /unknown or unspecified type/ },
  {
    description: 'duplicate addresses',
    answer: withGood({ nodeAddresses: [A(2, '10.0.0.1'), A(2, '10.0.0.1')] }),
    problems: /duplicate address InternalIP/,
  },
  {
    description: '65 addresses',
    answer: withGood({ nodeAddresses: Array.from({ length: 65 }, (_, i) => A(2, `10.0.1.${i}`)) }),
    problems: /65 addresses, at most 64/,
  },
  {
    description: 'empty providerID for a node without one',
    answer: withGood({ providerId: '' }),
    problems: /providerID is empty and the node has none/,
  },
  {
    description: "another provider's providerID",
    answer: withGood({ providerId: 'aws://i-1' }),
    problems: /does not start with the plugin's provider name "acme:\/\/"/,
  },
  { description: 'providerID without scheme', answer: withGood({ providerId: 'i-1' }), problems: /not of the form/ },
  {
    description: 'invalid zone label value',
    answer: withGood({ zone: 'zone a' }),
    problems: /^provider returned an invalid InstanceMetadata response: zone: /,
  },
  {
    description: 'invalid additional label key',
    answer: withGood({ additionalLabels: { 'bad key!': 'x' } }),
    problems: /additional label: label key/,
  },
  {
    description: 'huge invalid address is quoted truncated',
    answer: withGood({ nodeAddresses: [A(2, '9'.repeat(100_000))] }),
    problems: /"9{80}…" is not an IP address/,
  },
];

for (const c of singleCases) {
  test(`InstanceMetadata answer rejected: ${c.description}`, async (t) => {
    const { instances } = await cloudFor(t, { instances: { instanceMetadata: async () => ({ metadata: c.answer }) } });
    const err = await rejection(t, instances.instanceMetadata(c.node ?? node('n1')));
    t.true(err instanceof InvalidCloudResponseError, `${err.name}: ${err.message}`);
    const e = err as InvalidCloudResponseError;
    t.is(e.method, 'InstanceMetadata');
    t.regex(e.message, c.problems);
    t.true(e.message.length < 1_000, 'the message never carries a huge raw payload');
    // The same answer through the non-batched emulation of instancesMetadata is an item error.
    const [item] = await instances.instancesMetadata([c.node ?? node('n1')]);
    t.is(item!.metadata, undefined);
    t.true(item!.error instanceof InvalidCloudResponseError);
  });
}

test('InstanceMetadata: an empty providerID is accepted when the node already has one', async (t) => {
  const { instances } = await cloudFor(t, { instances: { instanceMetadata: async () => ({ metadata: withGood({ providerId: '' }) }) } });
  const m = await instances.instanceMetadata(node('n1', 'acme://i-n1'));
  t.is(m.providerId, '');
});

test('InstanceMetadata: a valid answer is converted to host types', async (t) => {
  const { instances } = await cloudFor(t, { instances: { instanceMetadata: async (req) => ({ metadata: good(req.node!.name) }) } });
  const m = await instances.instanceMetadata(node('n1'));
  t.deepEqual(m, {
    providerId: 'acme://i-n1',
    instanceType: 'm5.large',
    nodeAddresses: [
      { type: 'InternalIP', address: '10.0.0.1' },
      { type: 'Hostname', address: 'n1.internal' },
    ],
    zone: 'zone-a',
    region: 'region-1',
    additionalLabels: { 'acme.example.com/pool': 'blue' },
  } satisfies HostMetadata);
});

// ---------------------------------------------------------------------------
// Batch answers.

interface BatchCase {
  description: string;
  /** The provider's batch answer for the given node names. */
  metadata?: (names: string[]) => InstanceMetadataResult[];
  status?: (names: string[]) => InstanceStatusResult[];
  nodes: string[];
  /** Whole call rejects with InvalidCloudResponseError matching this, or per-item expectations. */
  rejects?: RegExp;
  items?: ('ok' | RegExp | { exists: boolean; shutdown: boolean } | ((e: Error) => boolean))[];
}

const okMeta = (n: string): InstanceMetadataResult => ({ nodeName: n, metadata: good(n) });
const okStatus = (n: string): InstanceStatusResult => ({ nodeName: n, exists: true, shutdown: false });
const isInvalid = (re: RegExp) => (e: Error) => e instanceof InvalidCloudResponseError && re.test(e.message);

const metadataBatchCases: BatchCase[] = [
  { description: 'all good', metadata: (ns) => ns.map(okMeta), nodes: ['a', 'b'], items: ['ok', 'ok'] },
  { description: 'fewer results than nodes', metadata: (ns) => ns.slice(1).map(okMeta), nodes: ['a', 'b', 'c'], rejects: /2 results for 3 nodes/ },
  { description: 'more results than nodes', metadata: (ns) => [...ns, 'extra'].map(okMeta), nodes: ['a'], rejects: /2 results for 1 nodes/ },
  { description: 'no results at all', metadata: () => [], nodes: ['a'], rejects: /0 results for 1 nodes/ },
  {
    description: 'results out of order',
    metadata: (ns) => [...ns].reverse().map(okMeta),
    nodes: ['a', 'b'],
    rejects: /result 0 is for node "b", expected "a"/,
  },
  {
    description: 'result for an unknown node',
    metadata: (ns) => ns.map((n, i) => okMeta(i === 1 ? 'zzz' : n)),
    nodes: ['a', 'b', 'c'],
    rejects: /result 1 is for node "zzz", expected "b"/,
  },
  {
    description: 'an item with an invalid IP is an item error; the others are returned',
    metadata: (ns) => ns.map((n) => (n === 'b' ? { nodeName: n, metadata: { ...good(n), nodeAddresses: [A(2, '::zz')] } } : okMeta(n))),
    nodes: ['a', 'b', 'c'],
    items: ['ok', isInvalid(/GetInstancesMetadata.*"::zz" is not an IP address/), 'ok'],
  },
  {
    description: 'an item without metadata and without error is an item error',
    metadata: (ns) => ns.map((n) => (n === 'a' ? { nodeName: n } : okMeta(n))),
    nodes: ['a', 'b'],
    items: [isInvalid(/metadata is missing/), 'ok'],
  },
  {
    description: 'an item with address type 99 is an item error',
    metadata: (ns) => ns.map((n) => ({ nodeName: n, metadata: { ...good(n), nodeAddresses: [A(99, '10.0.0.1')] } })),
    nodes: ['a'],
    items: [isInvalid(/unknown or unspecified type/)],
  },
  {
    description: 'INSTANCE_NOT_FOUND item → InstanceNotFoundError for that node only',
    metadata: (ns) => ns.map((n) => (n === 'gone' ? { nodeName: n, error: toStatus(new InstanceNotFoundError('no vm')) } : okMeta(n))),
    nodes: ['a', 'gone'],
    items: ['ok', (e) => e instanceof HostInstanceNotFoundError && e.reason === 'INSTANCE_NOT_FOUND' && /no vm/.test(e.message)],
  },
  {
    description: 'RetryInfo on an item → RetryAfterError with its delay',
    metadata: (ns) => ns.map((n) => ({ nodeName: n, error: toStatus(new RetryError('address pending', 2500)) })),
    nodes: ['a'],
    items: [(e) => e instanceof RetryAfterError && e.retryAfterMs === 2500 && e.code === 'UNAVAILABLE'],
  },
  {
    description: 'other item errors keep their code',
    metadata: (ns) => ns.map((n) => ({ nodeName: n, error: toStatus(new UnavailableError('api down')) })),
    nodes: ['a'],
    items: [
      (e) =>
        e instanceof CloudCallError && !(e instanceof RetryAfterError) && e.code === 'UNAVAILABLE' && e.reason === 'CLOUD_API_ERROR' && e.transient,
    ],
  },
  {
    description: 'an item error with code OK (0) is not an error: its metadata is used',
    metadata: (ns) => ns.map((n) => ({ ...okMeta(n), error: { code: 0, message: '', details: [] } })),
    nodes: ['a'],
    items: ['ok'],
  },
];

const statusBatchCases: BatchCase[] = [
  {
    description: 'all exist',
    status: (ns) => ns.map(okStatus),
    nodes: ['a', 'b'],
    items: [
      { exists: true, shutdown: false },
      { exists: true, shutdown: false },
    ],
  },
  { description: 'fewer results than nodes', status: (ns) => ns.slice(0, 1).map(okStatus), nodes: ['a', 'b'], rejects: /1 results for 2 nodes/ },
  {
    description: 'results out of order',
    status: (ns) => [...ns].reverse().map(okStatus),
    nodes: ['a', 'b'],
    rejects: /result 0 is for node "b", expected "a"/,
  },
  {
    description: 'INSTANCE_NOT_FOUND item → exists=false, not an error',
    status: (ns) =>
      ns.map((n) => (n === 'gone' ? { nodeName: n, exists: true, shutdown: true, error: toStatus(new InstanceNotFoundError()) } : okStatus(n))),
    nodes: ['a', 'gone'],
    items: [
      { exists: true, shutdown: false },
      { exists: false, shutdown: false },
    ],
  },
  {
    description: 'shutdown is only meaningful when the instance exists',
    status: (ns) => ns.map((n) => ({ nodeName: n, exists: n === 'stopped', shutdown: true })),
    nodes: ['stopped', 'absent'],
    items: [
      { exists: true, shutdown: true },
      { exists: false, shutdown: false },
    ],
  },
  {
    description: 'RetryInfo on an item → RetryAfterError',
    status: (ns) => ns.map((n) => ({ nodeName: n, exists: false, shutdown: false, error: toStatus(new RateLimitedError('slow down', 1200)) })),
    nodes: ['a'],
    items: [(e) => e instanceof RetryAfterError && e.retryAfterMs === 1200 && e.reason === 'RATE_LIMITED'],
  },
];

function batchProvider(c: BatchCase): Omit<CloudProvider, 'info'> {
  return {
    instances: {
      async getInstancesMetadata(req) {
        return { results: c.metadata ? c.metadata(req.nodes.map((n) => n.name)) : req.nodes.map((n) => okMeta(n.name)) };
      },
      async getInstancesStatus(req) {
        return { results: c.status ? c.status(req.nodes.map((n) => n.name)) : req.nodes.map((n) => okStatus(n.name)) };
      },
    },
  };
}

for (const [kind, cases] of [
  ['metadata', metadataBatchCases],
  ['status', statusBatchCases],
] as const) {
  for (const c of cases) {
    test(`batch ${kind}: ${c.description}`, async (t) => {
      const { instances } = await cloudFor(t, batchProvider(c));
      t.true(instances.batched, 'the provider announces batch RPCs');
      const nodes = c.nodes.map((n) => node(n));
      const call = kind === 'metadata' ? instances.instancesMetadata(nodes) : instances.instancesStatus(nodes);
      if (c.rejects) {
        const err = await rejection(t, call);
        t.true(err instanceof InvalidCloudResponseError, `${err.name}: ${err.message}`);
        t.is((err as InvalidCloudResponseError).method, kind === 'metadata' ? 'GetInstancesMetadata' : 'GetInstancesStatus');
        t.regex(err.message, c.rejects);
        return;
      }
      const results = await call;
      t.deepEqual(
        results.map((r) => r.nodeName),
        c.nodes,
        'one result per node, in input order',
      );
      c.items!.forEach((want, i) => {
        const r = results[i]! as { metadata?: HostMetadata; error?: Error; exists?: boolean; shutdown?: boolean };
        const name = c.nodes[i]!;
        if (want === 'ok') {
          t.is(r.error, undefined, name);
          t.is(r.metadata?.providerId, `${PROVIDER}://i-${name}`);
        } else if (typeof want === 'function') {
          t.is(r.metadata, undefined, `${name}: no metadata next to an error`);
          t.true(r.error !== undefined && want(r.error), `${name}: ${r.error?.name}: ${r.error?.message}`);
        } else if (want instanceof RegExp) {
          t.regex(r.error?.message ?? '', want);
        } else {
          t.is(r.error, undefined, name);
          t.deepEqual({ exists: r.exists, shutdown: r.shutdown }, want, name);
        }
      });
    });
  }
}

// ---------------------------------------------------------------------------
// Errors of single calls.

interface ErrorCase {
  description: string;
  provider: Omit<CloudProvider, 'info'>;
  call: (i: Instances) => Promise<unknown>;
  check: (t: ExecutionContext<unknown>, outcome: { value?: unknown; error?: Error }) => void;
}

const errorCases: ErrorCase[] = [
  {
    description: 'RetryInfo → RetryAfterError with retryAfterMs',
    provider: { instances: { instanceMetadata: async () => Promise.reject(new RetryError('not yet', 1500)) } },
    call: (i) => i.instanceMetadata(node('n1')),
    check: (t, { error }) => {
      t.true(error instanceof RetryAfterError, error?.name);
      t.is((error as RetryAfterError).retryAfterMs, 1500);
      t.is((error as RetryAfterError).code, 'UNAVAILABLE');
      t.is((error as RetryAfterError).method, 'InstanceMetadata');
      t.regex(error!.message, /not yet/);
    },
  },
  {
    description: 'rate limited with RetryInfo → RetryAfterError with the reason',
    provider: { instances: { instanceMetadata: async () => Promise.reject(new RateLimitedError('throttled', 250)) } },
    call: (i) => i.instanceMetadata(node('n1')),
    check: (t, { error }) => {
      t.true(error instanceof RetryAfterError);
      t.is((error as RetryAfterError).retryAfterMs, 250);
      t.is((error as RetryAfterError).reason, 'RATE_LIMITED');
      t.is((error as RetryAfterError).code, 'RESOURCE_EXHAUSTED');
    },
  },
  {
    description: 'INSTANCE_NOT_FOUND → InstanceNotFoundError',
    provider: { instances: { instanceMetadata: async () => Promise.reject(new InstanceNotFoundError('no vm n1')) } },
    call: (i) => i.instanceMetadata(node('n1')),
    check: (t, { error }) => {
      t.true(error instanceof HostInstanceNotFoundError);
      t.is((error as HostInstanceNotFoundError).code, 'NOT_FOUND');
    },
  },
  {
    description: 'InstanceExists answering INSTANCE_NOT_FOUND means "does not exist"',
    provider: { instances: { instanceExists: async () => Promise.reject(new InstanceNotFoundError()) } },
    call: (i) => i.instanceExists(node('n1')),
    check: (t, { value, error }) => {
      t.is(error, undefined);
      t.false(value);
    },
  },
  {
    description: 'non-batched instancesStatus: not found → exists=false without calling InstanceShutdown',
    provider: {
      instances: {
        instanceExists: async (req) => (req.node!.name === 'gone' ? Promise.reject(new InstanceNotFoundError()) : { exists: true }),
        instanceShutdown: async (req) => (req.node!.name === 'gone' ? Promise.reject(new Error('must not be called')) : { shutdown: true }),
      },
    },
    call: (i) => i.instancesStatus([node('a'), node('gone')]),
    check: (t, { value }) => {
      t.deepEqual(value, [
        { nodeName: 'a', exists: true, shutdown: true },
        { nodeName: 'gone', exists: false, shutdown: false },
      ]);
    },
  },
  {
    description: 'UNIMPLEMENTED InstanceMetadata without legacy methods → NotImplementedError',
    provider: { instances: { instanceExists: async () => ({ exists: true }) } },
    call: (i) => i.instanceMetadata(node('n1')),
    check: (t, { error }) => {
      t.true(error instanceof HostNotImplementedError, error?.name);
      t.is((error as HostNotImplementedError).code, 'UNIMPLEMENTED');
    },
  },
  {
    description: 'a plain Error thrown by the provider → CloudCallError INTERNAL (transient)',
    provider: { instances: { instanceMetadata: async () => Promise.reject(new Error('bug in provider')) } },
    call: (i) => i.instanceMetadata(node('n1')),
    check: (t, { error }) => {
      t.true(error instanceof CloudCallError);
      t.false(error instanceof InvalidCloudResponseError);
      t.is((error as CloudCallError).code, 'INTERNAL');
      t.true((error as CloudCallError).transient);
    },
  },
];

for (const c of errorCases) {
  test(`errors: ${c.description}`, async (t) => {
    const { instances } = await cloudFor(t, c.provider);
    const outcome = await c.call(instances).then(
      (value) => ({ value }),
      (error: Error) => ({ error }),
    );
    c.check(t, outcome);
  });
}

// ---------------------------------------------------------------------------
// Legacy (Instances v1) fallback.

interface LegacyCase {
  description: string;
  node: NodeRef;
  zones: boolean;
  addresses?: { type: NodeAddressType; address: string }[];
  want?: HostMetadata;
  /** Legacy methods that must have been called, in order. */
  calls: string[];
  rejects?: RegExp;
}

const legacyAddrs = [
  { type: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP, address: '10.0.0.7' },
  { type: NodeAddressType.NODE_ADDRESS_TYPE_EXTERNAL_DNS, address: 'n1.example.com' },
];

const legacyCases: LegacyCase[] = [
  {
    description: 'node without providerID: InstanceId composes it; zone from GetZoneByProviderId',
    node: node('n1'),
    zones: true,
    want: {
      providerId: 'acme://vm-n1',
      instanceType: 'legacy.large',
      nodeAddresses: [
        { type: 'InternalIP', address: '10.0.0.7' },
        { type: 'ExternalDNS', address: 'n1.example.com' },
      ],
      zone: 'legacy-zone',
      region: 'legacy-region',
      additionalLabels: {},
    },
    calls: ['InstanceId n1', 'NodeAddressesByProviderId acme://vm-n1', 'InstanceTypeByProviderId acme://vm-n1', 'GetZoneByProviderId acme://vm-n1'],
  },
  {
    description: 'node with a providerID: InstanceId is not called; no zones service → no zone',
    node: node('n1', 'acme://existing'),
    zones: false,
    want: {
      providerId: 'acme://existing',
      instanceType: 'legacy.large',
      nodeAddresses: [
        { type: 'InternalIP', address: '10.0.0.7' },
        { type: 'ExternalDNS', address: 'n1.example.com' },
      ],
      zone: '',
      region: '',
      additionalLabels: {},
    },
    calls: ['NodeAddressesByProviderId acme://existing', 'InstanceTypeByProviderId acme://existing'],
  },
  {
    description: 'legacy answers are validated too',
    node: node('n1'),
    zones: true,
    addresses: [{ type: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP, address: '10.0.0.1/8' }],
    calls: ['InstanceId n1', 'NodeAddressesByProviderId acme://vm-n1', 'InstanceTypeByProviderId acme://vm-n1', 'GetZoneByProviderId acme://vm-n1'],
    rejects: /invalid InstanceMetadata\(legacy\) response: InternalIP address: "10\.0\.0\.1\/8" is not an IP address/,
  },
];

for (const c of legacyCases) {
  test(`legacy fallback: ${c.description}`, async (t) => {
    const calls: string[] = [];
    const provider: Omit<CloudProvider, 'info'> = {
      instances: {
        // No instanceMetadata: the SDK answers UNIMPLEMENTED.
        async instanceId(req) {
          calls.push(`InstanceId ${req.nodeName}`);
          return { instanceId: `vm-${req.nodeName}` };
        },
        async nodeAddressesByProviderId(req) {
          calls.push(`NodeAddressesByProviderId ${req.providerId}`);
          return { addresses: c.addresses ?? legacyAddrs };
        },
        async instanceTypeByProviderId(req) {
          calls.push(`InstanceTypeByProviderId ${req.providerId}`);
          return { instanceType: 'legacy.large' };
        },
      },
      ...(c.zones
        ? {
            zones: {
              async getZoneByProviderId(req) {
                calls.push(`GetZoneByProviderId ${req.providerId}`);
                return { zone: { failureDomain: 'legacy-zone', region: 'legacy-region' } };
              },
            },
          }
        : {}),
    };
    const { instances } = await cloudFor(t, provider);
    if (c.rejects) {
      const err = await rejection(t, instances.instanceMetadata(c.node));
      t.true(err instanceof InvalidCloudResponseError, err.message);
      t.is((err as InvalidCloudResponseError).method, 'InstanceMetadata(legacy)');
      t.regex(err.message, c.rejects);
    } else {
      t.deepEqual(await instances.instanceMetadata(c.node), c.want);
    }
    t.deepEqual(calls, c.calls);
  });
}

// ---------------------------------------------------------------------------
// Property: random malformed InstanceMetadata answers.

const ADDRESS_TYPES = [0, 1, 2, 3, 4, 5, 6, 99, -1];
const HOST_IP_TYPES = new Set(['InternalIP', 'ExternalIP']);

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9_.]{0,8}[a-z0-9])?$/);
const text = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 10 }), fc.string({ minLength: 60, maxLength: 80 }));
const ipLike = fc.oneof(
  fc.ipV4(),
  fc.ipV6(),
  fc.ipV4Extended(),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefx.:%/'.split('')), maxLength: 20 }),
  fc.constantFrom('1.2.3', '::zz', '10.0.0.1/24', 'fe80::1%eth0', '::ffff:01.2.3.4', ''),
  text,
);

/** A valid answer (so the property also sees accepted answers). */
const validAnswer: fc.Arbitrary<InstanceMetadata> = fc.record({
  providerId: label.map((id) => `${PROVIDER}://i-${id}`),
  instanceType: fc.oneof(fc.constant(''), label),
  nodeAddresses: fc.uniqueArray(
    fc.record({ type: fc.constantFrom(2, 3).map((n) => n as NodeAddressType), address: fc.oneof(fc.ipV4(), fc.ipV6()) }),
    { maxLength: 4, selector: (a) => `${a.type}/${a.address}` },
  ),
  zone: fc.oneof(fc.constant(''), label),
  region: fc.oneof(fc.constant(''), label),
  additionalLabels: fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/), fc.oneof(fc.constant(''), label), { maxKeys: 3 }),
});

/** Anything the wire can carry. */
const malformedAnswer: fc.Arbitrary<InstanceMetadata> = fc.record({
  providerId: fc.oneof(
    label.map((id) => `${PROVIDER}://i-${id}`),
    fc.constant(''),
    text,
    label.map((id) => `aws://${id}`),
  ),
  instanceType: fc.oneof(label, text),
  nodeAddresses: fc.oneof(
    {
      arbitrary: fc.array(fc.record({ type: fc.constantFrom(...ADDRESS_TYPES).map((n) => n as NodeAddressType), address: ipLike }), { maxLength: 5 }),
      weight: 10,
    },
    {
      arbitrary: fc.array(fc.record({ type: fc.constant(NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP), address: fc.ipV4() }), {
        minLength: 65,
        maxLength: 66,
      }),
      weight: 1,
    },
  ),
  zone: fc.oneof(label, text),
  region: fc.oneof(label, text),
  additionalLabels: fc.dictionary(
    fc.oneof(
      label,
      text,
      label.map((l) => `kubernetes.io/${l}`),
    ),
    fc.oneof(label, text),
    { maxKeys: 4 },
  ),
});

test('property: a random InstanceMetadata answer is rejected with InvalidCloudResponseError or returned valid (single and batch paths)', async (t) => {
  let answer: InstanceMetadata | undefined;
  const { instances } = await cloudFor(t, {
    instances: {
      async instanceMetadata() {
        return { metadata: answer };
      },
      async getInstancesMetadata(req) {
        return { results: req.nodes.map((n) => ({ nodeName: n.name, metadata: answer })) };
      },
      async getInstancesStatus(req) {
        return { results: req.nodes.map((n) => okStatus(n.name)) };
      },
    },
  });
  const seen = { accepted: 0, rejected: 0 };
  const assertValid = (m: HostMetadata, sent: InstanceMetadata) => {
    const problems = instanceMetadataProblems(m, '', PROVIDER);
    if (problems.length) throw new Error(`returned metadata has problems: ${problems.join('; ')}`);
    for (const a of m.nodeAddresses) {
      if (HOST_IP_TYPES.has(a.type) && isIP(a.address) === 0) throw new Error(`returned ${a.type} ${JSON.stringify(a.address)} is not an IP`);
    }
    if (m.providerId !== sent.providerId || m.zone !== sent.zone || m.region !== sent.region || m.instanceType !== sent.instanceType) {
      throw new Error('returned metadata differs from what the provider sent');
    }
    if (m.nodeAddresses.length !== sent.nodeAddresses.length) throw new Error('addresses were dropped or added');
  };
  await fc.assert(
    fc.asyncProperty(
      fc.oneof({ arbitrary: validAnswer, weight: 10 }, { arbitrary: malformedAnswer, weight: 30 }, { arbitrary: fc.constant(undefined), weight: 1 }),
      async (a) => {
        answer = a;
        // Single call.
        try {
          const m = await instances.instanceMetadata(node('n1'));
          assertValid(m, a!);
          seen.accepted++;
        } catch (err) {
          if (!(err instanceof InvalidCloudResponseError))
            throw new Error(`rejected with ${(err as Error).name}: ${(err as Error).message}`, { cause: err });
          if (err.problems.length === 0) throw new Error('InvalidCloudResponseError without problems', { cause: err });
          seen.rejected++;
        }
        // Batch call: the same answer is an item error or valid metadata, never both or neither.
        const [item] = await instances.instancesMetadata([node('n1')]);
        if (item!.metadata && item!.error) throw new Error('item has both metadata and error');
        if (item!.metadata) assertValid(item!.metadata, a!);
        else if (!(item!.error instanceof InvalidCloudResponseError)) throw new Error(`item error ${item!.error?.name}: ${item!.error?.message}`);
      },
    ),
    { numRuns: 200 },
  );
  t.true(seen.accepted > 0, 'some answers were valid');
  t.true(seen.rejected > 0, 'some answers were rejected');
});

test('NOT_CONFIGURED is "not ready", never "not found": the call fails as unavailable and the supervisor configures the provider again', async (t) => {
  let configures = 0;
  let lost = false;
  const { cloud, instances } = await cloudFor(t, {
    async configure() {
      configures++;
      lost = false;
    },
    instances: {
      async instanceExists() {
        if (lost) throw new NotConfiguredError();
        return { exists: true };
      },
    },
  });
  t.is(configures, 2, 'startInProcess and the supervisor each configured it');
  lost = true;
  const err = await rejection(t, instances.instanceExists(node('n1')));
  t.true(err instanceof PluginUnavailableError, `${err.name}: ${err.message}`);
  t.false(err instanceof HostInstanceNotFoundError);
  await waitFor(() => configures === 3 && cloud.supervisor.state === 'ready', { what: 'Configure sent again', timeoutMs: 10_000 });
  t.true(await instances.instanceExists(node('n1')));
});

const hostSvc = (name: string): HostServiceRef => ({
  uid: `uid-${name}`,
  namespace: 'ns',
  name,
  annotations: {},
  labels: {},
  ports: [{ name: '', protocol: 'TCP', port: 80, nodePort: 30080, appProtocol: '' }],
  loadBalancerIp: '',
  loadBalancerSourceRanges: [],
  ipFamilies: ['IPv4'],
  externalTrafficPolicy: 'Cluster',
  healthCheckNodePort: 0,
  sessionAffinity: 'None',
  sessionAffinityTimeoutSeconds: 0,
  loadBalancerClass: '',
});

test('EnsureLoadBalancers: each entry is validated and mapped on its own (status, RetryInfo, IMPLEMENTED_ELSEWHERE, invalid status, wrong uid); a wrong result count rejects the call', async (t) => {
  const status = (ip: string) => ({ ingress: [{ ip, hostname: '', ipMode: 0, ports: [] }] });
  const { cloud } = await cloudFor(t, {
    instances: {},
    loadBalancers: {
      ensureLoadBalancers: async (req) => {
        if (req.services.length === 1) return { results: [] };
        return {
          results: [
            { serviceUid: 'uid-ok', status: status('10.0.0.1') },
            { serviceUid: 'uid-retry', error: toStatus(new RetryError('address pending', 3_000)) },
            { serviceUid: 'uid-elsewhere', error: toStatus(new ImplementedElsewhereError()) },
            { serviceUid: 'uid-badip', status: status('10.0.0.300') },
            { serviceUid: 'uid-other', status: status('10.0.0.2') },
          ],
        };
      },
    },
  });
  const lbs = cloud.loadBalancers()!;
  t.true(lbs.batchEnsure);
  const r = await lbs.ensureLoadBalancers('test', ['ok', 'retry', 'elsewhere', 'badip', 'wrong'].map(hostSvc), [node('n1')]);
  t.deepEqual(r[0], { uid: 'uid-ok', status: { ingress: [{ ip: '10.0.0.1' }] } });
  t.true(r[1]!.error instanceof RetryAfterError && r[1]!.error.retryAfterMs === 3_000, String(r[1]!.error));
  t.true(r[2]!.error instanceof HostImplementedElsewhereError, String(r[2]!.error));
  t.true(r[3]!.error instanceof InvalidCloudResponseError, String(r[3]!.error));
  t.true(
    r[4]!.error instanceof InvalidCloudResponseError && /result 4 is for service uid "uid-other"/.test(r[4]!.error.message),
    String(r[4]!.error),
  );
  const err = await rejection(t, lbs.ensureLoadBalancers('test', [hostSvc('one')], []));
  t.true(err instanceof InvalidCloudResponseError && /0 results for 1 services/.test(err.message), err.message);
});
