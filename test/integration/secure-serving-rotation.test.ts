/**
 * A rotated client CA is trusted without a restart: the HTTPS server and
 * delegated authentication the host uses, with the CA file re-read every
 * 200 ms instead of every minute, against the real API server (tokens and
 * access reviewed there; the CA file replaced on disk).
 */
import test from 'ava';
import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseHostArgs } from '../../host/config/flags.js';
import { silentLogger } from '../../host/log.js';
import { createHostMetrics } from '../../host/metrics.js';
import { delegatedAuth } from '../../host/server/delegated-auth.js';
import { DelegatedGuard } from '../../host/server/guard.js';
import { generateSelfSigned } from '../../host/server/self-signed.js';
import { startHealthServer } from '../../host/server/server.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { clientCert, testCa } from '../helpers/certs.js';
import { httpsRequest } from '../helpers/https.js';
import { waitFor } from '../helpers/wait.js';

test('replacing --client-ca-file switches which client certificates are trusted, on new connections', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-secure-rotation-'));
  const caFile = join(dir, 'client-ca.crt');
  const [oldCa, newCa] = await Promise.all([testCa('ccm-test-rotation-old'), testCa('ccm-test-rotation-new')]);
  await writeFile(caFile, oldCa.cert);
  const parsed = parseHostArgs(['--cloud-provider=local', `--client-ca-file=${caFile}`, '--authentication-skip-lookup']);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  const log = silentLogger();
  const auth = await delegatedAuth(parsed.config.serving, { kubeConfig: await testKubeConfig(), userAgent: 'ccm-test', log, trustRefreshMs: 200 });
  t.teardown(() => auth.stop());
  const tls = await generateSelfSigned({ commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const server = await startHealthServer({
    bindAddress: '127.0.0.1',
    port: 0,
    tls,
    guard: new DelegatedGuard({ auth, anonymous: true, log }),
    registry: createHostMetrics({ defaultMetrics: false }).registry,
    log,
  });
  t.teardown(() => server.close());

  // system:masters: allowed once authenticated, so the status says only whether the certificate was trusted.
  const [oldCert, newCert] = await Promise.all([
    clientCert(oldCa, 'rotation-admin', ['system:masters']),
    clientCert(newCa, 'rotation-admin', ['system:masters']),
  ]);
  const metrics = (cert: { cert: string; key: string }) =>
    httpsRequest(`https://127.0.0.1:${server.port}/metrics`, { ca: tls.cert, ...cert }).then((r) => r.status);
  t.is(await metrics(oldCert), 200);
  t.is(await metrics(newCert), 401);

  await writeFile(`${caFile}.new`, newCa.cert);
  await rename(`${caFile}.new`, caFile);
  await waitFor(async () => (await metrics(newCert)) === 200, { what: 'the new CA trusted', timeoutMs: 30_000, intervalMs: 100 });
  t.is(await metrics(oldCert), 401, 'the old CA is no longer trusted');
});
