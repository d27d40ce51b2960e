import test from 'ava';
import {
  lbBackendsOf,
  nodeOwnershipDeclarations,
  nodeOwnershipProblem,
  resolveNodeOwner,
  sharedPrefixes,
  type NodeOwner,
  type NodeOwnershipInput,
} from '../../../host/ownership/nodes.js';
import { parseLabelSelector, selectorMatches } from '../../../host/ownership/selector.js';
import { hostNodeOwnership, singleProviderOwnership } from '../../../host/ownership/host.js';
import type { Cloud } from '../../../host/cloud.js';
import type { HostConfig } from '../../../host/config/config.js';

const provider = (name: string, providerIdPrefixes: string[] = [], nodeSelector = ''): NodeOwnershipInput => ({
  name,
  providerName: name,
  providerIdPrefixes,
  nodeSelector,
});
const node = (providerID?: string, labels: Record<string, string> = {}) => ({ spec: { providerID }, metadata: { labels } });
const owned = (provider: string): NodeOwner => ({ kind: 'owned', provider });
const none: NodeOwner = { kind: 'none' };
const conflict = (...providers: string[]): NodeOwner => ({ kind: 'conflict', providers });

const cases: { name: string; providers: NodeOwnershipInput[]; node: ReturnType<typeof node>; want: NodeOwner }[] = [
  // Prefix matching.
  { name: 'one provider, nothing declared: its <name>:// node', providers: [provider('local')], node: node('local://a'), want: owned('local') },
  { name: "one provider, nothing declared: another provider's node", providers: [provider('local')], node: node('other://x'), want: none },
  { name: 'a prefix is matched from the start only', providers: [provider('local')], node: node('xlocal://a'), want: none },
  { name: 'a scheme without :// is not the prefix', providers: [provider('aws')], node: node('aws:x'), want: none },
  {
    name: 'two declared prefixes: the second one',
    providers: [provider('hcloud', ['hcloud://', 'hrobot://'])],
    node: node('hrobot://123'),
    want: owned('hcloud'),
  },
  {
    name: 'declared prefixes replace the default',
    providers: [provider('hcloud', ['hrobot://'])],
    node: node('hcloud://1'),
    want: none,
  },
  {
    name: 'two providers, each its own prefix',
    providers: [provider('aws'), provider('local')],
    node: node('aws:///us-east-1a/i-1'),
    want: owned('aws'),
  },
  {
    name: 'a node with a providerID ignores selectors',
    providers: [provider('aws', [], 'cloud=aws'), provider('local', [], 'cloud=local')],
    node: node('local://a', { cloud: 'aws' }),
    want: owned('local'),
  },
  // Nodes without a providerID.
  { name: 'one provider, no selector: every node without providerID (today)', providers: [provider('local')], node: node(), want: owned('local') },
  {
    name: 'one provider, empty providerID string counts as none',
    providers: [provider('local')],
    node: node(''),
    want: owned('local'),
  },
  {
    name: 'one provider with a selector: a matching node',
    providers: [provider('local', [], 'ccm.dev/cloud=local')],
    node: node(undefined, { 'ccm.dev/cloud': 'local' }),
    want: owned('local'),
  },
  {
    name: 'one provider with a selector: a node that does not match',
    providers: [provider('local', [], 'ccm.dev/cloud=local')],
    node: node(undefined, { 'ccm.dev/cloud': 'other' }),
    want: none,
  },
  { name: 'several providers, no selectors: no claim', providers: [provider('aws'), provider('local')], node: node(), want: none },
  {
    name: 'several providers: the one whose selector matches',
    providers: [provider('aws', [], 'topology.kubernetes.io/platform=aws'), provider('local')],
    node: node(undefined, { 'topology.kubernetes.io/platform': 'aws' }),
    want: owned('aws'),
  },
  {
    name: 'several providers: set-based selectors',
    providers: [provider('aws', [], 'platform in (aws,eks)'), provider('local', [], 'platform notin (aws,eks),!managed')],
    node: node(undefined, { platform: 'metal' }),
    want: owned('local'),
  },
  // Two claimants.
  {
    name: 'two providers declaring the same prefix: conflict',
    providers: [provider('b', ['shared://']), provider('a', ['shared://'])],
    node: node('shared://1'),
    want: conflict('a', 'b'),
  },
  {
    name: 'two selectors matching one node: conflict',
    providers: [provider('aws', [], 'zone'), provider('local', [], 'zone=z1')],
    node: node(undefined, { zone: 'z1' }),
    want: conflict('aws', 'local'),
  },
  {
    name: 'two selectors, the node matches one: no conflict',
    providers: [provider('aws', [], 'zone'), provider('local', [], 'zone=z1')],
    node: node(undefined, { zone: 'z2' }),
    want: owned('aws'),
  },
];

