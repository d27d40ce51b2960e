/**
 * Certificates chosen by the TLS server name the client asks for (SNI), as
 * `--webhook-tls-sni-cert-key` gives them (upstream's NamedCertKey, served by
 * k8s.io/apiserver's dynamic SNI certificates): each certificate answers for
 * the names given with it, or, with none, for its own DNS names and IPs.
 * An exact name beats a wildcard (`*.example.com`, one label); a given name
 * beats one read from a certificate; among equals the first flag wins. A name
 * no certificate claims gets the server's default certificate.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { SniCertKey } from '../config/serving.js';

/** One SNI certificate, loaded. */
export interface SniCert {
  cert: string;
  key: string;
  /** Which file it came from, for logs. */
  source: string;
  /** Names it answers for (lowercase, `*.` wildcards allowed). */
  names: string[];
  /** Whether the names were given on the command line (they win over names read from a certificate). */
  explicit: boolean;
}

/** Reads each SNI certificate and key; rejects naming the file that cannot be read or parsed. */
export async function loadSniCerts(list: readonly SniCertKey[]): Promise<SniCert[]> {
  const out: SniCert[] = [];
  for (const c of list) {
    const cert = await readFile(c.certFile, 'utf8');
    const key = await readFile(c.keyFile, 'utf8');
    let names = [...c.names];
    if (names.length === 0) {
      try {
        names = certificateNames(new X509Certificate(cert));
      } catch (err) {
        throw new Error(`${c.certFile}: not a PEM certificate (${err instanceof Error ? err.message : String(err)})`, { cause: err });
      }
    }
    out.push({ cert, key, source: c.certFile, names, explicit: c.names.length > 0 });
  }
  return out;
}

/** A certificate's DNS names and IP addresses (subjectAltName), else its CN. */
export function certificateNames(x: X509Certificate): string[] {
  const names = (x.subjectAltName ?? '')
    .split(',')
    .map((s) => s.trim())
    .flatMap((s) => {
      if (s.startsWith('DNS:')) return [s.slice(4).toLowerCase()];
      if (s.startsWith('IP Address:')) return [s.slice(11).toLowerCase()];
      return [];
    });
  if (names.length > 0) return names;
  const cn = /(?:^|\n)CN=([^\n]+)/.exec(x.subject)?.[1];
  return cn ? [cn.toLowerCase()] : [];
}

/**
 * Index of the certificate that answers for `serverName`, or undefined for the
 * default one. `explicit[i]` says whether certificate i's names were given on
 * the command line (they win over names read from a certificate).
 */
export function pickSni(serverName: string, certs: readonly { names: readonly string[]; explicit: boolean }[]): number | undefined {
  const host = serverName.toLowerCase().replace(/\.$/, '');
  const dot = host.indexOf('.');
  const wildcard = dot > 0 ? `*${host.slice(dot)}` : undefined;
  for (const want of [host, wildcard]) {
    if (want === undefined) continue;
    for (const explicit of [true, false]) {
      const i = certs.findIndex((c) => c.explicit === explicit && c.names.includes(want));
      if (i >= 0) return i;
    }
  }
  return undefined;
}
