/**
 * `npm start`: the whole product on one machine. Starts a real control plane
 * (etcd, kube-apiserver, kube-controller-manager with its node lifecycle
 * controller), the host with the local cloud plugin, adds three instances to
 * the local cloud and runs a hollow kubelet (kubemark) per instance, which
 * registers its Node as a kubelet with --cloud-provider=external does
 * (tainted); shows them initialized and Ready, then creates a LoadBalancer
 * Service whose ingress carries real traffic to small HTTP backends on the
 * nodes' nodePort. Then follows the local cloud (demo/machines.ts): a
 * stopped or deleted instance takes its kubelet down, and prints what the
 * cluster does about it (demo/watch.ts). Runs until Ctrl-C, then stops
 * everything it started.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { startHost } from '../host/app.js';
import { parseHostArgs } from '../host/config/flags.js';
import { createLogger } from '../host/log.js';
import { ALLOW_SIMULATION_ENV } from '../plugins/local/simulation-guard.js';
import { StateStore } from '../plugins/local/state.js';
import { ensureBinaries } from '../test/controlplane/binaries.js';
import { ControlPlane } from '../test/controlplane/controlplane.js';
import { HollowNodes } from '../test/helpers/hollow-nodes.js';
import { localcloud } from '../test/helpers/localcloud.js';
import { waitFor } from '../test/helpers/wait.js';
import { DemoMachines } from './machines.js';
import { DemoWatch } from './watch.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const DEMO_NODES = [
  { name: 'demo-node-1', zone: 'local-a', type: 'local.small', ip: '127.0.0.11' },
  { name: 'demo-node-2', zone: 'local-b', type: 'local.medium', ip: '127.0.0.12' },
  { name: 'demo-node-3', zone: 'local-c', type: 'local.large', ip: '127.0.0.13' },
];
/** KCM's --node-monitor-grace-period: a node whose kubelet died goes Unknown this long after its last heartbeat. */
const GRACE = '20s';
/** How often the demo follows the cloud's instances and prints changes. */
const FOLLOW_MS = 1_000;

const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);

