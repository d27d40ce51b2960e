/**
 * Where a spawned plugin may listen: a real provider process (the bad
 * provider, BAD_PROVIDER_LISTEN) hands shake on a TCP loopback port or on a
 * Unix socket outside the host's private directory. Both are refused unless
 * the operator allowed them (--plugin-allow-tcp,
 * --plugin-allow-external-socket), with a one-line error saying what to do;
 * allowed, the host connects and configures the provider. The last case
 * goes through the host's flags and start-up.
 */
import test from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHost } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger, silentLogger } from '../../host/log.js';
import { PluginSupervisor, type PluginMode } from '../../host/plugin/supervisor.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { logFile } from '../helpers/log-file.js';
import { answers } from '../helpers/sidecar.js';
import { assertNodeScoped } from '../helpers/node-scope.js';
import { checkForbiddenOnStop } from '../helpers/forbidden.js';
import { hostKubeConfig } from '../helpers/service-account.js';

const BAD = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));

function supervisor(mode: PluginMode): PluginSupervisor {
  return new PluginSupervisor({
    name: 'handshake-network',
    mode,
    startTimeoutMs: 20_000,
    shutdownGraceMs: 2_000,
    configure: { cloudConfig: Buffer.alloc(0), clusterName: 'handshake-network', hostVersion: 'test' },
    log: silentLogger(),
  });
}

/** `listen` is BAD_PROVIDER_LISTEN, or `external` for a socket in a fresh directory of its own. */
const CASES: { name: string; listen: 'tcp' | 'external'; allow: { tcp?: boolean; externalSocket?: boolean }; refused?: RegExp }[] = [
  {
    name: 'a TCP handshake is refused by default',
    listen: 'tcp',
    allow: {},
    refused:
      /^refusing the plugin's handshake: it names TCP address 127\.0\.0\.1:\d+, and only Unix sockets are accepted: make the plugin listen on CCM_PLUGIN_ENDPOINT \(the SDKs do\), or start the host with --plugin-allow-tcp$/,
  },
  { name: 'a TCP handshake is accepted with --plugin-allow-tcp', listen: 'tcp', allow: { tcp: true } },
  {
    name: 'a socket outside the private directory is refused by default, even with --plugin-allow-tcp',
    listen: 'external',
    allow: { tcp: true },
    refused:
      /^refusing the plugin's handshake: it names socket \/.*\/ext\.sock, outside the host's private directory: make the plugin listen on CCM_PLUGIN_ENDPOINT \(\/.*\/provider\.sock\), or start the host with --plugin-allow-external-socket$/,
  },
  {
    name: 'a socket outside the private directory is accepted with --plugin-allow-external-socket',
    listen: 'external',
    allow: { externalSocket: true },
  },
];

for (const c of CASES) {
  test(c.name, async (t) => {
    let listen: string = c.listen;
    let socket = '';
    if (c.listen === 'external') {
      socket = join(await mkdtemp(join(tmpdir(), 'ccm-ext-sock-')), 'ext.sock');
      listen = `unix://${socket}`;
    }
    const s = supervisor({ kind: 'exec', path: BAD, env: [`BAD_PROVIDER_LISTEN=${listen}`], allow: c.allow });
    t.teardown(() => s.stop());
    if (c.refused) {
      const err = await t.throwsAsync(s.start());
      t.regex(err!.message, c.refused);
      t.false(err!.message.includes('\n'), 'one line');
      // The refused plugin was stopped and reaped before start() rejected: nothing answers on its socket.
      // (The file itself may stay: the plugin removes it on a graceful exit, but a plugin that did not exit
      // within the stop's SIGTERM bound, as on a loaded machine, is SIGKILLed, and a socket outside the
      // host's private directory is not the host's to delete.)
      if (socket) t.false(await answers(socket), `the refused plugin is gone: nothing listens on ${socket}`);
    } else {
      const identity = await s.start();
      t.is(identity.info.name, 'bad.ccm.dev');
      t.is(s.state, 'ready');
    }
  });
}

test('the flags reach the plugin start: the host refuses a TCP plugin without --plugin-allow-tcp and runs it with the flag', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-tcp-host-'));
  const start = async (extra: string[]) => {
    const parsed = parseHostArgs([
      `--cloud-provider=${BAD_PROVIDER_NAME}`,
      `--plugin-path=${BAD}`,
      '--plugin-env=BAD_PROVIDER_LISTEN=tcp',
      '--plugin-env=BAD_PROVIDER_NODE_PREFIX=tcp-host-nobody-',
      '--controllers=cloud-node',
      '--node-selector=ccm-test=tcp-host-none',
      '--cluster-name=test',
      '--secure-port=0',
      '--leader-elect=false',
      ...extra,
    ]);
    if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
    assertNodeScoped(parsed.config);
    const logPath = join(dir, 'host.log');
    return checkForbiddenOnStop(
      await startHost(parsed.config, { log: createLogger({ destination: logFile(logPath) }), kubeConfig: await hostKubeConfig() }),
      logPath,
    );
  };
  const err = await t.throwsAsync(start([]));
  t.regex(err!.message, /only Unix sockets are accepted: .*--plugin-allow-tcp/);
  const host = await start(['--plugin-allow-tcp']);
  await host.stop();
});
