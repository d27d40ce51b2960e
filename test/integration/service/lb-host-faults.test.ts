/**
 * Backend (host) updates that fail, against the real API server, with the
 * local cloud wrapped in the fault fixture (test/fixtures/lb-fault-provider.ts)
 * as a real plugin process that keeps the batch UpdateLoadBalancerHosts:
 * a node joins while the update fails for one Service, for the whole call
 * (a cloud outage), or asks to be retried later (RetryInfo). Each failure is
 * a Warning `UpdateLoadBalancerFailed` on the Service (upstream's reason),
 * and the Service is re-ensured with the new nodes: on its backoff, or after
 * the provider's delay.
 *
 * Scoping: namespace lb-host-faults, nodes labelled lbtest=host-faults
 * (lb-host-faults-n*), ingress pool 127.0.87.0/24, cluster name hostfaults.
 */
import anyTest, { type TestFn } from 'ava';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { startTestHost, type TestHost } from '../../helpers/host.js';
import { cloudLbs, createBackendNode, ensureNamespace, lbService, serviceEvents } from '../../helpers/lb.js';
import { localcloud } from '../../helpers/localcloud.js';
import { waitFor } from '../../helpers/wait.js';

const NS = 'lb-host-faults';
const LABELS = { lbtest: 'host-faults' };
const FIXTURE = fileURLToPath(new URL('../../fixtures/lb-fault-provider.js', import.meta.url));
const test = anyTest as TestFn<{ cloud: string; host: TestHost; core: CoreV1Api; nodes: string[] }>;

test.before(async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-lb-host-faults-'));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  const host = await startTestHost(dir, [
    `--plugin-path=${FIXTURE}`,
    '--controllers=service',
    '--cluster-name=hostfaults',
    `--watch-namespace=${NS}`,
    '--node-selector=lbtest=host-faults',
    '--plugin-env=LOCALCLOUD_LB_CIDR=127.0.87.0/24',
  ]);
  t.context = { cloud: join(dir, 'cloud'), host, core, nodes: [] };
});

test.after.always(async (t) => {
  const { host, core, cloud, nodes } = t.context;
  await localcloud(cloud, 'knobs', 'unset', 'failAll').catch(() => undefined);
  await host?.stop();
  for (const name of nodes ?? []) await core.deleteNode({ name }).catch(() => undefined);
});

async function addNode(t: { context: { core: CoreV1Api; nodes: string[] } }, name: string, ip: string): Promise<void> {
  await createBackendNode(t.context.core, name, ip, LABELS);
  t.context.nodes.push(name);
}

/** Creates the Services and waits until each has its ingress (so it is ensured and takes part in host updates). */
async function createEnsured(core: CoreV1Api, bodies: V1Service[]): Promise<V1Service[]> {
  const created = await Promise.all(bodies.map((body) => core.createNamespacedService({ namespace: NS, body })));
  for (const s of created) {
    await waitFor(async () => (await core.readNamespacedService({ name: s.metadata!.name!, namespace: NS })).status?.loadBalancer?.ingress?.[0]?.ip, { what: `ingress of ${s.metadata!.name}` });
  }
  return created;
}

async function deleteAll(core: CoreV1Api, svcs: V1Service[]): Promise<void> {
  for (const s of svcs) await core.deleteNamespacedService({ name: s.metadata!.name!, namespace: NS }).catch(() => undefined);
}

const updateFailed = async (core: CoreV1Api, svc: V1Service) =>
  (await serviceEvents(core, svc)).find((e) => e.reason === 'UpdateLoadBalancerFailed' && e.type === 'Warning');

/** Whether the cloud load balancer of `svc` has exactly `nodes` as backends. */
async function backendsAre(cloud: string, svc: V1Service, nodes: string[]): Promise<boolean> {
  const lb = (await cloudLbs(cloud)).find((l) => l.serviceUid === svc.metadata!.uid);
  return !!lb && JSON.stringify(lb.backends.map((b) => b.nodeName).sort()) === JSON.stringify([...nodes].sort());
}

test.serial('a failed host update of one Service: Warning UpdateLoadBalancerFailed on it only, then re-ensured with the new node', async (t) => {
  const { core, cloud } = t.context;
  const [bad, good] = await createEnsured(core, [
    lbService('hosts-unavailable', NS, [{ port: 80 }], {}, { 'fault.test/hosts-error': 'unavailable' }),
    lbService('hosts-fine', NS, [{ port: 80 }]),
  ]);
  await addNode(t, 'lb-host-faults-n1', '127.0.87.251');
  const ev = await waitFor(() => updateFailed(core, bad!), { what: 'UpdateLoadBalancerFailed on hosts-unavailable' });
  t.regex(ev.message ?? '', /lb-host-faults-n1.*host update unavailable/);
  await waitFor(() => backendsAre(cloud, bad!, ['lb-host-faults-n1']), { what: 'hosts-unavailable re-ensured with the new node' });
  await waitFor(() => backendsAre(cloud, good!, ['lb-host-faults-n1']), { what: 'hosts-fine updated' });
  t.falsy(await updateFailed(core, good!), 'no failure reported on the Service whose update succeeded');
  await deleteAll(core, [bad!, good!]);
});
