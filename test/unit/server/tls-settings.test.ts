/**
 * The TLS settings upstream v1.36 added, on a real HTTPS server
 * (createGuardedHttpsServer, which the --secure-port server and the
 * PersistentVolume label webhook both use): `--tls-curve-preferences` /
 * `--webhook-tls-curve-preferences` limit the key exchange groups, and
 * `--webhook-tls-sni-cert-key` picks the certificate by the server name the
 * client asks for (given names beat a certificate's own, exact beats a
 * wildcard, the default certificate otherwise).
 */
import { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import test from 'ava';
import type { RequestGuard } from '../../../host/server/guard.js';
import { generateSelfSigned } from '../../../host/server/self-signed.js';
import { createGuardedHttpsServer, type ServingTls } from '../../../host/server/server.js';
import { certificateNames, pickSni, type SniCert } from '../../../host/server/sni.js';

const ALLOW_ALL: RequestGuard = { requestsClientCerts: false, clientCaPems: [], onTrustChange: () => () => {}, admit: async () => true };

/** Serves `settings`; returns the port. */
async function serve(t: { teardown: (fn: () => void) => void }, settings: ServingTls): Promise<number> {
  const server = createGuardedHttpsServer(settings, ALLOW_ALL, (_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  return (server.address() as AddressInfo).port;
}

/** A handshake as a client: the certificate's CN it got, or the error code. */
function handshake(port: number, opts: tls.ConnectionOptions): Promise<{ cn?: string; error?: string }> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...opts }, () => {
      const cn = s.getPeerCertificate().subject?.CN;
      s.end();
      resolve({ cn: Array.isArray(cn) ? cn[0] : cn });
    });
    s.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
  });
}

const CURVES: { server: string; client: string; handshakes: boolean }[] = [
  { server: 'P-384', client: 'P-384', handshakes: true },
  { server: 'P-384', client: 'X25519', handshakes: false },
  { server: 'X25519:P-256', client: 'P-256', handshakes: true },
  { server: 'X25519:P-256', client: 'P-521', handshakes: false },
];

for (const c of CURVES) {
  test(`curve preferences ${c.server}: a client offering only ${c.client} ${c.handshakes ? 'connects' : 'is refused'}`, async (t) => {
    const cert = await generateSelfSigned({ commonName: 'default', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
    const port = await serve(t, { ...cert, ecdhCurve: c.server });
    const r = await handshake(port, { ecdhCurve: c.client });
    if (c.handshakes) t.is(r.cn, 'default', r.error);
    else t.truthy(r.error, 'the handshake succeeded without a common group');
  });
}

test('--webhook-tls-sni-cert-key: each server name gets its certificate, others the default', async (t) => {
  const def = await generateSelfSigned({ commonName: 'default', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const own = await generateSelfSigned({ commonName: 'own-names', dnsNames: ['webhook.example.com', 'both.example.com'], ips: [] });
  const given = await generateSelfSigned({ commonName: 'given-names', dnsNames: ['unrelated.example.org'], ips: [] });
  const wild = await generateSelfSigned({ commonName: 'wildcard', dnsNames: ['x.invalid'], ips: [] });
  const sni: SniCert[] = [
    { ...own, source: 'own.crt', names: certificateNames(new X509Certificate(own.cert)), explicit: false },
    { ...given, source: 'given.crt', names: ['both.example.com', 'given.example.com'], explicit: true },
    { ...wild, source: 'wild.crt', names: ['*.svc.example.com'], explicit: true },
  ];
  const port = await serve(t, { ...def, sni });
  const cases: [string | undefined, string][] = [
    ['webhook.example.com', 'own-names'], // the certificate's own DNS name
    ['given.example.com', 'given-names'], // a name given on the command line
    ['both.example.com', 'given-names'], // given beats the certificate's own
    ['ccm.svc.example.com', 'wildcard'], // one label under the wildcard
    ['a.ccm.svc.example.com', 'default'], // two labels: not the wildcard's
    ['unrelated.example.org', 'default'], // in the certificate, but names were given
    ['nobody.example.com', 'default'],
    [undefined, 'default'], // no SNI at all
  ];
  for (const [servername, want] of cases) {
    const r = await handshake(port, servername ? { servername } : {});
    t.is(r.cn, want, `${servername ?? '(no SNI)'}: ${r.error ?? ''}`);
  }
});

test('pickSni: exact beats wildcard, given beats read, first of equals wins', (t) => {
  const certs = [
    { names: ['a.example.com', '*.example.com'], explicit: false },
    { names: ['*.example.com'], explicit: true },
    { names: ['b.example.com'], explicit: true },
    { names: ['b.example.com'], explicit: true },
  ];
  const rows: [string, number | undefined][] = [
    ['a.example.com', 0],
    ['A.Example.COM.', 0],
    ['c.example.com', 1],
    ['b.example.com', 2],
    ['example.com', undefined],
  ];
  for (const [name, want] of rows) t.is(pickSni(name, certs), want, name);
});
