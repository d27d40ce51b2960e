/** Chunked batch host updates: a chunk whose call fails as a whole fails only its own Services. */
import test from 'ava';
import type { NodeRef } from '../../../host/cloud.js';
import type { HostsUpdateResult, ServiceRef } from '../../../host/cloud-load-balancers.js';
import { updateHostsInChunks } from '../../../host/controllers/service/host-updates.js';
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
  t.deepEqual(r.map((x) => [x.uid, x.error?.message]), [['u0', undefined], ['u1', 'one failed'], ['u2', 'cloud down'], ['u3', 'cloud down'], ['u4', undefined]]);
  t.is(r[2]!.error, outage, 'the call error itself (with its RetryInfo)');
  t.deepEqual(r.map((x) => x.callFailed ?? false), [false, false, true, true, false], 'a failed entry is not a failed call');
  t.deepEqual(observed, [2, 2, 1]);
});
