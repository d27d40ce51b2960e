/**
 * Service controller error handling against the real API server, with the
 * local cloud wrapped in a fault fixture (test/fixtures/lb-fault-provider.ts)
 * as a real plugin process: RetryInfo honoured (never earlier than the
 * backoff, and a longer one instead of the backoff), ImplementedElsewhere, random errors
 * converging with Warning events and no hot loop, and bad input (invalid
 * annotation or loadBalancerIP, a malformed ingress IP from the plugin)
 * turned into a Warning event with nothing invalid written; and the metric
 * names and labels dashboards of the upstream CCM read.
 *
 * Scoping: namespace lb-faults, nodes labelled lbtest=faults (none), ingress
 * pool 127.0.54.0/24.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { startHost, type HostHandle } from '../../../host/app.js';
import { parseHostArgs } from '../../../host/config/flags.js';
import { createLogger } from '../../../host/log.js';
import { updateKnobs } from '../../../plugins/local/knobs.js';
import { StateStore } from '../../../plugins/local/state.js';
import { readJournal } from '../../../plugins/local/journal.js';
import { testAuditLogPath, testKubeConfig } from '../../controlplane/shared.js';
import { auditLogFromNow } from '../../helpers/audit.js';
/** Written by the fixture (test/fixtures/lb-fault-provider.ts; importing it would start it). */
const ENSURE_CALLS_FILE = 'ensure-calls.jsonl';
import { cloudLbs, ensureNamespace, LB_FINALIZER, lbService, pluginCalls, serviceEvents } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';
import { logFile } from '../../helpers/log-file.js';
import { assertNodeScoped } from '../../helpers/node-scope.js';
import { checkForbiddenOnStop } from '../../helpers/forbidden.js';
import { hostKubeConfig } from '../../helpers/service-account.js';

const NS = 'lb-faults';
const FIXTURE = fileURLToPath(new URL('../../fixtures/lb-fault-provider.js', import.meta.url));
const test = anyTest as TestFn<{ dir: string; state: string; host: HostHandle; core: CoreV1Api }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-faults-'));
  const state = join(dir, 'cloud');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  const parsed = parseHostArgs([
    '--cloud-provider=local',
    `--plugin-path=${FIXTURE}`,
    '--cluster-name=faults',
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=faults',
    '--secure-port=0',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.54.0/24',
    // No schema: the bad ip-mode below tests the provider's own refusal (lb-schema.test.ts tests the host's check).
    '--plugin-env=LOCALCLOUD_NO_SCHEMA=1',
    '-v=2',
    // No election on the shared default Lease (kube-system/cloud-controller-manager): other files' hosts run at the same time.
    '--leader-elect=false',
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  // As the shipped ServiceAccount; stop() fails on any 403.
  const host = checkForbiddenOnStop(await startHost(parsed.config, { log, kubeConfig: await hostKubeConfig() }), logPath);
  t.context = { dir, state, host, core };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
});

async function readSvc(core: CoreV1Api, name: string): Promise<V1Service> {
  return core.readNamespacedService({ name, namespace: NS });
}

async function ensureCalls(state: string, uid: string): Promise<number[]> {
  const text = await readFile(join(state, ENSURE_CALLS_FILE), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { uid: string; at: number })
    .filter((c) => c.uid === uid)
    .map((c) => c.at);
}

