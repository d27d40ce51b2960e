/**
 * Secret canaries: a secret field of the cloud config, a secret-named
 * --plugin-env value and the host's API token are planted, the host does
 * normal and failing work (node initialization, Warning events, a failed
 * plugin start) with the local cloud as a careless provider that writes the
 * first two into its stderr and its error messages
 * (test/fixtures/careless-local-provider.ts), and then every output is
 * searched for them: the host log (plugin stderr is forwarded into it), the
 * Events of the whole cluster, /metrics, and the error messages the host
 * returned. So the host's redaction is tested, not the provider's manners:
 * with it off the test fails. Then a careless provider echoes an INI cloud
 * config into its errors and its stderr.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { startHost } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { BAD_PROVIDER_NAME } from '../fixtures/bad-provider-lib.js';
import { startTestHost } from '../helpers/host.js';
import { logFile } from '../helpers/log-file.js';
import { testScope } from '../helpers/nodes.js';
import { localcloud } from '../helpers/localcloud.js';
import { hostKubeConfig } from '../helpers/service-account.js';
import { waitFor } from '../helpers/wait.js';
import { assertNodeScoped } from '../helpers/node-scope.js';
import { checkForbiddenOnStop } from '../helpers/forbidden.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const CARELESS_PROVIDER = fileURLToPath(new URL('../fixtures/careless-local-provider.js', import.meta.url));

/** Whether `text` holds any 8 consecutive characters of the secret's random part (error snippets quote fragments). */
function leaks(text: string, secret: string): boolean {
  const random = secret.replace(/^CANARY-[a-z]+-/, '');
  for (let i = 0; i + 8 <= random.length; i++) if (text.includes(random.slice(i, i + 8))) return true;
  return false;
}

test('planted secrets never appear in logs, events, metrics or error messages', async (t) => {
  const id = randomBytes(4).toString('hex');
  const cloudCanary = `CANARY-cloud-${randomBytes(12).toString('hex')}`;
  const envCanary = `CANARY-env-${randomBytes(12).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), 'ccm-canary-'));
  const cloudConfig = join(dir, 'cloud.json');
  // An unknown key too: the plugin warns about it (by name) through the host's log.
  await writeFile(cloudConfig, JSON.stringify({ zone: 'canary-zone', apiToken: cloudCanary, surpriseKey: 'x' }));
  const label = `canary-${id}`;
  const host = await startTestHost(dir, [
    `--plugin-path=${CARELESS_PROVIDER}`,
    '--controllers=cloud-node',
    `--node-selector=ccm-test=${label}`,
    `--cloud-config=${cloudConfig}`,
    `--plugin-env=LOCALCLOUD_API_TOKEN=${envCanary}`,
    '-v=4', // trace: the most there is to leak
  ]);
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  // The host's own API token (the shipped ServiceAccount's) is a secret too.
  const token = (await hostKubeConfig()).getCurrentUser()?.token ?? '';
  t.true(token.length > 10, 'the host identity has a token to guard');
  const secrets = { cloudCanary, envCanary, token: `CANARY-token-${token}` };

  const outputs: Record<string, string> = {};
  try {
    // Work that succeeds and work that fails with Warning events.
    await localcloud(join(dir, 'cloud'), 'instance', 'add', `canary-ok-${id}`, '--address', '127.0.3.1');
    for (const name of [`canary-ok-${id}`, `canary-missing-${id}`]) {
      await core.createNode({
        body: {
          metadata: { name, labels: { 'ccm-test': label } },
          spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
        },
      });
    }
    t.teardown(async () => {
      for (const name of [`canary-ok-${id}`, `canary-missing-${id}`]) await core.deleteNode({ name }).catch(() => undefined);
    });
    await waitFor(async () => !(await core.readNode({ name: `canary-ok-${id}` })).spec?.taints?.some((x) => x.key === UNINITIALIZED), {
      what: 'node initialized',
    });
    await waitFor(
      async () => {
        const ev = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=canary-missing-${id}` });
        return ev.items.some((e) => e.reason === 'FailedToSyncNode');
      },
      { what: 'Warning event for the node without an instance' },
    );
    // What /metrics serves (the test host runs without the HTTP server).
    outputs.metrics = await host.metrics.registry.metrics();
  } finally {
    await host.stop();
  }

  // A plugin that fails to start on a malformed config holding the secret.
  const badConfig = join(dir, 'bad.json');
  // The secret left unquoted (a typo): JSON.parse quotes the input around the error.
  await writeFile(badConfig, `{"apiToken": z${cloudCanary.replace(/^CANARY-[a-z]+-/, '')}}`);
  await mkdir(join(dir, 'bad'));
  const err = await t.throwsAsync(
    startTestHost(join(dir, 'bad'), ['--controllers=cloud-node', `--node-selector=ccm-test=${label}`, `--cloud-config=${badConfig}`]),
  );
  t.regex(err!.message, /cloud config is not a JSON object/);
  outputs.startError = err!.message;

  outputs.hostLog = await readFile(host.logPath, 'utf8');
  outputs.badHostLog = await readFile(join(dir, 'bad', 'host.log'), 'utf8').catch(() => '');
  const events = await core.listEventForAllNamespaces();
  outputs.events = JSON.stringify(events.items);

  t.true(outputs.hostLog.includes('surpriseKey'), 'the plugin log reached the host log (the search covers it)');
  t.true(outputs.hostLog.includes('careless provider: configured with these credentials'), 'the provider wrote its credentials to stderr');
  t.true(outputs.events.includes(`canary-missing-${id}`), 'the events of this test are in the search');
  t.true(outputs.events.includes('failed with api token'), 'the provider wrote its credentials into an error that became an event');
  for (const [where, text] of Object.entries(outputs)) {
    for (const [what, secret] of Object.entries(secrets)) {
      t.false(leaks(text, secret), `${what} (or 8+ characters of it) found in ${where}`);
    }
  }
});

