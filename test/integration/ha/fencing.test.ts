/**
 * Fenced writes with real host processes against the real API server: two
 * replicas (the shipped ServiceAccount, one token each, so the audit log
 * tells them apart by credential id) share one Lease and one local cloud.
 * The leader is SIGSTOPped while its EnsureLoadBalancer is answering slowly
 * (the cloud already made the load balancer; the reply is delayed), so it
 * has a Service status write pending; it stays stopped past its lease, the
 * standby takes over and writes the status itself; then the old leader is
 * SIGCONTed. Its pending write must not reach the API server: the audit log
 * shows no write of the old leader's token after the new leader's first
 * write, the old leader's log shows the write held back, and it exits 1
 * (lost lease) on its own.
 */
import test from 'ava';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readJournal } from '../../../plugins/local/journal.js';
import { testAuditLogPath } from '../../controlplane/shared.js';
import { auditLogFromNow, credentialIdOf, tokenCredentialId, type AuditEvent } from '../../helpers/audit.js';
import { forbiddenInLog } from '../../helpers/forbidden.js';
import { leaderReplicas } from '../../helpers/ha-host-process.js';
import { cloudLbs, lbService } from '../../helpers/lb.js';
import { localcloud, sharedCloudFlags } from '../../helpers/localcloud.js';
import { serviceAccountKubeConfig } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';
import { firstLeader, leaseHolder } from './ha-checks.js';

const CLUSTER = 'fencing';
/** How long the cloud holds back EnsureLoadBalancer's answer after making the load balancer: the leader is stopped in that window. */
const REPLY_DELAY_MS = 5_000;
/** What a write the fence held back says (rest.ts FencedWriteError, app.ts). */
const FENCED = /not sent: this replica does not hold a fresh leader lease/;

test('a leader SIGSTOPped past its lease with a status write pending: after SIGCONT no write of it reaches the API server after its successor’s first, and it exits 1', async (t) => {
  t.timeout(240_000);
  // Namespace fence-<id>: the Lease ccm; the teardown also SIGCONTs a replica left stopped.
  const { dir, admin, core, coordination, namespace, state, hosts, spawnReplica } = await leaderReplicas(t, {
    prefix: 'fence',
    clusterName: CLUSTER,
  });
  const audit = await auditLogFromNow(await testAuditLogPath());
  // Two tokens of the shipped ServiceAccount: the same RBAC, told apart in the audit log.
  const start = async (n: number) => {
    const kc = await serviceAccountKubeConfig(admin);
    const kubeconfig = join(dir, `kubeconfig-${n}`);
    await writeFile(kubeconfig, kc.exportConfig(), { mode: 0o600 });
    const h = spawnReplica(n, [
      `--kubeconfig=${kubeconfig}`,
      '--controllers=service',
      '--secure-port=0',
      ...sharedCloudFlags(state, '127.0.63.0/24'),
    ]);
    return { h, credential: tokenCredentialId(kc.getCurrentUser()!.token!) };
  };
  const holder = leaseHolder(coordination, namespace);
  const replicas = await Promise.all([start(1), start(2)]);
  const byIdentity = new Map(await Promise.all(replicas.map(async (r) => [await r.h.identity, r] as const)));
  const oldIdentity = await firstLeader(byIdentity, holder);
  const old = byIdentity.get(oldIdentity)!;
  const [newIdentity, next] = [...byIdentity].find(([identity]) => identity !== oldIdentity)!;
  const writesBy = (events: AuditEvent[], credential: string) => events.filter((e) => credentialIdOf(e) === credential);

  // The leader makes the load balancer; the cloud holds back its answer. Stopped in that window, the
  // leader has the Service's status write still to do.
  await localcloud(state, 'knobs', 'set', `replyLatencyMs=${REPLY_DELAY_MS}`);
  const svc = await core.createNamespacedService({ namespace, body: lbService('web', namespace, [{ port: 8080 }]) });
  await waitFor(async () => (await cloudLbs(state)).some((l) => l.serviceUid === svc.metadata!.uid), {
    what: 'the leader made the load balancer (its answer is held back)',
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  old.h.kill('SIGSTOP');
  const stoppedAt = Date.now();
  await localcloud(state, 'knobs', 'unset', 'replyLatencyMs');
  t.true(writesBy(await audit.events(), old.credential).length > 0, 'the old leader wrote before (its token is in the audit log)');

  // Past the lease: the standby takes over and writes the status itself.
  await waitFor(async () => (await holder()) === newIdentity, { what: 'the standby takes over', timeoutMs: 60_000 });
  const takeOverMs = Date.now() - stoppedAt;
  const firstNew = await waitFor(
    async () => {
      const s = await core.readNamespacedService({ name: 'web', namespace });
      const written = writesBy(await audit.events(), next.credential);
      return s.status?.loadBalancer?.ingress?.[0]?.ip && written.length > 0 ? written[0]! : undefined;
    },
    { what: 'the new leader wrote the Service status', timeoutMs: 60_000, log: next.h.logPath },
  );

  const resumedAt = Date.now();
  old.h.kill('SIGCONT');
  t.is(await old.h.exited, 1, 'the old leader exits 1 (lease lost)');
  const exitMs = Date.now() - resumedAt;

  const events = await audit.events();
  const late = writesBy(events, old.credential).filter((e) => e.requestReceivedTimestamp >= firstNew.requestReceivedTimestamp);
  t.deepEqual(
    late.map((e) => `${e.verb} ${e.requestURI} → ${e.responseStatus?.code}`),
    [],
    'no write of the old leader reaches the API server after the new leader’s first',
  );
  const oldLog = await readFile(old.h.logPath, 'utf8');
  t.regex(oldLog, FENCED, 'the old leader had a write pending, and it was held back');
  t.regex(oldLog, /leaderelection lost/);
  // The cloud side, fenced since before this change: no mutation of the old leader started after the new leader's first.
  const journal = await readJournal(state);
  const firstNewMutation = Math.min(...journal.filter((e) => e.caller === newIdentity && e.mutating).map((e) => e.start));
  t.deepEqual(
    journal.filter((e) => e.caller === oldIdentity && e.mutating && e.start >= firstNewMutation),
    [],
  );
  t.log(
    `stopped → standby holds the lease: ${(takeOverMs / 1000).toFixed(1)} s; SIGCONT → old leader exited: ${(exitMs / 1000).toFixed(1)} s; ` +
      `old leader's writes held back: ${oldLog.split('\n').filter((l) => FENCED.test(l)).length} log lines`,
  );

  // The new leader removes the load balancer and its finalizer; then it stops cleanly.
  await core.deleteNamespacedService({ name: 'web', namespace });
  await waitFor(async () => (await cloudLbs(state)).every((l) => l.serviceUid !== svc.metadata!.uid), { what: 'load balancer deleted' });
  next.h.kill('SIGTERM');
  t.is(await next.h.exited, 0);
  for (const h of hosts) t.is(await forbiddenInLog(h.logPath), 0, `no 403 in ${h.logPath} (shipped RBAC)`);
});