test.serial(
  'RESOURCE_EXHAUSTED with RetryInfo 2 s is retried no earlier than the per-Service backoff (the floor of every provider delay)',
  async (t) => {
    const { core, state } = t.context;
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: lbService('throttled', NS, [{ port: 80 }], {}, { 'fault.test/retry-after-ms': '2000', 'fault.test/retry-times': '2' }),
    });
    await waitFor(async () => (await readSvc(core, 'throttled')).status?.loadBalancer?.ingress?.[0]?.ip, { what: 'ingress after the throttling' });
    const calls = await ensureCalls(state, svc.metadata!.uid!);
    t.is(calls.length, 3, 'two throttled calls, then success');
    const gaps = calls.slice(1).map((at, i) => at - calls[i]!);
    t.log(`gaps between attempts: ${gaps.join(' ms, ')} ms`);
    // Never earlier than asked, nor than the per-Service backoff (5 s, then 10 s), which is longer here.
    for (const g of gaps) t.true(g >= 4_900, `retried after ${g} ms`);
    const events = await serviceEvents(core, svc);
    t.true(events.some((e) => e.type === 'Warning' && e.reason === 'SyncLoadBalancerFailed' && /throttled/.test(e.message ?? '')));
  },
);

test.serial('RESOURCE_EXHAUSTED with RetryInfo longer than the backoff is retried after that delay, not on the backoff', async (t) => {
  const { core, state } = t.context;
  // RetryInfo 1 h: the per-Service backoff alone would retry after 5 s.
  const slow = await core.createNamespacedService({
    namespace: NS,
    body: lbService('throttled-long', NS, [{ port: 80 }], {}, { 'fault.test/retry-after-ms': '3600000', 'fault.test/retry-times': '1' }),
  });
  await waitFor(async () => (await serviceEvents(core, slow)).some((e) => e.reason === 'SyncLoadBalancerFailed'), {
    what: 'throttled-long failed once',
  });
  // The clock: a Service created after that failure whose first two ensures fail plainly:
  // its third ensure comes after 5 s + 10 s of backoff.
  const clock = await core.createNamespacedService({
    namespace: NS,
    body: lbService('backoff-clock', NS, [{ port: 80 }], {}, { 'fault.test/fail-times': '2' }),
  });
  await waitFor(async () => (await ensureCalls(state, clock.metadata!.uid!)).length >= 3, {
    what: 'three ensures of backoff-clock',
    timeoutMs: 120_000,
  });
  t.is((await ensureCalls(state, slow.metadata!.uid!)).length, 1, 'throttled-long not retried on the backoff');
  for (const name of ['throttled-long', 'backoff-clock']) await core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(
    async () =>
      !(await core.listNamespacedService({ namespace: NS })).items.some((s) => ['throttled-long', 'backoff-clock'].includes(s.metadata!.name!)),
    { what: 'deleted' },
  );
});

test.serial("RetryInfo beyond a timer's range (30 days) or zero is clamped: no hot loop", async (t) => {
  const { core, state } = t.context;
  // 30 days is past setTimeout's 24.8-day range: unclamped, the timer fires at once, again and again
  // (hundreds of calls a second). Zero asks for an immediate retry. Both keep failing here.
  const cases = [
    { name: 'throttled-30d', retryAfterMs: String(30 * 24 * 3600 * 1000) },
    { name: 'throttled-0', retryAfterMs: '0' },
  ];
  const uids: Record<string, string> = {};
  for (const c of cases) {
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: lbService(c.name, NS, [{ port: 80 }], {}, { 'fault.test/retry-after-ms': c.retryAfterMs, 'fault.test/retry-times': '1000' }),
    });
    uids[c.name] = svc.metadata!.uid!;
  }
  // The clock, created after them: its first two ensures fail plainly, so its third comes after 5 s + 10 s of backoff.
  const clock = await core.createNamespacedService({
    namespace: NS,
    body: lbService('clamp-clock', NS, [{ port: 80 }], {}, { 'fault.test/fail-times': '2' }),
  });
  await waitFor(async () => (await ensureCalls(state, clock.metadata!.uid!)).length >= 3, {
    what: 'three ensures of clamp-clock',
    timeoutMs: 120_000,
  });
  const long = (await ensureCalls(state, uids['throttled-30d']!)).length;
  const zero = (await ensureCalls(state, uids['throttled-0']!)).length;
  t.log(`ensures meanwhile: ${long} for the 30-day delay, ${zero} for the zero delay, 3 for the clock`);
  t.is(long, 1, 'a 30-day delay is held to the 1 h maximum: not retried meanwhile');
  // A zero delay is raised to the per-Service backoff (5 s, 10 s, ...): about as often as the clock, which was created after it.
  t.true(zero >= 2 && zero <= 4, `zero delay: ${zero} ensures while the clock made 3`);
  const names = [...cases.map((c) => c.name), 'clamp-clock'];
  for (const name of names) await core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(async () => !(await core.listNamespacedService({ namespace: NS })).items.some((s) => names.includes(s.metadata!.name!)), {
    what: 'deleted',
  });
});

