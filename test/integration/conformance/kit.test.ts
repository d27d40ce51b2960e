/**
 * The conformance kit against real provider processes: the local cloud (a
 * command test hook), the Go and Python providers (their TestHooksService) in
 * exec and sidecar mode, upstream's k8s.io/cloud-provider/fake through the
 * Go bridge (sdk/go/bridge) in both modes, the CLI with JUnit output, and a deliberately
 * nonconforming provider whose violations the kit must report.
 */
import test, { type ExecutionContext } from 'ava';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import type { KitOptions, TargetSpec } from '../../../conformance/kit.js';
import type { CheckResult } from '../../../conformance/report.js';
import { runConformance } from '../../../conformance/run.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from '../../helpers/localcloud.js';
import { OtlpReceiver } from '../../helpers/otlp-receiver.js';
import { FAKE_CLOUD_PROVIDER, GO_PROVIDER, PYTHON_PROVIDER, type ProviderUnderTest } from '../../helpers/providers.js';
import { startSidecar } from '../../helpers/sidecar.js';

const CLI = fileURLToPath(new URL('../../../conformance/cli.js', import.meta.url));
const LOCAL_HOOK = fileURLToPath(new URL('../../../conformance/hooks/localcloud.js', import.meta.url));
const NONCONFORMING = fileURLToPath(new URL('../../fixtures/nonconforming-provider.js', import.meta.url));
const UNGUARDED = fileURLToPath(new URL('../../fixtures/unguarded-provider.js', import.meta.url));
const DOCS_READER = fileURLToPath(new URL('../../fixtures/docs-reader-provider.js', import.meta.url));
const NODEINFO = fileURLToPath(new URL('../../fixtures/nodeinfo-provider.js', import.meta.url));
const ROUNDING = fileURLToPath(new URL('../../fixtures/volume-rounding-provider.js', import.meta.url));
/** Not JSON: every provider here must refuse it (lifecycle/bad-config). */
const BAD_CONFIG = Buffer.from('{not a config');

function options(target: TargetSpec, extra: Partial<KitOptions> = {}): KitOptions {
  return { target, cloudConfig: Buffer.alloc(0), startTimeoutMs: 60_000, shutdownGraceMs: 2_000, ...extra };
}

function outcome(results: CheckResult[], id: string): string | undefined {
  return results.find((r) => r.id === id)?.outcome;
}

function failures(results: CheckResult[]): string[] {
  return results.filter((r) => r.outcome === 'fail').map((r) => `${r.id}: ${r.message}`);
}

/** The kit against the local cloud in exec mode, with a state of its own, `env` and the command test hook. */
async function kitOnLocalCloud(tmpPrefix: string, env: string[], extra: Partial<KitOptions> = {}): Promise<CheckResult[]> {
  const state = join(await mkdtemp(join(tmpdir(), tmpPrefix)), 'cloud');
  return runConformance(
    options(
      { kind: 'exec', path: LOCAL_PLUGIN, env: [`LOCALCLOUD_STATE_DIR=${state}`, ALLOW_SIMULATION, ...env] },
      { hookCommand: `'${process.execPath}' '${LOCAL_HOOK}' --state '${state}'`, ...extra },
    ),
  );
}

test('the local cloud passes the kit (exec mode, command test hook), with every service and capability checked', async (t) => {
  const results = await kitOnLocalCloud(
    'ccm-kit-local-',
    // Declares a node selector, load balancer classes and pod backends too, so their checks run rather than skip.
    [
      'LOCALCLOUD_LB_CIDR=127.0.78.0/24',
      'LOCALCLOUD_LB_CLASSES=example.com/kit-a,example.com/kit-b',
      'LOCALCLOUD_NODE_SELECTOR=ccm-kit-cloud=local',
      'LOCALCLOUD_POD_BACKENDS=true',
    ],
    { badCloudConfig: BAD_CONFIG },
  );
  t.deepEqual(failures(results), []);
  const skipped = results.filter((r) => r.outcome === 'skip').map((r) => r.id);
  t.deepEqual(skipped, ['identity/undeclared-unimplemented'], 'the reference provider declares everything, so nothing else is skipped');
  t.is(outcome(results, 'lifecycle/not-configured'), 'pass');
  for (const id of [
    'launch/no-protocol-versions',
    'launch/stale-socket',
    'launch/sigterm',
    'lifecycle/bad-config',
    'instances/foreign-provider-id',
    'instances/batch-count',
    'instances/legacy',
    'zones/absent',
    'zones/test-instance',
    'volumes/expand-smaller',
    'volumes/labels',
    'identity/load-balancer-classes',
    'identity/node-selector',
    'identity/provider-schema',
    'load-balancers/classes',
    'load-balancers/pod-backends',
  ])
    t.is(outcome(results, id), 'pass', id);
});