for (const c of cases) {
  test(`resolveNodeOwner: ${c.name}`, (t) => {
    t.deepEqual(resolveNodeOwner(c.node, nodeOwnershipDeclarations(c.providers)), c.want);
  });
}

const invalid: { name: string; providers: NodeOwnershipInput[]; says: RegExp }[] = [
  { name: 'a prefix without ://', providers: [provider('aws', ['aws'])], says: /provider aws: providerID prefix "aws" is not/ },
  { name: 'a prefix with a path', providers: [provider('aws', ['aws:///us-east-1a/'])], says: /"aws:\/\/\/us-east-1a\/"/ },
  { name: 'an upper-case prefix', providers: [provider('aws', ['AWS://'])], says: /"AWS:\/\/"/ },
  { name: 'a bad selector', providers: [provider('local', [], 'a in b')], says: /provider local: node selector "a in b" is invalid/ },
  {
    name: 'every problem at once',
    providers: [provider('a', ['a']), provider('b', [], '=x')],
    says: /provider a: .*; provider b: /,
  },
];
for (const c of invalid) {
  test(`nodeOwnershipDeclarations refuses ${c.name}`, (t) => {
    t.throws(() => nodeOwnershipDeclarations(c.providers), { message: c.says });
  });
}

test('nodeOwnershipProblem: a plugin declaring nothing, or good declarations, has none', (t) => {
  t.is(nodeOwnershipProblem({ providerName: 'local' }), undefined);
  t.is(nodeOwnershipProblem({ providerName: 'local', providerIdPrefixes: ['local://', 'metal://'], nodeSelector: 'a=b' }), undefined);
  t.regex(nodeOwnershipProblem({ providerName: 'local', providerIdPrefixes: ['local'] }) ?? '', /not "<scheme>:\/\/"/);
});

test('sharedPrefixes names the prefixes two providers declare', (t) => {
  const d = nodeOwnershipDeclarations([provider('a', ['x://', 'a://']), provider('b', ['x://']), provider('c')]);
  t.deepEqual([...sharedPrefixes(d)], [['x://', ['a', 'b']]]);
});

const selectors: { selector: string; labels: Record<string, string>; want: boolean }[] = [
  { selector: '', labels: {}, want: true },
  { selector: 'a=b', labels: { a: 'b' }, want: true },
  { selector: 'a==b', labels: { a: 'b' }, want: true },
  { selector: 'a=b', labels: { a: 'c' }, want: false },
  { selector: 'a=b', labels: {}, want: false },
  { selector: 'a!=b', labels: {}, want: true },
  { selector: 'a!=b', labels: { a: 'b' }, want: false },
  { selector: 'a', labels: { a: '' }, want: true },
  { selector: '!a', labels: { a: '' }, want: false },
  { selector: 'a in (x, y)', labels: { a: 'y' }, want: true },
  { selector: 'a notin (x,y)', labels: { a: 'z' }, want: true },
  { selector: 'a notin (x,y)', labels: {}, want: true },
  { selector: 'a=b,c', labels: { a: 'b' }, want: false },
  { selector: 'example.com/role=edge, !example.com/gpu', labels: { 'example.com/role': 'edge' }, want: true },
  { selector: 'a=', labels: { a: '' }, want: true },
];
for (const c of selectors) {
  test(`selector ${JSON.stringify(c.selector)} on ${JSON.stringify(c.labels)}: ${c.want}`, (t) => {
    t.is(selectorMatches(parseLabelSelector(c.selector), c.labels), c.want);
  });
}

for (const bad of ['a in b', '=x', 'a=b=c', 'a in (b', '!', 'a b', 'a in (b c)']) {
  test(`selector ${JSON.stringify(bad)} is refused`, (t) => {
    t.throws(() => parseLabelSelector(bad));
  });
}

