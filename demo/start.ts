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
 *
 * `npm start -- --two-clouds`: the same with two local clouds in one host
 * (--providers-config, written to the cluster directory and printed), "east"
 * spawned by the host and "west" beside it, each with its own provider name,
 * providerID prefix (east://, west://), node selector, zones and ingress
 * pool, and nodes of both; each cloud's Nodes are initialized by its own
 * provider. East serves the load balancer and the routes.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
import { LOCAL_PLUGIN, localcloud } from '../test/helpers/localcloud.js';
import { waitFor } from '../test/helpers/wait.js';
import { DemoMachines } from './machines.js';
import { DemoWatch } from './watch.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

interface DemoNode {
  name: string;
  zone: string;
  type: string;
  ip: string;
}

/** One local cloud of the demo: its provider name, state directory (under the cluster dir), its machines. */
interface DemoCloud {
  name: string;
  stateDir: string;
  nodes: DemoNode[];
  /** Extra environment of its plugin process. */
  env: string[];
  /** Labels its kubelets register with (the cloud's node selector claims them). */
  labels: Record<string, string>;
}

/** The one-cloud demo: the local cloud as provider "local". */
const ONE_CLOUD: DemoCloud[] = [
  {
    name: 'local',
    stateDir: 'cloud',
    env: [],
    labels: {},
    nodes: [
      { name: 'demo-node-1', zone: 'local-a', type: 'local.small', ip: '127.0.0.11' },
      { name: 'demo-node-2', zone: 'local-b', type: 'local.medium', ip: '127.0.0.12' },
      { name: 'demo-node-3', zone: 'local-c', type: 'local.large', ip: '127.0.0.13' },
    ],
  },
];

/** The label by which each cloud of --two-clouds claims its kubelets' Nodes before they have a providerID. */
const CLOUD_LABEL = 'demo.ccm.dev/cloud';

/** The loadBalancerClass west serves (east serves Services without a class: one provider of a host may). */
const WEST_CLASS = 'demo.ccm.dev/west';
/** The StorageClass provisioner west serves (east keeps the local cloud's default, local.ccm.dev). */
const WEST_PROVISIONER = 'west.local.ccm.dev';

/**
 * --two-clouds: two local clouds, each its own provider name (so providerID
 * prefix), node selector, zones and ingress pool; east serves Services
 * without a class, west only its class.
 */
const TWO_CLOUDS: DemoCloud[] = (['east', 'west'] as const).map((name, c) => ({
  name,
  stateDir: name,
  labels: { [CLOUD_LABEL]: name },
  env: [
    `LOCALCLOUD_PROVIDER_NAME=${name}`,
    `LOCALCLOUD_NODE_SELECTOR=${CLOUD_LABEL}=${name}`,
    `LOCALCLOUD_LB_CIDR=127.0.${10 + c}.0/24`,
    // West serves its own class and its own provisioner: two providers serving one of either stop the host.
    ...(name === 'west'
      ? [`LOCALCLOUD_LB_CLASSES=${WEST_CLASS}`, 'LOCALCLOUD_LB_CLASSES_ONLY=true', `LOCALCLOUD_VOLUME_PROVISIONERS=${WEST_PROVISIONER}`]
      : []),
  ],
  nodes: [1, 2].map((i) => ({
    name: `${name}-node-${i}`,
    zone: `${name}-${'ab'[i - 1]}`,
    type: `${name}.small`,
    ip: `127.0.0.${11 + 10 * c + i - 1}`,
  })),
}));

/** The providers file of --two-clouds: east spawned by the host (the default: load balancers; and routes), west beside it. */
function providersYaml(dir: string, clouds: DemoCloud[]): string {
  const entries = clouds.map((cloud, i) =>
    [
      `  - name: ${cloud.name}`,
      `    pluginPath: ${LOCAL_PLUGIN}`,
      ...(i === 0 ? ['    default: true', '    routes: true'] : []),
      '    pluginEnv:',
      ...[`LOCALCLOUD_STATE_DIR=${join(dir, cloud.stateDir)}`, `${ALLOW_SIMULATION_ENV}=true`, ...cloud.env].map((e) => `      - ${e}`),
    ].join('\n'),
  );
  return `# Written by npm start -- --two-clouds: two local clouds in one host (docs/flags.md#several-providers).\nproviders:\n${entries.join('\n')}\n`;
}

/** The demo's command line: nothing, or --two-clouds. */
function parseArgs(argv: string[]): { twoClouds: boolean } {
  const unknown = argv.filter((a) => a !== '--two-clouds');
  if (unknown.length > 0) {
    process.stderr.write(`[demo] unknown argument ${unknown.join(' ')}; usage: npm start [-- --two-clouds]\n`);
    process.exit(2);
  }
  return { twoClouds: argv.includes('--two-clouds') };
}
/** KCM's --node-monitor-grace-period: a node whose kubelet died goes Unknown this long after its last heartbeat. */
const GRACE = '20s';
/** How often the demo follows the cloud's instances and prints changes. */
const FOLLOW_MS = 1_000;

const say = (line: string) => process.stdout.write(`[demo] ${line}\n`);

async function main(): Promise<void> {
  const { twoClouds } = parseArgs(process.argv.slice(2));
  const clouds = twoClouds ? TWO_CLOUDS : ONE_CLOUD;
  const demoNodes = clouds.flatMap((c) => c.nodes);
  const dir = resolve(process.env.CCM_CLUSTER_DIR ?? '.localcluster');
  // The first cloud serves the demo's load balancer.
  const cloudDir = join(dir, clouds[0]!.stateDir);
  await mkdir(dir, { recursive: true });
  for (const c of clouds) await rm(join(dir, c.stateDir), { recursive: true, force: true });
  // A short path of their own: a kubelet's runtime socket path must fit in 108 bytes.
  const kubeletDir = await mkdtemp(join(tmpdir(), 'ccm-demo-kubelets-'));

  say(
    'checking control-plane binaries (the first run builds kube-apiserver, kube-controller-manager, the hollow kubelet and etcd from Go modules: several minutes)',
  );
  await ensureBinaries({ onProgress: (l) => process.stderr.write(`[controlplane] ${l}\n`) });
  const cp = await ControlPlane.start({ dir, nodeLifecycle: { gracePeriod: GRACE } });
  say(`control plane ready at ${cp.server}`);

  const hostLog = join(dir, 'host.log');
  const providersFile = join(dir, 'providers.yaml');
  if (twoClouds) await writeFile(providersFile, providersYaml(dir, clouds));
  const parsed = parseHostArgs([
    ...(twoClouds
      ? [`--providers-config=${providersFile}`]
      : [
          '--cloud-provider=local',
          `--plugin-env=LOCALCLOUD_STATE_DIR=${cloudDir}`,
          // The local cloud refuses to start without it (plugins/local/simulation-guard.ts): this is its demo.
          `--plugin-env=${ALLOW_SIMULATION_ENV}=true`,
        ]),
    `--kubeconfig=${cp.kubeconfigPath}`,
    '--cluster-name=demo',
    '--bind-address=127.0.0.1',
    '--secure-port=10258',
    // The route controller needs the pod network; the node IPAM controller hands out ranges of it.
    '--cluster-cidr=10.244.0.0/16',
    '--allocate-node-cidrs=true',
  ]);
  if ('errors' in parsed) throw new Error(parsed.errors.join('; '));
  const host = await startHost(parsed.config, { log: createLogger({ destination: createWriteStream(hostLog, { flags: 'a' }) }) });
  if (twoClouds) {
    const pids = host.providers.list().map((p) => `${p.name} pid ${p.supervisor.pid}`);
    say(
      `cloud-controller-manager running with two local clouds as providers (${pids.join(', ')}); providers file: ${providersFile}; log: ${hostLog}`,
    );
  } else say(`cloud-controller-manager running with the local cloud plugin (pid ${host.supervisor.pid}); log: ${hostLog}`);
  say(
    `health: curl -k https://127.0.0.1:${host.healthPort}/healthz (open to anyone); metrics need a token allowed to get /metrics, e.g. this cluster's admin's:`,
  );
  say(`  curl -k -H "Authorization: Bearer ${cp.token}" https://127.0.0.1:${host.healthPort}/metrics`);

  const store = new StateStore(cloudDir);
  const kubelets = await HollowNodes.start(cp.kubeconfigPath, kubeletDir, []);
  // One set of machines per cloud, sharing the kubelets.
  const machines = clouds.map((c) => new DemoMachines(new StateStore(join(dir, c.stateDir)), kubelets, say, c.labels));
  let follow: NodeJS.Timeout | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    say('stopping');
    clearTimeout(follow);
    for (const m of machines) await m.stop();
    await host.stop();
    await cp.stop();
    await rm(kubeletDir, { recursive: true, force: true });
    say('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());

  const core = cp.kubeConfig().makeApiClient(CoreV1Api);
  for (const c of clouds) {
    for (const n of c.nodes) {
      await localcloud(join(dir, c.stateDir), 'instance', 'add', n.name, '--zone', n.zone, '--type', n.type, '--address', n.ip);
    }
  }
  for (const m of machines) await m.sync();
  say(
    `hollow kubelets registered ${demoNodes.map((n) => n.name).join(', ')} with the ${UNINITIALIZED} taint (--cloud-provider=external); logs in ${kubeletDir}`,
  );
  const nodes = await waitFor(
    async () => {
      const list = (await core.listNode({})).items.filter((n) => demoNodes.some((d) => d.name === n.metadata?.name));
      const done = list.filter((n: V1Node) => !(n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED) && isReady(n));
      return done.length === demoNodes.length ? done : undefined;
    },
    { timeoutMs: 120_000, what: 'demo nodes initialized and Ready' },
  );
  say(
    twoClouds
      ? `all nodes initialized by the cloud node controller, each by its own cloud's provider (providerID ${clouds.map((c) => `${c.name}://`).join(' or ')}), and Ready:`
      : 'all nodes initialized by the cloud node controller, and Ready:',
  );
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
  for (const m of machines) await m.serve(nodePort);
  const ingress = await waitFor(
    async () => (await core.readNamespacedService({ name: 'demo-web', namespace: 'default' })).status?.loadBalancer?.ingress?.[0],
    { timeoutMs: 120_000, what: 'demo-web load balancer ingress' },
  );
  say(
    `LoadBalancer Service default/demo-web: ingress ${ingress.ip} (ipMode ${ingress.ipMode}), backends ${demoNodes.map((n) => `${n.ip}:${nodePort}`).join(', ')}`,
  );
  const cli = `node dist/plugins/local/cli.js --state ${cloudDir}`;
  const last = demoNodes.at(-1)!.name;
  const lastCli = `node dist/plugins/local/cli.js --state ${join(dir, clouds.at(-1)!.stateDir)}`;
  say('try it:');
  say(`  curl http://${ingress.ip}:8080/      (repeat: the local cloud balances over the nodes)`);
  say(`  export KUBECONFIG=${cp.kubeconfigPath}`);
  say('  kubectl get nodes -L topology.kubernetes.io/zone,node.kubernetes.io/instance-type');
  if (twoClouds)
    say(`  (two clouds: -L ${CLOUD_LABEL} shows each Node's cloud; a Service of loadBalancerClass ${WEST_CLASS} gets west's load balancer)`);
  say('  kubectl get service demo-web; kubectl describe service demo-web   (events: EnsuringLoadBalancer, EnsuredLoadBalancer)');
  say(`  ${cli} lb list`);
  say(`  ${lastCli} instance list`);
  say('a machine dying (the demo kills the kubelet of a stopped or deleted instance; changes are printed here):');
  say(`  ${lastCli} instance shutdown ${last}   → Unknown after ${GRACE}, then the shutdown taint`);
  say(`  ${lastCli} instance start ${last}      → kubelet back, Ready, taint removed`);
  say(`  ${lastCli} instance delete ${last}     → Unknown, then the node is deleted and leaves the load balancer`);
  const next = last.replace(/\d+$/, (n) => String(Number(n) + 1));
  say(`  ${lastCli} instance add ${next}        → a new machine: its node joins and becomes a backend`);
  say('press Ctrl-C to stop everything');

  const watch = new DemoWatch(core, store, 'demo-web', say);
  const tick = async () => {
    try {
      for (const m of machines) await m.sync();
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
