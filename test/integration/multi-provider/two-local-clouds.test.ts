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
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHost } from '../../../host/app.js';
import { parseHostArgs } from '../../../host/config/flags.js';
import { createLogger } from '../../../host/log.js';
import type { PluginState } from '../../../host/plugin/supervisor.js';
import { freePorts } from '../../controlplane/probe.js';
import { checkForbiddenOnStop } from '../../helpers/forbidden.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from '../../helpers/localcloud.js';
import { logFile } from '../../helpers/log-file.js';
import { assertNodeScoped } from '../../helpers/node-scope.js';
import { testScope } from '../../helpers/nodes.js';
import { scrape } from '../../helpers/scraper.js';
import { hostKubeConfig } from '../../helpers/service-account.js';
import { startSidecar, type Sidecar } from '../../helpers/sidecar.js';
import { waitFor } from '../../helpers/wait.js';

const scope = testScope('multiprov');
const [ALLOW_NAME, ALLOW_VALUE] = ALLOW_SIMULATION.split('=') as [string, string];

interface Setup {
  dir: string;
  port: number;
  host: Awaited<ReturnType<typeof startMultiHost>>;
  /** The west sidecar as it runs now (replaced after it is killed). */
  sidecar: Sidecar;
  startWest(): Promise<Sidecar>;
}

let setup: Setup | undefined;

async function startMultiHost(dir: string, providersFile: string, port: number) {
  const parsed = parseHostArgs([
    `--providers-config=${providersFile}`,
    '--cluster-name=multiprov',
    `--secure-port=${port}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
    '--controllers=cloud-node',
    `--node-selector=${scope.selector}`,
    '--plugin-start-timeout=20s',
    '-v=2',
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  const host = await startHost(parsed.config, { log, kubeConfig: await hostKubeConfig() });
  return checkForbiddenOnStop(host, logPath);
}

test.before(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-multiprov-'));
  const launcher = join(dir, 'west-provider');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`, { mode: 0o755 });
  const sockets = join(dir, 'west-sockets');
  await mkdir(sockets, { mode: 0o700 });
  const startWest = () =>
    startSidecar(
      launcher,
      sockets,
      { LOCALCLOUD_STATE_DIR: join(dir, 'west'), [ALLOW_NAME]: ALLOW_VALUE, LOCALCLOUD_PROVIDER_NAME: 'west', LOCALCLOUD_FORWARD: 'false' },
      { logPath: join(dir, 'west.log') },
    );
  const sidecar = await startWest();
  const providersFile = join(dir, 'providers.yaml');
  await writeFile(
    providersFile,
    `providers:
  - name: east
    pluginPath: ${LOCAL_PLUGIN}
    pluginEnv:
      - LOCALCLOUD_STATE_DIR=${join(dir, 'east')}
      - ${ALLOW_SIMULATION}
      - LOCALCLOUD_PROVIDER_NAME=east
      - LOCALCLOUD_FORWARD=false
  - name: west
    pluginEndpoint: ${sidecar.endpoint}
`,
  );
  const [port] = await freePorts(1);
  const host = await startMultiHost(dir, providersFile, port!);
  setup = { dir, port: port!, host, sidecar, startWest };
});

test.after.always(async () => {
  if (!setup) return;
  await setup.host.stop();
  await setup.sidecar.stop();
});

const readyz = () => scrape(setup!.port, '/readyz?verbose');
const metrics = async () => (await scrape(setup!.port, '/metrics')).body;

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
  setup!.sidecar.signal('SIGKILL');
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
  setup!.sidecar = await setup!.startWest();
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
  const [port] = await freePorts(1);
  const err = await t.throwsAsync(startMultiHost(dir, providersFile, port!));
  t.regex(err?.message ?? '', /^cannot start plugin for provider broken of --providers-config: /);
  t.regex(await readFile(join(dir, 'host.log'), 'utf8'), /LOCALCLOUD_PROVIDER_NAME=\\"Not_A_Label\\" is invalid: want a lowercase DNS label/);
});
