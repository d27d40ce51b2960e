/**
 * The cloud node controller end to end: the real host, the local cloud as a
 * real plugin process, and a real kube-apiserver + etcd. Nodes are registered
 * the way a kubelet started with --cloud-provider=external registers them.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type CoreV1Event, type V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../controlplane/shared.js';
import { startTestHost, type TestHost } from '../helpers/host.js';
import { localcloud } from '../helpers/localcloud.js';
import { testScope } from '../helpers/nodes.js';
import { waitFor } from '../helpers/wait.js';
import { patchNodeStatus } from '../helpers/kube-patch.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const test = anyTest as TestFn<{ dir: string; host: TestHost; core: CoreV1Api }>;
/** This file's host sees only its own nodes: other files' hosts run against the same API server. */
const scope = testScope('nodectl');

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-node-it-'));
  const host = await startTestHost(dir, ['--controllers=cloud-node', '--node-status-update-frequency=2s', `--node-selector=${scope.selector}`]);
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  t.context = { dir, host, core };
});

test.after.always(async (t) => {
  await t.context.host?.stop();
});

/** Registers a Node like kubelet --cloud-provider=external: tainted, with a Hostname address. */
async function registerNode(core: CoreV1Api, name: string, opts: { tainted?: boolean } = {}): Promise<V1Node> {
  return core.createNode({
    body: {
      metadata: { name, labels: { ...scope.labels, 'kubernetes.io/hostname': name } },
      spec: opts.tainted === false ? {} : { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'Hostname', address: name }] },
    },
  });
}

async function nodeEvents(core: CoreV1Api, name: string): Promise<CoreV1Event[]> {
  const list = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return list.items;
}

const initialized = (n: V1Node) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);

test.serial('tainted nodes with cloud instances are initialized: providerID, labels, addresses, taint removed', async (t) => {
  const { dir, core } = t.context;
  const names = ['init-a', 'init-b', 'init-c'];
  for (const [i, name] of names.entries()) {
    await localcloud(
      join(dir, 'cloud'),
      'instance',
      'add',
      name,
      '--zone',
      `zone-${i}`,
      '--region',
      'region-x',
      '--type',
      'm.large',
      '--address',
      `127.0.1.${i + 1}`,
      '--address',
      `ExternalIP=127.0.2.${i + 1}`,
      '--label',
      'example.com/pool=blue',
    );
  }
  const instances = JSON.parse(await localcloud(join(dir, 'cloud'), 'instance', 'list', '-o', 'json')) as { name: string; id: string }[];
  for (const name of names) await registerNode(core, name);

  for (const [i, name] of names.entries()) {
    const node = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        return initialized(n) ? n : undefined;
      },
      { what: `node ${name} initialized` },
    );
    const id = instances.find((x) => x.name === name)?.id;
    t.is(node.spec?.providerID, `local://${id}`);
    const labels = node.metadata?.labels ?? {};
    t.is(labels['topology.kubernetes.io/zone'], `zone-${i}`);
    t.is(labels['failure-domain.beta.kubernetes.io/zone'], `zone-${i}`);
    t.is(labels['topology.kubernetes.io/region'], 'region-x');
    t.is(labels['node.kubernetes.io/instance-type'], 'm.large');
    t.is(labels['beta.kubernetes.io/instance-type'], 'm.large');
    t.is(labels['example.com/pool'], 'blue');
    const addrs = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        const a = n.status?.addresses ?? [];
        return a.some((x) => x.type === 'InternalIP') ? a : undefined;
      },
      { what: `addresses of ${name}` },
    );
    t.true(addrs.some((a) => a.type === 'InternalIP' && a.address === `127.0.1.${i + 1}`));
    t.true(addrs.some((a) => a.type === 'ExternalIP' && a.address === `127.0.2.${i + 1}`));
    t.true(
      addrs.some((a) => a.type === 'Hostname' && a.address === name),
      'the kubelet hostname address is kept',
    );
    const events = await waitFor(
      async () => {
        const ev = await nodeEvents(core, name);
        return ev.some((e) => e.reason === 'Synced') ? ev : undefined;
      },
      { what: `Synced event for ${name}` },
    );
    t.true(events.some((e) => e.type === 'Normal' && e.reason === 'Synced'));
  }
});

