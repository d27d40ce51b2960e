/**
 * Invalid provider answers never reach the API server: the real host, a real
 * provider process built on the SDK that answers InstanceMetadata with bad
 * data (test/fixtures/bad-provider.ts), and the real kube-apiserver. A node
 * registered with the uninitialized taint must keep it and get nothing from
 * the provider, and a Warning event InvalidCloudResponse must say why in a
 * short message.
 *
 * Other test files may run hosts against the same API server at the same
 * time: this file's host sees only its own nodes (--node-selector), and its
 * provider answers INSTANCE_NOT_FOUND for any other name.
 */
import anyTest, { type TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type CoreV1Event, type V1Node } from '@kubernetes/client-node';
import { startHost, type HostHandle } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import { testKubeConfig } from '../controlplane/shared.js';
import { readFile } from 'node:fs/promises';
import { BAD_PROVIDER_NAME, HUGE_ADDRESS_CHARS, INVALID_IP, VALID_PARTS, type BadMode } from '../fixtures/bad-provider-lib.js';
import { logFile } from '../helpers/log-file.js';
import { testScope } from '../helpers/nodes.js';
import { waitFor } from '../helpers/wait.js';
import { assertNodeScoped } from '../helpers/node-scope.js';
import { checkForbiddenOnStop } from '../helpers/forbidden.js';
import { hostKubeConfig } from '../helpers/service-account.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const NODE_PREFIX = 'badresp-';
const scope = testScope('badresp');
const BAD_PROVIDER = fileURLToPath(new URL('../fixtures/bad-provider.js', import.meta.url));
/** Upstream caps event messages at 1 KiB (events.k8s.io note); ours must stay within that. */
const MAX_MESSAGE_BYTES = 1024;

const test = anyTest as TestFn<{ dir: string; host: HostHandle & { logPath: string }; core: CoreV1Api; created: string[] }>;

/** Like test/helpers/host.ts startTestHost, but with the bad provider instead of the local cloud. */
async function startBadHost(dir: string): Promise<HostHandle & { logPath: string }> {
  const kc = await hostKubeConfig();
  const parsed = parseHostArgs([
    `--cloud-provider=${BAD_PROVIDER_NAME}`,
    `--plugin-path=${BAD_PROVIDER}`,
    '--plugin-env=BAD_PROVIDER_MODE=by-name',
    `--plugin-env=BAD_PROVIDER_NODE_PREFIX=${NODE_PREFIX}`,
    '--controllers=cloud-node',
    `--node-selector=${scope.selector}`,
    '--cluster-name=test',
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    '-v=2',
    // No election on the shared default Lease (kube-system/cloud-controller-manager): other files' hosts run at the same time.
    '--leader-elect=false',
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  return checkForbiddenOnStop(await startHost(parsed.config, { log, kubeConfig: kc }), logPath);
}

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-badresp-it-'));
  const host = await startBadHost(dir);
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  t.context = { dir, host, core, created: [] };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
  for (const name of t.context.created ?? []) await t.context.core.deleteNode({ name }).catch(() => undefined);
});

/** Registers a Node like kubelet --cloud-provider=external: tainted, with a Hostname address. */
async function registerNode(core: CoreV1Api, name: string): Promise<V1Node> {
  return core.createNode({
    body: {
      metadata: { name, labels: { ...scope.labels, 'kubernetes.io/hostname': name } },
      spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'Hostname', address: name }] },
    },
  });
}

