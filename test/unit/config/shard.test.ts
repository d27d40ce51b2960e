/**
 * Alpha sharding flags (--shard-count, --shard-index, --cloud-api-qps,
 * --cloud-api-burst; docs/design/sharding.md), table-driven: each row gives
 * flags and either the config they make or the errors; then the uid hash and
 * the shard view's filtering.
 */
import test from 'ava';
import type { V1Node } from '@kubernetes/client-node';
import { parseHostArgs } from '../../../host/config/flags.js';
import { configForShard, type HostConfig } from '../../../host/config/config.js';
import { inShard, shardOfUid, shardView } from '../../../host/kube/shard-view.js';
import type { Informer, InformerHandler } from '../../../host/kube/informer.js';

const BASE = ['--cloud-provider=foo', '--plugin-endpoint=unix:///run/ccm/foo.sock'];

const cases: { flags: string[]; shard?: object; cloudApi?: object; cloudApiBudget?: object; lease?: string; errors?: string[]; only?: number }[] = [
  { flags: [], shard: { count: 1, index: 0, fromLeases: false }, cloudApi: { qps: 0, burst: 10 }, lease: 'cloud-controller-manager' },
  { flags: ['--shard-count=2', '--shard-index=1'], shard: { count: 2, index: 1, fromLeases: false }, lease: 'cloud-controller-manager-shard-1' },
  // Membership from the shard Leases: no index (auto is the default) or auto; the Lease name is the base of the shards'.
  { flags: ['--shard-count=2'], shard: { count: 2, index: -1, fromLeases: true }, lease: 'cloud-controller-manager' },
  {
    flags: ['--shard-count=3', '--shard-index=auto', '--leader-elect-resource-name=ccm'],
    shard: { count: 3, index: -1, fromLeases: true },
    lease: 'ccm',
  },
  { flags: ['--shard-index=auto'], shard: { count: 1, index: 0, fromLeases: false }, lease: 'cloud-controller-manager' },
  { flags: ['--shard-count=1', '--shard-index=0', '--leader-elect=false'], shard: { count: 1, index: 0, fromLeases: false } },
  { flags: ['--shard-count=2', '--shard-index=1', '--leader-elect=false'], shard: { count: 2, index: 1, fromLeases: false } },
  // The static split, and the whole budget the split by live shard Leases starts from (kube/budget-share.ts).
  { flags: ['--cloud-api-qps=20', '--cloud-api-burst=8', '--shard-count=4'], cloudApi: { qps: 5, burst: 2 }, cloudApiBudget: { qps: 20, burst: 8 } },
  { flags: ['--shard-count=4', '--shard-index=0', '--leader-elect-resource-name=ccm'], lease: 'ccm-shard-0' },
  { flags: ['--cloud-api-qps=20', '--cloud-api-burst=8', '--shard-count=4', '--shard-index=3'], cloudApi: { qps: 5, burst: 2 } },
  { flags: ['--cloud-api-qps=1', '--cloud-api-burst=2', '--shard-count=4', '--shard-index=3'], cloudApi: { qps: 0.25, burst: 1 } },
  { flags: ['--shard-count=2', '--shard-index=2'], errors: ['--shard-index=2 is out of range'] },
  { flags: ['--shard-count=0'], errors: ['--shard-count="0" is invalid'] },
  { flags: ['--shard-index=-1'], errors: ['--shard-index="-1" is invalid'] },
  { flags: ['--shard-count=2', '--shard-index=any'], errors: ['--shard-index="any" is invalid: want auto or an integer of 0 or more'] },
  { flags: ['--shard-count=2', '--leader-elect=false'], errors: ['--shard-count=2 with --shard-index=auto (the default) needs --leader-elect=true'] },
  // Every problem at once.
  {
    flags: ['--shard-count=3', '--shard-index=auto', '--leader-elect=false', '--cloud-api-qps=-1'],
    errors: [
      '--shard-count=3 with --shard-index=auto (the default) needs --leader-elect=true',
      'pass --shard-index=0 to 2',
      '--cloud-api-qps="-1" is invalid',
    ],
  },
  // An invalid --leader-elect is one problem, not two.
  { flags: ['--shard-count=2', '--leader-elect=maybe'], errors: ['--leader-elect="maybe" is invalid'], only: 1 },
  { flags: ['--cloud-api-qps=-1', '--cloud-api-burst=0'], errors: ['--cloud-api-qps="-1" is invalid', '--cloud-api-burst="0" is invalid'] },
];

