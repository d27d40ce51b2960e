/**
 * Side by side with upstream for real providers: each provider below
 * initializes the same stand-in machines' Nodes once inside the upstream
 * cloud-controller-manager (k8s.io/cloud-provider's app with the provider
 * linked in, as the provider's own CCM runs it: plugins/<provider>-bridge/cmd/upstream-ccm)
 * and once under the host through the bridge; the Nodes must agree field by
 * field (providerID, labels, taints, addresses).
 *
 * The upstream CCM has no --node-selector, so it runs on a control plane of
 * its own, as the admin (as in test/integration/parity); the host runs on the
 * shared one, scoped by its selector, as the shipped ServiceAccount, and the
 * provider's Initialize gets its own least-privilege identity. The Nodes are
 * created the same way on both.
 */
import test from 'ava';
import { createWriteStream } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Node } from '@kubernetes/client-node';
import { execa } from 'execa';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { freePorts, get } from '../../controlplane/probe.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { createExternalNode, deleteScopedNodes, testScope, waitNodeInitialized } from '../../helpers/nodes.js';
import { openstackBinaries, openstackCloudConfig, openstackProviderIdentity, startOpenStackStandin } from '../../helpers/openstack.js';
import { awsCloudConfig, startMoto, MOTO_CLIENT_ENV, seedCluster } from '../../helpers/moto.js';
import { providerIdentity, removeProviderIdentity } from '../../helpers/provider-identity.js';
import { AWS_CLOUD_PROVIDER, awsUpstreamCcm } from '../../helpers/providers.js';
import { startProviderHost } from '../../helpers/provider-host.js';
import { startVcsim, vsphereBinaries, vsphereCloudConfig, vsphereProviderIdentity } from '../../helpers/vsphere.js';
import { waitFor } from '../../helpers/wait.js';

/** What a cloud-node controller decides about a Node, normalized for comparison. */
interface NodeView {
  providerID?: string;
  labels: Record<string, string>;
  taints: string[];
  addresses: string[];
}

function view(n: V1Node): NodeView {
  return {
    providerID: n.spec?.providerID,
    labels: n.metadata?.labels ?? {},
    taints: (n.spec?.taints ?? []).map((x) => `${x.key}=${x.value ?? ''}:${x.effect}`).sort(),
    addresses: (n.status?.addresses ?? []).map((a) => `${a.type}=${a.address}`).sort(),
  };
}

/** One provider against its stand-in, ready for both sides. */
interface Stage {
  upstream: string;
  plugin: string;
  /** The provider's own config file (both sides read it). */
  cloudConfig: string;
  /** The variable the plugin's main reads the config path from. */
  configEnv: string;
  /** More environment both sides' provider code needs (e.g. credentials for the stand-in). */
  env?: Record<string, string>;
  /** Node names (the stand-in's machines) and the providerID each must get. */
  machines: { name: string; providerID: string }[];
  identity(admin: KubeConfig, namespace: string): Promise<KubeConfig>;
  stop(): Promise<void>;
}