test.serial(
  'a node whose instance the cloud does not know keeps its taint and gets a Warning event; it initializes once the instance exists',
  async (t) => {
    const { dir, core } = t.context;
    const name = 'unknown-instance';
    await registerNode(core, name);
    const warning = await waitFor(async () => (await nodeEvents(core, name)).find((e) => e.type === 'Warning' && e.reason === 'FailedToSyncNode'), {
      what: 'Warning event FailedToSyncNode',
    });
    t.regex(warning.message ?? '', /no instance/);
    const still = await core.readNode({ name });
    t.false(initialized(still), 'taint stays while the cloud has no instance');
    t.falsy(still.spec?.providerID);

    await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--address', '127.0.1.50');
    const node = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        return initialized(n) ? n : undefined;
      },
      { what: 'node initialized after the instance appeared', timeoutMs: 120_000 },
    );
    t.regex(node.spec?.providerID ?? '', /^local:\/\/i-/);
  },
);

test.serial('a node registered while the plugin is down is initialized after the plugin restarts', async (t) => {
  const { dir, host, core } = t.context;
  const name = 'during-outage';
  await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--address', '127.0.1.60');
  const pid = host.supervisor.pid;
  t.truthy(pid);
  process.kill(pid!, 'SIGKILL');
  await waitFor(() => host.supervisor.state !== 'ready', { what: 'plugin marked not ready' });
  await registerNode(core, name);
  const node = await waitFor(
    async () => {
      const n = await core.readNode({ name });
      return initialized(n) ? n : undefined;
    },
    { what: 'node initialized after plugin restart', timeoutMs: 120_000 },
  );
  t.regex(node.spec?.providerID ?? '', /^local:\/\//);
  t.not(host.supervisor.pid, pid, 'a new plugin process serves');
  t.true(host.supervisor.restartCount >= 1);
});

test.serial('a node without the uninitialized taint is left alone', async (t) => {
  const { dir, core } = t.context;
  const name = 'untainted';
  await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--zone', 'zone-q', '--address', '127.0.1.70');
  await registerNode(core, name, { tainted: false });
  // Give the controller time to see it (it does see it: the next node proves the queue moved on).
  const marker = 'after-untainted';
  await localcloud(join(dir, 'cloud'), 'instance', 'add', marker, '--address', '127.0.1.71');
  await registerNode(core, marker);
  await waitFor(async () => initialized(await core.readNode({ name: marker })), { what: 'marker node initialized' });
  const node = await core.readNode({ name });
  t.falsy(node.spec?.providerID);
  t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'], undefined);
});

test.serial(
  'a node outside --node-selector is left alone, even with a cloud instance of its name (the guard every test host relies on)',
  async (t) => {
    const { dir, core } = t.context;
    // Another scope's node, registered first: a host ignoring its selector would take it before the marker (one worker, in order).
    const other = testScope('nodectl-other');
    const name = `${other.prefix}-outside`;
    await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--zone', 'zone-q', '--address', '127.0.1.72');
    await core.createNode({
      body: {
        metadata: { name, labels: { ...other.labels, 'kubernetes.io/hostname': name } },
        spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
        status: { addresses: [{ type: 'Hostname', address: name }] },
      },
    });
    t.teardown(() =>
      core.deleteNode({ name }).then(
        () => undefined,
        () => undefined,
      ),
    );
    const marker = 'after-outside';
    await localcloud(join(dir, 'cloud'), 'instance', 'add', marker, '--address', '127.0.1.73');
    await registerNode(core, marker);
    await waitFor(async () => initialized(await core.readNode({ name: marker })), { what: 'marker node initialized' });
    const node = await core.readNode({ name });
    t.false(initialized(node), 'still tainted');
    t.falsy(node.spec?.providerID);
    t.deepEqual(await nodeEvents(core, name), [], 'no event on it');
  },
);

test.serial("a cloud that reports no addresses leaves the kubelet's addresses alone (upstream returns early)", async (t) => {
  const { dir, core } = t.context;
  const name = 'no-cloud-addresses';
  await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--no-addresses', '--zone', 'zone-n');
  const kubelet = [
    { type: 'Hostname', address: name },
    { type: 'InternalIP', address: '127.0.1.80' },
  ];
  await core.createNode({
    body: {
      metadata: { name, labels: { ...scope.labels, 'kubernetes.io/hostname': name } },
      spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: kubelet },
    },
  });
  const node = await waitFor(
    async () => {
      const n = await core.readNode({ name });
      return initialized(n) ? n : undefined;
    },
    { what: `node ${name} initialized` },
  );
  t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'zone-n', 'initialized from the cloud');
  t.deepEqual(
    (node.status?.addresses ?? []).map(({ type, address }) => ({ type, address })),
    kubelet,
    "the kubelet's InternalIP is kept",
  );
});

