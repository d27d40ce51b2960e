/**
 * Two providers in one host (--providers-config), against the real API
 * server: two local clouds with different provider names, "east" spawned by
 * the host (exec mode, the default provider) and "west" a sidecar the host
 * dials. Each is supervised on its own: both handshaken and configured,
 * /readyz reports each by name, the plugin metrics carry a provider label,
 * and a provider killed with SIGKILL is restarted (exec) or redialled
 * (sidecar) with backoff while the other stays ready.
 */
import test from 'ava';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PluginState } from '../../../host/plugin/supervisor.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from '../../helpers/localcloud.js';
import { testScope } from '../../helpers/nodes.js';
import { scrape } from '../../helpers/scraper.js';
import { startProvidersHost, startTwoLocalClouds, type TwoLocalClouds } from '../../helpers/two-clouds.js';
import { waitFor } from '../../helpers/wait.js';

const scope = testScope('multiprov');
const FLAGS = ['--cluster-name=multiprov', '--controllers=cloud-node', `--node-selector=${scope.selector}`];

let setup: TwoLocalClouds | undefined;

test.before(async () => {
  setup = await startTwoLocalClouds({
    tmpPrefix: 'ccm-multiprov-',
    flags: FLAGS,
    eastEnv: { LOCALCLOUD_FORWARD: 'false' },
    westEnv: { LOCALCLOUD_FORWARD: 'false' },
  });
});

test.after.always(async () => {
  await setup?.stop();
});

const readyz = () => scrape(setup!.host.port, '/readyz?verbose');
const metrics = async () => (await scrape(setup!.host.port, '/metrics')).body;

/** Records every state the named provider's supervisor enters from now on. */
function watchStates(name: string): { states: PluginState[]; stop(): void } {
  const supervisor = setup!.host.providers.get(name)!.supervisor;
  const states: PluginState[] = [];
  const on = (s: PluginState) => states.push(s);
  supervisor.on('state', on);
  return { states, stop: () => supervisor.off('state', on) };
}

test.serial('both providers are handshaken and configured, each with its own name; /readyz lists both', async (t) => {
  const { providers } = setup!.host;
  t.deepEqual(
    providers.list().map((p) => [p.name, p.isDefault, p.supervisor.state, p.capabilities().providerName, p.config.plugin.kind]),
    [
      ['east', true, 'ready', 'east', 'exec'],
      ['west', false, 'ready', 'west', 'endpoint'],
    ],
  );
  t.is(setup!.host.cloud, providers.default.cloud, "the host's controllers use the default provider");
  t.is(providers.forProviderId('west://i-0123abcd'), providers.get('west'));
  t.is(providers.forProviderId('north://i-0123abcd'), undefined, 'a providerID of no provider here is nobody’s');
  const r = await readyz();
  t.is(r.status, 200, r.body);
  for (const check of ['plugin-east', 'cloud-east', 'plugin-west', 'cloud-west']) t.regex(r.body, new RegExp(`^\\[\\+\\]${check} ok$`, 'm'));
  t.notRegex(r.body, /^\[\+\]plugin ok$/m, 'no unnamed plugin check with several providers');
});

