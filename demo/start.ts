/**
 * `npm start`: the whole product on one machine. Starts a real control plane
 * (etcd + kube-apiserver), the host with the local cloud plugin, adds three
 * instances to the local cloud and registers their Nodes the way a kubelet
 * with --cloud-provider=external would (tainted), then shows them
 * initialized, then creates a LoadBalancer Service whose ingress carries
 * real traffic to small HTTP backends on the nodes' nodePort. Runs until
 * Ctrl-C, then stops everything it started.
 */
import { createWriteStream } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { startHost } from '../host/app.js';
import { parseHostArgs } from '../host/config/flags.js';
import { createLogger } from '../host/log.js';
import { ensureBinaries } from '../test/controlplane/binaries.js';
import { ControlPlane } from '../test/controlplane/controlplane.js';
import { localcloud } from '../test/helpers/localcloud.js';
import { waitFor } from '../test/helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const DEMO_NODES = [
  { name: 'demo-node-1', zone: 'local-a', type: 'local.small', ip: '127.0.0.11' },
  { name: 'demo-node-2', zone: 'local-b', type: 'local.medium', ip: '127.0.0.12' },
  { name: 'demo-node-3', zone: 'local-c', type: 'local.large', ip: '127.0.0.13' },
];

const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);

async function main(): Promise<void> {
  const dir = resolve(process.env.CCM_CLUSTER_DIR ?? '.localcluster');
  const cloudDir = join(dir, 'cloud');
  await mkdir(dir, { recursive: true });
  await rm(cloudDir, { recursive: true, force: true });

  say('checking control-plane binaries (the first run builds kube-apiserver and etcd from Go modules: several minutes)');
  await ensureBinaries({ onProgress: (l) => process.stderr.write(`[controlplane] ${l}\n`) });
  const cp = await ControlPlane.start({ dir });
  say(`control plane ready at ${cp.server}`);

  const hostLog = join(dir, 'host.log');
  const parsed = parseHostArgs([
    '--cloud-provider=local',
    `--kubeconfig=${cp.kubeconfigPath}`,
    '--cluster-name=demo',
    '--bind-address=127.0.0.1',
    '--secure-port=10258',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${cloudDir}`,
    // The route controller needs the pod network; the node IPAM controller hands out ranges of it.
    '--cluster-cidr=10.244.0.0/16',
    '--allocate-node-cidrs=true',
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  const host = await startHost(parsed.config, { log: createLogger({ destination: createWriteStream(hostLog, { flags: 'a' }) }) });
  say(`cloud-controller-manager running with the local cloud plugin (pid ${host.supervisor.pid}); log: ${hostLog}`);
  say(`health: curl -k https://127.0.0.1:${host.healthPort}/healthz (open to anyone); metrics need a token allowed to get /metrics, e.g. this cluster's admin's:`);
  say(`  curl -k -H "Authorization: Bearer ${cp.token}" https://127.0.0.1:${host.healthPort}/metrics`);

  const servers: Server[] = [];
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    say('stopping');
    for (const s of servers) s.close();
    await host.stop();
    await cp.stop();
    say('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  for (const n of DEMO_NODES) {
    await localcloud(cloudDir, 'instance', 'add', n.name, '--zone', n.zone, '--type', n.type, '--address', n.ip);
    await core.createNode({
      body: {
        metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name } },
        spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
        status: { addresses: [{ type: 'Hostname', address: n.name }] },
      },
    });
    say(`registered node ${n.name} with the ${UNINITIALIZED} taint (as kubelet --cloud-provider=external does)`);
  }
  const nodes = await waitFor(
    async () => {
      const list = (await core.listNode({})).items.filter((n) => DEMO_NODES.some((d) => d.name === n.metadata?.name));
      const done = list.filter((n: V1Node) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED));
      return done.length === DEMO_NODES.length ? done : undefined;
    },
    { timeoutMs: 120_000, what: 'demo nodes initialized' },
  );
  say('all nodes initialized by the cloud node controller:');
  for (const n of nodes) {
    const l = n.metadata?.labels ?? {};
    const ip = (n.status?.addresses ?? []).find((a) => a.type === 'InternalIP')?.address ?? '';
    say(`  ${n.metadata?.name}  providerID=${n.spec?.providerID}  zone=${l['topology.kubernetes.io/zone']}  type=${l['node.kubernetes.io/instance-type']}  internalIP=${ip}`);
  }
  // A LoadBalancer Service whose ingress carries real traffic: a small HTTP
  // backend on every node's InternalIP at the nodePort the API server assigned.
  const svc = await core.createNamespacedService({
    namespace: 'default',
    body: { metadata: { name: 'demo-web' }, spec: { type: 'LoadBalancer', selector: { app: 'demo-web' }, ports: [{ name: 'http', port: 8080, targetPort: 8080 as never }] } },
  });
  const nodePort = svc.spec!.ports![0]!.nodePort!;
  for (const n of DEMO_NODES) {
    const server = createServer((_req, res) => res.end(`hello from ${n.name} (${n.ip}:${nodePort})\n`));
    await new Promise<void>((ok) => server.listen(nodePort, n.ip, ok));
    servers.push(server);
  }
  const ingress = await waitFor(
    async () => (await core.readNamespacedService({ name: 'demo-web', namespace: 'default' })).status?.loadBalancer?.ingress?.[0],
    { timeoutMs: 120_000, what: 'demo-web load balancer ingress' },
  );
  say(`LoadBalancer Service default/demo-web: ingress ${ingress.ip} (ipMode ${ingress.ipMode}), backends ${DEMO_NODES.map((n) => `${n.ip}:${nodePort}`).join(', ')}`);
  say('try it:');
  say(`  curl http://${ingress.ip}:8080/      (repeat: the local cloud balances over the three nodes)`);
  say(`  export KUBECONFIG=${cp.kubeconfigPath}`);
  say('  kubectl get nodes -L topology.kubernetes.io/zone,node.kubernetes.io/instance-type');
  say('  kubectl get service demo-web; kubectl describe service demo-web   (events: EnsuringLoadBalancer, EnsuredLoadBalancer)');
  say(`  node dist/plugins/local/cli.js --state ${cloudDir} lb list`);
  say(`  node dist/plugins/local/cli.js --state ${cloudDir} instance list`);
  say('press Ctrl-C to stop everything');
}

main().catch((err) => {
  process.stderr.write(`[demo] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
