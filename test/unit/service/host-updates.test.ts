/**
 * Chunked batch host updates: a chunk whose call fails as a whole fails only
 * its own Services; the UpdateLoadBalancerFailed message is upstream's.
 */
import test from 'ava';
import type { NodeRef } from '../../../host/cloud.js';
import type { HostsUpdateResult, ServiceRef } from '../../../host/cloud-load-balancers.js';
import { hostsUpdateFailedMessage, updateHostsInChunks } from '../../../host/controllers/service/host-updates.js';
import { RetryAfterError } from '../../../host/errors.js';

const svcs = Array.from({ length: 5 }, (_, i) => ({ uid: `u${i}` }) as ServiceRef);
const nodes: NodeRef[] = [];

test('a failed call fails its chunk only; done chunks keep their results and later chunks still run', async (t) => {
  const outage = new RetryAfterError('UpdateLoadBalancerHosts', 'UNAVAILABLE', 'cloud down', undefined, 30_000);
  const calls: string[][] = [];
  const lbs = {
    async updateLoadBalancerHosts(_c: string, chunk: ServiceRef[]): Promise<HostsUpdateResult[]> {
      calls.push(chunk.map((s) => s.uid));
      if (calls.length === 2) throw outage;
      return chunk.map((s) => (s.uid === 'u1' ? { uid: s.uid, error: new Error('one failed') } : { uid: s.uid }));
    },
  };
  const observed: number[] = [];
  const r = await updateHostsInChunks(lbs, 'c', svcs, nodes, 2, (_s, n) => observed.push(n));
  t.deepEqual(calls, [['u0', 'u1'], ['u2', 'u3'], ['u4']]);
  t.deepEqual(
    r.map((x) => [x.uid, x.error?.message]),
    [
      ['u0', undefined],
      ['u1', 'one failed'],
      ['u2', 'cloud down'],
      ['u3', 'cloud down'],
      ['u4', undefined],
    ],
  );
  t.is(r[2]!.error, outage, 'the call error itself (with its RetryInfo)');
  t.deepEqual(
    r.map((x) => x.callFailed ?? false),
    [false, false, true, true, false],
    'a failed entry is not a failed call',
  );
  t.deepEqual(observed, [2, 2, 1]);
});

const names = (n: number) => Array.from({ length: n }, (_, i) => `node-${String(i).padStart(2, '0')}`);

/** Upstream: "Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v". */
const messageCases: { description: string; nodes: string[]; want: string }[] = [
  {
    description: 'one node',
    nodes: ['n1'],
    want: 'Error updating load balancer with new hosts [n1] [node names limited, total number of nodes: 1], error: boom',
  },
  {
    description: "names sorted, as upstream's sets.String.List()",
    nodes: ['c', 'a', 'b'],
    want: 'Error updating load balancer with new hosts [a b c] [node names limited, total number of nodes: 3], error: boom',
  },
  {
    description: 'no nodes',
    nodes: [],
    want: 'Error updating load balancer with new hosts [] [node names limited, total number of nodes: 0], error: boom',
  },
  {
    description: 'exactly 20: all listed',
    nodes: names(20).reverse(),
    want: `Error updating load balancer with new hosts [${names(20).join(' ')}] [node names limited, total number of nodes: 20], error: boom`,
  },
  {
    description: 'over 20: the first 20 (sorted), then <k more>',
    nodes: names(25).reverse(),
    want: `Error updating load balancer with new hosts [${names(25).slice(5).join(' ')} <5 more>] [node names limited, total number of nodes: 25], error: boom`,
  },
];

for (const c of messageCases) {
  test(`hostsUpdateFailedMessage: ${c.description}`, (t) => {
    t.is(hostsUpdateFailedMessage(c.nodes, 'boom'), c.want);
  });
}
