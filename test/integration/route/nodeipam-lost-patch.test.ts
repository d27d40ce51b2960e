/**
 * Issue 29, finding 6, against the real kube-apiserver: a pod CIDR write
 * whose outcome the host never learns must not free the range it wrote.
 *
 * The host talks to the API server through an HTTP-aware proxy
 * (test/helpers/http-proxy.ts) that takes node A's PATCH whole and resets the
 * host's connection without an answer (to the host: a lost response), and
 * delivers it to the API server, which applies it, once node B has
 * registered. --cluster-cidr has room for exactly one range, so a range freed
 * on that error would go to B, and A's write landing anyway would give both
 * nodes the same range.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { startHttpProxy, type HttpProxy } from '../../helpers/http-proxy.js';
import { createTestNode, deleteScopedNodes, nodeEvents, testScope } from '../../helpers/nodes.js';
import { hostKubeConfig } from '../../helpers/service-account.js';
import { waitFor } from '../../helpers/wait.js';

// ava copies the context per test: what the after hook stops goes into a shared holder.
interface Started {
  host?: TestHost;
  proxy?: HttpProxy;
  selector?: string;
}
const test = anyTest as TestFn<{ core: CoreV1Api; started: Started }>;

/** The one range of the cluster CIDR below. */
const RANGE = '10.131.0.0/24';

test.before(async (t) => {
  t.context = { core: (await testKubeConfig()).makeApiClient(CoreV1Api), started: {} };
});

test.after.always(async (t) => {
  const { host, proxy, selector } = t.context.started;
  await host?.stop();
  await proxy?.close();
  if (selector) await deleteScopedNodes(t.context.core, selector);
});

async function podCidrs(core: CoreV1Api, name: string): Promise<string[]> {
  return (await core.readNode({ name })).spec?.podCIDRs ?? [];
}

test('a pod CIDR patch whose answer is lost keeps its range: a node registering meanwhile does not get it, and the two never share one', async (t) => {
  const { core } = t.context;
  const scope = testScope('ipamlost');
  t.context.started.selector = scope.selector;
  const dir = await mkdtemp(join(tmpdir(), 'ccm-ipam-lost-it-'));
  const proxy = await startHttpProxy(await hostKubeConfig());
  t.context.started.proxy = proxy;
  const host = await startTestHost(
    dir,
    ['--controllers=nodeipam', '--allocate-node-cidrs', `--cluster-cidr=${RANGE}`, '--node-cidr-mask-size=24', `--node-selector=${scope.selector}`],
    { kubeConfig: proxy.kubeConfig(await hostKubeConfig()) },
  );
  t.context.started.host = host;
  const a = `${scope.prefix}-a`;
  const b = `${scope.prefix}-b`;

  // Every pod CIDR write of A is held: the host sees its connection reset, the API server has not seen the write yet.
  const writesToA = new RegExp(`^/api/v1/nodes/${a}(\\?|$)`);
  proxy.hold((r) => r.method === 'PATCH' && writesToA.test(r.path));
  await createTestNode(core, a, { labels: scope.labels });
  const failed = await waitFor(async () => (await nodeEvents(core, a)).find((e) => e.reason === 'CIDRAssignmentFailed'), {
    what: `CIDRAssignmentFailed on ${a} (its write reset)`,
    log: host.logPath,
  });
  t.is(failed.type, 'Warning');
  t.true(proxy.held.length >= 1, 'the write is held by the proxy');
  t.deepEqual(await podCidrs(core, a), [], 'not applied yet');

  // B registers while A's write is in limbo: it must not get A's range.
  await createTestNode(core, b, { labels: scope.labels });
  const bFirst = await waitFor(
    async () => {
      if ((await podCidrs(core, b)).length > 0) return 'given a range';
      if ((await nodeEvents(core, b)).some((e) => e.reason === 'CIDRNotAvailable')) return 'CIDRNotAvailable';
      return undefined;
    },
    { what: `${b} given a range or told there is none`, log: host.logPath },
  );

  // A's write lands after all.
  proxy.hold(undefined);
  const delivered = await proxy.sendHeld();
  t.is(delivered[0]?.status, 200, `the API server applied A's held write: ${delivered[0]?.body}`);
  await waitFor(async () => ((await podCidrs(core, a)).length > 0 ? true : undefined), { what: `${a} has its range`, log: host.logPath });
  t.deepEqual(
    { a: await podCidrs(core, a), b: await podCidrs(core, b), bFirst },
    { a: [RANGE], b: [], bFirst: 'CIDRNotAvailable' },
    'A keeps its range; B never shares it',
  );

  // Not a range that is simply never handed out: once A is gone, B gets it.
  await core.deleteNode({ name: a });
  await waitFor(async () => ((await podCidrs(core, b)).length > 0 ? true : undefined), { what: `${b} gets the range A freed`, log: host.logPath });
  t.deepEqual(await podCidrs(core, b), [RANGE]);
});