test.serial('the plugin metrics carry the provider label; a family both providers serve is one block', async (t) => {
  const text = await waitFor(
    async () => {
      const m = await metrics();
      return /^localcloud_\w+\{plugin="west",provider="west"/m.test(m) && /^localcloud_\w+\{plugin="east",provider="east"/m.test(m) ? m : undefined;
    },
    { what: "both providers' own metrics on /metrics", log: setup!.host.logPath },
  );
  for (const name of ['east', 'west']) {
    t.regex(text, new RegExp(`^ccm_plugin_ready\\{plugin="${name}",provider="${name}"\\} 1$`, 'm'));
    t.regex(
      text,
      new RegExp(`^ccm_plugin_rpc_duration_seconds_count\\{plugin="${name}",provider="${name}",method="Configure",code="OK"\\} [1-9]`, 'm'),
    );
  }
  const types = text.split('\n').filter((l) => l.startsWith('# TYPE localcloud_'));
  t.true(types.length > 0);
  t.is(new Set(types).size, types.length, 'each family of the providers has one TYPE line');
});

test.serial('SIGKILL of the exec provider: it is restarted with backoff while the sidecar provider stays ready', async (t) => {
  const { providers, logPath } = setup!.host;
  const east = providers.get('east')!.supervisor;
  const west = watchStates('west');
  const pid = east.pid!;
  const restarts = east.restartCount;
  process.kill(pid, 'SIGKILL');
  await waitFor(() => east.state === 'ready' && east.pid !== pid && east.restartCount > restarts, {
    what: 'east restarted',
    timeoutMs: 60_000,
    log: logPath,
  });
  west.stop();
  t.deepEqual(west.states, [], 'west never left ready');
  t.is(providers.get('west')!.supervisor.restartCount, 0);
  const log = await readFile(logPath, 'utf8');
  t.regex(log, /"plugin":"east".*"msg":"plugin exited unexpectedly"/);
  t.regex(log, /"plugin":"east".*"retryInMs":\d+.*"msg":"restarting plugin after backoff"/);
  t.regex(await metrics(), /^ccm_plugin_restarts_total\{plugin="east",provider="east"\} [1-9]/m);
  t.is((await readyz()).status, 200);
});

test.serial('SIGKILL of the sidecar provider: /readyz names it while it is redialled with backoff; the exec provider stays ready', async (t) => {
  const { providers, logPath } = setup!.host;
  const west = providers.get('west')!.supervisor;
  const east = watchStates('east');
  setup!.west.signal('SIGKILL');
  const body = await waitFor(
    async () => {
      const r = await readyz();
      return r.status === 500 && r.body.includes('[-]plugin-west failed') ? r.body : undefined;
    },
    { what: '/readyz failing on west', log: logPath },
  );
  t.regex(body, /^\[-\]plugin-west failed: plugin west is (backoff|starting)/m);
  t.regex(body, /^\[\+\]plugin-east ok$/m);
  t.regex(await metrics(), /^ccm_plugin_ready\{plugin="west",provider="west"\} 0$/m);
  // The sidecar comes back (as the kubelet would restart its container): the host redials it.
  await setup!.restartWest();
  await waitFor(async () => (await readyz()).status === 200, { what: '/readyz ok again', timeoutMs: 120_000, log: logPath });
  east.stop();
  t.deepEqual(east.states, [], 'east never left ready');
  t.is(west.state, 'ready');
  t.true(west.restartCount >= 1);
  t.regex(await metrics(), /^ccm_plugin_restarts_total\{plugin="west",provider="west"\} [1-9]/m);
});

test('a provider that cannot start stops the host start at once, named, even while another is a sidecar nobody serves yet', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-multiprov-bad-'));
  const providersFile = join(dir, 'providers.yaml');
  await writeFile(
    providersFile,
    `providers:
  - name: waiting
    pluginEndpoint: unix://${join(dir, 'nobody.sock')}
  - name: broken
    pluginPath: ${LOCAL_PLUGIN}
    pluginEnv: [${ALLOW_SIMULATION}, LOCALCLOUD_PROVIDER_NAME=Not_A_Label, LOCALCLOUD_STATE_DIR=${join(dir, 'broken')}]
`,
  );
  const err = await t.throwsAsync(startProvidersHost(dir, providersFile, FLAGS));
  t.regex(err?.message ?? '', /^cannot start plugin for provider broken of --providers-config: /);
  t.regex(await readFile(join(dir, 'host.log'), 'utf8'), /LOCALCLOUD_PROVIDER_NAME=\\"Not_A_Label\\" is invalid: want a lowercase DNS label/);
});
