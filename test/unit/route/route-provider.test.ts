/**
 * One route provider per cluster (issue 31 item 4): which provider of a host
 * routes, and the configurations the host refuses at start-up (one line).
 * Two providers marked `routes: true` are refused by the file's validation
 * (test/unit/config/providers-config.test.ts); two that implement routes and
 * none marked also by the integration test node-owners.test.ts.
 */
import test from 'ava';
import type { ProviderConfig } from '../../../host/config/providers.js';
import { routeProvider } from '../../../host/controllers/route/start.js';
import { ProviderRegistry, type Provider } from '../../../host/providers.js';

/** A provider that implements routes or not, marked `routes: true` or not. */
function provider(name: string, routes: boolean, marked = false, isDefault = false): Provider {
  return {
    name,
    isDefault,
    config: { name, routes: marked } as ProviderConfig,
    supervisor: {} as Provider['supervisor'],
    cloud: { routes: () => (routes ? {} : undefined) } as unknown as Provider['cloud'],
    capabilities: () => ({}) as ReturnType<Provider['capabilities']>,
    info: () => ({}) as ReturnType<Provider['info']>,
  };
}

const rows: [string, Provider[], string | { refused: string }][] = [
  ['one provider with routes', [provider('only', true, false, true)], 'only'],
  ['one provider without routes', [provider('only', false, false, true)], 'none'],
  ['two providers, one with routes', [provider('east', false, false, true), provider('west', true)], 'west'],
  ['two with routes, one marked', [provider('east', true, false, true), provider('west', true, true)], 'west'],
  [
    'two with routes, none marked',
    [provider('east', true, false, true), provider('west', true)],
    {
      refused:
        'providers east and west of --providers-config both implement routes, and a cluster has one route provider: mark one "routes: true" in the file, or set --configure-cloud-routes=false',
    },
  ],
  [
    'the marked provider does not implement routes',
    [provider('east', true, false, true), provider('west', false, true)],
    {
      refused:
        'provider west of --providers-config is marked "routes: true" but does not implement routes: mark the provider that does, or set --configure-cloud-routes=false',
    },
  ],
];

test('routeProvider: the one route provider of a host, or a one-line refusal', (t) => {
  const outcome = (providers: Provider[]) => {
    try {
      return routeProvider(new ProviderRegistry(providers))?.name ?? 'none';
    } catch (err) {
      return { refused: (err as Error).message };
    }
  };
  t.deepEqual(
    rows.map(([what, providers]) => [what, outcome(providers)]),
    rows.map(([what, , want]) => [what, want]),
  );
});