async function eventsAbout(core: CoreV1Api, node: V1Node): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${node.metadata!.name}` });
  return list.items.filter((e) => e.involvedObject.uid === node.metadata!.uid);
}

interface Case {
  description: string;
  mode: BadMode;
  /** The event message must match (it names the problem). */
  problem: RegExp;
  /** A host log line 'requeue after error' must have an `err` matching this (names the field and the rule). */
  logged?: RegExp;
}

const cases: Case[] = [
  {
    description: 'an invalid IP address',
    mode: 'invalid-ip',
    problem: new RegExp(`InternalIP address: "${INVALID_IP.replace(/\./g, '\\.')}" is not an IP address`),
  },
  {
    description: `ten ${HUGE_ADDRESS_CHARS / 1000} KB garbage addresses`,
    mode: 'huge',
    problem: /InternalIP address: "10\.0\.0\.7{10,}…" is not an IP address.*\(\+5 more\)$/,
  },
  {
    description: 'an invalid additional label value (addresses valid)',
    mode: 'bad-label',
    problem: /additional label: label value "not a valid value!" has characters outside/,
  },
  {
    description: 'a providerID with a control character (the API server would store it and never allow a change)',
    mode: 'control-provider-id',
    problem:
      /providerID "bad:\/\/i-badresp-control-provider-id-[0-9a-f]+\\u001b\[2J" is not of the form <provider>:\/\/<id> \(printable ASCII, no spaces\)/,
    logged:
      /providerID "bad:\/\/i-badresp-control-provider-id-[0-9a-f]+\\u001b\[2J" is not of the form <provider>:\/\/<id> \(printable ASCII, no spaces\)/,
  },
];

/** The host's log lines (JSON) with `msg`. */
async function logLines(path: string, msg: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.includes(msg))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);
}

for (const c of cases) {
  test(`a provider answering ${c.description}: the node keeps its taint, gets nothing from the provider, and an InvalidCloudResponse event says why`, async (t) => {
    const { core, host } = t.context;
    const name = `${NODE_PREFIX}${c.mode}-${randomBytes(4).toString('hex')}`;
    t.context.created.push(name);
    const registered = await registerNode(core, name);

    // The host tried, refused the answer, and tried again (the aggregated event's count grows).
    const event = await waitFor(
      async () => {
        const ev = (await eventsAbout(core, registered)).find((e) => e.type === 'Warning' && e.reason === 'InvalidCloudResponse');
        return ev && (ev.count ?? 1) >= 2 ? ev : undefined;
      },
      { what: `a repeated InvalidCloudResponse Warning event on ${name}`, timeoutMs: 90_000 },
    );
    const message = event.message ?? '';
    t.log(`event (count ${event.count}): ${message}`);
    t.regex(message, /^failed to initialize node: provider returned an invalid InstanceMetadata response: /);
    t.regex(message, c.problem);
    t.true(Buffer.byteLength(message) <= MAX_MESSAGE_BYTES, `event message is ${Buffer.byteLength(message)} bytes`);
    // eslint-disable-next-line no-control-regex
    t.false(/[\u0000-\u001f\u007f\u202e]/.test(message), 'no raw control or bidi characters in the event');
    t.false(message.includes('7'.repeat(200)), 'no raw payload in the event');
    t.is(event.source?.component, 'cloud-node-controller');

    // Nothing from the answer was written, not even its valid parts.
    const node = await core.readNode({ name });
    t.true(
      (node.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED && x.effect === 'NoSchedule'),
      'the uninitialized taint stays',
    );
    t.falsy(node.spec?.providerID, 'no providerID');
    t.deepEqual(node.metadata?.labels, { ...scope.labels, 'kubernetes.io/hostname': name }, 'no labels from the provider');
    t.is(node.metadata?.labels?.[VALID_PARTS.label[0]], undefined);
    t.deepEqual(
      (node.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
      [{ type: 'Hostname', address: name }],
      'no addresses from the provider',
    );
    t.false(JSON.stringify(node).includes(VALID_PARTS.zone), 'no zone anywhere on the node');

    if (c.logged) {
      const lines = await logLines(host.logPath, 'requeue after error');
      t.true(
        lines.some((l) => l.key === name && c.logged!.test(String(l.err))),
        `a 'requeue after error' line for ${name} names the field and the rule`,
      );
    }

    // The bad answers did not hurt the plugin: still ready, never restarted.
    t.is(host.supervisor.state, 'ready');
    t.is(host.supervisor.restartCount, 0);
  });
}

test('a provider error that forges Event lines with control characters, 8 KiB long: the Event gets one sanitized line of at most 1 KiB', async (t) => {
  const { core } = t.context;
  const name = `${NODE_PREFIX}forged-error-${randomBytes(4).toString('hex')}`;
  t.context.created.push(name);
  const registered = await registerNode(core, name);
  const event = await waitFor(
    async () => {
      const ev = (await eventsAbout(core, registered)).find((e) => e.type === 'Warning' && e.reason === 'FailedToSyncNode');
      return ev && (ev.count ?? 1) >= 2 ? ev : undefined;
    },
    { what: `a repeated FailedToSyncNode Warning event on ${name}`, timeoutMs: 90_000 },
  );
  const message = event.message ?? '';
  t.log(`event (count ${event.count}): ${message.slice(0, 200)}…`);
  t.regex(
    message,
    /^failed to initialize node: InstanceMetadata: instance lookup failed Normal {2}Synced {2}Node synced successfully \\u001b\[2J\\u202egnp\.exe x+ \.\.\.$/,
  );
  t.is(Buffer.byteLength(message), MAX_MESSAGE_BYTES, 'truncated to 1024 bytes');
  const node = await core.readNode({ name });
  t.true(
    (node.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED),
    'the uninitialized taint stays',
  );
  t.falsy(node.spec?.providerID, 'no providerID');
});

// Upstream retries every cloud error with backoff, and so does the host: a provider's INVALID_ARGUMENT or
// UNIMPLEMENTED may pass on a later try (cloud state, a provider upgrade), and nothing else would requeue the node.
for (const mode of ['invalid-argument', 'unimplemented'] as const) {
  test(`a provider answering ${mode.toUpperCase().replace('-', '_')}: retried with backoff, a repeated FailedToSyncNode Warning`, async (t) => {
    const { core } = t.context;
    const name = `${NODE_PREFIX}${mode}-${randomBytes(4).toString('hex')}`;
    t.context.created.push(name);
    const registered = await registerNode(core, name);
    const event = await waitFor(
      async () => {
        const ev = (await eventsAbout(core, registered)).find((e) => e.type === 'Warning' && e.reason === 'FailedToSyncNode');
        return ev && (ev.count ?? 1) >= 3 ? ev : undefined;
      },
      { what: `a FailedToSyncNode Warning on ${name} repeated three times`, timeoutMs: 90_000 },
    );
    t.regex(event.message ?? '', mode === 'invalid-argument' ? /refuses to look up/ : /does not implement InstanceMetadata/);
    const node = await core.readNode({ name });
    t.true(
      (node.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED),
      'the uninitialized taint stays',
    );
  });
}
