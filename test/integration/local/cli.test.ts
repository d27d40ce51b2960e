/**
 * Runs the built `localcloud` CLI and provider executable as real processes
 * on a shared state directory: instances added by the CLI are served over
 * gRPC by the provider, and knobs flipped by the CLI reach the running
 * provider without a restart. Without LOCALCLOUD_ALLOW_SIMULATION=true the
 * provider refuses to start (a simulation never answers for a real cluster).
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { credentials, Metadata, type CallOptions, type ServiceError } from '@grpc/grpc-js';
import test, { type ExecutionContext } from 'ava';
import { Code, fromServiceError } from '../../../sdk/errors.js';
import { ALLOW_SIMULATION_ENV } from '../../../plugins/local/simulation-guard.js';
import {
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_LOG_LEVEL,
  ENV_PROTOCOL_VERSIONS,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  parseHandshake,
} from '../../../sdk/protocol.js';
import { NodeAddressType, type NodeRef } from '../../../proto/gen/ccm/provider/v1/common.js';
import { InstancesServiceClient } from '../../../proto/gen/ccm/provider/v1/instances.js';
import { LifecycleServiceClient } from '../../../proto/gen/ccm/provider/v1/lifecycle.js';

const DIST = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(DIST, 'plugins/local/cli.js');
const MAIN = join(DIST, 'plugins/local/main.js');
/** Bound on one CLI run or one gRPC call, in ms. */
// A bound, not a timing check: starting the provider (grpc-js) took over 15 s on a loaded 2-core machine.
const STEP_TIMEOUT_MS = 60_000;