const PROVIDERS: { name: string; stage(dir: string, prefix: string): Promise<Stage> }[] = [
  {
    name: 'aws',
    async stage(dir, prefix) {
      const [upstream, plugin] = await Promise.all([awsUpstreamCcm(), AWS_CLOUD_PROVIDER.executable(dir)]);
      const moto = await startMoto(dir, 'us-east-1');
      const az = 'us-east-1a';
      // Its own VPC range (net 46): Nodes are named by the instances' private DNS names, as AWS names them.
      const seeded = await seedCluster(moto, { cluster: prefix, az, instances: 2, net: 46 });
      const cloudConfig = join(dir, 'cloud.conf');
      await writeFile(cloudConfig, awsCloudConfig(moto, seeded, prefix));
      return {
        upstream,
        plugin,
        cloudConfig,
        configEnv: 'CLOUD_CONFIG',
        // Nothing leaves the machine: dummy credentials, no IMDS, and any endpoint but moto's fails on a closed port.
        env: {
          ...MOTO_CLIENT_ENV,
        },
        machines: seeded.instances.map((i) => ({ name: i.privateDns, providerID: `aws:///${az}/${i.id}` })),
        identity: (admin, namespace) =>
          providerIdentity(admin, namespace, 'aws-cloud-provider', {
            cluster: [
              { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
              { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
            ],
          }),
        stop: () => moto.stop(),
      };
    },
  },
  {
    name: 'vsphere',
    async stage(dir, prefix) {
      const { upstream, provider } = await vsphereBinaries();
      const sim = await startVcsim(`${prefix}-`);
      const cloudConfig = join(dir, 'vsphere.yaml');
      await writeFile(cloudConfig, vsphereCloudConfig(sim, prefix));
      return {
        upstream,
        plugin: provider,
        cloudConfig,
        configEnv: 'VSPHERE_CLOUD_CONFIG',
        machines: sim.vms.slice(0, 2).map((vm) => ({ name: vm.name, providerID: `vsphere://${vm.uuid}` })),
        identity: vsphereProviderIdentity,
        stop: () => sim.stop(),
      };
    },
  },
  {
    name: 'openstack',
    async stage(dir, prefix) {
      const { upstream, provider } = await openstackBinaries();
      const standin = await startOpenStackStandin();
      const servers = [standin.addServer(`${prefix}-0`, '10.0.0.10', 'nova-az1'), standin.addServer(`${prefix}-1`, '10.0.0.11', 'nova-az2')];
      servers[0]!.publicIp = '203.0.113.10';
      const cloudConfig = join(dir, 'cloud.conf');
      await writeFile(cloudConfig, openstackCloudConfig(standin), { mode: 0o600 });
      return {
        upstream,
        plugin: provider,
        cloudConfig,
        configEnv: 'OPENSTACK_CLOUD_CONFIG',
        machines: servers.map((s) => ({ name: s.name, providerID: `openstack:///${s.id}` })),
        identity: openstackProviderIdentity,
        stop: () => standin.stop(),
      };
    },
  },
];

/** Creates the machines' Nodes as kubelet --cloud-provider=external would and returns them once `who` initialized them. */
async function initializedNodes(core: CoreV1Api, names: string[], labels: Record<string, string>, who: string): Promise<Record<string, NodeView>> {
  for (const name of names) await createExternalNode(core, name, labels);
  const out: Record<string, NodeView> = {};
  for (const name of names) {
    await waitNodeInitialized(core, name, who);
    // Upstream removes the taint first and writes the cloud's addresses right after (the host writes them first): wait for both.
    const node = await waitFor(
      async () => {
        const n = await core.readNode({ name });
        return (n.status?.addresses ?? []).length > 0 ? n : undefined;
      },
      { what: `addresses of node ${name} from ${who}`, timeoutMs: 120_000 },
    );
    out[name] = view(node);
  }
  return out;
}

/** The upstream CCM with the provider linked in, on a control plane of its own; the Nodes it initialized. */
async function upstreamNodes(stage: Stage, provider: string, dir: string, labels: Record<string, string>): Promise<Record<string, NodeView>> {
  const cp = await ControlPlane.start({ controllerManager: false });
  try {
    const [port] = await freePorts(1);
    const logFile = join(dir, 'upstream-ccm.log');
    const ccm = execa(
      stage.upstream,
      [
        `--cloud-provider=${provider}`,
        `--cloud-config=${stage.cloudConfig}`,
        `--kubeconfig=${cp.kubeconfigPath}`,
        '--controllers=cloud-node',
        '--cluster-name=test',
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
      ],
      { reject: false, stdin: 'ignore', all: true, buffer: false, env: stage.env ?? {} },
    );
    ccm.all!.pipe(createWriteStream(logFile));
    try {
      await waitFor(
        async () => {
          if (ccm.exitCode !== undefined && ccm.exitCode !== null) throw new Error(`upstream-ccm exited ${ccm.exitCode}; see ${logFile}`);
          return get(`https://127.0.0.1:${port}/healthz`, { insecure: true }).then(
            (r) => r.status === 200,
            () => false,
          );
        },
        { what: `upstream-ccm (${provider} linked in) healthy`, timeoutMs: 120_000 },
      );
      const names = stage.machines.map((m) => m.name);
      return await initializedNodes(cp.kubeConfig().makeApiClient(CoreV1Api), names, labels, `the upstream CCM with ${provider}`);
    } finally {
      ccm.kill('SIGTERM');
      const kill = setTimeout(() => ccm.kill('SIGKILL'), 15_000);
      await ccm;
      clearTimeout(kill);
    }
  } finally {
    await cp.stop();
  }
}

for (const { name: provider, stage: makeStage } of PROVIDERS) {
  test(`node initialization by the ${provider} provider: the host through the bridge and the upstream CCM linking the provider make the same Nodes`, async (t) => {
    t.timeout(10 * 60_000);
    const scope = testScope(`${provider.slice(0, 2)}-parity`);
    const dir = await mkdtemp(join(tmpdir(), `ccm-${provider}-parity-`));
    const admin = await testKubeConfig();
    const stage = await makeStage(dir, scope.prefix);
    try {
      const theirs = await upstreamNodes(stage, provider, dir, scope.labels);

      const kubeconfig = join(dir, 'provider-kubeconfig');
      await writeFile(kubeconfig, (await stage.identity(admin, scope.prefix)).exportConfig(), { mode: 0o600 });
      const running = await startProviderHost(
        dir,
        { name: provider, executable: async () => stage.plugin },
        'exec',
        {},
        ['--controllers=cloud-node', `--node-selector=${scope.selector}`],
        { env: { ...stage.env, [stage.configEnv]: stage.cloudConfig, KUBECONFIG: kubeconfig }, cloudConfigFile: stage.cloudConfig },
      );
      let ours: Record<string, NodeView>;
      try {
        const names = stage.machines.map((m) => m.name);
        ours = await initializedNodes(admin.makeApiClient(CoreV1Api), names, scope.labels, 'the host');
      } finally {
        await running.stop();
      }

      t.deepEqual(ours, theirs);
      for (const m of stage.machines) t.is(ours[m.name]?.providerID, m.providerID, 'the comparison is of initialized Nodes');
    } finally {
      await stage.stop();
      await deleteScopedNodes(admin.makeApiClient(CoreV1Api), scope.selector);
      await removeProviderIdentity(admin, scope.prefix);
    }
  });
}
