/**
 * The provider's schema (issue 33 item 1, GetProviderSchema), end to end: the
 * real host with --controllers=service, the local cloud as a real plugin
 * process (it owns the prefix local.ccm.dev/ and reads local.ccm.dev/ip-mode,
 * VIP or Proxy), the real kube-apiserver.
 *  - With the schema: a misspelled key under the prefix and a bad value each
 *    get a Warning InvalidLoadBalancerAnnotation naming key, value and the
 *    allowed set, the conditions say why, and the cloud is never called (no
 *    load balancer, no Ensure call, also on the retries); fixing the
 *    annotation gets the load balancer.
 *  - Without (LOCALCLOUD_NO_SCHEMA=1): as before: the misspelled key is
 *    ignored by the provider (a load balancer), the bad value is the
 *    provider's own refusal (SyncLoadBalancerFailed).
 *
 * Scoping: namespaces lb-schema and lb-schema-none, nodes labelled
 * lbtest=schema, pools 127.0.95.0/24 and 127.0.96.0/24, node 127.0.97.1.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { patchService } from '../../helpers/kube-patch.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, ensureNamespace, ingressIp, lbService, pluginCalls, serviceEvents } from '../../helpers/lb.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-schema';
const NS_NONE = 'lb-schema-none';
const NODE = 'lb-schema-node';
interface Side {
  host: TestHost;
  state: string;
}
const test = anyTest as TestFn<{ core: CoreV1Api; schema: Side; none: Side }>;

async function side(ns: string, pool: string, env: string[]): Promise<Side> {
  const dir = await mkdtemp(join(tmpdir(), `ccm-${ns}-`));
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${ns}`,
    '--node-selector=lbtest=schema',
    `--plugin-env=LOCALCLOUD_LB_CIDR=${pool}`,
    ...env.map((e) => `--plugin-env=${e}`),
  ]);
  return { host, state: join(dir, 'cloud') };
}

test.before(async (t) => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  await ensureNamespace(core, NS_NONE);
  await createBackendNode(core, NODE, '127.0.97.1', { lbtest: 'schema' });
  const [schema, none] = await Promise.all([side(NS, '127.0.95.0/24', []), side(NS_NONE, '127.0.96.0/24', ['LOCALCLOUD_NO_SCHEMA=1'])]);
  t.context = { core, schema, none };
});

test.after.always(async (t) => {
  await Promise.all([t.context.schema?.host.stop(), t.context.none?.host.stop()]);
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

/** Ensure calls of either shape the host made so far. */
async function ensureCalls(host: TestHost): Promise<number> {
  return (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer')) + (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancers'));
}

const cases: { name: string; annotations: Record<string, string>; want: RegExp; fix: Record<string, string | null> }[] = [
  {
    name: 'typo-key',
    annotations: { 'local.ccm.dev/ipmode': 'Proxy' },
    want: /^Load balancer not ensured: annotation local\.ccm\.dev\/ipmode is not one the provider reads under its prefix local\.ccm\.dev\/ \(misspelled\?\); known: local\.ccm\.dev\/ingress-ip-mode, local\.ccm\.dev\/ip-mode$/,
    fix: { 'local.ccm.dev/ipmode': null, 'local.ccm.dev/ip-mode': 'Proxy' },
  },
  {
    name: 'bad-value',
    annotations: { 'local.ccm.dev/ip-mode': 'Sideways' },
    want: /^Load balancer not ensured: annotation local\.ccm\.dev\/ip-mode="Sideways": not an allowed value \(allowed: VIP, Proxy\)$/,
    fix: { 'local.ccm.dev/ip-mode': 'proxy' },
  },
];