for (const c of cases) {
  test(`flags ${c.flags.join(' ') || '(defaults)'}`, (t) => {
    const result = parseHostArgs([...BASE, ...c.flags], {});
    if (c.errors) {
      if (!('errors' in result)) return t.fail('want errors, got a config');
      for (const want of c.errors)
        t.true(
          result.errors.some((e) => e.includes(want)),
          `${want} in ${result.errors.join(' | ')}`,
        );
      if (c.only !== undefined) t.is(result.errors.length, c.only, result.errors.join(' | '));
      return;
    }
    if (!('config' in result)) return t.fail(result.errors.join('\n'));
    if (c.shard) t.deepEqual(result.config.shard, c.shard);
    if (c.cloudApi) t.deepEqual(result.config.cloudApi, c.cloudApi);
    if (c.cloudApiBudget) t.deepEqual(result.config.cloudApiBudget, c.cloudApiBudget);
    if (c.lease) t.is(result.config.leaderElection.resourceName, c.lease);
  });
}

test('the uid hash is FNV-1a 32-bit (fixed: every replica and version must agree) and spreads uids evenly', (t) => {
  // FNV-1a 32 of "" and "a" (the published test vectors).
  t.is(shardOfUid('', 2 ** 32), 0x811c9dc5);
  t.is(shardOfUid('a', 2 ** 32), 0xe40c292c);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 4000; i++) counts[shardOfUid(`00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`, 4)]!++;
  for (const n of counts) t.true(n > 800 && n < 1200, `shard sizes ${counts.join(', ')}`);
});

/** A fake informer holding `objs`, recording handlers. */
function fakeInformer(objs: V1Node[]): { informer: Informer<V1Node>; handlers: InformerHandler<V1Node>[] } {
  const handlers: InformerHandler<V1Node>[] = [];
  const informer = {
    addEventHandler: (h: InformerHandler<V1Node>) => handlers.push(h),
    hasSynced: () => true,
    waitForSync: async () => true,
    list: () => objs,
    get: (k: string) => objs.find((o) => o.metadata!.name === k),
  } as unknown as Informer<V1Node>;
  return { informer, handlers };
}

const node = (name: string, uid: string): V1Node => ({ metadata: { name, uid } });

test("a shard's view: list, get and events hold its own objects only; a recreated name moves between shards as delete + add", (t) => {
  const uids = Array.from({ length: 40 }, (_, i) => `uid-${i}`);
  const objs = uids.map((u, i) => node(`n${i}`, u));
  const { informer, handlers } = fakeInformer(objs);
  const shard = { count: 2, index: 1 };
  const view = shardView(informer, shard);
  t.deepEqual(
    view.list().map((o) => o.metadata!.uid),
    uids.filter((u) => shardOfUid(u, 2) === 1),
  );
  const other = objs.find((o) => !inShard(o, shard))!;
  const mine = objs.find((o) => inShard(o, shard))!;
  t.is(view.get(other.metadata!.name!), undefined);
  t.is(view.get(mine.metadata!.name!), mine);

  const seen: string[] = [];
  view.addEventHandler({
    onAdd: (o) => seen.push(`add ${o.metadata!.uid}`),
    onUpdate: (_a, b) => seen.push(`update ${b.metadata!.uid}`),
    onDelete: (o) => seen.push(`delete ${o.metadata!.uid}`),
  });
  const h = handlers[0]!;
  h.onAdd!(other);
  h.onAdd!(mine);
  h.onUpdate!(mine, mine);
  h.onUpdate!(other, other);
  h.onUpdate!(mine, node(mine.metadata!.name!, other.metadata!.uid!)); // recreated: now the other shard's
  h.onUpdate!(other, node(other.metadata!.name!, mine.metadata!.uid!)); // recreated: now ours
  h.onDelete!(other);
  t.deepEqual(seen, [`add ${mine.metadata!.uid}`, `update ${mine.metadata!.uid}`, `delete ${mine.metadata!.uid}`, `add ${mine.metadata!.uid}`]);
  t.is(shardView(informer, { count: 1, index: 0 }), informer, 'no sharding: the informer itself');
});

/** A config from flags (fails the test on errors). */
function configOf(flags: string[]): HostConfig {
  const result = parseHostArgs([...BASE, ...flags], {});
  if (!('config' in result)) throw new Error(result.errors.join('\n'));
  return result.config;
}

test("a term's config under --shard-index=auto: the won shard's index and Lease; refused for a static index", (t) => {
  const rows: { flags: string[]; shard: number; want: { index: number; lease: string } }[] = [
    { flags: ['--shard-count=2'], shard: 0, want: { index: 0, lease: 'cloud-controller-manager-shard-0' } },
    { flags: ['--shard-count=4', '--leader-elect-resource-name=ccm'], shard: 3, want: { index: 3, lease: 'ccm-shard-3' } },
  ];
  for (const r of rows) {
    const base = configOf(r.flags);
    const term = configForShard(base, r.shard);
    t.deepEqual({ index: term.shard.index, lease: term.leaderElection.resourceName }, r.want, r.flags.join(' '));
    t.true(term.shard.fromLeases);
    t.is(base.shard.index, -1, 'the base config is untouched');
  }
  t.throws(() => configForShard(configOf(['--shard-count=2', '--shard-index=1']), 0), { message: /static/ });
});
