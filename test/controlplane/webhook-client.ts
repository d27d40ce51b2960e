/**
 * How the test kube-apiserver authenticates to admission webhooks, as an
 * operator configures a real one for the host's PersistentVolume label
 * webhook (docs/secure-serving.md): a client CA given to the API server
 * with --client-ca-file (so it also lands in ConfigMap
 * kube-system/extension-apiserver-authentication, where the host finds it),
 * and an AdmissionConfiguration whose kubeconfig presents a certificate it
 * signed, with common name WEBHOOK_CALLER_USER, to every webhook.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { clientCert, testCa } from '../helpers/certs.js';

/** The user the API server is to webhooks (deploy/volumes/webhook-caller-rbac.yaml binds it). */
export const WEBHOOK_CALLER_USER = 'kube-apiserver-webhook-client';

/** The files webhookClientArgs writes. */
export const WEBHOOK_CLIENT_FILES = ['client-ca.crt', 'webhook-client.crt', 'webhook-client.key', 'webhook-kubeconfig.yaml', 'admission.yaml'];

/** Writes the CA, the client certificate and the admission configuration into `dir`; returns kube-apiserver's flags. */
export async function webhookClientArgs(dir: string): Promise<string[]> {
  const ca = await testCa('ccm-test-client-ca');
  const client = await clientCert(ca, WEBHOOK_CALLER_USER);
  const file = (name: string) => join(dir, name);
  await writeFile(file('client-ca.crt'), ca.cert);
  await writeFile(file('webhook-client.crt'), client.cert);
  await writeFile(file('webhook-client.key'), client.key, { mode: 0o600 });
  await writeFile(
    file('webhook-kubeconfig.yaml'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      users: [{ name: '*', user: { 'client-certificate': file('webhook-client.crt'), 'client-key': file('webhook-client.key') } }],
    }),
  );
  const plugin = (name: string) => ({
    name,
    configuration: {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'WebhookAdmissionConfiguration',
      kubeConfigFile: file('webhook-kubeconfig.yaml'),
    },
  });
  await writeFile(
    file('admission.yaml'),
    JSON.stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: [plugin('MutatingAdmissionWebhook'), plugin('ValidatingAdmissionWebhook')],
    }),
  );
  return [`--client-ca-file=${file('client-ca.crt')}`, `--admission-control-config-file=${file('admission.yaml')}`];
}
