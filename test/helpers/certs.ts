/** Test certificate authorities and client certificates (EC P-256, valid a week), made with the `selfsigned` package. */
import { generate } from 'selfsigned';

export interface Pem {
  cert: string;
  key: string;
}

const validity = () => {
  const notBeforeDate = new Date(Date.now() - 60_000);
  return { notBeforeDate, notAfterDate: new Date(notBeforeDate.getTime() + 7 * 86_400_000) };
};

/** A CA certificate and key. */
export async function testCa(commonName: string): Promise<Pem> {
  const ca = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ...validity(),
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', keyCertSign: true, digitalSignature: true, cRLSign: true },
    ],
  });
  return { cert: ca.cert, key: ca.private };
}

/** A client certificate `ca` signed, for user `commonName` in `groups` (its organizations). */
export async function clientCert(ca: Pem, commonName: string, groups: string[] = []): Promise<Pem> {
  const c = await generate([{ name: 'commonName', value: commonName }, ...groups.map((value) => ({ name: 'organizationName', value }))], {
    keyType: 'ec',
    algorithm: 'sha256',
    ...validity(),
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
  });
  return { cert: c.cert, key: c.private };
}