test.serial('bad input: invalid annotation and loadBalancerIP, malformed ingress IP from the plugin → Warning event, no invalid write', async (t) => {
  const { core, state } = t.context;
  const cases: { name: string; body: V1Service; want: RegExp }[] = [
    {
      name: 'bad-ipmode',
      body: lbService('bad-ipmode', NS, [{ port: 80 }], {}, { 'local.ccm.dev/ip-mode': 'Sideways' }),
      want: /ip-mode must be VIP or Proxy/,
    },
    { name: 'bad-lbip', body: lbService('bad-lbip', NS, [{ port: 80 }], { loadBalancerIP: '10.9.9.9' }), want: /not in the load balancer pool/ },
    {
      name: 'bad-ingress',
      body: lbService('bad-ingress', NS, [{ port: 80 }], {}, { 'fault.test/bad-ingress-ip': '999.1.2.3' }),
      want: /invalid EnsureLoadBalancer response.*999\.1\.2\.3/,
    },
  ];
  for (const c of cases) {
    const svc = await core.createNamespacedService({ namespace: NS, body: c.body });
    const warning = await waitFor(
      async () => (await serviceEvents(core, svc)).find((e) => e.type === 'Warning' && e.reason === 'SyncLoadBalancerFailed'),
      { what: `Warning event for ${c.name}` },
    );
    t.regex(warning.message ?? '', c.want, c.name);
    t.true((warning.message ?? '').length < 1024, 'short message');
    const now = await readSvc(core, c.name);
    t.falsy(now.status?.loadBalancer?.ingress?.length, `${c.name}: nothing written to status`);
  }
  // The bad-ingress LB exists in the cloud (its status was the problem) and is cleaned up on delete.
  for (const c of cases) await core.deleteNamespacedService({ name: c.name, namespace: NS });
  await waitFor(
    async () => (await core.listNamespacedService({ namespace: NS })).items.every((s) => !cases.some((c) => c.name === s.metadata?.name)),
    {
      what: 'bad Services deleted',
    },
  );
  t.false(
    (await cloudLbs(state)).some((l) => cases.some((c) => c.name === l.serviceName)),
    'no cloud LB left behind',
  );
});