/** The runner's environment without LOCALCLOUD_* or plugin variables. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LOCALCLOUD_') && !k.startsWith('CCM_')));
}

async function stateDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-it-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(dir: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, '--state', dir, ...args], { env: cleanEnv(), timeout: STEP_TIMEOUT_MS }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function cliOk(t: ExecutionContext, dir: string, ...args: string[]): Promise<string> {
  const r = await cli(dir, ...args);
  t.is(r.code, 0, `localcloud ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

test('CLI: add, list, shutdown, start, delete instances with JSON output', async (t) => {
  const dir = await stateDir(t);
  const added = (
    await cliOk(
      t,
      dir,
      'instance',
      'add',
      'node-a',
      '--type',
      'local.large',
      '--zone',
      'zone-1',
      '--address',
      '10.0.0.5',
      '--address',
      'ExternalIP=198.51.100.7',
      '--label',
      'example.com/role=edge',
    )
  ).trim();
  const [id, providerId] = added.split(' ');
  t.regex(id ?? '', /^i-[0-9a-f]{8}$/);
  t.is(providerId, `local://${id}`);
  await cliOk(t, dir, 'instance', 'add', 'node-b', 'node-c');

  const list = JSON.parse(await cliOk(t, dir, 'instance', 'list', '-o', 'json')) as {
    id: string;
    name: string;
    state: string;
    type: string;
    zone: string;
    providerId: string;
    addresses: { type: string; address: string }[];
    labels: Record<string, string>;
  }[];
  t.deepEqual(
    list.map((i) => i.name),
    ['node-a', 'node-b', 'node-c'],
  );
  const a = list[0]!;
  t.like(a, { id, providerId, type: 'local.large', zone: 'zone-1', state: 'running', labels: { 'example.com/role': 'edge' } });
  t.deepEqual(a.addresses, [
    { type: 'InternalIP', address: '10.0.0.5' },
    { type: 'ExternalIP', address: '198.51.100.7' },
    { type: 'Hostname', address: 'node-a' },
  ]);
  t.is(list[1]!.type, 'local.small');

  t.is((await cliOk(t, dir, 'instance', 'shutdown', 'node-a')).trim(), `${id} stopped`);
  t.is((JSON.parse(await cliOk(t, dir, 'instance', 'list', '-o', 'json')) as { state: string }[])[0]!.state, 'stopped');
  await cliOk(t, dir, 'instance', 'start', id!);
  await cliOk(t, dir, 'instance', 'delete', providerId!);
  const table = await cliOk(t, dir, 'instance', 'list');
  t.regex(table, /^ID\s+NAME\s+STATE/);
  t.notRegex(table, /node-a/);
  t.regex(table, /node-b/);

  for (const args of [
    ['instance', 'add', 'node-b'],
    ['instance', 'delete', 'ghost'],
    ['instance', 'add', 'Bad_Name'],
    ['knobs', 'set', 'errorRate=2'],
    ['instance', 'add', 'x', '--address', 'nope'],
  ]) {
    const r = await cli(dir, ...args);
    t.is(r.code, 1, args.join(' '));
    t.is(r.stderr.trim().split('\n').length, 1, `one line for ${args.join(' ')}: ${r.stderr}`);
    t.regex(r.stderr, /^localcloud: /);
  }
});

test('CLI: knobs set, show and unset; lb/route/volume lists', async (t) => {
  const dir = await stateDir(t);
  await cliOk(t, dir, 'knobs', 'set', 'latencyMs=25', 'LOCALCLOUD_FAIL_ALL=true', 'rate-limit-qps=10');
  const shown = JSON.parse(await cliOk(t, dir, 'knobs', 'show', '-o', 'json')) as {
    state: Record<string, unknown>;
    effective: Record<string, unknown>;
  };
  t.deepEqual(shown.state, { latencyMs: 25, failAll: true, rateLimitQps: 10 });
  t.like(shown.effective, { latencyMs: 25, failAll: true, rateLimitQps: 10, errorRate: 0 });
  await cliOk(t, dir, 'knobs', 'unset', 'failAll');
  await cliOk(t, dir, 'knobs', 'reset');
  t.deepEqual((JSON.parse(await cliOk(t, dir, 'knobs', 'show', '-o', 'json')) as { state: object }).state, {});
  for (const kind of ['lb', 'route', 'volume']) t.deepEqual(JSON.parse(await cliOk(t, dir, kind, 'list', '-o', 'json')), []);
});

/** Starts the provider as the host would and returns its socket and a stopper. */
async function startProvider(
  t: ExecutionContext,
  dir: string,
): Promise<{ child: ChildProcessWithoutNullStreams; endpoint: string; stderr: () => string }> {
  const sock = join(dir, 'p.sock');
  const child = spawn(process.execPath, [MAIN, '--state', dir], {
    env: {
      ...cleanEnv(),
      [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
      [ENV_ENDPOINT]: `unix://${sock}`,
      [ENV_PROTOCOL_VERSIONS]: '1',
      [ENV_INSTANCE_ID]: 'it-local-1',
      [ENV_LOG_LEVEL]: 'warn',
      [ALLOW_SIMULATION_ENV]: 'true',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let errText = '';
  child.stderr.on('data', (b: Buffer) => (errText += b.toString()));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error(`no handshake within ${STEP_TIMEOUT_MS} ms; stderr: ${errText}`)), STEP_TIMEOUT_MS);
    rl.once('line', (l) => {
      clearTimeout(timer);
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`provider exited with ${code} before the handshake; stderr: ${errText}`)));
  });
  const hs = parseHandshake(line);
  if (hs.kind !== 'handshake') throw new Error(`bad handshake line ${JSON.stringify(line)}`);
  return { child, endpoint: `unix://${hs.handshake.address}`, stderr: () => errText };
}

type Unary<Req, Res> = (req: Req, md: Metadata, opts: Partial<CallOptions>, cb: (e: ServiceError | null, r: Res) => void) => unknown;

/** One unary call with a bounded deadline. */
function call<Req, Res>(fn: Unary<Req, Res>, req: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    fn(req, new Metadata(), { deadline: Date.now() + STEP_TIMEOUT_MS }, (e, r) => (e ? reject(e) : resolve(r)));
  });
}

