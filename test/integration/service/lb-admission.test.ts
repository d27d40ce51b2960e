/**
 * The Service validation admission webhook (issue 33 item 1), called by the
 * real kube-apiserver over HTTPS (caBundle = the host's generated
 * certificate; the API server authenticates with the webhook client
 * certificate that deploy/volumes/webhook-caller-rbac.yaml lets call
 * /validate-v1-service). The real host (--controllers=service), the local
 * cloud as a plugin process (it owns local.ccm.dev/, reads
 * local.ccm.dev/ip-mode and the deprecated local.ccm.dev/ingress-ip-mode), etcd.
 *
 * Rows: a misspelled key and a bad value are refused at create with the
 * provider's line; a good Service is accepted; a deprecated key is accepted
 * with the warning the client sees (and one Warning Event at ensure); an
 * update that introduces a typo is refused; the same two as a user sees them
 * at `kubectl apply` (the harness's kubectl of the control plane's version,
 * test/helpers/kubectl.ts): the typo fails with the provider's line on
 * stderr, the deprecated key applies with kubectl's "Warning: ..." line. Last, the webhook registered
 * fail-open but the host's webhook down (the configuration points at a port
 * nobody serves): the bad Service is admitted and then gets the Warning
 * InvalidLoadBalancerAnnotation before ensure, with no cloud call.
 *
 * Break-check: make deny() in dist/host/controllers/service/admission.js
 * answer `allowed: true`; the refusal rows, the kubectl one included, fail.
 * Undo with `rm dist/tsconfig.tsbuildinfo && npm run build` (an incremental
 * tsc does not rewrite the output of an unchanged source).
 *
 * Scoping: namespace lb-admission (the webhook configuration selects only
 * it), nodes labelled lbtest=admission, pool 127.0.118.0/24, node 127.0.119.1.
 */
import anyTest, { type TestFn } from 'ava';
import https from 'node:https';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Service,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { freePorts } from '../../controlplane/probe.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, ensureNamespace, ingressIp, lbService, pluginCalls, serviceEvents } from '../../helpers/lb.js';
import { kubectlBinary } from '../../helpers/kubectl.js';
import { loadManifest } from '../../helpers/manifests.js';
import { patchService } from '../../helpers/kube-patch.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-admission';
const NODE = 'lb-admission-node';
const WEBHOOK = 'lb-admission-service-validation';
const TYPO = { 'local.ccm.dev/ipmode': 'Proxy' };
const BAD_VALUE = { 'local.ccm.dev/ip-mode': 'Sideways' };
const DEPRECATED = 'local.ccm.dev/ingress-ip-mode';
const TYPO_DENIED =
  /denied the request: annotation local\.ccm\.dev\/ipmode is not one the provider reads under its prefix local\.ccm\.dev\/ \(misspelled\?\); known: local\.ccm\.dev\/ip-mode/;
const BAD_VALUE_DENIED = /denied the request: annotation local\.ccm\.dev\/ip-mode="Sideways": not an allowed value \(allowed: VIP, Proxy\)/;

interface Ctx {
  kc: KubeConfig;
  core: CoreV1Api;
  admission: AdmissionregistrationV1Api;
  host: TestHost;
  state: string;
  port: number;
  caBundle: string;
  /** The harness's kubectl and a kubeconfig file for it (the test's credentials). */
  kubectl: string;
  kubeconfig: string;
  dir: string;
}
const test = anyTest as TestFn<Ctx>;

/**
 * The shipped registration (deploy/volumes/validating-webhook.yaml) with its
 * rules, match conditions, failure policy, side effects and timeout as
 * shipped; only where the API server reaches the host (this file's port and
 * CA) and the namespaces it covers (this file's only: the other files share
 * the API server) are the test's.
 */
