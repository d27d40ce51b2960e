/**
 * serve() end to end: the echo fixture runs as a real child process launched
 * like the host launches providers, and is driven through the generated
 * clients over its unix socket.
 */
import test from 'ava';
import { createServer } from 'node:net';
import { stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { type ServiceError } from '@grpc/grpc-js';
import { Capability, Service } from '../../../proto/gen/ccm/provider/v1/identity.js';
import { createProviderClients, unary, type ProviderClients } from '../../../sdk/clients.js';
import { Code, fromServiceError } from '../../../sdk/errors.js';
import { ENV_PROTOCOL_VERSIONS, ErrorReason, HEALTH_SERVICE_NAME, MAGIC_COOKIE_KEY, parseHandshake, PROTOCOL_MINOR } from '../../../sdk/protocol.js';
import { NOT_BY_HAND_MESSAGE } from '../../../sdk/serve.js';
import { echoMetadata } from '../../fixtures/echo-provider-lib.js';
import { launchPlugin, withTimeout, WAIT_MS, type LaunchOptions, type PluginProcess } from './plugin-process.js';

const CONFIGURE = {
  cloudConfig: Buffer.alloc(0),
  clusterName: 'test',
  clusterUid: '',
  hostVersion: 'test',
  providerArgs: [],
  controllers: [],
  nodeSelector: '',
  watchNamespace: '',
};

/** Launches the echo provider in exec mode, waits for the handshake, connects and (unless told not to) configures it, as the host does. */
async function started(
  t: { teardown(fn: () => unknown): void },
  opts: LaunchOptions = {},
  configure = true,
): Promise<{ p: PluginProcess; c: ProviderClients; line: string }> {
  const p = await launchPlugin(opts);
  t.teardown(() => p.cleanup());
  const line = await p.handshake();
  const c = createProviderClients(p.endpoint);
  t.teardown(() => c.close());
  if (configure) await unary(c.lifecycle.configure.bind(c.lifecycle), CONFIGURE);
  return { p, c, line };
}

/** The call's failure, decoded; fails the test if the call succeeded. */
async function failure(call: Promise<unknown>) {
  try {
    await call;
  } catch (err) {
    return fromServiceError(err as ServiceError);
  }
  throw new Error('call succeeded, expected an error');
}

test('prints one valid handshake line naming the 0600 socket; GetPluginInfo echoes the instance id', async (t) => {
  const { p, c, line } = await started(t);
  const parsed = parseHandshake(line);
  t.is(parsed.kind, 'handshake', line);
  if (parsed.kind === 'handshake') {
    t.is(parsed.handshake.network, 'unix');
    t.is(parsed.handshake.address, p.socketPath);
    t.is(parsed.handshake.protocol, 1);
  }
  t.is((await stat(p.socketPath)).mode & 0o777, 0o600);
  const info = await unary(c.identity.getPluginInfo.bind(c.identity), {});
  t.deepEqual(info, {
    name: 'echo.ccm.dev',
    vendorVersion: '0.1.0',
    protocolVersion: 1,
    protocolMinor: PROTOCOL_MINOR,
    instanceId: p.instanceId,
    manifest: { fixture: 'echo' },
    // No flags or controllers of its own.
    providerFlags: [],
    providerControllers: [],
  });
});

test('capabilities are derived from the provider object', async (t) => {
  const { c } = await started(t);
  const caps = await unary(c.identity.getPluginCapabilities.bind(c.identity), {});
  t.deepEqual(caps, {
    services: [Service.SERVICE_INSTANCES, Service.SERVICE_ZONES, Service.SERVICE_ROUTES],
    // ipModeProxy is claimed in info but there is no LoadBalancersService.
    capabilities: [Capability.CAPABILITY_INSTANCES_BATCH, Capability.CAPABILITY_INSTANCES_LEGACY],
    providerName: 'echo',
    hasClusterId: true,
    providerIdPrefixes: [],
    nodeSelector: '',
    // No load balancer service: no class declaration.
    loadBalancerClasses: [],
    loadBalancerClassesOnly: false,
    volumeProvisioners: [],
  });
});

test('grpc.health.v1 reports SERVING for "" and the protocol service name', async (t) => {
  const { c } = await started(t);
  for (const service of ['', HEALTH_SERVICE_NAME]) {
    const res = await unary(c.health.check.bind(c.health), { service });
    t.is(res.status, 'SERVING', service);
  }
  const unknown = await failure(unary(c.health.check.bind(c.health), { service: 'nope' }));
  t.is(unknown.code, Code.NOT_FOUND);
});

test('a missing service or method answers UNIMPLEMENTED naming the method', async (t) => {
  const { c } = await started(t);
  const method = await failure(unary(c.zones.getZoneByNodeName.bind(c.zones), { nodeName: 'n1' }));
  t.is(method.code, Code.UNIMPLEMENTED);
  t.is(method.message, 'ccm.provider.v1.ZonesService/GetZoneByNodeName is not implemented by this provider');
  const service = await failure(unary(c.volumes.listVolumes.bind(c.volumes), { pageSize: 0, pageToken: '' }));
  t.is(service.code, Code.UNIMPLEMENTED);
  t.true(service.message.includes('VolumesService/ListVolumes'), service.message);
  // Present methods still work next to missing ones.
  const zone = await unary(c.zones.getZone.bind(c.zones), {});
  t.is(zone.zone?.failureDomain, 'echo-zone-a');
});

test('results and errors: metadata from the node name, INSTANCE_NOT_FOUND and RetryInfo details, INTERNAL for plain errors', async (t) => {
  const { c } = await started(t);
  const md = await unary(c.instances.instanceMetadata.bind(c.instances), { node: node('worker-7') });
  t.deepEqual(md.metadata, echoMetadata('worker-7'));

  const gone = await failure(unary(c.instances.instanceExists.bind(c.instances), { node: node('gone-1') }));
  t.is(gone.code, Code.NOT_FOUND);
  t.is(gone.reason, ErrorReason.INSTANCE_NOT_FOUND);
  t.is(gone.message, 'no instance behind node gone-1');

  const limited = await failure(unary(c.routes.deleteRoute.bind(c.routes), {}));
  t.is(limited.code, Code.RESOURCE_EXHAUSTED);
  t.is(limited.reason, ErrorReason.RATE_LIMITED);
  t.is(limited.retryAfterMs, 1500);

  const internal = await failure(unary(c.routes.createRoute.bind(c.routes), { nameHint: 'r' }));
  t.deepEqual(internal, { code: Code.INTERNAL, message: 'boom: the cloud exploded' });

  const batch = await unary(c.instances.getInstancesStatus.bind(c.instances), { nodes: [node('a'), node('gone-b')] });
  t.is(batch.results.length, 2);
  t.true(batch.results[0]!.exists);
  t.is(batch.results[1]!.error?.code, Code.NOT_FOUND);
});

test('Configure and Probe reach the provider', async (t) => {
  const { c } = await started(t);
  const res = await unary(c.lifecycle.configure.bind(c.lifecycle), {
    cloudConfig: Buffer.alloc(0),
    clusterName: 'k',
    clusterUid: '',
    hostVersion: 'test',
    providerArgs: [],
    controllers: [],
    nodeSelector: '',
    watchNamespace: '',
  });
  t.deepEqual(res.warnings, ['cloud config is empty']);
  const probe = await unary(c.identity.probe.bind(c.identity), {});
  t.true(probe.ready);
});

test("the call deadline aborts the provider's signal", async (t) => {
  const { p, c } = await started(t);
  // Connect first, and leave room: a call that reaches the provider after its deadline never runs.
  await unary(c.identity.getPluginInfo.bind(c.identity), {});
  const err = await failure(unary(c.routes.listRoutes.bind(c.routes), { pageSize: 0, pageToken: '' }, { timeoutMs: 2_000 }));
  t.is(err.code, Code.DEADLINE_EXCEEDED);
  const sleeping = await p.logLine('sleeping');
  t.is(typeof sleeping.deadlineMs, 'number');
  const aborted = await p.logLine('sleep aborted');
  // Whichever fires first: our deadline timer or the client's RST_STREAM.
  t.true(aborted.code === 'DEADLINE_EXCEEDED' || aborted.code === 'CANCELLED', String(aborted.code));
});

test('Shutdown aborts in-flight calls, answers, and the process exits 0', async (t) => {
  const { p, c } = await started(t);
  const inFlight = failure(unary(c.routes.listRoutes.bind(c.routes), { pageSize: 0, pageToken: '' }, { timeoutMs: WAIT_MS }));
  await p.logLine('sleeping');
  await unary(c.lifecycle.shutdown.bind(c.lifecycle), { gracePeriod: { seconds: 5, nanos: 0 } });
  const err = await withTimeout(inFlight, WAIT_MS, 'the in-flight call to fail');
  t.is(err.code, Code.UNAVAILABLE);
  t.is(err.message, 'provider is shutting down');
  t.is(await p.exited(), 0);
  t.truthy(await p.logLine('echo provider closed'));
  t.false(existsSync(p.socketPath), 'socket removed');
});

test('stdin EOF (the host died) stops the provider with exit 0', async (t) => {
  const { p } = await started(t);
  p.child.stdin?.end();
  t.is(await p.exited(), 0);
  t.is((await p.logLine('provider stopping')).reason, 'stdin closed');
  t.truthy(await p.logLine('echo provider closed'));
  t.false(existsSync(p.socketPath));
});

test('SIGTERM stops the provider with exit 0', async (t) => {
  const { p } = await started(t);
  p.child.kill('SIGTERM');
  t.is(await p.exited(), 0);
  t.is((await p.logLine('provider stopping')).reason, 'SIGTERM');
  t.false(existsSync(p.socketPath));
});

test('a signal during a stop (the host closing stdin, then SIGTERM) exits 1 at once and still removes the socket', async (t) => {
  const { p } = await started(t, { env: { ECHO_CLOSE_MS: String(WAIT_MS * 3) } });
  p.child.stdin?.end();
  await p.logLine('echo provider closing slowly');
  p.child.kill('SIGTERM');
  t.is(await p.exited(), 1);
  t.is((await p.logLine('second signal during stop; exiting now')).signal, 'SIGTERM');
  t.false(existsSync(p.socketPath), 'socket removed');
});

test('stdout carries only the handshake even when provider code writes to the console', async (t) => {
  const { p, c, line } = await started(t);
  await unary(c.instances.instanceExists.bind(c.instances), { node: node('n1') });
  await unary(c.instances.instanceMetadata.bind(c.instances), { node: node('n1') });
  p.child.stdin?.end();
  t.is(await p.exited(), 0);
  t.deepEqual(p.stdoutLines, [line]);
  // All of it went to stderr instead.
  for (const text of [
    'echo provider loading',
    'echo provider serving',
    'instanceExists called for n1',
    'a raw stdout write',
    'instanceMetadata called',
  ]) {
    t.truthy(
      p.stderrLines.find((l) => l.includes(text)),
      text,
    );
  }
});

test('SDK and provider logs are JSON lines on stderr', async (t) => {
  const { p } = await started(t);
  const serving = await p.logLine('provider serving');
  t.is(serving.level, 'info');
  t.is(typeof serving.time, 'string');
  t.is(serving.mode, 'exec');
  t.is(serving.endpoint, p.endpoint);
});

test('without the magic cookie the binary refuses to run (exit 1, message on stderr)', async (t) => {
  for (const env of [{ [MAGIC_COOKIE_KEY]: undefined }, { [MAGIC_COOKIE_KEY]: 'wrong' }]) {
    const p = await launchPlugin({ env });
    t.teardown(() => p.cleanup());
    t.is(await p.exited(), 1);
    t.true(p.stderrLines.includes(NOT_BY_HAND_MESSAGE), p.stderrLines.join('\n'));
    t.false(p.stdoutLines.some((l) => l.startsWith('CCMPLUGIN')));
  }
});

test('no common protocol version: exit 1 with a message naming both lists', async (t) => {
  const p = await launchPlugin({ env: { [ENV_PROTOCOL_VERSIONS]: '2,3' } });
  t.teardown(() => p.cleanup());
  t.is(await p.exited(), 1);
  const msg = p.stderrLines.find((l) => l.includes('protocol versions'));
  t.truthy(msg, p.stderrLines.join('\n'));
  t.true(msg!.includes('speaks ccm protocol versions 1'), msg);
  t.true(msg!.includes('offered 2,3'), msg);
  t.true(msg!.includes('upgrade the plugin'), msg);
  t.deepEqual(p.stdoutLines, []);
});

test('a stale socket file is replaced; a live one is left alone', async (t) => {
  // Stale: a process that bound the path and died without unlinking it.
  const first = await launchPlugin();
  t.teardown(() => first.cleanup());
  first.child.kill('SIGKILL');
  await first.exited();
  await execa(
    process.execPath,
    ['-e', `require('net').createServer().listen(${JSON.stringify(first.socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`],
    { reject: false, timeout: WAIT_MS },
  );
  t.true(existsSync(first.socketPath), 'stale socket left behind');
  const { c } = await started(t, { socketPath: first.socketPath });
  t.is((await unary(c.identity.getPluginInfo.bind(c.identity), {})).name, 'echo.ccm.dev');

  // Live: something answers on the path; the provider must not steal it.
  const live = await launchPlugin({ hostEnv: false });
  t.teardown(() => live.cleanup());
  await live.exited();
  const livePath = `${live.dir}/live.sock`;
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(livePath, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const p = await launchPlugin({ socketPath: livePath });
  t.teardown(() => p.cleanup());
  t.is(await p.exited(), 1);
  t.truthy(
    p.stderrLines.find((l) => l.includes('another process is listening')),
    p.stderrLines.join('\n'),
  );
  t.true(existsSync(livePath), 'live socket untouched');
});

test('sidecar mode (--endpoint, no cookie): no handshake, survives Shutdown, SIGTERM removes the socket', async (t) => {
  const probe = await launchPlugin({ hostEnv: false });
  t.teardown(() => probe.cleanup());
  await probe.exited();
  const socketPath = `${probe.dir}/sidecar.sock`;
  const p = await launchPlugin({ hostEnv: false, args: [`--endpoint=unix://${socketPath}`], socketPath });
  t.teardown(() => p.cleanup());
  await p.logLine('provider serving');
  t.false(
    p.stdoutLines.some((l) => l.startsWith('CCMPLUGIN')),
    'no handshake in sidecar mode',
  );
  const c = createProviderClients(`unix://${socketPath}`);
  t.teardown(() => c.close());
  const info = await unary(c.identity.getPluginInfo.bind(c.identity), {});
  t.regex(info.instanceId, /^[0-9a-f-]{36}$/, 'a per-process instance id, as there is no launch nonce');
  t.is((await unary(c.identity.getPluginInfo.bind(c.identity), {})).instanceId, info.instanceId, 'stable for the life of the process');
  await unary(c.lifecycle.shutdown.bind(c.lifecycle), {});
  // Still serving the next host.
  t.is((await unary(c.identity.getPluginInfo.bind(c.identity), {})).name, 'echo.ccm.dev');
  p.child.kill('SIGTERM');
  t.is(await p.exited(), 0);
  t.false(existsSync(socketPath), 'socket removed');
});

function node(name: string) {
  return {
    name,
    providerId: '',
    addresses: [],
    labels: {},
    uid: '',
    annotations: {},
    podCidrs: [],
    taints: [],
    unschedulable: false,
    conditions: [],
  };
}

test('before the first successful Configure: cloud calls answer FAILED_PRECONDITION/NOT_CONFIGURED and Probe says not ready', async (t) => {
  const { c } = await started(t, {}, false);
  t.false((await unary(c.identity.probe.bind(c.identity), {})).ready);
  const calls: [string, Promise<unknown>][] = [
    ['InstanceExists', unary(c.instances.instanceExists.bind(c.instances), { node: node('n1') })],
    ['GetInstancesStatus', unary(c.instances.getInstancesStatus.bind(c.instances), { nodes: [node('n1')] })],
    ['ListRoutes', unary(c.routes.listRoutes.bind(c.routes), { pageSize: 0, pageToken: '' })],
  ];
  for (const [method, call] of calls) {
    const err = await failure(call);
    t.is(err.code, Code.FAILED_PRECONDITION, method);
    t.is(err.reason, ErrorReason.NOT_CONFIGURED, method);
  }
  // The gate comes first: a method the provider lacks of a service it declares answers NOT_CONFIGURED too.
  const lacking = await failure(unary(c.zones.getZoneByNodeName.bind(c.zones), { nodeName: 'n1' }));
  t.deepEqual([lacking.code, lacking.reason], [Code.FAILED_PRECONDITION, ErrorReason.NOT_CONFIGURED]);
  // Identity answers throughout; a service the provider does not declare stays UNIMPLEMENTED.
  t.is((await unary(c.identity.getPluginInfo.bind(c.identity), {})).name, 'echo.ccm.dev');
  t.is((await failure(unary(c.loadBalancers.getLoadBalancer.bind(c.loadBalancers), {}))).code, Code.UNIMPLEMENTED);
  t.is((await failure(unary(c.volumes.listVolumes.bind(c.volumes), { pageSize: 0, pageToken: '' }))).code, Code.UNIMPLEMENTED);
  await unary(c.lifecycle.configure.bind(c.lifecycle), CONFIGURE);
  t.true((await unary(c.identity.probe.bind(c.identity), {})).ready);
  t.true((await unary(c.instances.instanceExists.bind(c.instances), { node: node('n1') })).exists);
});
