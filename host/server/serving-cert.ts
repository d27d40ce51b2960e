/**
 * The `--secure-port` server's certificate, as upstream
 * (SecureServingOptions.MaybeDefaultWithSelfSignedCerts): --tls-cert-file
 * and --tls-private-key-file when given; else `<cert-dir>/cloud-controller-manager.crt`
 * and `.key` when both can be read; else a new self-signed one for
 * `localhost` and 127.0.0.1 (plus --bind-address when it is not 0.0.0.0 or
 * ::), written into --cert-dir when given, else kept in memory.
 */
import { readFile } from 'node:fs/promises';
import ipaddr from 'ipaddr.js';
import type { ServingConfig } from '../config/serving.js';
import { errorMessage } from '../log.js';
import { loadOrGenerate, type ServingCert } from './self-signed.js';

/** Upstream's PairName: the file names in --cert-dir. */
const CERT_PAIR_NAME = 'cloud-controller-manager';

export async function servingCert(s: ServingConfig, bindAddress: string): Promise<ServingCert> {
  if (s.tls) {
    const read = async (file: string, flag: string) => {
      try {
        return await readFile(file, 'utf8');
      } catch (err) {
        throw new Error(`cannot read --${flag} ${file}: ${errorMessage(err)}`, { cause: err });
      }
    };
    return { cert: await read(s.tls.certFile, 'tls-cert-file'), key: await read(s.tls.keyFile, 'tls-private-key-file'), source: s.tls.certFile };
  }
  const unspecified = ipaddr.parse(bindAddress).range() === 'unspecified';
  try {
    return await loadOrGenerate(s.certDir, CERT_PAIR_NAME, {
      commonName: 'localhost',
      dnsNames: ['localhost'],
      ips: unspecified ? ['127.0.0.1'] : ['127.0.0.1', bindAddress],
    });
  } catch (err) {
    throw new Error(
      `cannot generate a self-signed serving certificate in --cert-dir ${s.certDir}: ${errorMessage(err)}: make the directory writable, or pass --tls-cert-file and --tls-private-key-file`,
      { cause: err },
    );
  }
}