for (const p of [GO_PROVIDER, PYTHON_PROVIDER] as ProviderUnderTest[]) {
  test(`the ${p.name} provider passes the kit in exec mode`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), `ccm-kit-${p.name}-`));
    const results = await runConformance(options({ kind: 'exec', path: await p.executable(dir), env: [] }, { badCloudConfig: BAD_CONFIG }));
    t.deepEqual(failures(results), []);
    for (const id of [
      'launch/protocol-mismatch',
      'launch/stdout-hygiene',
      'lifecycle/not-configured',
      'lifecycle/shutdown',
      'launch/stdin-eof-exit',
      'errors/retry-info',
      'cleanup/no-leftovers',
      'volumes/publish-twice',
      'launch/no-protocol-versions',
      'launch/stale-socket',
      'launch/sigterm',
      'lifecycle/bad-config',
      'instances/foreign-provider-id',
      'volumes/expand-smaller',
      'volumes/labels',
      // Both publish a schema: their cloud-config keys and an owned prefix (the SDK examples' GetProviderSchema).
      'identity/provider-schema',
    ]) {
      t.is(outcome(results, id), 'pass', id);
    }
    // Neither declares ZonesService nor the legacy Instances RPCs.
    t.is(outcome(results, 'zones/absent'), 'skip');
    t.is(outcome(results, 'instances/legacy'), 'skip');
    // The Python provider declares no batch capabilities: those checks are skipped, not failed.
    const batch = p.name === 'memgo' ? 'pass' : 'skip';
    t.is(outcome(results, 'instances/batch-status'), batch);
    t.is(outcome(results, 'instances/batch-count'), batch);
    t.is(outcome(results, 'routes/reconcile'), batch);
  });

  test(`the ${p.name} provider passes the kit in sidecar mode`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), `ccm-kit-${p.name}-sc-`));
    const sidecar = await startSidecar(await p.executable(dir), dir, { CCM_PROVIDER_TEST_HOOKS: '1' });
    try {
      const results = await runConformance(options({ kind: 'endpoint', endpoint: sidecar.endpoint }, { badCloudConfig: BAD_CONFIG }));
      t.deepEqual(failures(results), []);
      t.is(outcome(results, 'lifecycle/bad-config'), 'pass');
      t.is(outcome(results, 'launch/handshake'), 'skip', 'no handshake in sidecar mode');
      t.is(outcome(results, 'lifecycle/shutdown'), 'skip', "the kit never stops somebody else's sidecar");
      t.is(outcome(results, 'cleanup/no-leftovers'), 'pass');
      t.is(outcome(results, 'instances/test-instance'), 'pass');
      t.is(outcome(results, 'lifecycle/not-configured'), 'pass');
      t.is(outcome(results, 'identity/plugin-info'), 'pass', 'a per-process instance id in sidecar mode');
    } finally {
      await sidecar.stop();
    }
  });
}

/**
 * Upstream's fake cloud is a test double, served unmodified: its
 * GetLoadBalancer answers one cloud-wide `Exists` flag and its
 * UpdateLoadBalancer never fails, so a Service's load balancer cannot be
 * absent for one check and present for the next; its InstanceID answers ""
 * and its GetZoneByProviderID the cloud's one zone, without an error, for a
 * machine it does not know. These four checks fail on
 * the fake, not on the bridge (whose per-Service answers
 * sdk/go/bridge/bridge_test.go checks); everything else the fake implements
 * passes, instances through the bridge's Instances v1 + Zones fallback.
 */
const FAKE_CLOUD_FAILURES = {
  'instances/legacy': /InstanceId: want NOT_FOUND with reason INSTANCE_NOT_FOUND, but the call succeeded/,
  'zones/absent': /GetZoneByProviderId: want NOT_FOUND with reason INSTANCE_NOT_FOUND, but the call succeeded/,
  'load-balancers/absent': /UpdateLoadBalancer: want NOT_FOUND, but the call succeeded/,
  'load-balancers/ensure-twice': /GetLoadBalancer says the ensured load balancer does not exist/,
};