test.serial(
  "ImplementedElsewhere (as upstream's service controller): finalizer and EnsuringLoadBalancer, no status write, no failure event, no cloud change; on delete the finalizer goes, the cloud unchanged",
  async (t) => {
    const { core, state } = t.context;
    const audit = await auditLogFromNow(await testAuditLogPath());
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: lbService('elsewhere', NS, [{ port: 80 }], {}, { 'fault.test/implemented-elsewhere': 'true' }),
    });
    const uid = svc.metadata!.uid!;
    // The finalizer goes on before the ensure (as upstream), which answers ImplementedElsewhere.
    await waitFor(async () => (await readSvc(core, 'elsewhere')).metadata?.finalizers?.includes(LB_FINALIZER), { what: 'finalizer on elsewhere' });
    await waitFor(async () => (await ensureCalls(state, uid)).length > 0, { what: 'elsewhere: the ensure made' });
    await core.deleteNamespacedService({ name: 'elsewhere', namespace: NS });
    await waitFor(async () => !(await core.listNamespacedService({ namespace: NS })).items.some((s) => s.metadata?.uid === uid), {
      what: 'elsewhere deleted',
    });
    // The host's writes to the Service, in the API server's audit log; the last one removed the finalizer,
    // after the test's delete: every write of the ensure's sync (the same Service lock) is logged before it.
    const writes = async () =>
      (await audit.events())
        .filter((e) => e.objectRef?.resource === 'services' && e.objectRef.namespace === NS && e.objectRef.name === 'elsewhere')
        .filter((e) => !['get', 'list', 'watch'].includes(e.verb))
        .map(
          (e) =>
            `${e.user.username.startsWith('system:serviceaccount:') ? 'host' : 'test'} ${e.verb}${e.objectRef?.subresource ? ` ${e.objectRef.subresource}` : ''}`,
        );
    const all = await waitFor(
      async () => {
        const w = await writes();
        return w.indexOf('test delete') >= 0 && w.slice(w.indexOf('test delete')).some((x) => x.startsWith('host ')) && w;
      },
      { what: "elsewhere: the host's finalizer removal in the audit log" },
    );
    // Events are sent in the background: DeletedLoadBalancer is the last the host records for it.
    const events = await waitFor(
      async () => {
        const list = await serviceEvents(core, svc);
        return list.some((e) => e.reason === 'DeletedLoadBalancer') && list;
      },
      { what: 'elsewhere: DeletedLoadBalancer event' },
    );
    const journal = (await readJournal(state)).filter((e) => e.key === uid || e.keys?.includes(uid));
    const rows: { what: string; got: unknown; want: unknown }[] = [
      {
        what: 'writes to the Service: the finalizer on, then off after the delete; no status write',
        got: all.filter((w) => w.startsWith('host ')),
        want: ['host patch', 'host patch'],
      },
      { what: 'EnsuringLoadBalancer announced', got: events.some((e) => e.type === 'Normal' && e.reason === 'EnsuringLoadBalancer'), want: true },
      // (UnAvailableLoadBalancer, the Warning that there is no node, is upstream's too: this namespace has none.)
      { what: 'no failure reported', got: events.filter((e) => e.reason === 'SyncLoadBalancerFailed').map((e) => e.message), want: [] },
      { what: 'changes to the local cloud about the Service (its journal of mutating calls)', got: journal.map((e) => e.method), want: [] },
      { what: "the local cloud's load balancers for it", got: (await cloudLbs(state)).filter((l) => l.serviceUid === uid).length, want: 0 },
    ];
    for (const r of rows) t.deepEqual(r.got, r.want, r.what);
  },
);

