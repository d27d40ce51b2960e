/**
 * The leader-lease guard (--plugin-unready-lease-release-timeout) of a host
 * with several providers (issue 31 item 5), against the real API server: one
 * host, leader election on, two local clouds it dials as sidecars ("east",
 * the first entry and so the default provider, and "west"), each of which
 * this test can wedge (SIGSTOP: alive, answering nothing).
 *
 *   - east wedged past the bound, west ready: the host keeps renewing the
 *     Lease (the replica counts as unready only while none of its providers
 *     is ready; one provider down on every replica must not hand the Lease
 *     around and stop the other provider's objects);
 *   - west wedged too, past the bound: the host gives the Lease up (its
 *     holder emptied), stays out of the election, and /readyz says why.
 *
 * The Lease is this file's own (namespace mp-lease-guard), so no other test's
 * host competes for it.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { leaderElectArgs } from '../../helpers/ha-host-process.js';
import { ensureNamespace } from '../../helpers/lb.js';
import { testScope } from '../../helpers/nodes.js';
import { scrape } from '../../helpers/scraper.js';
import { grantLease } from '../../helpers/service-account.js';
import type { Sidecar } from '../../helpers/sidecar.js';
import { endpointEntry, localCloudSidecar, startProvidersHost, writeProvidersFile, type ProvidersHost } from '../../helpers/two-clouds.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'mp-lease-guard';
/** --plugin-unready-lease-release-timeout here (default 60 s). */
const RELEASE_AFTER_S = 5;

test('several providers: one wedged past the bound keeps the Lease; all wedged past the bound release it', async (t) => {
  t.timeout(300_000);
  const scope = testScope('mplease');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-mp-lease-'));
  const admin = await testKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const coordination = admin.makeApiClient(CoordinationV1Api);
  await ensureNamespace(core, NS);
  await grantLease(admin, NS, 'ccm').catch((err: { code?: number }) => {
    if (err.code !== 409) throw err; // a rerun against the same control plane
  });
  const sidecars: Record<'east' | 'west', Sidecar> = {
    east: await (await localCloudSidecar(dir, 'east'))(),
    // West serves only its class: one provider per Service (else no start).
    west: await (await localCloudSidecar(dir, 'west', { LOCALCLOUD_LB_CLASSES: 'example.com/west', LOCALCLOUD_LB_CLASSES_ONLY: 'true' }))(),
  };
  const started: { host?: ProvidersHost } = {};
  t.teardown(async () => {
    for (const s of Object.values(sidecars)) s.signal('SIGCONT');
    await started.host?.stop();
    for (const s of Object.values(sidecars)) await s.stop().catch(() => undefined);
  });
  const file = await writeProvidersFile(dir, [endpointEntry('east', sidecars.east.endpoint), endpointEntry('west', sidecars.west.endpoint)]);
  const h = (started.host = await startProvidersHost(dir, file, [
    '--cluster-name=mplease',
    '--controllers=service',
    `--watch-namespace=${NS}`,
    `--node-selector=${scope.selector}`,
    ...leaderElectArgs(NS),
    `--plugin-unready-lease-release-timeout=${RELEASE_AFTER_S}s`,
  ]));
  const lease = async () => (await coordination.readNamespacedLease({ name: 'ccm', namespace: NS }).catch(() => undefined))?.spec;
  const holder = await waitFor(async () => (await lease())?.holderIdentity || undefined, { what: 'the host takes the Lease', log: h.logPath });
  const unready = (name: 'east' | 'west') =>
    waitFor(async () => h.providers.get(name)!.supervisor.state !== 'ready', {
      what: `provider ${name} not ready`,
      timeoutMs: 60_000,
      log: h.logPath,
    });

  // East (the default provider) wedged: past the bound and then some, the host still renews.
  sidecars.east.signal('SIGSTOP');
  await unready('east');
  const eastUnreadyAt = Date.now();
  const renewedWell = await waitFor(
    async () => {
      const l = await lease();
      const renewed = l?.renewTime ? new Date(l.renewTime as unknown as string).getTime() : 0;
      // Renewed by the host three bounds after east went unready (and east still unready): the guard let it keep the Lease.
      return renewed > eastUnreadyAt + 3 * RELEASE_AFTER_S * 1000 && h.providers.get('east')!.supervisor.state !== 'ready' ? l : undefined;
    },
    { what: 'the Lease renewed three bounds after east went unready', timeoutMs: 90_000, log: h.logPath },
  );
  t.deepEqual(
    { holder: renewedWell.holderIdentity, west: h.providers.get('west')!.supervisor.state },
    { holder, west: 'ready' },
    'east wedged past the bound, west ready: the Lease stays with the host',
  );
  t.is((await scrape(h.port, '/readyz?verbose')).body.includes('[-]leaderCandidacy'), false, 'no countdown to a release');

  // West wedged too: past the bound the host gives the Lease up and holds off.
  sidecars.west.signal('SIGSTOP');
  await unready('west');
  await waitFor(async () => (await lease())?.holderIdentity === '', { what: 'the Lease released', timeoutMs: 90_000, log: h.logPath });
  const why = await waitFor(
    async () => {
      const r = await scrape(h.port, '/readyz?verbose');
      return r.body.includes('[-]leaderCandidacy failed') ? r.body : undefined;
    },
    { what: "the host's /readyz names the release", log: h.logPath },
  );
  t.regex(
    why,
    /not campaigning for the leader lease while every provider is not ready \(east: \w+, west: \w+\); gave up the leader lease because every provider was not ready/,
  );
  t.is((await lease())?.holderIdentity, '', 'nobody holds the Lease: the host stays out of the election');
});