function checkFakeCloudRun(t: ExecutionContext, results: CheckResult[]): void {
  const failed = results.filter((r) => r.outcome === 'fail');
  t.deepEqual(
    failed.map((r) => r.id),
    Object.keys(FAKE_CLOUD_FAILURES),
    failed.map((r) => `${r.id}: ${r.message}`).join('\n'),
  );
  for (const r of failed) t.regex(r.message ?? '', FAKE_CLOUD_FAILURES[r.id as keyof typeof FAKE_CLOUD_FAILURES]);
  for (const id of [
    'identity/capabilities',
    'lifecycle/not-configured',
    'lifecycle/configure',
    'instances/absent',
    'instances/test-instance',
    'instances/exists-and-shutdown',
    'instances/foreign-provider-id',
    'load-balancers/name',
    'load-balancers/update-twice',
    'load-balancers/delete-twice',
    'routes/create-twice',
    'routes/conflict',
    'routes/paging',
    'routes/invalid-page-token',
    'routes/delete-twice',
    'cleanup/no-leftovers',
    'errors/details',
  ]) {
    t.is(outcome(results, id), 'pass', id);
  }
  // Not in upstream's interface, or not in the fake: skipped, not failed.
  for (const id of ['instances/batch-status', 'load-balancers/list', 'routes/reconcile', 'volumes/create-twice', 'errors/retry-info']) {
    t.is(outcome(results, id), 'skip', id);
  }
}

test("upstream's fake cloud through the bridge passes the kit in exec mode, but for the fake's cloud-wide load balancer answers", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-fake-'));
  const results = await runConformance(options({ kind: 'exec', path: await FAKE_CLOUD_PROVIDER.executable(dir), env: [] }));
  checkFakeCloudRun(t, results);
  for (const id of ['launch/handshake', 'launch/protocol-mismatch', 'launch/stdout-hygiene', 'launch/stdin-eof-exit', 'lifecycle/shutdown']) {
    t.is(outcome(results, id), 'pass', id);
  }
});

test("upstream's fake cloud through the bridge passes the kit in sidecar mode, but for the fake's cloud-wide load balancer answers", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-fake-sc-'));
  const sidecar = await startSidecar(await FAKE_CLOUD_PROVIDER.executable(dir), dir, { CCM_PROVIDER_TEST_HOOKS: '1' });
  try {
    const results = await runConformance(options({ kind: 'endpoint', endpoint: sidecar.endpoint }));
    checkFakeCloudRun(t, results);
    t.is(outcome(results, 'identity/plugin-info'), 'pass', 'a per-process instance id in sidecar mode');
    t.is(outcome(results, 'launch/handshake'), 'skip', 'no handshake in sidecar mode');
  } finally {
    await sidecar.stop();
  }
});

test('identity/trace-context with an OTLP receiver: each SDK (TypeScript, Go, Python) continues the trace; without it, answering is enough', async (t) => {
  const receiver = await OtlpReceiver.start();
  try {
    // What the host passes on when its tracing is on (host/plugin/tracing.ts), with a short batch delay.
    const otel = [`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${receiver.url}`, 'OTEL_BSP_SCHEDULE_DELAY=100', 'OTEL_TRACES_SAMPLER=always_on'];
    const focus = /^(launch\/handshake|identity\/trace-context)$/;
    const traced = { focus, traceSpans: () => receiver.spans };
    const rows: Record<string, string | undefined> = {};
    const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-trace-'));
    rows['local cloud (TypeScript SDK), receiver'] = outcome(await kitOnLocalCloud('ccm-kit-trace-local-', otel, traced), 'identity/trace-context');
    for (const p of [GO_PROVIDER, PYTHON_PROVIDER] as ProviderUnderTest[]) {
      const path = await p.executable(dir);
      rows[`${p.name}, receiver`] = outcome(
        await runConformance(options({ kind: 'exec', path, env: [...otel, `OTEL_SERVICE_NAME=ccm-provider-${p.name}`] }, traced)),
        'identity/trace-context',
      );
    }
    // Tracing off in the provider (no OTEL_* variables): it exports nothing, which the kit does not hold against it.
    rows['memgo, tracing off, receiver'] = outcome(
      await runConformance(options({ kind: 'exec', path: await GO_PROVIDER.executable(dir), env: [] }, traced)),
      'identity/trace-context',
    );
    t.deepEqual(rows, {
      'local cloud (TypeScript SDK), receiver': 'pass',
      'memgo, receiver': 'pass',
      'mempy, receiver': 'pass',
      'memgo, tracing off, receiver': 'skip',
    });
  } finally {
    await receiver.stop();
  }
});