test.serial('20 % random cloud errors: every Service converges, Warning events, no hot loop', async (t) => {
  // A Service can be unlucky several times in a row, and its backoff doubles from 5 s: k failures in a
  // row cost 5 × (2^k − 1) s. The waits below allow k = 6 (315 s); at a 20 % error rate, 7 in a row for
  // one of the 8 Services, in either phase, has a chance of 16 × 0.2^7 ≈ 0.02 % per run.
  t.timeout(900_000);
  const { core, state, host } = t.context;
  const store = new StateStore(state);
  await updateKnobs(store, { errorRate: 0.2 });
  t.teardown(() => updateKnobs(store, {}, ['errorRate']).then(() => undefined));
  const before = await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer');
  const names = Array.from({ length: 8 }, (_, i) => `flaky-${i}`);
  // flaky-0 fails its first ensure whatever the dice say, so there is always a failure to report.
  for (const name of names)
    await core.createNamespacedService({
      namespace: NS,
      body: lbService(name, NS, [{ port: 80 }], {}, name === 'flaky-0' ? { 'fault.test/fail-times': '1' } : {}),
    });
  await waitFor(
    async () => {
      const list = (await core.listNamespacedService({ namespace: NS })).items.filter((s) => names.includes(s.metadata!.name!));
      return list.length === names.length && list.every((s) => s.status?.loadBalancer?.ingress?.[0]?.ip);
    },
    { what: 'all Services converged', timeoutMs: 400_000, intervalMs: 500 },
  );
  const calls = (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer')) - before;
  t.log(`${calls} EnsureLoadBalancer calls for ${names.length} Services at a 20 % error rate`);
  // A hot loop would make hundreds; with backoff each failure costs one more call.
  t.true(calls >= names.length && calls < names.length * 4, `${calls} calls`);
  // Every Service that needed more than one ensure had a failure, each reported as such (every
  // Service here also gets UnAvailableLoadBalancer, having no nodes: the reason must be exact).
  let failed = 0;
  for (const n of names) {
    const svc = await readSvc(core, n);
    if ((await ensureCalls(state, svc.metadata!.uid!)).length < 2) continue;
    failed++;
    const events = await serviceEvents(core, svc);
    t.true(
      events.some((e) => e.type === 'Warning' && e.reason === 'SyncLoadBalancerFailed' && /injected failure|fault fixture/.test(e.message ?? '')),
      `${n}: its failure is reported as a Warning SyncLoadBalancerFailed`,
    );
  }
  t.true(failed >= 1, 'at least flaky-0 failed once');
  for (const name of names) await core.deleteNamespacedService({ name, namespace: NS });
  await waitFor(async () => !(await core.listNamespacedService({ namespace: NS })).items.some((s) => names.includes(s.metadata!.name!)), {
    what: 'deleted',
    timeoutMs: 400_000,
    intervalMs: 500,
  });
  t.false(
    (await cloudLbs(state)).some((l) => names.includes(l.serviceName)),
    'no orphans despite the errors',
  );
});

test.serial("upstream's metric names and labels are on the host's /metrics after this file's work (dashboards keep working)", async (t) => {
  const BUILD_INFO = ['major', 'minor', 'git_version', 'git_commit', 'git_tree_state', 'build_date', 'go_version', 'compiler', 'platform'];
  const families: { name: string; type: string; labels: string[] }[] = [
    { name: 'service_controller_loadbalancer_sync_total', type: 'counter', labels: [] },
    { name: 'service_controller_nodesync_error_total', type: 'counter', labels: [] },
    { name: 'service_controller_nodesync_latency_seconds', type: 'histogram', labels: [] },
    { name: 'service_controller_update_loadbalancer_host_latency_seconds', type: 'histogram', labels: [] },
    { name: 'workqueue_longest_running_processor_seconds', type: 'gauge', labels: ['name'] },
    { name: 'workqueue_unfinished_work_seconds', type: 'gauge', labels: ['name'] },
    { name: 'rest_client_request_duration_seconds', type: 'histogram', labels: ['verb', 'host'] },
    { name: 'rest_client_rate_limiter_duration_seconds', type: 'histogram', labels: ['verb', 'host'] },
    { name: 'rest_client_requests_total', type: 'counter', labels: ['code', 'method', 'host'] },
    { name: 'kubernetes_build_info', type: 'gauge', labels: BUILD_INFO },
  ];
  // The service controller registers its metrics when it starts, which may come after startHost returned.
  const text = await waitFor(
    async () => {
      const body = await t.context.host.metrics.registry.metrics();
      return families.every((f) => body.includes(`# TYPE ${f.name} `)) ? body : undefined;
    },
    { what: 'every family registered' },
  );
  for (const f of families) {
    t.regex(text, new RegExp(`^# TYPE ${f.name} ${f.type}$`, 'm'), `${f.name} is a ${f.type}`);
    const suffix = f.type === 'histogram' ? '_(?:bucket|sum|count)' : '';
    const samples = [...text.matchAll(new RegExp(`^${f.name}${suffix}(?:\\{([^}]*)\\})? \\S+$`, 'gm'))];
    t.true(samples.length > 0, `${f.name} has samples`);
    for (const s of samples) {
      const keys = [...(s[1] ?? '').matchAll(/(\w+)="/g)].map((m) => m[1]!).filter((k) => k !== 'le');
      t.deepEqual(keys.sort(), [...f.labels].sort(), `${f.name} labels: ${s[0]}`);
    }
  }
});
