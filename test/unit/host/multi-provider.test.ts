/**
 * The pieces of several providers in one host that need no plugin: the
 * registry's lookups (host/providers.ts) and the merge of several providers'
 * metrics into one exposition (mergeExpositions).
 */
import test from 'ava';
import type { ProviderConfig } from '../../../host/config/providers.js';
import type { PluginSupervisor } from '../../../host/plugin/supervisor.js';
import { mergeExpositions } from '../../../host/plugin/validate-metrics.js';
import { ProviderRegistry, type Provider } from '../../../host/providers.js';

/** A provider whose plugin declared `providerName` (undefined: not started yet). */
function provider(name: string, providerName: string | undefined, isDefault = false): Provider {
  const identity = providerName === undefined ? undefined : { info: {}, capabilities: { providerName } };
  return {
    name,
    isDefault,
    config: { name } as ProviderConfig,
    supervisor: { identity } as unknown as PluginSupervisor,
    cloud: {} as Provider['cloud'],
    capabilities: () => identity!.capabilities as ReturnType<Provider['capabilities']>,
    info: () => identity!.info as ReturnType<Provider['info']>,
  };
}

const registry = new ProviderRegistry([
  provider('east', 'east', true),
  provider('west', 'west'),
  provider('twin-a', 'twin'),
  provider('twin-b', 'twin'),
  provider('cold', undefined),
]);

const OWNERS: { providerId: string | undefined; owner: string | undefined; why: string }[] = [
  { providerId: 'east://i-0123abcd', owner: 'east', why: 'scheme of a provider' },
  { providerId: 'west:///zone/i-1', owner: 'west', why: 'any path after the scheme' },
  { providerId: 'north://i-1', owner: undefined, why: 'no provider declares it' },
  { providerId: 'twin://i-1', owner: undefined, why: 'two providers declare it: neither' },
  { providerId: 'eastern://i-1', owner: undefined, why: 'a longer scheme is another scheme' },
  { providerId: 'East://i-1', owner: undefined, why: 'schemes are lowercase DNS labels' },
  { providerId: 'i-0123abcd', owner: undefined, why: 'no scheme' },
  { providerId: '', owner: undefined, why: 'empty' },
  { providerId: undefined, owner: undefined, why: 'a Node without providerID' },
];
for (const c of OWNERS) {
  test(`forProviderId(${JSON.stringify(c.providerId)}): ${c.why}`, (t) => {
    t.is(registry.forProviderId(c.providerId)?.name, c.owner);
  });
}

test('the registry lists providers in order, finds them by name, and has one default', (t) => {
  t.deepEqual(
    registry.list().map((p) => p.name),
    ['east', 'west', 'twin-a', 'twin-b', 'cold'],
  );
  t.is(registry.default.name, 'east');
  t.is(registry.get('west')?.name, 'west');
  t.is(registry.get('nope'), undefined);
});

test('a registry without exactly one default, or with a duplicate name, is refused', (t) => {
  t.throws(() => new ProviderRegistry([provider('a', 'a'), provider('b', 'b')]), { message: /exactly one default/ });
  t.throws(() => new ProviderRegistry([provider('a', 'a', true), provider('b', 'b', true)]), { message: /exactly one default/ });
  t.throws(() => new ProviderRegistry([provider('a', 'a', true), provider('a', 'b')]), { message: /unique names/ });
  t.throws(() => new ProviderRegistry([]), { message: /exactly one default/ });
});

const MERGES: { name: string; texts: string[]; want: string }[] = [
  { name: 'one provider: unchanged', texts: ['# TYPE a gauge\na{plugin="x"} 1\n'], want: '# TYPE a gauge\na{plugin="x"} 1\n' },
  { name: 'none', texts: [], want: '' },
  {
    name: 'a family both serve: HELP and TYPE once, samples together',
    texts: [
      '# HELP a A.\n# TYPE a gauge\na{provider="e"} 1\n# TYPE b counter\nb_total{provider="e"} 2\n',
      '# HELP a A again.\n# TYPE a gauge\na{provider="w"} 3\n# TYPE c gauge\nc{provider="w"} 4\n',
    ],
    want: '# HELP a A.\n# TYPE a gauge\na{provider="e"} 1\na{provider="w"} 3\n# TYPE b counter\nb_total{provider="e"} 2\n# TYPE c gauge\nc{provider="w"} 4\n',
  },
  {
    name: 'histogram samples stay with their family',
    texts: [
      '# TYPE h histogram\nh_bucket{le="1",provider="e"} 1\nh_sum{provider="e"} 1\nh_count{provider="e"} 1\n',
      '# TYPE h histogram\nh_bucket{le="1",provider="w"} 2\nh_sum{provider="w"} 2\nh_count{provider="w"} 2\n',
    ],
    want: '# TYPE h histogram\nh_bucket{le="1",provider="e"} 1\nh_sum{provider="e"} 1\nh_count{provider="e"} 1\nh_bucket{le="1",provider="w"} 2\nh_sum{provider="w"} 2\nh_count{provider="w"} 2\n',
  },
  {
    name: 'untyped samples without HELP or TYPE are their own family',
    texts: ['u{provider="e"} 1\n', 'u{provider="w"} 2\nv{provider="w"} 3\n'],
    want: 'u{provider="e"} 1\nu{provider="w"} 2\nv{provider="w"} 3\n',
  },
];
for (const c of MERGES) {
  test(`mergeExpositions: ${c.name}`, (t) => {
    t.is(mergeExpositions(c.texts), c.want);
  });
}
