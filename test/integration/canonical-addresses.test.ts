/**
 * Canonical IPs in everything the host writes (KEP-4858): the real host with
 * the cloud-node and service controllers, the local cloud as a real plugin
 * process made to answer other spellings of its IPs (the `respell` knob,
 * plugins/local/README.md), and the real kube-apiserver.
 *
 * - An unambiguous, non-canonical answer (`FD00:54:0:0::5`) is written in
 *   canonical text (`fd00:54::5`): Node status.addresses and Service
 *   status.loadBalancer.ingress[].ip.
 * - An ambiguous answer (`127.000.054.201`, octal to libc, decimal to Go) is
 *   refused: a Warning event names the provider's answer, and nothing of that
 *   answer is written (the Node keeps its taint and gets no address, the
 *   Service gets no ingress). Once the cloud answers well, both converge:
 *   the bad answer cost nothing.
 *
 * Scoping for the shared API server: this file's nodes carry its own scope
 * label (--node-selector), its Services live in namespace canon-addrs, its
 * load balancer pool is fd00:54::/120 (never bound: the local cloud's
 * forwarder logs the failed bind and retries it, which no check here needs).
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type CoreV1Event, type V1Node } from '@kubernetes/client-node';
import { testKubeConfig } from '../controlplane/shared.js';
import { startTestHost, type TestHost } from '../helpers/host.js';
import { ensureNamespace, lbService, readService, serviceEvents } from '../helpers/lb.js';
import { localcloud } from '../helpers/localcloud.js';
import { hasTaint, nodeEvents, testScope, UNINITIALIZED_TAINT, waitNodeInitialized } from '../helpers/nodes.js';
import { waitFor } from '../helpers/wait.js';

const NS = 'canon-addrs';
const scope = testScope('canon');
const test = anyTest as TestFn<{ cloud: string; host: TestHost; core: CoreV1Api; nodes: string[] }>;

/** One answer per row: what the cloud holds, how it answers it, and what the host must write (undefined = refuse). */
interface Row {
  what: string;
  /** The canonical IP the cloud holds. */
  ip: string;
  /** The text the cloud answers instead. */
  answered: string;
  /** The text written; undefined when the answer must be refused. */
  written?: string;
  /** The Warning event must match this (it names the answer and why). */
  refusal?: RegExp;
}

const NODE_ROWS: (Row & { node: string; type: 'InternalIP' | 'ExternalIP' })[] = [
  {
    what: 'IPv6, upper case and uncompressed',
    node: 'canon-v6',
    type: 'InternalIP',
    ip: 'fd00:54::5',
    answered: 'FD00:54:0:0::5',
    written: 'fd00:54::5',
  },
  {
    what: 'IPv6, fully expanded',
    node: 'canon-v6x',
    type: 'ExternalIP',
    ip: '2001:db8:54::7',
    answered: '2001:0db8:0054:0000:0000:0000:0000:0007',
    written: '2001:db8:54::7',
  },
  {
    what: 'IPv4 with leading zeros (ambiguous)',
    node: 'canon-zeros',
    type: 'InternalIP',
    ip: '127.0.54.201',
    answered: '127.000.054.201',
    refusal: /"127\.000\.054\.201" is ambiguous: IPv4 with leading zeros .*answer "127\.0\.54\.201"/,
  },
  {
    what: 'IPv4-mapped IPv6 (ambiguous)',
    node: 'canon-mapped',
    type: 'InternalIP',
    ip: '127.0.54.202',
    answered: '::ffff:127.0.54.202',
    refusal: /"::ffff:127\.0\.54\.202" is an IPv4-mapped IPv6 address.*answer "127\.0\.54\.202"/,
  },
];

const SERVICE_ROWS: (Row & { service: string })[] = [
  { what: 'IPv6, upper case and uncompressed', service: 'spelled', ip: 'fd00:54::a', answered: 'FD00:54:0:0:0:0:0:A', written: 'fd00:54::a' },
  {
    what: 'IPv4 with leading zeros (ambiguous)',
    service: 'zeros',
    ip: 'fd00:54::b',
    answered: '010.001.002.003',
    refusal: /ingress\[0\]: ip: "010\.001\.002\.003" is ambiguous: IPv4 with leading zeros/,
  },
];

const RESPELL = [...NODE_ROWS, ...SERVICE_ROWS].map((r) => `${r.ip}=${r.answered}`).join(',');

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-canon-it-'));
  const cloud = join(dir, 'cloud');
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  // The cloud spells its answers before the host ever asks.
  await localcloud(cloud, 'knobs', 'set', `respell=${RESPELL}`);
  const host = await startTestHost(dir, [
    '--controllers=cloud-node,service',
    `--node-selector=${scope.selector}`,
    `--watch-namespace=${NS}`,
    '--plugin-env=LOCALCLOUD_LB_CIDR=fd00:54::/120',
  ]);
  t.context = { cloud, host, core, nodes: [] };
});

test.after.always(async (t) => {
  const { host, core, nodes } = t.context;
  await host?.stop();
  for (const name of nodes ?? []) await core.deleteNode({ name }).catch(() => undefined);
  for (const r of SERVICE_ROWS) await core?.deleteNamespacedService({ name: r.service, namespace: NS }).catch(() => undefined);
});

/** Registers a Node like kubelet --cloud-provider=external: tainted, with a Hostname address. */
async function registerNode(core: CoreV1Api, name: string): Promise<V1Node> {
  return core.createNode({
    body: {
      metadata: { name, labels: { ...scope.labels, 'kubernetes.io/hostname': name } },
      spec: { taints: [{ key: UNINITIALIZED_TAINT, value: 'true', effect: 'NoSchedule' }] },
      status: { addresses: [{ type: 'Hostname', address: name }] },
    },
  });
}

