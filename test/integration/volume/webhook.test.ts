/**
 * The PersistentVolume label webhook, called by the real kube-apiserver over
 * HTTPS (caBundle = the host's generated self-signed certificate), and the
 * labelling of PVs created before the webhook existed. Only the API server
 * may call it: it presents a client certificate of the cluster's client CA
 * (test/controlplane/webhook-client.ts), which the host reads from ConfigMap
 * extension-apiserver-authentication, and its user is allowed the webhook's
 * path by deploy/volumes/webhook-caller-rbac.yaml. Real host, plugin process,
 * kube-apiserver and etcd.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { AdmissionregistrationV1Api, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import type { Volumes } from '../../../host/cloud-volumes.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { freePorts } from '../../controlplane/probe.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { httpsRequest, type HttpsOptions } from '../../helpers/https.js';
import { loadManifest } from '../../helpers/manifests.js';
import { scraperToken } from '../../helpers/scraper.js';
import { waitFor } from '../../helpers/wait.js';
import { handPv, hostFlags, registerPvLabelWebhook, volumeTestEnv, type VolumeTestEnv } from '../../helpers/volumes.js';

interface Ctx {
  env: VolumeTestEnv;
  host: TestHost;
  volumes: Volumes;
  admission: AdmissionregistrationV1Api;
  webhookName: string;
  url: string;
  caBundle: string;
  adminToken: string;
}
const test = anyTest as TestFn<Ctx>;

const ZONE = 'topology.kubernetes.io/zone';
const REGION = 'topology.kubernetes.io/region';

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vol-webhook-'));
  const kc = await testKubeConfig();
  const env = await volumeTestEnv(kc, 'vhook', dir);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const obj of await loadManifest('volumes/webhook-caller-rbac.yaml'))
    await objects.patch(obj, undefined, undefined, 'ccm-tests', true, PatchStrategy.ServerSideApply);
  const [port] = await freePorts(1);
  const host = await startTestHost(
    dir,
    hostFlags(env, 'pvl', [
      `--webhook-secure-port=${port}`,
      '--webhook-bind-address=127.0.0.1',
      `--webhook-cert-dir=${join(dir, 'webhook-certs')}`,
      // Upstream v1.36's webhook TLS flags: the API server (Go) still calls it; a client outside them does not get in.
      '--webhook-tls-min-version=VersionTLS13',
      '--webhook-tls-curve-preferences=29,23',
    ]),
  );
  const caBundle = await waitFor(() => readFile(join(dir, 'webhook-certs', 'webhook.crt'), 'utf8'), {
    what: 'generated webhook certificate',
    log: env.hostLog,
  });
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const webhookName = `${env.id}-pvl`;
  // Only this file's PVs named <id>-hooked-* go to this webhook, so the
  // other test files sharing the API server are not affected.
  await registerPvLabelWebhook(admission, webhookName, port, caBundle, `${env.id}-hooked-`);
  const volumes = host.cloud.volumes()!;
  const url = `https://127.0.0.1:${port}/mutate-v1-persistentvolume`;
  t.context = { env, host, volumes, admission, webhookName, url, caBundle, adminToken: kc.getCurrentUser()!.token! };
});

test.after.always(async (t) => {
  await t.context.admission?.deleteMutatingWebhookConfiguration({ name: t.context.webhookName }).catch(() => undefined);
  // The webhook-caller RBAC stays: it is cluster-wide, the same for every file that
  // applies it (multi-provider/volumes-two-clouds too), and deleting it here would
  // turn away the API server's calls to a webhook of a file still running.
  await t.context.host?.stop();
});

/**
 * Waits until the API server calls the webhook and the webhook answers: a
 * dry-run create of a PV of our driver for a volume the cloud does not have
 * is then denied by the webhook (until then, failurePolicy Ignore lets it
 * through). Nothing is stored, so the tests' own creates happen once each.
 */
async function webhookServing(env: VolumeTestEnv): Promise<void> {
  await waitFor(
    async () => {
      try {
        await env.core.createPersistentVolume({ body: handPv(`${env.id}-hooked-probe`, env.driver, `${env.id}-no-such-volume`), dryRun: 'All' });
        return false;
      } catch (err) {
        return /cannot label PersistentVolume/.test(String((err as { body?: unknown }).body ?? err));
      }
    },
    { what: 'the webhook to deny a PV of a volume the cloud does not have', log: env.hostLog },
  );
}

test.serial('a PV created by hand for this provider gets zone/region labels and node affinity from the webhook', async (t) => {
  const { env, volumes } = t.context;
  const vol = await volumes.createVolume({
    name: `${env.id}-v1`,
    requiredBytes: 1024 ** 2,
    limitBytes: 0,
    parameters: {},
    requisite: [{ [ZONE]: 'local-b', [REGION]: 'local' }],
    preferred: [],
  });
  await webhookServing(env);
  const created = await env.core.createPersistentVolume({ body: handPv(`${env.id}-hooked-pv1`, env.driver, vol.volumeId) });
  t.is(created.metadata?.labels?.[ZONE], 'local-b');
  t.is(created.metadata?.labels?.[REGION], 'local');
  const exprs = created.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions ?? [];
  t.deepEqual(exprs.find((e) => e.key === ZONE)?.values, ['local-b']);
  t.deepEqual(exprs.find((e) => e.key === REGION)?.values, ['local']);
});

