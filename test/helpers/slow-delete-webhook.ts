/**
 * A validating admission webhook for DELETE that the test holds open: it makes
 * kube-apiserver's deletion race (kubernetes/kubernetes#77988) deterministic.
 *
 * kube-apiserver decides "no finalizers, delete at once" on one read of the
 * object, then runs validating admission and deletes with a compare-and-swap
 * that it retries on the latest version of the object without looking at the
 * finalizers again. While the webhook holds the first admission call, a
 * finalizer added by a controller makes that swap fail; the retry deletes the
 * object, finalizer and all, and the DELETE answers with it (no
 * deletionTimestamp).
 *
 * Only objects labelled {@link SLOW_DELETE_LABEL}=true in the given namespace
 * reach the webhook; the configuration is cluster-scoped and removed by close().
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { webhookCert } from '../../host/controllers/volume/webhook-cert.js';

export const SLOW_DELETE_LABEL = 'ccm.test/slow-delete';
/** Longest a call is held, whatever the test does (kube-apiserver gives up at 10 s). */
const MAX_HOLD_MS = 8_000;

export interface SlowDeleteWebhook {
  /** Admission calls answered so far. */
  readonly calls: number;
  /** Holds the next admission call; resolves when it has arrived. */
  holdNext(): Promise<void>;
  /** Answers the held call (allowed); later calls are answered at once. */
  release(): void;
  close(): Promise<void>;
}

export async function startSlowDeleteWebhook(kc: KubeConfig, name: string, namespace: string, resource: string): Promise<SlowDeleteWebhook> {
  const { cert, key } = await webhookCert({ certDir: '' });
  let calls = 0;
  let hold: { arrived: () => void; released: Promise<void> } | undefined;
  let release = () => {};
  const server: Server = createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request?: { uid?: string } };
      const answer = () => {
        calls++;
        res.setHeader('Content-Type', 'application/json');
        res.end(
          JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request?.uid ?? '', allowed: true } }),
        );
      };
      const h = hold;
      hold = undefined;
      if (!h) return answer();
      h.arrived();
      void Promise.race([h.released, new Promise((r) => setTimeout(r, MAX_HOLD_MS))]).then(answer);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createValidatingWebhookConfiguration({
    body: {
      metadata: { name },
      webhooks: [
        {
          name: 'slow-delete.ccm.test',
          clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle: Buffer.from(cert).toString('base64') },
          rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: [resource], scope: 'Namespaced' }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          objectSelector: { matchLabels: { [SLOW_DELETE_LABEL]: 'true' } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
        },
      ],
    },
  });
  return {
    get calls() {
      return calls;
    },
    holdNext: () =>
      new Promise<void>((arrived) => {
        hold = { arrived, released: new Promise<void>((r) => (release = r)) };
      }),
    release: () => release(),
    async close() {
      release();
      await admission.deleteValidatingWebhookConfiguration({ name }).catch(() => undefined);
      server.closeAllConnections();
      server.close();
    },
  };
}