test('the CLI prints one line per check and a summary, writes JUnit XML, and exits 0 for a conforming provider', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-cli-'));
  const junit = join(dir, 'junit.xml');
  const r = await execa(process.execPath, [CLI, '--plugin-path', await PYTHON_PROVIDER.executable(dir), '--junit', junit], { reject: false });
  t.is(r.exitCode, 0, r.stdout);
  t.regex(r.stdout, /^PASS {2}launch\/handshake /m);
  t.regex(r.stdout, /^SKIP {2}instances\/batch-status .*\n {6}provider does not declare CAPABILITY_INSTANCES_BATCH$/m);
  t.regex(r.stdout, /^conformance: \d+ passed, 0 failed, \d+ skipped$/m);
  const xml = await readFile(junit, 'utf8');
  t.regex(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="ccm-provider-conformance" tests="\d+" failures="0" skipped="\d+"/);
  t.regex(
    xml,
    /<testcase classname="ccm-provider-conformance.instances" name="instances\/batch-status: [^"]*" time="[\d.]+">\n\s+<skipped message="provider does not declare CAPABILITY_INSTANCES_BATCH"\/>/,
  );
  const cases = xml.match(/<testcase /g)?.length ?? 0;
  t.is(cases, r.stdout.match(/^(PASS|FAIL|SKIP) {2}/gm)?.length ?? -1);
});

test('the CLI rejects bad arguments with one line each and exit code 2', async (t) => {
  const r = await execa(process.execPath, [CLI, '--plugin-endpoint', 'tcp://x', '--plugin-env', 'nope'], { reject: false });
  t.is(r.exitCode, 2);
  t.regex(r.stderr, /--plugin-endpoint "tcp:\/\/x" is not unix:\/\/\/absolute\/path/);
  t.regex(r.stderr, /--plugin-env "nope" is not NAME=VALUE/);
});

test('a nonconforming provider fails exactly the checks it violates, and the CLI exits 1', async (t) => {
  const results = await runConformance(options({ kind: 'exec', path: NONCONFORMING, env: [] }));
  t.deepEqual(
    results.filter((r) => r.outcome === 'fail').map((r) => r.id),
    ['instances/absent', 'instances/foreign-provider-id', 'load-balancers/ensure-twice', 'launch/stdout-hygiene'],
  );
  t.regex(results.find((r) => r.id === 'instances/absent')!.message!, /without ErrorInfo reason INSTANCE_NOT_FOUND/);
  t.regex(results.find((r) => r.id === 'launch/stdout-hygiene')!.message!, /debug: provider started/);
  t.is(outcome(results, 'instances/test-instance'), 'skip', 'no test hook: instance checks are skipped');
  const cli = await execa(process.execPath, [CLI, '--plugin-path', NONCONFORMING, '--focus', '^instances/'], { reject: false });
  t.is(cli.exitCode, 1);
  t.regex(cli.stdout, /^FAIL {2}instances\/absent /m);
});

test('a provider that answers from an empty state before Configure fails lifecycle/not-configured; one without a sidecar instance id fails identity/plugin-info', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-unguarded-'));
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${UNGUARDED}' "$@"\n`);
  await chmod(launcher, 0o755);
  const sidecar = await startSidecar(launcher, dir, { FIXTURE_INSTANCE_ID: 'empty' });
  try {
    const results = await runConformance(options({ kind: 'endpoint', endpoint: sidecar.endpoint }));
    t.is(outcome(results, 'lifecycle/not-configured'), 'fail');
    t.regex(
      results.find((r) => r.id === 'lifecycle/not-configured')!.message!,
      /InstanceExists succeeded before Configure; answer FAILED_PRECONDITION with ErrorInfo reason NOT_CONFIGURED/,
    );
    t.is(outcome(results, 'identity/plugin-info'), 'fail');
    t.regex(
      results.find((r) => r.id === 'identity/plugin-info')!.message!,
      /instance_id is empty: in sidecar mode report an id generated at process start/,
    );
  } finally {
    await sidecar.stop();
  }
});