const BAD_PROVIDER = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));

test('a provider echoing an INI cloud config into errors and stderr leaks no secret to logs or events', async (t) => {
  const scope = testScope('canary-echo');
  const rand = () => randomBytes(12).toString('hex');
  // OpenStack- and vSphere-style gcfg: quoted with an escape, unquoted with a comment, a repeated key, a connection string.
  const secrets = {
    password: `CANARY-ini-q\\"${rand()}`,
    appSecret: `CANARY-ini-${rand()}`,
    vcPassword: `CANARY-ini-${rand()}`,
    accountKey: `CANARY-ini-${rand()}==`,
  };
  const visible = `canary-user-${scope.prefix}`;
  const config = [
    '[Global]',
    'auth-url = https://keystone.example.com:5000/v3',
    `username = "${visible}"`,
    `password = "${secrets.password}"`,
    `application-credential-secret = ${secrets.appSecret} ; from the vault`,
    `storage-connection = "DefaultEndpointsProtocol=https;AccountName=canary;AccountKey=${secrets.accountKey}"`,
    '[VirtualCenter "10.0.0.1"]',
    'password = "first-is-overridden"',
    `password = "${secrets.vcPassword}"`,
  ].join('\n');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-canary-echo-'));
  const cloudConfig = join(dir, 'cloud.conf');
  await writeFile(cloudConfig, config);
  const parsed = parseHostArgs([
    `--cloud-provider=${BAD_PROVIDER_NAME}`,
    `--plugin-path=${BAD_PROVIDER}`,
    '--plugin-env=BAD_PROVIDER_ECHO_CONFIG=1',
    `--plugin-env=BAD_PROVIDER_NODE_PREFIX=${scope.prefix}-`,
    `--cloud-config=${cloudConfig}`,
    '--controllers=cloud-node',
    `--node-selector=${scope.selector}`,
    '--cluster-name=test',
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    '-v=4',
    '--leader-elect=false',
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const host = checkForbiddenOnStop(
    await startHost(parsed.config, { log: createLogger({ verbosity: 4, destination: logFile(logPath) }), kubeConfig: await hostKubeConfig() }),
    logPath,
  );
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const node = `${scope.prefix}-x1`;
  let events = '';
  try {
    await core.createNode({
      body: { metadata: { name: node, labels: scope.labels }, spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] } },
    });
    t.teardown(() =>
      core.deleteNode({ name: node }).then(
        () => undefined,
        () => undefined,
      ),
    );
    await waitFor(
      async () => {
        const ev = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${node}` });
        events = JSON.stringify(ev.items.map((e) => e.message));
        return events.includes(visible);
      },
      { what: 'a Warning event quoting the echoed config' },
    );
  } finally {
    await host.stop();
  }
  const hostLog = await readFile(logPath, 'utf8');
  t.true(hostLog.includes('loaded cloud config') && hostLog.includes(visible), 'the echo on stderr reached the host log (the search covers it)');
  for (const [where, text] of Object.entries({ hostLog, events })) {
    for (const [what, secret] of Object.entries(secrets)) t.false(leaks(text, secret), `${what} (or 8+ characters of it) found in ${where}`);
  }
});
