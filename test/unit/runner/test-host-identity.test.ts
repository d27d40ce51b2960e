/**
 * Which identity each test host runs as (docs/deploying.md, "How the
 * manifests are tested": every test host runs as the shipped ServiceAccount
 * and fails on a 403, unless it says why not).
 * The sources under test/integration and test/helpers that start a host, in
 * process or as a process, are found by what they call, and must be exactly
 * the files of this table: a new one has to choose its row. A host on the
 * shipped identity must be started with it and with the 403 check; the
 * admin kubeconfig (testKubeConfig) is never handed to one.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

type Identity =
  /** In process: startHost with hostKubeConfig(), wrapped in checkForbiddenOnStop. */
  | 'shipped'
  /** A process (startHostProcess checks its log for 403s) given kubeconfigFile() or a file of hostKubeConfig(). */
  | 'shipped process'
  /** Another identity, for the reason given (docs/deploying.md names these). */
  | { other: string };

const HOSTS: { file: string; identity: Identity }[] = [
  { file: 'test/helpers/host.ts', identity: 'shipped' },
  { file: 'test/helpers/provider-host.ts', identity: 'shipped' },
  { file: 'test/helpers/host-process.ts', identity: 'shipped process' },
  { file: 'test/helpers/ha-host-process.ts', identity: { other: 'the spawner (spawnHost, spawnReplica): its callers pass --kubeconfig' } },
  { file: 'test/integration/invalid-responses.test.ts', identity: 'shipped' },
  { file: 'test/integration/plugin-handshake-network.test.ts', identity: 'shipped' },
  { file: 'test/integration/plugin-metrics.test.ts', identity: 'shipped' },
  { file: 'test/integration/secrets-canary.test.ts', identity: 'shipped' },
  { file: 'test/helpers/two-clouds.ts', identity: 'shipped' },
  { file: 'test/integration/service/lb-faults.test.ts', identity: 'shipped' },
  {
    file: 'test/integration/service/lb-two-clusters.test.ts',
    identity: { other: 'the shipped ServiceAccount of each cluster: base/rbac.yaml applied on the second control plane, a token minted there' },
  },
  { file: 'test/integration/health-probes.test.ts', identity: 'shipped process' },
  { file: 'test/integration/plugin-liveness.test.ts', identity: 'shipped process' },
  { file: 'test/integration/plugin-output.test.ts', identity: 'shipped process' },
  { file: 'test/integration/service/lb-crash.test.ts', identity: 'shipped process' },
  { file: 'test/integration/volume/faults.test.ts', identity: 'shipped process' },
  {
    file: 'test/integration/route/nodeipam-lost-patch.test.ts',
    identity: { other: 'the shipped ServiceAccount through an HTTP proxy (http-proxy.ts), started by startTestHost (fails on a 403)' },
  },
  {
    file: 'test/integration/volume/stale-pv-delete.test.ts',
    identity: { other: 'the shipped ServiceAccount through an HTTP proxy (http-proxy.ts), started by startTestHost (fails on a 403)' },
  },
  {
    file: 'test/integration/secure-serving-lookup.test.ts',
    identity: { other: 'a ServiceAccount without rights: the test is about lookups it may not make' },
  },
  { file: 'test/integration/secure-serving-rotation.test.ts', identity: { other: 'no host: delegated authentication alone, as the admin' } },
  {
    file: 'test/integration/ha/fencing.test.ts',
    identity: { other: 'two tokens of the shipped ServiceAccount (told apart in the audit log) plus the leader-election Role for its own Lease' },
  },
  {
    file: 'test/integration/providers/aws-tagging.test.ts',
    identity: {
      other:
        'the shipped ServiceAccount: startProviderHost, and for the fencing test host processes (kubeconfigFile) plus the leader-election Role for its own Lease',
    },
  },
  { file: 'test/integration/ha/failover.test.ts', identity: { other: 'the shipped ServiceAccount plus the leader-election Role for its own Lease' } },
  {
    file: 'test/integration/ha/shard-leases.test.ts',
    identity: { other: 'the shipped ServiceAccount plus the leader-election Role for its own shard Leases' },
  },
  {
    file: 'test/integration/ha/shard-budget.test.ts',
    identity: { other: 'the shipped ServiceAccount plus the leader-election Role for its own shard Leases' },
  },
  {
    file: 'test/integration/ha/wedged-provider.test.ts',
    identity: { other: 'the shipped ServiceAccount (one token per replica, for the audit log) plus the leader-election Role for its own Lease' },
  },
  {
    file: 'test/integration/ha/apiserver-outage.test.ts',
    identity: { other: 'base/rbac.yaml on a control plane of its own; 403s only while it restarts' },
  },
  { file: 'test/integration/hollow-nodes.test.ts', identity: { other: 'base/rbac.yaml on a control plane of its own' } },
  {
    file: 'test/integration/deploy/per-controller-credentials.test.ts',
    identity: { other: 'the per-controller ServiceAccounts (per-controller-rbac)' },
  },
  {
    file: 'test/helpers/pod-runner.ts',
    identity: { other: "the rendered Deployment's ServiceAccount and RBAC (run-manifests, run-provider-manifests)" },
  },
  { file: 'test/helpers/ccm-side.ts', identity: { other: 'the spawner of either side: its callers pass the kubeconfig (default: the admin)' } },
  {
    file: 'test/integration/parity/upstream-parity.test.ts',
    identity: { other: 'ours as the shipped ServiceAccount, failing on a 403 in its log; upstream as the admin, on a control plane of its own' },
  },
];

/** How a source starts a host, or hands a host an identity of its choosing. */
const STARTS = /\bstartHost\(|\bspawnHost\(|\bspawnReplica\(|\bstartHostProcess\(|\bstartCcm\(|\bdelegatedAuth\(|\{ kubeConfig: /;

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

test('every source that starts a test host is in the table (a new one chooses its identity)', async (t) => {
  const found: string[] = [];
  for (const file of [...(await sources('test/integration')), ...(await sources('test/helpers'))]) {
    if (STARTS.test(await readFile(join(ROOT, file), 'utf8'))) found.push(file);
  }
  t.deepEqual(found.sort(), HOSTS.map((h) => h.file).sort());
});

for (const { file, identity } of HOSTS) {
  const what = typeof identity === 'string' ? identity : `other: ${identity.other}`;
  test(`${file}: ${what}`, async (t) => {
    const text = await readFile(join(ROOT, file), 'utf8');
    if (identity === 'shipped') {
      t.regex(text, /\bhostKubeConfig\(\)/, 'the shipped ServiceAccount');
      t.regex(text, /\bcheckForbiddenOnStop\(/, 'stop() fails on a 403');
    }
    if (identity === 'shipped process') t.regex(text, /\bkubeconfigFile\(|\bhostKubeConfig\(\)/, 'a kubeconfig of the shipped ServiceAccount');
    if (typeof identity === 'string') t.notRegex(text, /kubeConfig: await testKubeConfig\(\)/, 'the admin kubeconfig is handed to no host');
    else t.true(identity.other.length > 0);
  });
}
