/**
 * A provider's own flags and controllers on the host's command line
 * (host/config/provider-owned.ts, declaredBy): accepted at parse time for the
 * --cloud-provider that declares them, then checked against what the running
 * plugin declares in GetPluginInfo (host/start/plugin.ts undeclaredByProvider):
 * anything it does not declare is named, so the start fails in one line.
 */
import test from 'ava';
import { parseHostArgs } from '../../../host/config/flags.js';
import { undeclaredByProvider } from '../../../host/start/plugin.js';

const AWS = ['--cloud-provider=aws', '--plugin-endpoint=unix:///run/ccm/provider.sock'];
const AWS_DECLARES = { providerFlags: ['resources', 'tags', 'tagging-controller-rate-limit'], providerControllers: ['tagging'] };

const cases: { what: string; argv: string[]; plugin: typeof AWS_DECLARES | undefined; undeclared: string[] }[] = [
  { what: 'nothing of the provider', argv: AWS, plugin: AWS_DECLARES, undeclared: [] },
  {
    what: 'all declared',
    argv: [...AWS, '--controllers=*,tagging', '--tags=a=b', '--resources=instance'],
    plugin: AWS_DECLARES,
    undeclared: [],
  },
  {
    what: 'a plugin declaring nothing (an older build)',
    argv: [...AWS, '--controllers=*,tagging', '--tags=a=b'],
    plugin: { providerFlags: [], providerControllers: [] },
    undeclared: ['--tags', '--controllers=tagging'],
  },
  { what: 'no plugin info', argv: [...AWS, '--resources', 'instance'], plugin: undefined, undeclared: ['--resources'] },
];

for (const c of cases) {
  test(`undeclared by the plugin: ${c.what}`, (t) => {
    const r = parseHostArgs(c.argv);
    if (!('config' in r)) return t.fail(r.errors.join('\n'));
    t.deepEqual(undeclaredByProvider(r.config, c.plugin), c.undeclared);
  });
}

test('a spawned plugin gets the words as written, the controllers apart', (t) => {
  const r = parseHostArgs(['--cloud-provider=aws', '--plugin-path=/bin/true', '--controllers=cloud-node,tagging', '--tags', 'k=v']);
  if (!('config' in r)) return t.fail(r.errors.join('\n'));
  t.deepEqual(r.config.providerFlags, ['--tags=k=v']);
  t.deepEqual(r.config.providerControllers, ['tagging']);
  t.deepEqual(r.config.providerArgs, [], 'not on the plugin command line: Configure carries them');
});
