/**
 * Self-signed serving certificates, for the `--secure-port` server and the
 * webhook when no certificate files are given. node:crypto cannot make X.509
 * certificates; the `selfsigned` package can (loaded on first use: it is
 * large and most hosts never generate one). The certificate is its own CA,
 * so its PEM is also the bundle a client trusts it with.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A PEM certificate and key, and where they came from (for the log). */
export interface ServingCert {
  cert: string;
  key: string;
  source: string;
}

/** Validity of a generated certificate, in days (upstream: one year). */
const GENERATED_DAYS = 365;

/** What a generated certificate names. */
export interface SelfSignedSubject {
  commonName: string;
  dnsNames: readonly string[];
  ips: readonly string[];
}

/** A fresh EC P-256 self-signed certificate for serverAuth, valid from a minute ago (clock skew) for a year. */
export async function generateSelfSigned(subject: SelfSignedSubject): Promise<{ cert: string; key: string }> {
  const { generate } = await import('selfsigned');
  const notBefore = new Date(Date.now() - 60_000);
  const pems = await generate([{ name: 'commonName', value: subject.commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: new Date(notBefore.getTime() + GENERATED_DAYS * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          ...[...new Set(subject.dnsNames)].map((value) => ({ type: 2 as const, value })),
          ...[...new Set(subject.ips)].map((ip) => ({ type: 7 as const, ip })),
        ],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

/**
 * The pair `<dir>/<name>.crt` and `.key` when both can be read; else a new
 * one generated for `subject`, written there (key 0600, directory 0700) when
 * `dir` is not '' or kept in memory.
 */
export async function loadOrGenerate(dir: string, name: string, subject: SelfSignedSubject): Promise<ServingCert> {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  if (dir) {
    try {
      return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8'), source: certPath };
    } catch {
      // none yet: generate below
    }
  }
  const pems = await generateSelfSigned(subject);
  if (!dir) return { ...pems, source: 'generated (memory only)' };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(keyPath, pems.key, { mode: 0o600 });
  await writeFile(certPath, pems.cert);
  return { ...pems, source: `generated into ${certPath}` };
}
