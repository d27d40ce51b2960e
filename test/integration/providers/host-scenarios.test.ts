/**
 * The host's controller scenarios against the Go and the Python provider,
 * each in exec mode (--plugin-path) and in sidecar mode (--plugin-endpoint):
 * the real host, the real kube-apiserver, the provider as a real process.
 *
 * Every scenario is a function of a running (provider, mode) pair, so a new
 * one (e.g. the service controller's load balancer scenario) is a few lines
 * in SCENARIOS below.
 */
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { TestHooksServiceClient } from '../../../proto/gen/ccm/provider/testing/v1/test_hooks.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startProviderHost, type ProviderHost, type ProviderMode } from '../../helpers/provider-host.js';
import { GO_PROVIDER, PYTHON_PROVIDER, type ProviderUnderTest } from '../../helpers/providers.js';
import { waitFor } from '../../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const SELECTOR_LABEL = 'ccm-test/provider-scenario';

/** What a scenario gets: a host running against one provider in one mode. */
interface ScenarioContext {
  provider: ProviderUnderTest;
  mode: ProviderMode;
  running: ProviderHost;
  core: CoreV1Api;
  /** Unique name prefix; also the value of SELECTOR_LABEL on the scenario's nodes. */
  prefix: string;
}

interface Scenario {
  name: string;
  /** Host flags beyond the common ones (which controllers run). */
  controllers: string;
  /** Instances the provider's cloud config declares (names get the prefix). */
  instances(prefix: string): object[];
  run(t: ExecutionContext, c: ScenarioContext): Promise<void>;
}

const initialized = (n: V1Node) => !(n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED);

/** Registers a Node like kubelet --cloud-provider=external, labelled for this scenario's host. */
async function registerNode(c: ScenarioContext, name: string): Promise<void> {
  await c.core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, [SELECTOR_LABEL]: c.prefix } },
      spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'Hostname', address: name }] },
    },
  });
}

async function waitInitialized(c: ScenarioContext, name: string): Promise<V1Node> {
  return waitFor(async () => {
    const n = await c.core.readNode({ name });
    return initialized(n) ? n : undefined;
  }, { what: `node ${name} initialized by ${c.provider.name} (${c.mode})`, timeoutMs: 120_000 });
}

const SCENARIOS: Scenario[] = [
  {
    name: 'node initialization',
    controllers: 'cloud-node',
    instances: (p) => [
      { name: `${p}-a`, type: 'mem.large', zone: 'zone-1', region: 'region-x', addresses: [{ type: 'InternalIP', address: '10.9.0.1' }, { type: 'ExternalIP', address: '203.0.113.9' }], labels: { 'example.com/pool': 'blue' } },
    ],
    async run(t, c) {
      const name = `${c.prefix}-a`;
      await registerNode(c, name);
      const node = await waitInitialized(c, name);
      t.regex(node.spec?.providerID ?? '', new RegExp(`^${c.provider.name}://i-[0-9a-f]{8}$`));
      const labels = node.metadata?.labels ?? {};
      t.is(labels['topology.kubernetes.io/zone'], 'zone-1');
      t.is(labels['topology.kubernetes.io/region'], 'region-x');
      t.is(labels['node.kubernetes.io/instance-type'], 'mem.large');
      t.is(labels['example.com/pool'], 'blue');
      const addrs = await waitFor(async () => {
        const a = (await c.core.readNode({ name })).status?.addresses ?? [];
        return a.some((x) => x.type === 'InternalIP') ? a : undefined;
      }, { what: `addresses of ${name}` });
      t.true(addrs.some((a) => a.type === 'InternalIP' && a.address === '10.9.0.1'));
      t.true(addrs.some((a) => a.type === 'ExternalIP' && a.address === '203.0.113.9'));

      // A node the cloud does not know keeps its taint and gets a Warning event.
      const unknown = `${c.prefix}-unknown`;
      await registerNode(c, unknown);
      const warning = await waitFor(async () => {
        const ev = await c.core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${unknown}` });
        return ev.items.find((e) => e.type === 'Warning' && e.reason === 'FailedToSyncNode');
      }, { what: `FailedToSyncNode for ${unknown}` });
      t.truthy(warning.message);
      t.false(initialized(await c.core.readNode({ name: unknown })));

      // Sidecar mode: the test can reach the provider's test hook and make the instance appear.
      if (c.running.sidecar) {
        const hooks = new TestHooksServiceClient(c.running.sidecar.endpoint, credentials.createInsecure());
        await new Promise<void>((resolve, reject) =>
          hooks.createTestInstance({ name: unknown, internalIp: '10.9.0.2', zone: '' }, (err) => (err ? reject(err) : resolve())),
        );
        hooks.close();
        const later = await waitInitialized(c, unknown);
        t.regex(later.spec?.providerID ?? '', new RegExp(`^${c.provider.name}://`));
      }
    },
  },
  // TODO(issue 5): the load balancer scenario (service controller) goes here:
  // { name: 'load balancer', controllers: 'service', instances: ..., run: ... }
];

for (const provider of [GO_PROVIDER, PYTHON_PROVIDER]) {
  for (const mode of ['exec', 'sidecar'] as const) {
    for (const scenario of SCENARIOS) {
      test(`${scenario.name}: ${provider.name} provider, ${mode} mode`, async (t) => {
        const prefix = `${provider.name}-${mode}-${randomBytes(3).toString('hex')}`;
        const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
        const running = await startProviderHost(dir, provider, mode, { zone: 'zone-1', region: 'region-x', instances: scenario.instances(prefix) }, [
          `--controllers=${scenario.controllers}`,
          `--node-selector=${SELECTOR_LABEL}=${prefix}`,
          '--node-status-update-frequency=2s',
        ]);
        try {
          t.is(running.host.supervisor.identity?.capabilities.providerName, provider.name);
          await scenario.run(t, { provider, mode, running, core: (await testKubeConfig()).makeApiClient(CoreV1Api), prefix });
        } finally {
          await running.stop();
        }
      });
    }
  }
}
