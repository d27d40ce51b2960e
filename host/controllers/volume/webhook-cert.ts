/**
 * The webhook's serving certificate: from --webhook-tls-cert-file and
 * --webhook-tls-private-key-file, else self-signed (for development: the
 * certificate is its own CA, so its PEM is the caBundle). node:crypto cannot
 * make X.509 certificates; the `selfsigned` package does. A generated pair is
 * written to --webhook-cert-dir when given (and reused from there on the next
 * start, so the caBundle stays valid).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

export interface ServingCert {
  cert: string;
  key: string;
  /** Where it came from, for the log. */
  source: string;
}

/** Validity of a generated certificate, in days. */
const GENERATED_DAYS = 365;

export async function webhookCert(opts: { tls?: { certFile: string; keyFile: string }; certDir: string; dnsNames?: string[] }): Promise<ServingCert> {
  if (opts.tls) {
    return { cert: await readFile(opts.tls.certFile, 'utf8'), key: await readFile(opts.tls.keyFile, 'utf8'), source: opts.tls.certFile };
  }
  const certPath = opts.certDir ? join(opts.certDir, 'webhook.crt') : '';
  const keyPath = opts.certDir ? join(opts.certDir, 'webhook.key') : '';
  if (opts.certDir) {
    try {
      return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8'), source: certPath };
    } catch {
      // none yet: generate below
    }
  }
  const names = [...new Set(['localhost', hostname(), ...(opts.dnsNames ?? [])])];
  const notBefore = new Date(Date.now() - 60_000);
  // Loaded only here: most hosts never generate a certificate, and the package is large.
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: 'cloud-controller-manager-webhook' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: new Date(notBefore.getTime() + GENERATED_DAYS * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [...names.map((value) => ({ type: 2 as const, value })), { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  });
  if (opts.certDir) {
    await mkdir(opts.certDir, { recursive: true, mode: 0o700 });
    await writeFile(keyPath, pems.private, { mode: 0o600 });
    await writeFile(certPath, pems.cert);
  }
  return { cert: pems.cert, key: pems.private, source: opts.certDir ? `generated into ${certPath}` : 'generated (memory only)' };
}