test.serial('a PV of another driver is left as it is', async (t) => {
  const { env } = t.context;
  const pv = await env.core.createPersistentVolume({ body: handPv(`${env.id}-hooked-other`, 'other.example.com', 'vol-x') });
  t.falsy(pv.metadata?.labels?.[ZONE]);
  t.falsy(pv.spec?.nodeAffinity);
});

test.serial('a PV of this provider created before the webhook existed is labelled by the controller', async (t) => {
  const { env, volumes } = t.context;
  const vol = await volumes.createVolume({
    name: `${env.id}-v2`,
    requiredBytes: 1024 ** 2,
    limitBytes: 0,
    parameters: {},
    requisite: [],
    preferred: [],
  });
  const name = `${env.id}-old`; // not routed to the webhook (see matchConditions)
  const before = await env.core.createPersistentVolume({ body: handPv(name, env.driver, vol.volumeId) });
  t.falsy(before.metadata?.labels?.[ZONE]);
  const pv = await waitFor(
    async () => {
      const p = await env.core.readPersistentVolume({ name });
      return p.metadata?.labels?.[ZONE] ? p : undefined;
    },
    { what: 'existing PV labelled', log: env.hostLog },
  );
  t.is(pv.metadata?.labels?.[ZONE], 'local-a');
  t.is(pv.metadata?.labels?.[REGION], 'local');
  // Node affinity may still be set on a PV that has none.
  const exprs = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions ?? [];
  t.deepEqual(exprs.find((e) => e.key === ZONE)?.values, ['local-a']);
});

/** A TLS handshake with the webhook as `opts` allows: 'ok' or the error code. */
function handshake(url: string, caBundle: string, opts: tls.ConnectionOptions): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = tls.connect({ host: hostname, port: Number(port), ca: caBundle, ...opts }, () => {
      s.end();
      resolve('ok');
    });
    s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

const HANDSHAKES: { client: string; opts: tls.ConnectionOptions; ok: boolean }[] = [
  { client: 'TLS 1.3 with X25519 (as the API server)', opts: { minVersion: 'TLSv1.3', ecdhCurve: 'X25519' }, ok: true },
  { client: 'TLS 1.3 with P-256', opts: { ecdhCurve: 'P-256' }, ok: true },
  { client: 'at most TLS 1.2 (--webhook-tls-min-version=VersionTLS13)', opts: { maxVersion: 'TLSv1.2' }, ok: false },
  { client: 'only P-384 (--webhook-tls-curve-preferences=29,23)', opts: { ecdhCurve: 'P-384' }, ok: false },
];

for (const h of HANDSHAKES) {
  test.serial(`the webhook's TLS settings: a client offering ${h.client} ${h.ok ? 'connects' : 'is refused'}`, async (t) => {
    await webhookServing(t.context.env); // listening, so a refusal below is the TLS settings'
    const got = await handshake(t.context.url, t.context.caBundle, h.opts);
    if (h.ok) t.is(got, 'ok');
    else t.regex(got, /^ERR_SSL|^EPROTO|^ECONNRESET|alert/i);
  });
}

const REVIEW = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'PersistentVolume' },
    operation: 'CREATE',
    object: { metadata: { name: 'x' }, spec: { csi: { driver: 'other.example.com', volumeHandle: 'v' } } },
  },
});

const CALLERS: { who: string; creds: (c: Ctx) => Promise<HttpsOptions>; status: number }[] = [
  { who: 'without credentials: unauthorized (no zone for the curious)', creds: async () => ({}), status: 401 },
  { who: 'with a token the API server rejects: unauthorized', creds: async () => ({ token: 'not-a-token' }), status: 401 },
  { who: 'as a user not allowed the webhook path: forbidden', creds: async () => ({ token: await scraperToken() }), status: 403 },
  { who: 'as a cluster admin: answered', creds: async (c) => ({ token: c.adminToken }), status: 200 },
];

for (const c of CALLERS) {
  test.serial(`a direct call ${c.who}`, async (t) => {
    const r = await httpsRequest(t.context.url, { method: 'POST', ca: t.context.caBundle, body: REVIEW, ...(await c.creds(t.context)) });
    t.is(r.status, c.status, r.body);
    if (c.status === 200) t.like(JSON.parse(r.body), { kind: 'AdmissionReview', response: { uid: 'u1', allowed: true } });
  });
}

test.serial('GET /healthz of the webhook needs no credentials (kubelet probes)', async (t) => {
  const r = await httpsRequest(t.context.url.replace('/mutate-v1-persistentvolume', '/healthz'), { ca: t.context.caBundle });
  t.is(r.status, 200);
});

test.serial('with the webhook down and failurePolicy Ignore, PVs are still created', async (t) => {
  const { env } = t.context;
  await t.context.host.stop();
  const pv = await env.core.createPersistentVolume({ body: handPv(`${env.id}-hooked-unrelated`, 'other.example.com', 'vol-y') });
  t.is(pv.metadata?.name, `${env.id}-hooked-unrelated`);
  const ours = await env.core.createPersistentVolume({ body: handPv(`${env.id}-hooked-unlabelled`, env.driver, 'vol-z') });
  t.falsy(ours.metadata?.labels?.[ZONE], 'created without labels while the webhook is down');
});
