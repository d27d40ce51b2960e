/**
 * A leader whose provider is wedged (--plugin-unready-lease-release-timeout),
 * with real host processes against the real API server, in the sidecar
 * layout: each replica dials its own local-cloud provider process over a
 * Unix socket (as the provider container of its pod), both providers on one
 * shared cloud state that journals every call with the caller's identity.
 * Each replica has its own token of the shipped ServiceAccount, so the audit
 * log tells their writes apart.
 *
 * The leader's provider is SIGSTOPped: alive, answering nothing. Its
 * supervisor gives it up after two failed liveness checks; past the bound
 * the leader stops its controllers and releases the Lease, the other
 * replica takes over and initializes a new Node and serves a new
 * LoadBalancer Service. The one that gave up makes no Kubernetes write and
 * no cloud call from then on, does not take the Lease back while its
 * provider is unready, and its /readyz says why. Once its provider answers
 * again (SIGCONT: as after the kubelet restarted the container) it
 * campaigns again, stands by, and takes over when the healthy leader stops.
 */
import test from 'ava';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readJournal } from '../../../plugins/local/journal.js';
import { freePorts } from '../../controlplane/probe.js';
import { testAuditLogPath } from '../../controlplane/shared.js';
import { auditLogFromNow, credentialIdOf, tokenCredentialId } from '../../helpers/audit.js';
import { forbiddenInLog } from '../../helpers/forbidden.js';
import { leaderReplicas, TEST_LEASE } from '../../helpers/ha-host-process.js';
import { lbService } from '../../helpers/lb.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from '../../helpers/localcloud.js';
import { scrape } from '../../helpers/scraper.js';
import { serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { startSidecar, type Sidecar } from '../../helpers/sidecar.js';
import { waitFor } from '../../helpers/wait.js';
import { addInitializedNode, firstLeader, leaseHolder, settledLbs } from './ha-checks.js';

/** --plugin-unready-lease-release-timeout here (default 60 s). */
const RELEASE_AFTER_S = 5;
const CLUSTER = 'wedged';

test('a leader whose sidecar provider is wedged releases the Lease past the bound; the other replica takes over and reconciles; the wedged one writes nothing after, stays out of the election until its provider answers, then campaigns again', async (t) => {
  t.timeout(300_000);
  // Namespace wedged-<id>: the Lease ccm, the Services, the Nodes' label.
  const { dir, admin, core, coordination, namespace, state, nodes, hosts, spawnReplica } = await leaderReplicas(t, {
    prefix: 'wedged',
    clusterName: CLUSTER,
  });
  const audit = await auditLogFromNow(await testAuditLogPath());
  const launcher = join(dir, 'ccm-provider-local');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`, { mode: 0o755 });
  const sidecars: Sidecar[] = [];
  t.teardown(async () => {
    for (const s of sidecars) await s.stop().catch(() => undefined);
  });

  /** Replica n: its provider sidecar (own socket directory, shared cloud state) and its host dialling it. */
  const start = async (n: number) => {
    const sockets = join(dir, `pod-${n}`);
    await mkdir(sockets, { mode: 0o700 });
    const sidecar = await startSidecar(
      launcher,
      sockets,
      {
        LOCALCLOUD_STATE_DIR: state,
        [ALLOW_SIMULATION.split('=')[0]!]: 'true',
        LOCALCLOUD_JOURNAL: 'all',
        LOCALCLOUD_LB_CIDR: '127.0.66.0/24',
      },
      { logPath: join(dir, `provider-${n}.log`) },
    );
    sidecars.push(sidecar);
    const kc = await serviceAccountKubeConfig(admin);
    const kubeconfig = join(dir, `kubeconfig-${n}`);
    await writeFile(kubeconfig, kc.exportConfig(), { mode: 0o600 });
    const [port] = await freePorts(1);
    const host = spawnReplica(n, [
      `--plugin-endpoint=${sidecar.endpoint}`,
      `--kubeconfig=${kubeconfig}`,
      '--controllers=cloud-node,service',
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      `--plugin-unready-lease-release-timeout=${RELEASE_AFTER_S}s`,
    ]);
    return { n, host, sidecar, credential: tokenCredentialId(kc.getCurrentUser()!.token!), readyz: () => scrape(port!, '/readyz?verbose') };
  };
  const holder = leaseHolder(coordination, namespace);
  const initNode = async (name: string) => {
    nodes.push(name);
    await addInitializedNode(core, state, name, `127.0.5.${nodes.length}`, namespace);
  };
  const live: string[] = [];
  const served = async () => settledLbs(core, state, { namespace, clusterName: CLUSTER, live, gone: [], backends: nodes, timeoutMs: 90_000 });

  const replicas = await Promise.all([start(1), start(2)]);
  const byIdentity = new Map(await Promise.all(replicas.map(async (r) => [await r.host.identity, r] as const)));
  const firstIdentity = await firstLeader(byIdentity, holder);
  const wedged = byIdentity.get(firstIdentity)!;
  const [healthyIdentity, healthy] = [...byIdentity].find(([identity]) => identity !== firstIdentity)!;
  await initNode(`${namespace}-1`);
  await core.createNamespacedService({ namespace, body: lbService('s1', namespace, [{ port: 8080 }]) });
  live.push('s1');
  await served();

  // Wedge the leader's provider: the process is alive, its socket accepts connections, nothing answers.
  const wedgedAt = Date.now();
  wedged.sidecar.signal('SIGSTOP');
  let releasedAt = '';
  await waitFor(
    async () => {
      const h = await holder();
      if (h !== firstIdentity && releasedAt === '') releasedAt = new Date().toISOString();
      return h === healthyIdentity;
    },
    { what: 'the replica with a healthy provider takes the Lease', timeoutMs: 120_000, intervalMs: 100, log: wedged.host.logPath },
  );
  const handOverMs = Date.now() - wedgedAt;

  // The new leader reconciles: a new Node initialized, a new LoadBalancer Service served.
  await initNode(`${namespace}-2`);
  await core.createNamespacedService({ namespace, body: lbService('s2', namespace, [{ port: 8080 }]) });
  live.push('s2');
  await served();

  // The one that gave up stays out of the election while its provider is wedged, and says why.
  const why = await waitFor(
    async () => {
      const r = await wedged.readyz();
      return r.status === 500 && r.body.includes('[-]leaderCandidacy failed') ? r.body : undefined;
    },
    { what: "the wedged replica's /readyz names the lease release" },
  );
  t.regex(
    why,
    /\[-\]leaderCandidacy failed: not campaigning for the leader lease while plugin local is (backoff|starting) \(not ready\); gave up the leader lease because plugin local was (backoff|starting) \(not ready\) for \d+s, longer than --plugin-unready-lease-release-timeout=5s/,
  );
  t.regex(why, /\[-\]plugin failed/);
  await new Promise((r) => setTimeout(r, 3 * TEST_LEASE.durationS * 1000));
  t.is(await holder(), healthyIdentity, 'the replica that gave up does not take the Lease back');
  const wedgedLog = await readFile(wedged.host.logPath, 'utf8');
  t.regex(wedgedLog, /giving up the leader lease: stopping the controllers, then releasing it/);
  t.regex(wedgedLog, /released leader lease/);
  t.regex(wedgedLog, /not campaigning for the leader lease/);
  t.is(await Promise.race([wedged.host.exited, Promise.resolve('running')]), 'running', 'it keeps running (as a standby), unlike a lost lease');

  // Unwedged (as after the kubelet restarted the provider container): it campaigns again and stands by.
  wedged.sidecar.signal('SIGCONT');
  await waitFor(async () => (await wedged.readyz()).status === 200, {
    what: 'the unwedged replica ready again',
    timeoutMs: 120_000,
    log: wedged.host.logPath,
  });
  await waitFor(async () => /campaigning for the leader lease again/.test(await readFile(wedged.host.logPath, 'utf8')), {
    what: 'the unwedged replica campaigns again',
  });
  t.is(await holder(), healthyIdentity, 'a healthy leader keeps the Lease');
  const beforeHandBack = new Date().toISOString();

  // Nothing of the replica that gave up reached the API server or the cloud after its release (until it led again).
  const writes = (await audit.events()).filter(
    (e) => credentialIdOf(e) === wedged.credential && e.requestReceivedTimestamp >= releasedAt && e.requestReceivedTimestamp < beforeHandBack,
  );
  t.deepEqual(
    writes.map((e) => `${e.verb} ${e.requestURI} → ${e.responseStatus?.code}`),
    [],
    'no write of the replica that gave up after its release',
  );
  const releasedMs = Date.parse(releasedAt);
  const journal = await readJournal(state);
  t.deepEqual(
    journal.filter((e) => e.caller === firstIdentity && e.start >= releasedMs),
    [],
    'no cloud call of the replica that gave up after its release',
  );
  t.true(
    journal.some((e) => e.caller === healthyIdentity && e.mutating),
    'the new leader changed the cloud',
  );

  // The healthy leader stops: the replica whose provider is back takes over and reconciles.
  healthy.host.kill('SIGTERM');
  t.is(await healthy.host.exited, 0);
  await waitFor(async () => (await holder()) === firstIdentity, { what: 'the unwedged replica leads again', timeoutMs: 60_000 });
  await initNode(`${namespace}-3`);
  await core.createNamespacedService({ namespace, body: lbService('s3', namespace, [{ port: 8080 }]) });
  live.push('s3');
  await served();
  t.log(
    `SIGSTOP of the leader's provider → the other replica holds the Lease: ${(handOverMs / 1000).toFixed(1)} s ` +
      `(two failed liveness checks: up to 2 × (10 s interval + 5 s deadline), then ${RELEASE_AFTER_S} s unready, then the controllers' stop)`,
  );

  for (const s of live) await core.deleteNamespacedService({ name: s, namespace });
  await settledLbs(core, state, { namespace, clusterName: CLUSTER, live: [], gone: [...live] });
  wedged.host.kill('SIGTERM');
  t.is(await wedged.host.exited, 0);
  for (const h of hosts) t.is(await forbiddenInLog(h.logPath), 0, `no 403 in ${h.logPath} (shipped RBAC)`);
});