function nodeRef(name: string): NodeRef {
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

/** LOCALCLOUD_ALLOW_SIMULATION as set (undefined: unset): the provider must refuse each with one line. */
const NOT_ALLOWED: (string | undefined)[] = [undefined, '', 'false', '1', 'yes', 'TRUE'];

test('provider: without LOCALCLOUD_ALLOW_SIMULATION=true it exits 1 with one line saying it is a simulation and how to allow it', async (t) => {
  for (const value of NOT_ALLOWED) {
    const dir = join(await stateDir(t), 'state');
    const env: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      // Everything the host gives a plugin, so only the allowance is missing.
      [MAGIC_COOKIE_KEY]: MAGIC_COOKIE_VALUE,
      [ENV_ENDPOINT]: `unix://${join(dir, '..', 'p.sock')}`,
      [ENV_PROTOCOL_VERSIONS]: '1',
      [ENV_INSTANCE_ID]: 'it-local-refuse',
    };
    if (value !== undefined) env[ALLOW_SIMULATION_ENV] = value;
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      // A bound on a loaded machine, not a timing assertion.
      execFile(process.execPath, [MAIN, '--state', dir], { env, timeout: 4 * STEP_TIMEOUT_MS }, (err, out, errOut) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout: out, stderr: errOut }),
      );
    });
    const what = `${ALLOW_SIMULATION_ENV}=${value ?? '(unset)'}`;
    t.is(code, 1, what);
    t.is(stdout, '', `${what}: no handshake`);
    const lines = stderr.split('\n').filter((l) => l !== '');
    t.is(lines.length, 1, `${what}: ${stderr}`);
    const msg = (JSON.parse(lines[0]!) as { msg: string }).msg;
    t.regex(msg, /the local cloud is a simulation for tests and demos/, what);
    t.true(msg.includes(`${ALLOW_SIMULATION_ENV}=true`), `${what}: says how to allow it`);
    t.true(msg.includes(`--plugin-env=${ALLOW_SIMULATION_ENV}=true`), `${what}: and how through the host`);
    t.false(existsSync(dir), `${what}: no state directory made`);
  }
});

test('provider: serves instances the CLI added, sees CLI changes and knobs live, exits on stdin EOF', async (t) => {
  const dir = await stateDir(t);
  const [id, providerId] = (await cliOk(t, dir, 'instance', 'add', 'worker-1', '--address', '10.1.2.3', '--zone', 'zone-x')).trim().split(' ');
  const { child, endpoint, stderr } = await startProvider(t, dir);
  const client = new InstancesServiceClient(endpoint, credentials.createInsecure());
  t.teardown(() => client.close());
  // Configured first, as the host does (cloud calls answer NOT_CONFIGURED before).
  const lifecycle = new LifecycleServiceClient(endpoint, credentials.createInsecure());
  t.teardown(() => lifecycle.close());
  await call(lifecycle.configure.bind(lifecycle), {
    cloudConfig: Buffer.alloc(0),
    clusterName: 'cli-test',
    clusterUid: '',
    hostVersion: 'test',
    providerArgs: [],
    controllers: [],
    nodeSelector: '',
    watchNamespace: '',
  });

  const md = await call(client.instanceMetadata.bind(client), { node: nodeRef('worker-1') });
  t.is(md.metadata?.providerId, providerId);
  t.is(md.metadata?.zone, 'zone-x');
  t.is(md.metadata?.instanceType, 'local.small');
  t.deepEqual(md.metadata?.nodeAddresses[0], { type: NodeAddressType.NODE_ADDRESS_TYPE_INTERNAL_IP, address: '10.1.2.3' });

  // An instance the CLI adds while the provider runs is visible at once.
  const [id2] = (await cliOk(t, dir, 'instance', 'add', 'worker-2')).trim().split(' ');
  const md2 = await call(client.instanceMetadata.bind(client), { node: nodeRef('worker-2') });
  t.is(md2.metadata?.providerId, `local://${id2}`);

  await cliOk(t, dir, 'instance', 'shutdown', id!);
  const sd = await call(client.instanceShutdown.bind(client), { node: { ...nodeRef(''), providerId: providerId! } });
  t.true(sd.shutdown);

  // Missing instance: NOT_FOUND with reason INSTANCE_NOT_FOUND over the wire.
  const missing = await t.throwsAsync(call(client.instanceMetadata.bind(client), { node: nodeRef('ghost') }));
  t.like(fromServiceError(missing as ServiceError), { code: Code.NOT_FOUND, reason: 'INSTANCE_NOT_FOUND' });

  // Outage knob flipped by the CLI reaches the running provider.
  await cliOk(t, dir, 'knobs', 'set', 'failAll=true');
  const down = await t.throwsAsync(call(client.instanceMetadata.bind(client), { node: nodeRef('worker-1') }));
  t.is(fromServiceError(down as ServiceError).code, Code.UNAVAILABLE);
  await cliOk(t, dir, 'knobs', 'unset', 'failAll');
  await t.notThrowsAsync(call(client.instanceMetadata.bind(client), { node: nodeRef('worker-1') }));

  // The host dying (stdin EOF) stops the provider cleanly.
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdin.end();
  t.is(await exited, 0, stderr());
});