test('a provider written from the docs alone, before they said so, fails exactly the checks for its mistakes', async (t) => {
  const results = await runConformance(options({ kind: 'exec', path: DOCS_READER, env: [] }, { badCloudConfig: BAD_CONFIG }));
  const message = (id: string) => results.find((r) => r.id === id)!.message!;
  t.deepEqual(
    results.filter((r) => r.outcome === 'fail').map((r) => r.id),
    [
      'launch/no-protocol-versions',
      'launch/stale-socket',
      'launch/sigterm',
      'lifecycle/bad-config',
      'instances/foreign-provider-id',
      'instances/batch-count',
      'instances/legacy',
      'zones/absent',
      'volumes/expand-smaller',
      'volumes/labels',
      'lifecycle/shutdown',
    ],
  );
  t.regex(message('lifecycle/shutdown'), /exited with exit code 1 after Shutdown/);
  t.regex(message('instances/foreign-provider-id'), /InstanceExists for a node with providerID othercloud:\/\/\S+ answered exists=false/);
  t.regex(message('launch/no-protocol-versions'), /without CCM_PLUGIN_PROTOCOL_VERSIONS, the provider was still running/);
  t.regex(message('lifecycle/bad-config'), /Configure accepted the bad cloud config/);
  t.regex(message('launch/sigterm'), /exited with killed by SIGTERM after SIGTERM/);
  t.regex(message('launch/stale-socket'), /stale socket file at its endpoint the provider exited .*address already in use/);
  t.regex(message('instances/batch-count'), /GetInstancesStatus answered 0 results for 2 absent nodes/);
  t.regex(message('instances/legacy'), /InstanceId: NOT_FOUND without ErrorInfo reason INSTANCE_NOT_FOUND/);
  t.regex(message('zones/absent'), /GetZoneByProviderId: want NOT_FOUND with reason INSTANCE_NOT_FOUND, but the call succeeded/);
  t.regex(message('volumes/expand-smaller'), /required_bytes is a minimum/);
  t.regex(message('volumes/labels'), /GetVolumeLabels answered topology\.kubernetes\.io\/zone=undefined/);
});

test('a provider that finds machines only through the NodeRef nodeInfo fails exactly instances/bare-node', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-nodeinfo-'));
  const state = join(dir, 'cloud');
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${NODEINFO}' "$@"\n`);
  await chmod(launcher, 0o755);
  const results = await runConformance(
    options(
      { kind: 'exec', path: launcher, env: [`LOCALCLOUD_STATE_DIR=${state}`, 'LOCALCLOUD_LB_CIDR=127.0.79.0/24'] },
      { hookCommand: `'${process.execPath}' '${LOCAL_HOOK}' --state '${state}'`, focus: /^instances\// },
    ),
  );
  t.deepEqual(
    results.filter((r) => r.outcome === 'fail').map((r) => r.id),
    ['instances/bare-node'],
  );
  t.regex(
    results.find((r) => r.id === 'instances/bare-node')!.message!,
    /InstanceExists for a bare NodeRef \(by name \S+\) says the test instance does not exist/,
  );
});

