/** CIDR math, the node range set and the route plan: tables plus properties (fast-check). */
import test from 'ava';
import fc from 'fast-check';
import { CidrSet } from '../../../host/controllers/nodeipam/cidr-set.js';
import { RangeAllocator } from '../../../host/controllers/nodeipam/range-allocator.js';
import { planRoutes, type PlanNode } from '../../../host/controllers/route/plan.js';
import type { CloudRoute } from '../../../host/cloud-routes.js';
import { cidrContains, cidrOverlaps, parseCidr } from '../../../host/util/cidr.js';

const c = (s: string) => parseCidr(s)!;

test('parseCidr canonicalizes and rejects non-CIDRs', (t) => {
  t.is(c('10.244.1.7/24').text, '10.244.1.0/24');
  t.is(c('fd00:10:244:0:0::1/64').text, 'fd00:10:244::/64');
  for (const bad of ['foo', '10.0.0.0/33', '10.0.0.0', '010.0.0.0/8', 'fe80::1%eth0/64', '']) t.is(parseCidr(bad), undefined, bad);
});

test('contains and overlaps', (t) => {
  t.true(cidrContains(c('10.0.0.0/16'), c('10.0.5.0/24')));
  t.false(cidrContains(c('10.0.5.0/24'), c('10.0.0.0/16')));
  t.true(cidrOverlaps(c('10.0.5.0/24'), c('10.0.0.0/16')));
  t.false(cidrOverlaps(c('10.0.0.0/24'), c('10.0.1.0/24')));
  t.false(cidrOverlaps(c('10.0.0.0/8'), c('fd00::/8')));
});

test('CidrSet hands out every range once, next-fit, then nothing; a release is reused', (t) => {
  const set = new CidrSet(c('10.0.0.0/24'), 26);
  const got = ['a', 'b', 'c', 'd'].map((n) => set.allocate(n)!.text);
  t.deepEqual(got, ['10.0.0.0/26', '10.0.0.64/26', '10.0.0.128/26', '10.0.0.192/26']);
  t.is(set.allocate('e'), undefined);
  t.is(set.release(set.indicesOf(c('10.0.0.64/26')), 'b'), 1);
  t.is(set.allocate('e')!.text, '10.0.0.64/26');
});

test('CidrSet: a range claimed by two nodes is free only when both released it', (t) => {
  const set = new CidrSet(c('10.0.0.0/24'), 26);
  const idx = set.indicesOf(c('10.0.0.0/26'));
  set.claim(idx, 'a');
  t.deepEqual(set.otherOwners(idx, 'b'), ['a']);
  set.claim(idx, 'b');
  t.is(set.release(idx, 'a'), 0);
  t.is(set.release(idx, 'b'), 1);
  t.deepEqual(set.indicesOf(c('10.0.0.0/25')), [0, 1], 'a wider CIDR covers several ranges');
  t.deepEqual(set.indicesOf(c('10.1.0.0/26')), [], 'outside');
});

test('RangeAllocator: dual-stack gives one range per family; recovery reports overlaps and outside ranges', (t) => {
  const a = new RangeAllocator([c('10.0.0.0/16'), c('fd00::/48')], [24, 64]);
  t.deepEqual(a.allocate('n1', 'u1'), ['10.0.0.0/24', 'fd00::/64']);
  t.deepEqual(a.occupy('n2', 'u2', ['10.0.0.0/24']), ['pod CIDR 10.0.0.0/24 overlaps the range of node(s) n1']);
  t.deepEqual(a.occupy('n3', 'u3', ['192.168.0.0/24']), ['pod CIDR 192.168.0.0/24 is outside --cluster-cidr 10.0.0.0/16,fd00::/48']);
  a.release('n1');
  t.deepEqual(a.allocate('n4', 'u4'), ['10.0.1.0/24', 'fd00:0:0:1::/64'], 'n2 still holds 10.0.0.0/24');
});

test('property: the allocator never hands out a range that a node holds', (t) => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 19 })), { maxLength: 200 }), (ops) => {
      const a = new RangeAllocator([c('10.0.0.0/24')], [28]); // 16 ranges
      const holders = new Map<string, string>();
      for (const [alloc, n] of ops) {
        const name = `n${n}`;
        if (alloc && !holders.has(name)) {
          const got = a.allocate(name, name);
          if (got) {
            if ([...holders.values()].includes(got[0]!)) return false;
            holders.set(name, got[0]!);
          } else if (holders.size < 16) return false; // refused while a range was free
        } else if (!alloc) {
          a.release(name);
          holders.delete(name);
        }
      }
      return true;
    }),
  );
  t.pass();
});

const node = (name: string, podCidrs: string[], createdMs = 0): PlanNode => ({ name, createdMs, podCidrs, addresses: [] });
const route = (targetNode: string, destinationCidr: string, blackhole = false): CloudRoute => ({
  name: `r-${destinationCidr}`,
  targetNode,
  targetNodeAddresses: [],
  destinationCidr,
  blackhole,
});

test('planRoutes: creates missing, keeps matching, deletes strays and blackholes inside the cluster CIDR only', (t) => {
  const cluster = [c('10.0.0.0/16')];
  const plan = planRoutes(
    [node('a', ['10.0.1.0/24']), node('b', ['10.0.2.0/24']), node('c', [])],
    [
      route('a', '10.0.1.0/24'),
      route('b', '10.0.2.0/24', true),
      route('gone', '10.0.9.0/24'),
      route('x', '192.168.0.0/24'),
      route('edge', '10.0.255.0/24'),
    ],
    cluster,
  );
  t.deepEqual(
    plan.toCreate.map((r) => r.destinationCidr),
    ['10.0.2.0/24'],
    'the blackhole route is recreated',
  );
  t.deepEqual(plan.toDelete.map((r) => r.destinationCidr).sort(), ['10.0.2.0/24', '10.0.255.0/24', '10.0.9.0/24']);
  t.false(plan.desired.has('c'), 'nodes without pod CIDRs are left alone');
});

test('planRoutes: conflicts go to the claim whose route exists, then the older node; outside CIDRs are problems', (t) => {
  const cluster = [c('10.0.0.0/16')];
  const nodes = [node('old', ['10.0.1.0/24'], 1), node('new', ['10.0.1.0/25'], 2), node('far', ['10.9.0.0/24'], 0)];
  const fresh = planRoutes(nodes, [], cluster);
  t.deepEqual(
    fresh.toCreate.map((r) => r.targetNode),
    ['old'],
  );
  t.is(fresh.problems.get('new')?.[0]?.reason, 'conflict');
  t.is(fresh.problems.get('far')?.[0]?.reason, 'outside');
  const existing = planRoutes(nodes, [route('new', '10.0.1.0/25')], cluster);
  t.deepEqual(existing.toCreate, [], 'the existing route wins; nothing is created');
  t.deepEqual(existing.toDelete, []);
  t.is(existing.problems.get('old')?.[0]?.reason, 'conflict');
});