test("hostNodeOwnership: each provider's declarations, each field replaced by its override when set; recomputed when an answer changes", (t) => {
  const info = { name: 'x', vendorVersion: '1', hasClusterId: true, providerIdPrefixes: [] as string[], nodeSelector: '' };
  const cloud = (providerName: string, over: Partial<typeof info> = {}) => ({ info: () => ({ ...info, providerName, ...over }) }) as unknown as Cloud;
  const aws = cloud('aws', { nodeSelector: 'cloud=aws' });
  let localSelector = 'cloud=local';
  const local = { info: () => ({ ...info, providerName: 'local', nodeSelector: localSelector }) } as unknown as Cloud;
  const owners = hostNodeOwnership([
    { name: () => 'aws', cloud: aws, override: { prefixes: ['aws://', 'eks://'] } },
    { name: () => 'local', cloud: local, override: {} },
  ]);
  const first = owners.declarations();
  t.deepEqual(
    first.map((d) => [d.name, d.prefixes, d.unidentified.kind === 'selector' ? d.unidentified.selector.text : d.unidentified.kind]),
    [
      ['aws', ['aws://', 'eks://'], 'cloud=aws'],
      ['local', ['local://'], 'cloud=local'],
    ],
  );
  t.is(owners.declarations(), first, 'the same answers give the same list');
  t.deepEqual(resolveNodeOwner(node('eks://1'), first), owned('aws'));
  localSelector = '';
  t.deepEqual(owners.declarations()[1]!.unidentified, { kind: 'none' }, 'several providers: an empty selector claims nothing');
  const single = singleProviderOwnership({ nodeOwnership: { selector: 'pool=a' } } as unknown as HostConfig, cloud('local'));
  t.deepEqual(resolveNodeOwner(node(undefined, { pool: 'b' }), single.declarations()), none, "the operator's selector replaces 'every Node'");
  t.deepEqual(resolveNodeOwner(node(undefined, { pool: 'a' }), single.declarations()), owned('local'));
});

/** lbBackendsOf: which eligible Nodes each load-balancer provider gets. */
const backendCases: { name: string; providers: NodeOwnershipInput[]; want: Record<string, string[]> }[] = [
  {
    name: "one provider: every eligible Node, its own, another cloud's and unlabelled alike (as upstream)",
    providers: [provider('aws', [], 'cloud=aws')],
    want: { aws: ['aws-1', 'aws-sel', 'local-1', 'local-twin', 'local-sel', 'gce-1', 'bare'] },
  },
  {
    name: "two providers: each its own Nodes and those nobody owns, never the other's",
    providers: [provider('aws', [], 'cloud=aws'), provider('local', [], 'cloud=local')],
    want: {
      aws: ['aws-1', 'aws-sel', 'gce-1', 'bare'],
      local: ['local-1', 'local-twin', 'local-sel', 'gce-1', 'bare'],
    },
  },
  {
    name: "two providers, neither with a selector: Nodes without providerID are nobody's, so both get them",
    providers: [provider('aws'), provider('local')],
    want: {
      aws: ['aws-1', 'gce-1', 'aws-sel', 'local-sel', 'bare'],
      local: ['local-1', 'local-twin', 'gce-1', 'aws-sel', 'local-sel', 'bare'],
    },
  },
];
const eligible = [
  { name: 'aws-1', n: node('aws:///us-east-1a/i-0abc') },
  { name: 'aws-sel', n: node(undefined, { cloud: 'aws' }) },
  { name: 'local-1', n: node('local://i-1') },
  // The case the rule is for: another cloud's Node whose providerID ends in an AWS instance id.
  { name: 'local-twin', n: node('local://i-0abc') },
  { name: 'local-sel', n: node(undefined, { cloud: 'local' }) },
  { name: 'gce-1', n: node('gce://p/z/vm-1') },
  { name: 'bare', n: node(undefined, { cloud: 'onprem' }) },
].map((e) => ({ ...e.n, name: e.name }));
for (const c of backendCases) {
  test(`lbBackendsOf: ${c.name}`, (t) => {
    const declarations = nodeOwnershipDeclarations(c.providers);
    const got = Object.fromEntries(c.providers.map((p) => [p.name, lbBackendsOf(eligible, p.name, declarations).map((n) => n.name)]));
    t.deepEqual(
      Object.fromEntries(Object.entries(got).map(([k, v]) => [k, [...v].sort()])),
      Object.fromEntries(Object.entries(c.want).map(([k, v]) => [k, [...v].sort()])),
    );
  });
}

test('lbBackendsOf: a Node two providers claim goes to neither', (t) => {
  const declarations = nodeOwnershipDeclarations([provider('aws', [], 'pool=x'), provider('local', [], 'pool=x')]);
  const claimed = { ...node(undefined, { pool: 'x' }), name: 'claimed' };
  t.deepEqual(
    ['aws', 'local'].map((p) => lbBackendsOf([claimed], p, declarations).length),
    [0, 0],
  );
});
