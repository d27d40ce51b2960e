/**
 * Volumes by StorageClass provisioner (issue 31 item 4): which names a
 * volume provider serves, and the validation of the providers' names (the
 * host refuses to start on any problem).
 */
import test from 'ava';
import { servedProvisioners, volumeProvisionerProblems, type VolumeProvisionerProvider } from '../../../host/volume-provisioners.js';
import type { HostConfig } from '../../../host/config/config.js';
import type { ProviderConfig } from '../../../host/config/providers.js';
import { volumeInstances, volumePreflight, volumeProviders } from '../../../host/controllers/volume/start.js';
import { ProviderRegistry, type Provider } from '../../../host/providers.js';

const p = (name: string, provisioners: string[]): VolumeProvisionerProvider => ({ name, provisioners });

test('servedProvisioners: the flag, else the declaration, else the plugin name (as before the declaration)', (t) => {
  const rows = [
    ['nothing declared, no flag', servedProvisioners([], '', 'local.ccm.dev'), ['local.ccm.dev']],
    ['nothing declared (old provider), no flag', servedProvisioners(undefined, '', 'local.ccm.dev'), ['local.ccm.dev']],
    ['nothing declared, the flag', servedProvisioners([], 'x.example.com', 'local.ccm.dev'), ['x.example.com']],
    ['declared, no flag', servedProvisioners(['a.example.com', 'b.example.com'], '', 'local.ccm.dev'), ['a.example.com', 'b.example.com']],
    ['declared, the flag replaces it', servedProvisioners(['a.example.com'], 'x.example.com', 'local.ccm.dev'), ['x.example.com']],
  ] as const;
  t.deepEqual(
    rows.map(([what, got]) => [what, got]),
    rows.map(([what, , want]) => [what, want]),
  );
});

test('volumeProvisionerProblems: every problem of a set of providers at once', (t) => {
  const rows: [string, VolumeProvisionerProvider[], string[]][] = [
    ['one provider', [p('local', ['local.ccm.dev'])], []],
    ['two providers, distinct names', [p('east', ['east.example.com']), p('west', ['west.example.com', 'w2.example.com'])], []],
    [
      'one name, two providers',
      [p('east', ['local.ccm.dev']), p('west', ['local.ccm.dev'])],
      [
        'volume provisioner "local.ccm.dev" is served by several providers (east, west); give each provisioner one provider: declare volume_provisioners in each (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)',
      ],
    ],
    [
      'a name twice in one provider, an invalid name',
      [p('x', ['a.example.com', 'a.example.com', 'Bad_Name'])],
      [
        'provider x declares volume provisioner "a.example.com" twice',
        'provider x: volume provisioner "Bad_Name" is not a valid CSI driver name: use at most 63 lowercase letters, digits, "-" and ".", starting and ending alphanumeric',
      ],
    ],
  ];
  t.deepEqual(
    rows.map(([what, providers]) => [what, volumeProvisionerProblems(providers).sort()]),
    rows.map(([what, , problems]) => [what, [...problems].sort()]),
  );
});

/** A provider whose cloud serves volumes (or not), with its plugin name and declared provisioner names. */
function volumeProvider(name: string, opts: { volumes?: boolean; pluginName?: string; declared?: string[]; isDefault?: boolean } = {}): Provider {
  return {
    name,
    isDefault: opts.isDefault ?? false,
    config: { name } as ProviderConfig,
    supervisor: {} as Provider['supervisor'],
    cloud: {
      volumes: () => ((opts.volumes ?? true) ? {} : undefined),
      info: () => ({ name: opts.pluginName ?? 'local.ccm.dev' }),
    } as unknown as Provider['cloud'],
    capabilities: () => ({ volumeProvisioners: opts.declared ?? [] }) as unknown as ReturnType<Provider['capabilities']>,
    info: () => ({}) as ReturnType<Provider['info']>,
  };
}