test('a provider whose providerIDs start with none of the prefixes it declares fails exactly instances/provider-id-prefix', async (t) => {
  const results = await kitOnLocalCloud('ccm-kit-prefix-', ['LOCALCLOUD_PROVIDER_ID_PREFIXES=elsewhere://'], { focus: /^(identity|instances)\// });
  t.deepEqual(
    results.filter((r) => r.outcome === 'fail').map((r) => r.id),
    ['instances/provider-id-prefix'],
  );
  t.regex(
    results.find((r) => r.id === 'instances/provider-id-prefix')!.message!,
    /InstanceMetadata by providerID answered providerID "local:\/\/\S+", which starts with none of the declared prefixes "elsewhere:\/\/"/,
  );
});

/** Declarations of the local cloud (its environment) that disagree with what a provider can serve, and the check that must fail on each. */
const INCONSISTENT_DECLARATIONS: { name: string; env: string[]; fails: string; message: RegExp }[] = [
  {
    name: 'load_balancer_classes_only without a class',
    env: ['LOCALCLOUD_LB_CLASSES_ONLY=true'],
    fails: 'identity/load-balancer-classes',
    message: /load_balancer_classes_only is set with no load_balancer_classes: the provider would serve no Service at all/,
  },
  {
    name: 'an unprefixed class',
    env: ['LOCALCLOUD_LB_CLASSES=example.com/ok,internal'],
    fails: 'identity/load-balancer-classes',
    message: /load balancer class "internal" has no prefix: unprefixed loadBalancerClass names are reserved for end users/,
  },
  {
    name: 'a class in a namespace Kubernetes reserves',
    env: ['LOCALCLOUD_LB_CLASSES=service.k8s.io/lb'],
    fails: 'identity/load-balancer-classes',
    message: /"service\.k8s\.io\/lb" is in a namespace Kubernetes reserves/,
  },
  {
    name: 'a class that is not a qualified name, and one declared twice',
    env: ['LOCALCLOUD_LB_CLASSES=example.com/a b,example.com/x,example.com/x'],
    fails: 'identity/load-balancer-classes',
    message: /"example\.com\/a b": the name must be .*declares load balancer class "example\.com\/x" twice/,
  },
  {
    name: 'a node_selector that is not a label selector',
    env: ['LOCALCLOUD_NODE_SELECTOR=pool in (a'],
    fails: 'identity/node-selector',
    message: /node_selector "pool in \(a" is not a label selector/,
  },
];

for (const c of INCONSISTENT_DECLARATIONS) {
  test(`a provider declaring ${c.name} fails exactly ${c.fails}`, async (t) => {
    const results = await kitOnLocalCloud('ccm-kit-declared-', c.env, { focus: /^identity\// });
    t.deepEqual(
      results.filter((r) => r.outcome === 'fail').map((r) => r.id),
      [c.fails],
      failures(results).join('\n'),
    );
    t.regex(results.find((r) => r.id === c.fails)!.message!, c.message);
  });
}

test('lifecycle/not-configured checks every declared service, not only the first', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-guarded-'));
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${UNGUARDED}' "$@"\n`);
  await chmod(launcher, 0o755);
  const sidecar = await startSidecar(launcher, dir, { FIXTURE_GUARD_INSTANCES: '1' });
  try {
    const results = await runConformance(options({ kind: 'endpoint', endpoint: sidecar.endpoint }, { focus: /^lifecycle\// }));
    t.is(outcome(results, 'lifecycle/not-configured'), 'fail');
    t.regex(results.find((r) => r.id === 'lifecycle/not-configured')!.message!, /GetZone succeeded before Configure/);
  } finally {
    await sidecar.stop();
  }
});

test('a TestHooksService that answers NOT_CONFIGURED until Configure is found and used: the kit looks for the hooks after Configure', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-gated-hooks-'));
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${UNGUARDED}' "$@"\n`);
  await chmod(launcher, 0o755);
  const sidecar = await startSidecar(launcher, dir, { FIXTURE_GATED_HOOKS: '1' });
  try {
    const results = await runConformance(options({ kind: 'endpoint', endpoint: sidecar.endpoint }, { focus: /^(setup|instances\/test-instance)/ }));
    t.is(outcome(results, 'lifecycle/configure'), 'pass');
    t.is(outcome(results, 'setup/hooks'), 'pass', results.find((r) => r.id === 'setup/hooks')?.message);
    t.is(outcome(results, 'instances/test-instance'), 'pass', results.find((r) => r.id === 'instances/test-instance')?.message);
    t.is(outcome(results, 'cleanup/no-leftovers'), 'pass', results.find((r) => r.id === 'cleanup/no-leftovers')?.message);
  } finally {
    await sidecar.stop();
  }
});

test('a provider that rounds volume sizes up (80 GiB steps) passes volumes/conflict: the kit asks for more than the volume has', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-kit-rounding-'));
  const state = join(dir, 'cloud');
  const launcher = join(dir, 'provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${ROUNDING}' "$@"\n`);
  await chmod(launcher, 0o755);
  const results = await runConformance(
    options(
      {
        kind: 'exec',
        path: launcher,
        env: [`LOCALCLOUD_STATE_DIR=${state}`, 'LOCALCLOUD_LB_CIDR=127.0.80.0/24', 'FIXTURE_ROUND_ALL_GIB=80', ALLOW_SIMULATION],
      },
      { hookCommand: `'${process.execPath}' '${LOCAL_HOOK}' --state '${state}'`, focus: /^volumes\/(create-twice|conflict)$/ },
    ),
  );
  t.is(outcome(results, 'volumes/create-twice'), 'pass', results.find((r) => r.id === 'volumes/create-twice')?.message);
  t.is(outcome(results, 'volumes/conflict'), 'pass', results.find((r) => r.id === 'volumes/conflict')?.message);
});