async function webhookConfig(port: number, caBundle: string): Promise<V1ValidatingWebhookConfiguration> {
  const [shipped] = (await loadManifest('volumes/validating-webhook.yaml')) as V1ValidatingWebhookConfiguration[];
  const hook = shipped!.webhooks![0]!;
  return {
    metadata: { name: WEBHOOK },
    webhooks: [
      {
        ...hook,
        clientConfig: { url: `https://127.0.0.1:${port}${hook.clientConfig.service!.path!}`, caBundle: Buffer.from(caBundle).toString('base64') },
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
      },
    ],
  };
}

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-admission-'));
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const obj of await loadManifest('volumes/webhook-caller-rbac.yaml'))
    await objects.patch(obj, undefined, undefined, 'ccm-tests', true, PatchStrategy.ServerSideApply);
  await ensureNamespace(core, NS);
  await createBackendNode(core, NODE, '127.0.119.1', { lbtest: 'admission' });
  const [port] = await freePorts(1);
  const host = await startTestHost(dir, [
    '--controllers=service',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=admission',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.118.0/24',
    `--webhook-secure-port=${port}`,
    '--webhook-bind-address=127.0.0.1',
    `--webhook-cert-dir=${join(dir, 'webhook-certs')}`,
  ]);
  const caBundle = await waitFor(() => readFile(join(dir, 'webhook-certs', 'webhook.crt'), 'utf8'), {
    what: 'generated webhook certificate',
    log: host.logPath,
  });
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createValidatingWebhookConfiguration({ body: await webhookConfig(port!, caBundle) });
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, kc.exportConfig());
  t.context = { kc, core, admission, host, state: join(dir, 'cloud'), port: port!, caBundle, kubectl: await kubectlBinary(), kubeconfig, dir };
  // Until the API server calls the webhook (failurePolicy Ignore lets everything through), a dry run gets no
  // warning. Waiting on the warning rather than a denial keeps the denial rows the only ones that need it.
  await waitFor(
    async () =>
      (await createWithWarnings(kc, lbService('probe', NS, [{ port: 80 }], {}, { [DEPRECATED]: 'VIP' }), true)).warnings.some((w) =>
        w.includes(DEPRECATED),
      ),
    { what: 'the webhook to warn about a deprecated key', log: host.logPath },
  );
});

test.after.always(async (t) => {
  await t.context.admission?.deleteValidatingWebhookConfiguration({ name: WEBHOOK }).catch(() => undefined);
  await t.context.host?.stop();
  await t.context.core?.deleteNode({ name: NODE }).catch(() => undefined);
});

/** The message of the API server's refusal (its Status), or the error as text. */
function refusal(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  try {
    return (JSON.parse(String(body)) as { message?: string }).message ?? String(body);
  } catch {
    return String(body ?? err);
  }
}

/** The API server's refusal of a create ('' when it was created). */
async function createError(core: CoreV1Api, body: V1Service, dryRun?: string): Promise<string> {
  try {
    await core.createNamespacedService({ namespace: NS, body, dryRun });
    return '';
  } catch (err) {
    return refusal(err);
  }
}

