/**
 * --providers-config (host/config/providers.ts), table-driven: each case is
 * a providers file (and extra flags) and either the providers it yields or
 * the problems reported, every one at once, one line each. Without the flag
 * a host has exactly one provider, from today's flags.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { ProviderConfig } from '../../../host/config/config.js';
import { parseHostArgs } from '../../../host/config/flags.js';

const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'ccm-providers-'));
const file = (rel: string, content = '', mode = 0o644) => {
  const p = path.join(DIR, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content, { mode });
  return p;
};
const PLUGIN = file('plugins/ccm-provider-east.js', '');
const PLUGIN_DIR = path.dirname(PLUGIN);
const EAST_CONF = file('east.json', '{}');
const MISSING = path.join(DIR, 'missing.json');
const LOCAL_PLUGIN = file('dist/plugins/local/main.js', '');

test.after.always(() => fs.rmSync(DIR, { recursive: true, force: true }));

let n = 0;
/** Parses `--providers-config=<yaml written to a file>` plus `extra`. */
function parse(yaml: string, extra: string[] = []) {
  const f = file(`providers-${n++}.yaml`, yaml);
  return parseHostArgs([`--providers-config=${f}`, ...extra], { HOME: '/root' }, { localPluginPath: LOCAL_PLUGIN });
}

type Want = Partial<Omit<ProviderConfig, 'plugin'>> & { plugin?: string };

const VALID: { name: string; yaml: string; want: Want[]; cloudProvider: string }[] = [
  {
    name: 'exec and sidecar, the first is the default',
    yaml: `providers:
  - name: east
    pluginPath: ${PLUGIN}
    providerArgs: [--state=/tmp/east]
    pluginEnv: [LOCALCLOUD_ALLOW_SIMULATION=true, HOME]
    cloudConfig: ${EAST_CONF}
  - name: west
    pluginEndpoint: unix:///run/ccm/west.sock
`,
    want: [
      {
        name: 'east',
        plugin: PLUGIN,
        providerArgs: ['--state=/tmp/east'],
        pluginEnv: { LOCALCLOUD_ALLOW_SIMULATION: 'true', HOME: '/root' },
        cloudConfigPath: EAST_CONF,
        default: true,
      },
      { name: 'west', plugin: 'unix:///run/ccm/west.sock', cloudConfigPath: undefined, default: false },
    ],
    cloudProvider: 'east',
  },
  {
    name: 'routes: true marks the route provider',
    yaml: `providers:\n  - {name: east, pluginPath: ${PLUGIN}}\n  - {name: west, pluginEndpoint: "unix:///run/ccm/west.sock", routes: true}\n`,
    want: [
      { name: 'east', default: true, routes: false },
      { name: 'west', default: false, routes: true },
    ],
    cloudProvider: 'east',
  },
  {
    name: 'default: true picks the default; a directory holds ccm-provider-<name>',
    yaml: `providers:
  - {name: west, pluginEndpoint: "unix:///run/ccm/west.sock"}
  - {name: east, pluginPath: ${PLUGIN_DIR}, default: true, controllers: [tagging], providerFlags: [--tags=a=b]}
`,
    want: [
      { name: 'west', default: false },
      { name: 'east', plugin: PLUGIN, default: true, controllers: ['tagging'], providerFlags: ['--tags=a=b'] },
    ],
    cloudProvider: 'east',
  },
  {
    name: 'an optional cloud config that does not exist',
    yaml: `providers:\n  - {name: east, pluginPath: ${PLUGIN}, cloudConfig: ${MISSING}, cloudConfigOptional: true}\n`,
    want: [{ name: 'east', cloudConfigPath: MISSING, cloudConfigOptional: true, default: true }],
    cloudProvider: 'east',
  },
];

for (const c of VALID) {
  test(`valid: ${c.name}`, (t) => {
    const r = parse(c.yaml);
    if ('errors' in r) return t.fail(r.errors.join('\n'));
    t.is(r.config.providers.length, c.want.length);
    c.want.forEach((want, i) => {
      const got = r.config.providers[i]!;
      const { plugin, ...rest } = want;
      t.like(got, rest, `providers[${i}]`);
      if (plugin !== undefined) t.is(got.plugin.kind === 'exec' ? got.plugin.file : got.plugin.endpoint, plugin);
    });
    t.is(r.config.cloudProvider, c.cloudProvider, 'the single-provider fields are the default provider');
  });
}