test.serial('a misspelled key or a bad value: Warning, conditions, no cloud call (also on retries); fixed: ensured', async (t) => {
  const { core, schema } = t.context;
  const before = await ensureCalls(schema.host);
  const created: V1Service[] = [];
  for (const c of cases)
    created.push(await core.createNamespacedService({ namespace: NS, body: lbService(c.name, NS, [{ port: 80 }], {}, c.annotations) }));
  for (const [i, c] of cases.entries()) {
    // Count 2: the retry (backoff) was refused too.
    const warning = await waitFor(
      async () => (await serviceEvents(core, created[i]!)).find((e) => e.reason === 'InvalidLoadBalancerAnnotation' && (e.count ?? 1) >= 2),
      { what: `a repeated InvalidLoadBalancerAnnotation for ${c.name}`, log: schema.host.logPath },
    );
    t.is(warning.type, 'Warning', c.name);
    t.regex(warning.message ?? '', c.want, c.name);
    const svc = await core.readNamespacedService({ name: c.name, namespace: NS });
    const conds = Object.fromEntries((svc.status?.conditions ?? []).map((x) => [x.type, `${x.status}/${x.reason}`]));
    t.deepEqual(conds, { LoadBalancerProvisioning: 'False/Error', LoadBalancerServing: 'False/Unsupported' }, c.name);
    t.is(ingressIp(svc), undefined, `${c.name}: no address`);
    t.false(
      (await serviceEvents(core, svc)).some((e) => e.reason === 'SyncLoadBalancerFailed' || e.reason === 'EnsuringLoadBalancer'),
      `${c.name}: no ensure was attempted`,
    );
  }
  t.is(await ensureCalls(schema.host), before, 'no Ensure call reached the plugin');
  t.deepEqual(
    (await cloudLbs(schema.state)).filter((l) => l.serviceNamespace === NS),
    [],
    'the cloud has no load balancer',
  );

  for (const c of cases) await patchService(core, NS, c.name, { metadata: { annotations: c.fix } }, 'merge');
  for (const c of cases) {
    const served = await waitFor(
      async () => {
        const s = await core.readNamespacedService({ name: c.name, namespace: NS });
        return ingressIp(s) ? s : undefined;
      },
      { what: `${c.name} ensured after the fix`, log: schema.host.logPath },
    );
    t.is(served.status?.conditions?.find((x) => x.type === 'LoadBalancerServing')?.status, 'True', c.name);
    t.is(served.status?.loadBalancer?.ingress?.[0]?.ipMode, 'Proxy', `${c.name}: the fixed annotation is read`);
  }
  t.deepEqual(
    (await cloudLbs(schema.state))
      .filter((l) => l.serviceNamespace === NS)
      .map((l) => l.serviceName)
      .sort(),
    ['bad-value', 'typo-key'],
  );
  for (const c of cases) await core.deleteNamespacedService({ name: c.name, namespace: NS });
});

test.serial('a load balancer that serves keeps serving when its annotation turns bad: Warning, no cloud call, nothing deleted', async (t) => {
  const { core, schema } = t.context;
  const svc = await core.createNamespacedService({
    namespace: NS,
    body: lbService('turns-bad', NS, [{ port: 80 }], {}, { 'local.ccm.dev/ip-mode': 'VIP' }),
  });
  const ip = await waitFor(async () => ingressIp(await core.readNamespacedService({ name: 'turns-bad', namespace: NS })), {
    what: 'turns-bad ensured',
    log: schema.host.logPath,
  });
  const before = await ensureCalls(schema.host);
  await patchService(core, NS, 'turns-bad', { metadata: { annotations: { 'local.ccm.dev/ip-mode': 'Sideways' } } }, 'merge');
  await waitFor(async () => (await serviceEvents(core, svc)).find((e) => e.reason === 'InvalidLoadBalancerAnnotation' && (e.count ?? 1) >= 2), {
    what: 'a repeated InvalidLoadBalancerAnnotation for turns-bad',
    log: schema.host.logPath,
  });
  const now = await core.readNamespacedService({ name: 'turns-bad', namespace: NS });
  const conds = Object.fromEntries((now.status?.conditions ?? []).map((x) => [x.type, `${x.status}/${x.reason}`]));
  t.deepEqual(conds, { LoadBalancerProvisioning: 'False/Error', LoadBalancerServing: 'True/Serving' });
  t.is(ingressIp(now), ip, 'the address stays');
  t.is(await ensureCalls(schema.host), before, 'no Ensure call reached the plugin');
  t.deepEqual(
    (await cloudLbs(schema.state)).filter((l) => l.serviceName === 'turns-bad').map((l) => [l.ingressIp, l.ipMode]),
    [[ip, 'VIP']],
    'the load balancer is neither changed nor deleted',
  );
  await core.deleteNamespacedService({ name: 'turns-bad', namespace: NS });
});

test.serial('a provider without a schema behaves as before: the misspelled key is ignored, the bad value is its own refusal', async (t) => {
  const { core, none } = t.context;
  const typo = await core.createNamespacedService({
    namespace: NS_NONE,
    body: lbService('typo-key', NS_NONE, [{ port: 80 }], {}, cases[0]!.annotations),
  });
  const bad = await core.createNamespacedService({
    namespace: NS_NONE,
    body: lbService('bad-value', NS_NONE, [{ port: 80 }], {}, cases[1]!.annotations),
  });
  const served = await waitFor(
    async () => {
      const s = await core.readNamespacedService({ name: 'typo-key', namespace: NS_NONE });
      return ingressIp(s) ? s : undefined;
    },
    { what: 'typo-key ensured', log: none.host.logPath },
  );
  t.is(served.status?.loadBalancer?.ingress?.[0]?.ipMode, 'VIP', 'the misspelled key is not read');
  const refused = await waitFor(async () => (await serviceEvents(core, bad)).find((e) => e.reason === 'SyncLoadBalancerFailed'), {
    what: 'the provider refuses bad-value',
    log: none.host.logPath,
  });
  t.regex(refused.message ?? '', /ip-mode must be VIP or Proxy, got "Sideways"/);
  for (const s of [typo, bad])
    t.false(
      (await serviceEvents(core, s)).some((e) => e.reason === 'InvalidLoadBalancerAnnotation'),
      `${s.metadata!.name}: no schema Warning`,
    );
  for (const s of [typo, bad]) await core.deleteNamespacedService({ name: s.metadata!.name!, namespace: NS_NONE });
});