test('volumeProviders and volumePreflight: one provider as before the declaration; several each by its names', (t) => {
  const config = (flag = '') => ({ volumes: { provisionerName: flag } }) as HostConfig;
  const rows: [string, Provider[], string, Record<string, string[]> | { refused: string }][] = [
    ['one provider, nothing declared: its plugin name', [volumeProvider('p', { isDefault: true })], '', { p: ['local.ccm.dev'] }],
    ['one provider, the flag', [volumeProvider('p', { isDefault: true, declared: ['a.example.com'] })], 'x.example.com', { p: ['x.example.com'] }],
    // As before: a plugin name that is no driver name skips the controllers (with a reason), it does not stop the host.
    ['one provider whose plugin name is no driver name', [volumeProvider('p', { isDefault: true, pluginName: 'Local_Cloud' })], '', {}],
    [
      'two providers, one with volumes: the flag is unambiguous',
      [volumeProvider('e', { isDefault: true }), volumeProvider('w', { volumes: false })],
      'x.example.com',
      { e: ['x.example.com'] },
    ],
    [
      'two providers, distinct declarations',
      [volumeProvider('e', { isDefault: true, declared: ['e.example.com'] }), volumeProvider('w', { declared: ['w.example.com'] })],
      '',
      { e: ['e.example.com'], w: ['w.example.com'] },
    ],
    [
      'two providers declaring nothing: the same plugin name',
      [volumeProvider('e', { isDefault: true }), volumeProvider('w')],
      '',
      {
        refused:
          'the volume providers\' provisioner names conflict: volume provisioner "local.ccm.dev" is served by several providers (e, w); give each provisioner one provider: declare volume_provisioners in each (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)',
      },
    ],
    [
      'two volume providers and the flag',
      [volumeProvider('e', { isDefault: true, declared: ['e.example.com'] }), volumeProvider('w', { declared: ['w.example.com'] })],
      'x.example.com',
      {
        refused:
          "the volume providers' provisioner names conflict: --volume-provisioner-name replaces one provider's provisioner names, and 2 providers serve volumes: remove the flag and let each declare volume_provisioners (the local cloud: LOCALCLOUD_VOLUME_PROVISIONERS)",
      },
    ],
  ];
  const outcome = (providers: Provider[], flag: string) => {
    const registry = new ProviderRegistry(providers);
    try {
      volumePreflight(config(flag), registry);
    } catch (err) {
      return { refused: (err as Error).message };
    }
    return Object.fromEntries(volumeProviders(config(flag), registry).served.map((v) => [v.provider.name, v.provisioners]));
  };
  t.deepEqual(
    rows.map(([what, providers, flag]) => [what, outcome(providers, flag)]),
    rows.map(([what, , , want]) => [what, want]),
  );
});

test('volumeInstances: each queue keeps its name; provider label with several providers, provisioner label with several instances (as the Nodes and service queues)', (t) => {
  const config = { volumes: { provisionerName: '' } } as HostConfig;
  const rows: [string, Provider[], Record<string, Record<string, string>>][] = [
    ['one provider, one name: no labels (series as before)', [volumeProvider('p', { isDefault: true })], { 'p local.ccm.dev': {} }],
    [
      'one provider, two names: provisioner only',
      [volumeProvider('p', { isDefault: true, declared: ['a.example.com', 'b.example.com'] })],
      { 'p a.example.com': { provisioner: 'a.example.com' }, 'p b.example.com': { provisioner: 'b.example.com' } },
    ],
    [
      'two providers, one with volumes: provider only',
      [volumeProvider('e', { isDefault: true }), volumeProvider('w', { volumes: false })],
      { 'e local.ccm.dev': { provider: 'e' } },
    ],
    [
      'two volume providers: provider and provisioner',
      [volumeProvider('e', { isDefault: true, declared: ['e.example.com'] }), volumeProvider('w', { declared: ['w.example.com', 'x.example.com'] })],
      {
        'e e.example.com': { provider: 'e', provisioner: 'e.example.com' },
        'w w.example.com': { provider: 'w', provisioner: 'w.example.com' },
        'w x.example.com': { provider: 'w', provisioner: 'x.example.com' },
      },
    ],
  ];
  const labels = (providers: Provider[]) => {
    const registry = new ProviderRegistry(providers);
    const { served } = volumeProviders(config, registry);
    return Object.fromEntries(volumeInstances(served, providers.length > 1).map((i) => [`${i.provider.name} ${i.driver}`, i.queueLabels]));
  };
  t.deepEqual(
    rows.map(([what, providers]) => [what, labels(providers)]),
    rows.map(([what, , want]) => [what, want]),
  );
});