/** The first Warning with `reason` about the object whose uid is `uid`, once it has repeated (the host retried). */
function repeatedWarning(list: () => Promise<CoreV1Event[]>, reason: string, uid: string, what: string): Promise<CoreV1Event> {
  return waitFor(
    async () => {
      const ev = (await list()).find((e) => e.type === 'Warning' && e.reason === reason && e.involvedObject.uid === uid);
      return ev && (ev.count ?? 1) >= 2 ? ev : undefined;
    },
    { what, timeoutMs: 120_000 },
  );
}

const ips = (n: V1Node) => (n.status?.addresses ?? []).filter((a) => a.type !== 'Hostname').map((a) => `${a.type}=${a.address}`);

test.serial(
  'node addresses: canonical text written for unambiguous spellings; ambiguous ones refused with a Warning, nothing written, until the cloud answers well',
  async (t) => {
    const { cloud, core } = t.context;
    const uids = new Map<string, string>();
    for (const r of NODE_ROWS) {
      await localcloud(cloud, 'instance', 'add', r.node, '--address', `${r.type}=${r.ip}`);
      t.context.nodes.push(r.node);
      uids.set(r.node, (await registerNode(core, r.node)).metadata!.uid!);
    }

    for (const r of NODE_ROWS.filter((x) => x.written)) {
      const node = await waitNodeInitialized(core, r.node, 'the host');
      // Only this row's type: the local cloud gives an instance without an InternalIP one of its own.
      t.deepEqual(
        ips(node).filter((a) => a.startsWith(`${r.type}=`)),
        [`${r.type}=${r.written}`],
        `${r.what}: ${r.answered} is written as ${r.written}`,
      );
    }

    for (const r of NODE_ROWS.filter((x) => x.refusal)) {
      const ev = await repeatedWarning(
        () => nodeEvents(core, r.node),
        'InvalidCloudResponse',
        uids.get(r.node)!,
        `a repeated InvalidCloudResponse on ${r.node}`,
      );
      t.log(`${r.node}: ${ev.message}`);
      t.regex(ev.message ?? '', /^failed to initialize node: provider returned an invalid \w+ response: /);
      t.regex(ev.message ?? '', r.refusal!, `${r.what}: the event names the answer and why`);
      const node = await core.readNode({ name: r.node });
      t.true(hasTaint(node, UNINITIALIZED_TAINT), `${r.node} keeps its taint`);
      t.deepEqual(ips(node), [], `${r.node}: nothing of the refused answer is written`);
      t.falsy(node.spec?.providerID, `${r.node}: no providerID either`);
    }
  },
);

test.serial(
  'service ingress: canonical text written for an unambiguous spelling; an ambiguous one refused with a Warning and no ingress, until the cloud answers well',
  async (t) => {
    const { core } = t.context;
    const uids = new Map<string, string>();
    for (const r of SERVICE_ROWS) {
      const svc = await core.createNamespacedService({ namespace: NS, body: lbService(r.service, NS, [{ port: 80 }], { loadBalancerIP: r.ip }) });
      uids.set(r.service, svc.metadata!.uid!);
    }

    for (const r of SERVICE_ROWS.filter((x) => x.written)) {
      const svc = await waitFor(
        async () => {
          const s = await readService(core, NS, r.service);
          return s?.status?.loadBalancer?.ingress?.length ? s : undefined;
        },
        { what: `an ingress on ${r.service}` },
      );
      t.deepEqual(
        svc.status!.loadBalancer!.ingress!.map((i) => i.ip),
        [r.written],
        `${r.what}: ${r.answered} is written as ${r.written}`,
      );
    }

    for (const r of SERVICE_ROWS.filter((x) => x.refusal)) {
      const svc = (await readService(core, NS, r.service))!;
      const ev = await repeatedWarning(
        () => serviceEvents(core, svc),
        'SyncLoadBalancerFailed',
        uids.get(r.service)!,
        `a repeated SyncLoadBalancerFailed on ${r.service}`,
      );
      t.log(`${r.service}: ${ev.message}`);
      t.regex(ev.message ?? '', r.refusal!, `${r.what}: the event names the answer and why`);
      t.false((ev.message ?? '').includes('\n'), 'one line');
      const now = await readService(core, NS, r.service);
      t.deepEqual(now?.status?.loadBalancer?.ingress ?? [], [], `${r.service}: nothing of the refused answer is written`);
    }
  },
);

test.serial('once the cloud answers canonical IPs, the refused node and Service converge: a bad answer loses nothing', async (t) => {
  const { cloud, core } = t.context;
  await localcloud(cloud, 'knobs', 'unset', 'respell');
  for (const r of NODE_ROWS.filter((x) => x.refusal)) {
    const node = await waitNodeInitialized(core, r.node, 'the host, after the cloud answered well');
    t.deepEqual(ips(node), [`${r.type}=${r.ip}`], `${r.node} gets ${r.ip}`);
  }
  for (const r of SERVICE_ROWS.filter((x) => x.refusal)) {
    const svc = await waitFor(
      async () => {
        const s = await readService(core, NS, r.service);
        return s?.status?.loadBalancer?.ingress?.length ? s : undefined;
      },
      { what: `an ingress on ${r.service} after the cloud answered well`, timeoutMs: 180_000 },
    );
    t.deepEqual(
      svc.status!.loadBalancer!.ingress!.map((i) => i.ip),
      [r.ip],
    );
  }
  // The canonical ones did not move.
  for (const r of SERVICE_ROWS.filter((x) => x.written))
    t.deepEqual(
      (await readService(core, NS, r.service))?.status?.loadBalancer?.ingress?.map((i) => i.ip),
      [r.written],
    );
});