test.serial(
  'provided-node-ip (kubelet --node-ip): that IP is the first and only InternalIP, whatever the family (upstream drops fd00::12 too)',
  async (t) => {
    const { dir, core } = t.context;
    const name = 'provided-node-ip';
    const cloud = ['fd00::12', '127.0.1.111', '127.0.1.112', 'ExternalIP=127.0.2.112'];
    await localcloud(join(dir, 'cloud'), 'instance', 'add', name, ...cloud.flatMap((a) => ['--address', a]));
    await core.createNode({
      body: {
        metadata: {
          name,
          labels: { ...scope.labels, 'kubernetes.io/hostname': name },
          annotations: { 'alpha.kubernetes.io/provided-node-ip': '127.0.1.112' },
        },
        spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
        status: {
          addresses: [
            { type: 'Hostname', address: name },
            { type: 'InternalIP', address: '127.0.1.112' },
          ],
        },
      },
    });
    const node = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        return initialized(n) ? n : undefined;
      },
      { what: `node ${name} initialized` },
    );
    const want = [
      { type: 'InternalIP', address: '127.0.1.112' },
      { type: 'ExternalIP', address: '127.0.2.112' },
      { type: 'Hostname', address: name },
    ];
    t.deepEqual(
      (node.status?.addresses ?? []).map(({ type, address }) => ({ type, address })),
      want,
    );
  },
);

test.serial(
  "a provided node IP that only the kubelet's Hostname address holds is refused at init, as upstream (the cloud reports IPs only)",
  async (t) => {
    const { dir, core } = t.context;
    const name = 'provided-hostname-ip';
    await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--address', '127.0.1.120', '--no-hostname');
    await core.createNode({
      body: {
        metadata: {
          name,
          labels: { ...scope.labels, 'kubernetes.io/hostname': name },
          annotations: { 'alpha.kubernetes.io/provided-node-ip': '127.0.1.129' },
        },
        spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
        status: { addresses: [{ type: 'Hostname', address: '127.0.1.129' }] },
      },
    });
    const event = await waitFor(async () => (await nodeEvents(core, name)).find((e) => e.reason === 'FailedToSyncNode'), {
      what: 'FailedToSyncNode on the node',
    });
    t.regex(event.message ?? '', /node IP 127\.0\.1\.129 \(from --node-ip\) is not among the addresses the cloud reports/);
    const node = await core.readNode({ name });
    t.false(initialized(node), 'still tainted');
    t.falsy(node.spec?.providerID);
  },
);

test.serial('the address refresh runs as soon as the host starts, not one period later (upstream runs it at once)', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-node-refresh-it-'));
  const refreshScope = testScope('nodectl-refresh');
  const name = 'refresh-at-start';
  const [id] = (await localcloud(join(dir, 'cloud'), 'instance', 'add', name, '--address', '127.0.1.90')).split(' ');
  const { core } = t.context;
  await core.createNode({
    body: { metadata: { name, labels: { ...refreshScope.labels, 'kubernetes.io/hostname': name } }, spec: { providerID: `local://${id}` } },
  });
  await patchNodeStatus(
    core,
    name,
    {
      status: {
        addresses: [
          { type: 'Hostname', address: name },
          { type: 'InternalIP', address: '127.0.9.9' },
        ],
      },
    },
    'merge',
  );
  // A period far longer than the wait: only a pass at start can update the address in time.
  const host = await startTestHost(dir, [
    '--controllers=cloud-node',
    '--node-status-update-frequency=1h',
    `--node-selector=${refreshScope.selector}`,
  ]);
  try {
    await waitFor(
      async () => ((await core.readNode({ name })).status?.addresses ?? []).some((a) => a.type === 'InternalIP' && a.address === '127.0.1.90'),
      {
        what: `the cloud's InternalIP on ${name} right after the host started`,
        log: host.logPath,
      },
    );
    t.pass();
  } finally {
    await host.stop();
  }
});

test.serial(
  '--min-resync-period: the informers hand every node to the controller again each period, without any change (upstream resync)',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ccm-node-resync-it-'));
    const resyncScope = testScope('nodectl-resync');
    const name = 'resync-node';
    const { core } = t.context;
    await core.createNode({ body: { metadata: { name, labels: { ...resyncScope.labels, 'kubernetes.io/hostname': name } } } });
    const host = await startTestHost(dir, ['--controllers=cloud-node', '--min-resync-period=1s', `--node-selector=${resyncScope.selector}`]);
    const adds = async () => {
      const metric = await host.metrics.registry.getSingleMetric('workqueue_adds_total')!.get();
      return metric.values.find((v) => v.labels.name === 'Nodes')?.value ?? 0;
    };
    try {
      await waitFor(async () => (await adds()) >= 1, { what: 'the node added to the queue', log: host.logPath });
      const first = await adds();
      await waitFor(async () => (await adds()) >= first + 2, { what: 'two resyncs of the unchanged node', log: host.logPath });
      t.pass();
    } finally {
      await host.stop();
    }
  },
);
