/**
 * The node IPAM controller (RangeAllocator) end to end against the shared
 * real kube-apiserver: distinct ranges for many nodes, allocations kept
 * across a host restart, exhaustion and reuse of a deleted node's range, and
 * pod CIDRs written by someone else that overlap an allocated one.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { createTestNode, deleteScopedNodes, nodeEvents, testScope } from '../../helpers/nodes.js';
import { waitFor } from '../../helpers/wait.js';

const test = anyTest as TestFn<{ core: CoreV1Api; hosts: TestHost[]; scopes: string[] }>;

test.before(async (t) => {
  t.context = { core: (await testKubeConfig()).makeApiClient(CoreV1Api), hosts: [], scopes: [] };
});

test.after.always(async (t) => {
  for (const h of t.context.hosts) await h.stop();
  for (const s of t.context.scopes) await deleteScopedNodes(t.context.core, s);
});

async function podCidrs(core: CoreV1Api, selector: string): Promise<Map<string, string[]>> {
  const list = await core.listNode({ labelSelector: selector });
  return new Map(list.items.map((n: V1Node) => [n.metadata!.name!, n.spec?.podCIDRs ?? []]));
}

async function createNodes(core: CoreV1Api, names: string[], labels: Record<string, string>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < names.length) await createTestNode(core, names[next++]!, { labels });
    }),
  );
}

test.serial('50 nodes get distinct ranges of --node-cidr-mask-size; a restarted host keeps them and hands out only free ones', async (t) => {
  const { core } = t.context;
  const scope = testScope('ipam');
  t.context.scopes.push(scope.selector);
  const dir = await mkdtemp(join(tmpdir(), 'ccm-ipam-it-'));
  const flags = [
    '--controllers=nodeipam',
    '--allocate-node-cidrs',
    '--cluster-cidr=10.128.0.0/16',
    '--node-cidr-mask-size=24',
    `--node-selector=${scope.selector}`,
  ];
  let host = await startTestHost(dir, flags);
  t.context.hosts.push(host);
  const names = Array.from({ length: 50 }, (_, i) => `${scope.prefix}-${i}`);
  await createNodes(core, names, scope.labels);
  const first = await waitFor(
    async () => {
      const m = await podCidrs(core, scope.selector);
      return [...m.values()].filter((c) => c.length > 0).length === 50 ? m : undefined;
    },
    { what: '50 nodes with pod CIDRs' },
  );
  const all = [...first.values()].map((c) => c[0]!);
  t.is(new Set(all).size, 50, 'all distinct');
  t.true(all.every((c) => /^10\.128\.\d+\.0\/24$/.test(c)));
  for (const n of names.slice(0, 3)) {
    const node = await core.readNode({ name: n });
    t.is(node.spec?.podCIDR, node.spec?.podCIDRs?.[0], 'podCIDR and podCIDRs agree');
  }

  await host.stop();
  t.context.hosts.pop();
  host = await startTestHost(dir, flags);
  t.context.hosts.push(host);
  const more = Array.from({ length: 10 }, (_, i) => `${scope.prefix}-after-${i}`);
  await createNodes(core, more, scope.labels);
  const second = await waitFor(
    async () => {
      const m = await podCidrs(core, scope.selector);
      return [...m.values()].filter((c) => c.length > 0).length === 60 ? m : undefined;
    },
    { what: '60 nodes with pod CIDRs after the restart' },
  );
  for (const n of names) t.deepEqual(second.get(n), first.get(n), `${n} kept its range`);
  const all60 = [...second.values()].map((c) => c[0]!);
  t.is(new Set(all60).size, 60, 'ranges handed out after the restart are not in use');
});

test.serial(
  "exhausted range: Warning CIDRNotAvailable; a deleted node's range goes to the waiting node; overlapping pod CIDRs written by someone else are reported and never handed out",
  async (t) => {
    const { core } = t.context;
    const scope = testScope('ipams');
    t.context.scopes.push(scope.selector);
    const dir = await mkdtemp(join(tmpdir(), 'ccm-ipam-small-it-'));
    // 10.129.0.0/24 in /26 ranges: room for exactly 4 nodes.
    const host = await startTestHost(dir, [
      '--controllers=nodeipam',
      '--allocate-node-cidrs',
      '--cluster-cidr=10.129.0.0/24',
      '--node-cidr-mask-size=26',
      `--node-selector=${scope.selector}`,
    ]);
    t.context.hosts.push(host);
    const names = Array.from({ length: 4 }, (_, i) => `${scope.prefix}-${i}`);
    await createNodes(core, names, scope.labels);
    const held = await waitFor(
      async () => {
        const m = await podCidrs(core, scope.selector);
        return names.every((n) => (m.get(n) ?? []).length > 0) ? m : undefined;
      },
      { what: '4 nodes with pod CIDRs' },
    );
    t.is(new Set(names.map((n) => held.get(n)![0])).size, 4);

    const waiting = `${scope.prefix}-waiting`;
    await createTestNode(core, waiting, { labels: scope.labels });
    const ev = await waitFor(async () => (await nodeEvents(core, waiting)).find((e) => e.reason === 'CIDRNotAvailable'), {
      what: 'CIDRNotAvailable event',
    });
    t.is(ev.type, 'Warning');
    t.deepEqual((await core.readNode({ name: waiting })).spec?.podCIDRs ?? [], []);

    const freed = held.get(names[1]!)![0]!;
    await core.deleteNode({ name: names[1]! });
    const got = await waitFor(
      async () => {
        const c = (await core.readNode({ name: waiting })).spec?.podCIDRs ?? [];
        return c.length ? c : undefined;
      },
      { what: 'the waiting node gets the freed range' },
    );
    t.deepEqual(got, [freed]);

    // Someone else writes node 2's range on a new node: reported, and the range stays taken after node 2 goes.
    const intruder = `${scope.prefix}-intruder`;
    const taken = held.get(names[2]!)![0]!;
    await createTestNode(core, intruder, { labels: scope.labels, podCidrs: [taken] });
    const conflict = await waitFor(async () => (await nodeEvents(core, intruder)).find((e) => e.reason === 'PodCIDRConflict'), {
      what: 'PodCIDRConflict event',
    });
    t.regex(conflict.message ?? '', new RegExp(`overlaps the range of node\\(s\\) ${names[2]}`));
    await core.deleteNode({ name: names[2]! });
    const late = `${scope.prefix}-late`;
    await createTestNode(core, late, { labels: scope.labels });
    await waitFor(async () => (await nodeEvents(core, late)).find((e) => e.reason === 'CIDRNotAvailable'), {
      what: 'no range for the late node: the intruder still holds it',
    });
    t.deepEqual((await core.readNode({ name: late })).spec?.podCIDRs ?? [], []);
    t.deepEqual((await core.readNode({ name: intruder })).spec?.podCIDRs, [taken], 'the intruder keeps what was written');
  },
);
