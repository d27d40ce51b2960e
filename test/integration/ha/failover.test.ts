/**
 * High availability with real host processes against the real API server:
 * two replicas share one Lease (own name and namespace) and one local cloud
 * (shared state dir, journaling every cloud call with the caller identity).
 * Exactly one leads; SIGKILL of the leader → the standby takes over; SIGTERM
 * of the leader → it exits 0 after releasing, and the standby takes over at
 * once. The journal shows no two identities calling the cloud at
 * overlapping times. Hand-over times are logged (measured, not asserted).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { readJournal, type JournalEntry } from '../../../plugins/local/journal.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { spawnHost, type HostProcess } from '../../helpers/ha-host-process.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const LEASE = { durationS: 6, renewS: 4, retryS: 1 };

/** Pairs of journal entries from different callers whose [start, end] intervals overlap. */
export function overlaps(entries: JournalEntry[]): [JournalEntry, JournalEntry][] {
  const out: [JournalEntry, JournalEntry][] = [];
  const sorted = [...entries].sort((a, b) => a.start - b.start);
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && sorted[j]!.start <= sorted[i]!.end; j++) {
      if (sorted[j]!.caller !== sorted[i]!.caller) out.push([sorted[i]!, sorted[j]!]);
    }
  }
  return out;
}

test('two replicas: one leads; SIGKILL and SIGTERM of the leader hand over; cloud calls never overlap between identities', async (t) => {
  t.timeout(240_000);
  const id = randomBytes(4).toString('hex');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-ha-'));
  const admin = await testKubeConfig();
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, admin.exportConfig(), { mode: 0o600 });
  const core = admin.makeApiClient(CoreV1Api);
  const coordination = admin.makeApiClient(CoordinationV1Api);
  const namespace = `ha-${id}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const state = join(dir, 'cloud');
  const label = `ha-${id}`;
  const hosts: HostProcess[] = [];
  t.teardown(async () => {
    for (const h of hosts) h.kill('SIGKILL');
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    for (const n of nodes) await core.deleteNode({ name: n }).catch(() => undefined);
  });
  const start = (n: number) => {
    const h = spawnHost(
      [
        '--cloud-provider=local',
        '--cluster-name=ha',
        `--kubeconfig=${kubeconfig}`,
        '--controllers=cloud-node',
        `--node-selector=ccm-test=${label}`,
        '--secure-port=0',
        '--leader-elect=true',
        `--leader-elect-resource-namespace=${namespace}`,
        '--leader-elect-resource-name=ccm',
        `--leader-elect-lease-duration=${LEASE.durationS}s`,
        `--leader-elect-renew-deadline=${LEASE.renewS}s`,
        `--leader-elect-retry-period=${LEASE.retryS}s`,
        `--plugin-env=LOCALCLOUD_STATE_DIR=${state}`,
        '--plugin-env=LOCALCLOUD_JOURNAL=all',
        '-v=2',
      ],
      join(dir, `host-${n}.log`),
    );
    hosts.push(h);
    return h;
  };
  const holder = async () => (await coordination.readNamespacedLease({ name: 'ccm', namespace }).catch(() => undefined))?.spec?.holderIdentity ?? '';
  const nodes: string[] = [];
  const initNode = async (name: string) => {
    nodes.push(name);
    await localcloud(state, 'instance', 'add', name, '--address', `127.0.4.${nodes.length}`);
    await core.createNode({ body: { metadata: { name, labels: { 'ccm-test': label } }, spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] } } });
    await waitFor(async () => !(await core.readNode({ name })).spec?.taints?.some((x) => x.key === UNINITIALIZED), { what: `node ${name} initialized`, timeoutMs: 90_000 });
  };

  const a = start(1);
  const b = start(2);
  const ids = new Map([[await a.identity, a], [await b.identity, b]]);
  const first = await waitFor(async () => {
    const h = await holder();
    return ids.has(h) ? h : undefined;
  }, { what: 'a leader' });
  const leader = ids.get(first)!;
  const standby = leader === a ? b : a;
  await initNode(`ha-${id}-1`);
  // Exactly one identity has called the cloud so far: the leader.
  t.deepEqual([...new Set((await readJournal(state)).map((e) => e.caller))], [first]);

  // SIGKILL: no release; the standby waits out the lease.
  const killedAt = Date.now();
  leader.kill('SIGKILL');
  const second = await standby.identity;
  await waitFor(async () => (await holder()) === second, { what: 'standby takes over after SIGKILL', timeoutMs: 60_000 });
  const killHandOverMs = Date.now() - killedAt;
  await initNode(`ha-${id}-2`);

  // A replacement replica joins as standby; SIGTERM the leader: release, exit 0.
  const c = start(3);
  const third = await c.identity;
  await new Promise((r) => setTimeout(r, 2 * LEASE.retryS * 1000));
  t.is(await holder(), second, 'the new replica stands by');
  const termAt = Date.now();
  standby.kill('SIGTERM');
  await waitFor(async () => (await holder()) === third, { what: 'hand-over after SIGTERM', timeoutMs: 60_000 });
  const termHandOverMs = Date.now() - termAt;
  t.is(await standby.exited, 0, 'a SIGTERMed leader exits 0');
  await initNode(`ha-${id}-3`);

  const journal = await readJournal(state);
  const callers = new Set(journal.map((e) => e.caller));
  t.deepEqual([...callers].sort(), [first, second, third].sort(), 'each leader in turn called the cloud');
  t.deepEqual(overlaps(journal), [], 'no two identities called the cloud at overlapping times');
  // Each identity's calls form one contiguous term, in leadership order.
  const order = journal.map((e) => e.caller).filter((c, i, all) => i === 0 || all[i - 1] !== c);
  t.deepEqual(order, [first, second, third]);
  const lease = await coordination.readNamespacedLease({ name: 'ccm', namespace });
  t.is(lease.spec?.leaseTransitions, 2);
  t.log(`hand-over after SIGKILL: ${(killHandOverMs / 1000).toFixed(1)} s (lease ${LEASE.durationS} s + 2 × retry ${LEASE.retryS} s = ${LEASE.durationS + 2 * LEASE.retryS} s)`);
  t.log(`hand-over after SIGTERM: ${(termHandOverMs / 1000).toFixed(1)} s (2 × retry = ${2 * LEASE.retryS} s)`);
  c.kill('SIGTERM');
  t.is(await c.exited, 0);
});

test('invalid leader election settings: the host refuses to start with one clear line per problem', async (t) => {
  const h = spawnHost(
    ['--cloud-provider=local', '--leader-elect=true', '--leader-elect-lease-duration=5s', '--leader-elect-renew-deadline=10s', '--leader-elect-retry-period=9s'],
    join(await mkdtemp(join(tmpdir(), 'ccm-le-bad-')), 'host.log'),
  );
  t.is(await h.exited, 2);
  const { readFile } = await import('node:fs/promises');
  const out = await readFile(h.logPath, 'utf8');
  t.regex(out, /--leader-elect-lease-duration=5s must be greater than --leader-elect-renew-deadline=10s/);
  t.regex(out, /--leader-elect-renew-deadline=10s must be greater than 1.2 × --leader-elect-retry-period=9s/);
  t.is(out.trim().split('\n').length, 2, out);
});
