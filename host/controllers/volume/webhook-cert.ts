/**
 * The webhook's serving certificate: from --webhook-tls-cert-file and
 * --webhook-tls-private-key-file, else self-signed (for development: the
 * certificate is its own CA, so its PEM is the caBundle). A generated pair is
 * written to --webhook-cert-dir when given (and reused from there on the next
 * start, so the caBundle stays valid).
 */
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { loadOrGenerate, type ServingCert } from '../../server/self-signed.js';

export async function webhookCert(opts: { tls?: { certFile: string; keyFile: string }; certDir: string; dnsNames?: string[] }): Promise<ServingCert> {
  if (opts.tls) {
    return { cert: await readFile(opts.tls.certFile, 'utf8'), key: await readFile(opts.tls.keyFile, 'utf8'), source: opts.tls.certFile };
  }
  return loadOrGenerate(opts.certDir, 'webhook', {
    commonName: 'cloud-controller-manager-webhook',
    dnsNames: ['localhost', hostname(), ...(opts.dnsNames ?? [])],
    ips: ['127.0.0.1', '::1'],
  });
}