/** A create through the API as kubectl makes it, with the response's Warning headers (what kubectl prints as "Warning: ..."). */
async function createWithWarnings(kc: KubeConfig, body: V1Service, dryRun = false): Promise<{ status: number; warnings: string[] }> {
  const url = new URL(`${kc.getCurrentCluster()!.server}/api/v1/namespaces/${NS}/services${dryRun ? '?dryRun=All' : ''}`);
  const opts: https.RequestOptions = { method: 'POST', headers: { 'content-type': 'application/json' } };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = https.request(url, opts, (res) => {
      res.resume();
      res.on('end', () => {
        const raw = res.headers.warning;
        resolve({ status: res.statusCode ?? 0, warnings: (Array.isArray(raw) ? raw : raw ? [raw] : []).map(String) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** Ensure calls of either shape the host made so far. */
async function ensureCalls(host: TestHost): Promise<number> {
  return (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancer')) + (await pluginCalls(host.metrics.registry, 'EnsureLoadBalancers'));
}

const refusedAtCreate: { name: string; annotations: Record<string, string>; want: RegExp }[] = [
  { name: 'typo-key', annotations: TYPO, want: TYPO_DENIED },
  { name: 'bad-value', annotations: BAD_VALUE, want: BAD_VALUE_DENIED },
];

for (const row of refusedAtCreate) {
  test.serial(`refused at create with the provider's line: ${row.name}`, async (t) => {
    const { core } = t.context;
    t.regex(await createError(core, lbService(row.name, NS, [{ port: 80 }], {}, row.annotations)), row.want);
    const stored = await core.readNamespacedService({ name: row.name, namespace: NS }).catch(() => undefined);
    t.is(stored, undefined, 'nothing stored');
  });
}

test.serial('a good Service is accepted and served', async (t) => {
  const { core, host } = t.context;
  t.is(await createError(core, lbService('good', NS, [{ port: 80 }], {}, { 'local.ccm.dev/ip-mode': 'Proxy' })), '');
  const ip = await waitFor(async () => ingressIp(await core.readNamespacedService({ name: 'good', namespace: NS })), {
    what: 'good ensured',
    log: host.logPath,
  });
  t.truthy(ip);
});

test.serial('a deprecated key is accepted with a warning the client sees, and one Warning Event at ensure', async (t) => {
  const { kc, core, host } = t.context;
  const answer = await createWithWarnings(kc, lbService('deprecated', NS, [{ port: 80 }], {}, { [DEPRECATED]: 'Proxy' }));
  t.is(answer.status, 201);
  t.true(
    answer.warnings.some((w) => /annotation local\.ccm\.dev\/ingress-ip-mode is deprecated; use local\.ccm\.dev\/ip-mode instead/.test(w)),
    `warnings: ${JSON.stringify(answer.warnings)}`,
  );
  const svc = await waitFor(
    async () => {
      const s = await core.readNamespacedService({ name: 'deprecated', namespace: NS });
      return ingressIp(s) ? s : undefined;
    },
    { what: 'deprecated ensured', log: host.logPath },
  );
  t.is(svc.status?.loadBalancer?.ingress?.[0]?.ipMode, 'Proxy', 'the deprecated key is still read');
  // Another ensure of the same deprecated keys (an unrelated annotation changed) adds no second Event.
  const calls = await ensureCalls(host);
  await patchService(core, NS, 'deprecated', { metadata: { annotations: { 'example.com/note': 'changed' } } }, 'merge');
  await waitFor(async () => (await ensureCalls(host)) > calls, { what: 'deprecated ensured again', log: host.logPath });
  const events = (await serviceEvents(core, svc)).filter((e) => e.reason === 'DeprecatedLoadBalancerAnnotation');
  t.deepEqual(
    events.map((e) => [e.type, e.count ?? 1]),
    [['Warning', 1]],
    'one Warning, not one per sync',
  );
  t.regex(events[0]!.message ?? '', /local\.ccm\.dev\/ingress-ip-mode is deprecated; use local\.ccm\.dev\/ip-mode instead/);
});

test.serial('an update that introduces a typo is refused; the Service keeps what it had', async (t) => {
  const { core } = t.context;
  const err = await patchService(core, NS, 'good', { metadata: { annotations: TYPO } }, 'merge').then(
    () => '',
    (e: unknown) => refusal(e),
  );
  t.regex(err, TYPO_DENIED);
  const now = await core.readNamespacedService({ name: 'good', namespace: NS });
  t.is(now.metadata?.annotations?.['local.ccm.dev/ipmode'], undefined);
});

/** `kubectl apply -f -` of one object with the test's kubeconfig; its discovery cache in the test's directory, not ~/.kube. */
async function kubectlApply(ctx: Ctx, body: V1Service): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const r = await execa(ctx.kubectl, ['--kubeconfig', ctx.kubeconfig, '--cache-dir', join(ctx.dir, 'kubectl-cache'), 'apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Service', ...body }),
    reject: false,
    timeout: 60_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const atKubectlApply: { name: string; annotations: Record<string, string>; applied: boolean; stderr: RegExp }[] = [
  { name: 'kubectl-typo', annotations: TYPO, applied: false, stderr: TYPO_DENIED },
  {
    name: 'kubectl-deprecated',
    annotations: { [DEPRECATED]: 'Proxy' },
    applied: true,
    stderr: /^Warning: annotation local\.ccm\.dev\/ingress-ip-mode is deprecated; use local\.ccm\.dev\/ip-mode instead$/m,
  },
];

for (const row of atKubectlApply) {
  test.serial(`kubectl apply: ${row.name} ${row.applied ? 'applies with the warning' : "fails with the provider's line"}`, async (t) => {
    const { core } = t.context;
    const r = await kubectlApply(t.context, lbService(row.name, NS, [{ port: 80 }], {}, row.annotations));
    t.log(r.stderr.trim());
    t.regex(r.stderr, row.stderr);
    if (row.applied) {
      t.is(r.exitCode, 0, r.stderr);
      t.regex(r.stdout, new RegExp(`service/${row.name} created`));
    } else {
      t.not(r.exitCode, 0);
      t.regex(r.stderr, /Error from server/);
    }
    const stored = await core.readNamespacedService({ name: row.name, namespace: NS }).catch(() => undefined);
    t.is(stored !== undefined, row.applied, row.applied ? 'stored' : 'nothing stored');
    if (!row.applied) return;
    // Ensured, then gone: no Ensure of it is left in flight to be counted by the next row.
    const read = () => core.readNamespacedService({ name: row.name, namespace: NS }).catch(() => undefined);
    await waitFor(async () => ingressIp(await read()), { what: `${row.name} ensured`, log: t.context.host.logPath });
    await core.deleteNamespacedService({ name: row.name, namespace: NS });
    await waitFor(async () => (await read()) === undefined, { what: `${row.name} deleted`, log: t.context.host.logPath });
  });
}

test.serial('webhook down, registered fail-open: the bad Service is admitted, then Warning before ensure and no cloud call', async (t) => {
  const { core, admission, host, state, caBundle } = t.context;
  // The host's webhook "down": the configuration points at a port nobody serves.
  const [dead] = await freePorts(1);
  await admission.replaceValidatingWebhookConfiguration({
    name: WEBHOOK,
    body: { ...(await webhookConfig(dead!, caBundle)), metadata: (await admission.readValidatingWebhookConfiguration({ name: WEBHOOK })).metadata },
  });
  await waitFor(async () => (await createError(core, lbService('down-probe', NS, [{ port: 80 }], {}, TYPO), 'All')) === '', {
    what: 'the API server to call the dead webhook address (and ignore the failure)',
    log: host.logPath,
  });
  const before = await ensureCalls(host);
  const svc = await core.createNamespacedService({ namespace: NS, body: lbService('typo-down', NS, [{ port: 80 }], {}, TYPO) });
  const warning = await waitFor(
    async () => (await serviceEvents(core, svc)).find((e) => e.reason === 'InvalidLoadBalancerAnnotation' && (e.count ?? 1) >= 2),
    { what: 'a repeated InvalidLoadBalancerAnnotation for typo-down', log: host.logPath },
  );
  t.is(warning.type, 'Warning');
  t.regex(warning.message ?? '', /annotation local\.ccm\.dev\/ipmode is not one the provider reads/);
  t.is(await ensureCalls(host), before, 'no Ensure call reached the plugin');
  t.deepEqual(
    (await cloudLbs(state)).filter((l) => l.serviceName === 'typo-down'),
    [],
    'the cloud has no load balancer for it',
  );
  for (const name of ['typo-down', 'good', 'deprecated']) await core.deleteNamespacedService({ name, namespace: NS }).catch(() => undefined);
});