async function main(): Promise<void> {
  const dir = resolve(process.env.CCM_CLUSTER_DIR ?? '.localcluster');
  const cloudDir = join(dir, 'cloud');
  await mkdir(dir, { recursive: true });
  await rm(cloudDir, { recursive: true, force: true });
  // A short path of their own: a kubelet's runtime socket path must fit in 108 bytes.
  const kubeletDir = await mkdtemp(join(tmpdir(), 'ccm-demo-kubelets-'));

  say(
    'checking control-plane binaries (the first run builds kube-apiserver, kube-controller-manager, the hollow kubelet and etcd from Go modules: several minutes)',
  );
  await ensureBinaries({ onProgress: (l) => process.stderr.write(`[controlplane] ${l}\n`) });
  const cp = await ControlPlane.start({ dir, nodeLifecycle: { gracePeriod: GRACE } });
  say(`control plane ready at ${cp.server}`);

  const hostLog = join(dir, 'host.log');
  const parsed = parseHostArgs([
    '--cloud-provider=local',
    `--kubeconfig=${cp.kubeconfigPath}`,
    '--cluster-name=demo',
    '--bind-address=127.0.0.1',
    '--secure-port=10258',
    `--plugin-env=LOCALCLOUD_STATE_DIR=${cloudDir}`,
    // The local cloud refuses to start without it (plugins/local/simulation-guard.ts): this is its demo.
    `--plugin-env=${ALLOW_SIMULATION_ENV}=true`,
    // The route controller needs the pod network; the node IPAM controller hands out ranges of it.
    '--cluster-cidr=10.244.0.0/16',
    '--allocate-node-cidrs=true',
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  const host = await startHost(parsed.config, { log: createLogger({ destination: createWriteStream(hostLog, { flags: 'a' }) }) });
  say(`cloud-controller-manager running with the local cloud plugin (pid ${host.supervisor.pid}); log: ${hostLog}`);
  say(
    `health: curl -k https://127.0.0.1:${host.healthPort}/healthz (open to anyone); metrics need a token allowed to get /metrics, e.g. this cluster's admin's:`,
  );
  say(`  curl -k -H "Authorization: Bearer ${cp.token}" https://127.0.0.1:${host.healthPort}/metrics`);

  const store = new StateStore(cloudDir);
  const machines = new DemoMachines(store, await HollowNodes.start(cp.kubeconfigPath, kubeletDir, []), say);
  let follow: NodeJS.Timeout | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    say('stopping');
    clearTimeout(follow);
    await machines.stop();
    await host.stop();
    await cp.stop();
    await rm(kubeletDir, { recursive: true, force: true });
    say('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  for (const n of DEMO_NODES) {
    await localcloud(cloudDir, 'instance', 'add', n.name, '--zone', n.zone, '--type', n.type, '--address', n.ip);
  }
  await machines.sync();
  say(
    `hollow kubelets registered ${DEMO_NODES.map((n) => n.name).join(', ')} with the ${UNINITIALIZED} taint (--cloud-provider=external); logs in ${kubeletDir}`,
  );
  const nodes = await waitFor(
    async () => {
      const list = (await core.listNode({})).items.filter((n) => DEMO_NODES.some((d) => d.name === n.metadata?.name));
      const done = list.filter((n: V1Node) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED) && isReady(n));
      return done.length === DEMO_NODES.length ? done : undefined;
    },
    { timeoutMs: 120_000, what: 'demo nodes initialized and Ready' },
  );
  say('all nodes initialized by the cloud node controller, and Ready:');
  for (const n of nodes) {
    const l = n.metadata?.labels ?? {};
    const ip = (n.status?.addresses ?? []).find((a) => a.type === 'InternalIP')?.address ?? '';
    say(
      `  ${n.metadata?.name}  providerID=${n.spec?.providerID}  zone=${l['topology.kubernetes.io/zone']}  type=${l['node.kubernetes.io/instance-type']}  internalIP=${ip}`,
    );
  }
  // A LoadBalancer Service whose ingress carries real traffic: a small HTTP
  // backend on every node's InternalIP at the nodePort the API server assigned.
  const svc = await core.createNamespacedService({
    namespace: 'default',
    body: {
      metadata: { name: 'demo-web' },
      spec: { type: 'LoadBalancer', selector: { app: 'demo-web' }, ports: [{ name: 'http', port: 8080, targetPort: 8080 as never }] },
    },
  });
  const nodePort = svc.spec!.ports![0]!.nodePort!;
  await machines.serve(nodePort);
  const ingress = await waitFor(
    async () => (await core.readNamespacedService({ name: 'demo-web', namespace: 'default' })).status?.loadBalancer?.ingress?.[0],
    { timeoutMs: 120_000, what: 'demo-web load balancer ingress' },
  );
  say(
    `LoadBalancer Service default/demo-web: ingress ${ingress.ip} (ipMode ${ingress.ipMode}), backends ${DEMO_NODES.map((n) => `${n.ip}:${nodePort}`).join(', ')}`,
  );
  const cli = `node dist/plugins/local/cli.js --state ${cloudDir}`;
  say('try it:');
  say(`  curl http://${ingress.ip}:8080/      (repeat: the local cloud balances over the nodes)`);
  say(`  export KUBECONFIG=${cp.kubeconfigPath}`);
  say('  kubectl get nodes -L topology.kubernetes.io/zone,node.kubernetes.io/instance-type');
  say('  kubectl get service demo-web; kubectl describe service demo-web   (events: EnsuringLoadBalancer, EnsuredLoadBalancer)');
  say(`  ${cli} lb list`);
  say(`  ${cli} instance list`);
  say('a machine dying (the demo kills the kubelet of a stopped or deleted instance; changes are printed here):');
  say(`  ${cli} instance shutdown demo-node-3   → Unknown after ${GRACE}, then the shutdown taint`);
  say(`  ${cli} instance start demo-node-3      → kubelet back, Ready, taint removed`);
  say(`  ${cli} instance delete demo-node-3     → Unknown, then the node is deleted and leaves the load balancer`);
  say(`  ${cli} instance add demo-node-4        → a new machine: its node joins and becomes a backend`);
  say('press Ctrl-C to stop everything');

  const watch = new DemoWatch(core, store, 'demo-web', say);
  const tick = async () => {
    try {
      await machines.sync();
      await watch.poll();
    } catch (err) {
      say(`following the cluster failed once: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!stopping) follow = setTimeout(() => void tick(), FOLLOW_MS);
  };
  await tick();
}

const isReady = (n: V1Node) => (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

main().catch((err) => {
  process.stderr.write(`[demo] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