const INVALID: { name: string; yaml: string; flags?: string[]; problems: RegExp[] }[] = [
  {
    name: 'every problem at once, one line each',
    yaml: `providers:
  - name: east
    pluginPath: ${PLUGIN}
    colour: blue
  - name: east
    pluginEndpoint: unix:///run/ccm/east.sock
  - name: west
  - name: north
    pluginPath: ${PLUGIN}
    pluginEndpoint: unix:///run/ccm/north.sock
`,
    problems: [
      /providers\[0\] \(east\): unknown key "colour": the known keys are name, pluginPath/,
      /providers\[1\] \(east\): duplicate name "east" \(also providers\[0\]\)/,
      /providers\[2\] \(west\): no start method: set "pluginPath" .* or "pluginEndpoint"/,
      /providers\[3\] \(north\): both "pluginPath" and "pluginEndpoint" are set/,
    ],
  },
  {
    name: 'conflicts with the single-provider flags',
    yaml: `providers:\n  - {name: east, pluginPath: ${PLUGIN}}\n`,
    flags: ['--cloud-provider=local', '--plugin-env=A=b', `--cloud-config=${EAST_CONF}`],
    problems: [/--providers-config conflicts with --cloud-provider, --cloud-config, --plugin-env: with a providers file/],
  },
  {
    name: 'values: bad name, bad endpoint, missing cloud config, reserved env, args to a sidecar, two defaults',
    yaml: `providers:
  - {name: East_1, pluginPath: ${PLUGIN}, default: true}
  - {name: west, pluginEndpoint: "tcp://1.2.3.4:5", default: true}
  - {name: south, pluginEndpoint: "unix:///run/s.sock", providerArgs: [--x], cloudConfig: ${MISSING}, pluginEnv: [CCM_PLUGIN_X=1]}
`,
    problems: [
      /providers\[0\] \(East_1\): name "East_1" is invalid: use lowercase letters/,
      /providers\[1\] \(west\): pluginEndpoint="tcp:\/\/1.2.3.4:5" is invalid: use unix:\/\//,
      /providers\[2\] \(south\): "providerArgs" has no plugin to go to/,
      /providers\[2\] \(south\): cannot read cloudConfig .*missing.json: no such file or directory/,
      /providers\[2\] \(south\): pluginEnv=CCM_PLUGIN_X: variables starting with CCM_PLUGIN_ are set by the host/,
      /2 providers are marked "default: true": mark at most one/,
    ],
  },
  {
    name: 'two route providers marked',
    yaml: `providers:\n  - {name: east, pluginPath: ${PLUGIN}, routes: true}\n  - {name: west, pluginEndpoint: "unix:///run/w.sock", routes: true}\n`,
    problems: [/2 providers are marked "routes: true": a cluster has one route provider, mark at most one/],
  },
  {
    name: 'the node ownership overrides with several providers (each declares its own)',
    yaml: `providers:\n  - {name: east, pluginPath: ${PLUGIN}}\n  - {name: west, pluginEndpoint: "unix:///run/w.sock"}\n`,
    flags: ['--node-ownership-prefixes=east://', '--node-ownership-selector=a=b'],
    problems: [
      /^--node-ownership-prefixes and --node-ownership-selector replace one provider's node ownership declarations, and --providers-config has 2: /,
    ],
  },
  {
    name: 'shapes: not a list, wrong types, unknown top-level key',
    yaml: `version: 2\nproviders:\n  - name: east\n    pluginPath: ${PLUGIN}\n    default: "yes"\n    pluginEnv: A=b\n  - just-a-string\n`,
    problems: [
      /: unknown key "version": the known keys are providers/,
      /providers\[0\] \(east\): "default" must be true or false/,
      /providers\[0\] \(east\): "pluginEnv" must be a list of strings/,
      /providers\[1\]: want a mapping/,
    ],
  },
  { name: 'an empty list', yaml: 'providers: []\n', problems: [/"providers" must be a non-empty list/] },
  { name: 'not YAML', yaml: 'providers: [\n', problems: [/is not valid YAML: /] },
  { name: 'duplicate keys are a YAML error', yaml: 'providers: []\nproviders: []\n', problems: [/is not valid YAML: duplicated mapping key/] },
  {
    name: 'too many providers',
    yaml: `providers:\n${Array.from({ length: 17 }, (_, i) => `  - {name: p${i}, pluginEndpoint: "unix:///run/p${i}.sock"}`).join('\n')}\n`,
    problems: [/17 providers, more than the limit of 16/],
  },
];

for (const c of INVALID) {
  test(`invalid: ${c.name}`, (t) => {
    const r = parse(c.yaml, c.flags);
    if (!('errors' in r)) return t.fail('accepted');
    for (const p of c.problems)
      t.true(
        r.errors.some((e) => p.test(e)),
        `${p} in:\n${r.errors.join('\n')}`,
      );
    t.true(
      r.errors.every((e) => !e.includes('\n')),
      'one line per problem',
    );
  });
}

test('a file that cannot be read is one problem naming it', (t) => {
  const r = parseHostArgs([`--providers-config=${MISSING}`]);
  t.true('errors' in r && r.errors.some((e) => e.startsWith(`cannot read --providers-config ${MISSING}: no such file or directory`)));
});

test('without --providers-config the flags make one default provider, as before', (t) => {
  const r = parseHostArgs(
    ['--cloud-provider=local', `--cloud-config=${EAST_CONF}`, '--plugin-env=A=b', '--provider-arg=--x'],
    {},
    { localPluginPath: LOCAL_PLUGIN },
  );
  if ('errors' in r) return t.fail(r.errors.join('\n'));
  t.is(r.config.providers.length, 1);
  t.like(r.config.providers[0], { name: 'local', default: true, cloudConfigPath: EAST_CONF, pluginEnv: { A: 'b' }, providerArgs: ['--x'] });
  t.is(r.config.providersConfigPath, undefined);
});
