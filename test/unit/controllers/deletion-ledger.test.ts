/**
 * The node deletion brake's record on a Lease (deletion-ledger.ts) with a
 * fake coordination API: created on the first write, replaced at the
 * resourceVersion read, other annotations kept, other brakes' expired
 * records dropped, and an unreadable record refused (the brake then deletes
 * nothing).
 */
import test from 'ava';
import type { V1Lease } from '@kubernetes/client-node';
import type { CoordinationV1Api } from '../../../host/kube/api.js';
import { ApiError } from '../../../host/kube/rest.js';
import { LeaseDeletionLedger } from '../../../host/controllers/lifecycle/deletion-ledger.js';
import { DeletionBrake } from '../../../host/controllers/lifecycle/deletion-brake.js';

const PREFIX = 'lifecycle.ccm.dev/node-deletions-';
const MIN = 60_000;

/** A Lease store with resourceVersion checks, as the API server does them. */
function fakeApi(initial?: V1Lease) {
  let lease = initial ? structuredClone(initial) : undefined;
  let rv = 1;
  const api = {
    async readNamespacedLease() {
      if (!lease) throw new ApiError(404, {}, 'GET', '/leases');
      return structuredClone(lease);
    },
    async createNamespacedLease(p: { body: V1Lease }) {
      if (lease) throw new ApiError(409, {}, 'POST', '/leases');
      lease = { ...structuredClone(p.body), metadata: { ...p.body.metadata, resourceVersion: String(++rv) } };
      return lease;
    },
    async replaceNamespacedLease(p: { body: V1Lease }) {
      if (p.body.metadata?.resourceVersion !== lease?.metadata?.resourceVersion) throw new ApiError(409, {}, 'PUT', '/leases');
      lease = { ...structuredClone(p.body), metadata: { ...p.body.metadata, resourceVersion: String(++rv) } };
      return lease;
    },
  } as unknown as CoordinationV1Api;
  return { api, get: () => lease };
}

const ledger = (api: CoordinationV1Api, now: () => number, selector = 'ccm-test=a') =>
  new LeaseDeletionLedger(
    api,
    'kube-system',
    'cloud-controller-manager-node-deletions',
    { lock: 'kube-system/ccm', nodeSelector: selector },
    5 * MIN,
    now,
  );

test('first write creates the Lease; later ones replace it; two brakes keep their own counts', async (t) => {
  const f = fakeApi();
  let now = 10 * MIN;
  const a = new DeletionBrake(
    { count: 3 },
    5 * MIN,
    ledger(f.api, () => now),
    () => now,
  );
  const b = new DeletionBrake(
    { count: 3 },
    5 * MIN,
    ledger(f.api, () => now, 'ccm-test=b'),
    () => now,
  );
  t.is((await a.reserve(2, 10)).granted, 2);
  now += 1000;
  t.is((await a.reserve(2, 10)).granted, 1);
  t.is((await b.reserve(3, 10)).granted, 3, "another node selector's brake has its own count");
  const keys = Object.keys(f.get()!.metadata!.annotations!).filter((k) => k.startsWith(PREFIX));
  t.is(keys.length, 2);
  // A new process reading the same Lease sees the count.
  const again = new DeletionBrake(
    { count: 3 },
    5 * MIN,
    ledger(f.api, () => now),
    () => now,
  );
  t.is((await again.allowance(10)).granted, 0);
});

test("writes keep the Lease's other annotations and drop other brakes' records past their own window", async (t) => {
  const now = 100 * MIN;
  const old = JSON.stringify({ for: 'x', windowMs: MIN, deletions: [{ at: new Date(now - 2 * MIN).toISOString(), count: 4 }] });
  const live = JSON.stringify({ for: 'y', windowMs: 10 * MIN, deletions: [{ at: new Date(now - 2 * MIN).toISOString(), count: 1 }] });
  const f = fakeApi({
    metadata: {
      name: 'cloud-controller-manager-node-deletions',
      resourceVersion: '1',
      annotations: { team: 'infra', [`${PREFIX}old`]: old, [`${PREFIX}live`]: live },
    },
    spec: {},
  });
  const brake = new DeletionBrake(
    { count: 3 },
    5 * MIN,
    ledger(f.api, () => now),
    () => now,
  );
  await brake.reserve(1, 10);
  const ann = f.get()!.metadata!.annotations!;
  t.is(ann.team, 'infra');
  t.is(ann[`${PREFIX}live`], live, 'still inside its window');
  t.false(`${PREFIX}old` in ann, 'past its window');
});

const unreadable: [string, string][] = [
  ['not JSON', '{'],
  ['no deletions list', '{"for":"x"}'],
  ['a bad time', '{"deletions":[{"at":"yesterday","count":1}]}'],
  ['a negative count', '{"deletions":[{"at":"2026-01-01T00:00:00Z","count":-3}]}'],
];
for (const [what, value] of unreadable) {
  test(`an unreadable record (${what}) is refused, so nothing is reserved`, async (t) => {
    const l = ledger(fakeApi().api, () => 0);
    const key = (l as unknown as { key: string }).key;
    const f = fakeApi({ metadata: { name: 'x', resourceVersion: '1', annotations: { [key]: value } }, spec: {} });
    const brake = new DeletionBrake(
      { count: 3 },
      5 * MIN,
      ledger(f.api, () => 0),
      () => 0,
    );
    await t.throwsAsync(brake.reserve(1, 10), { message: /node deletion record .* is unreadable/ });
  });
}

test("with several providers each provider's brake has its own count; without a provider the key is the one-provider host's", async (t) => {
  const f = fakeApi();
  const now = () => 10 * MIN;
  const of = (provider?: string) =>
    new LeaseDeletionLedger(
      f.api,
      'kube-system',
      'cloud-controller-manager-node-deletions',
      { lock: 'kube-system/ccm', nodeSelector: 'ccm-test=a', ...(provider === undefined ? {} : { provider }) },
      5 * MIN,
      now,
    );
  const east = new DeletionBrake({ count: 2 }, 5 * MIN, of('east'), now);
  const west = new DeletionBrake({ count: 2 }, 5 * MIN, of('west'), now);
  t.is((await east.reserve(2, 10)).granted, 2);
  t.is((await west.reserve(2, 10)).granted, 2, "east's deletions do not use up west's");
  t.is((await east.allowance(10)).granted, 0);
  t.not(of('east').describe(), of().describe());
  t.is(of().describe(), ledger(f.api, now).describe(), 'one provider: the key of before');
});
