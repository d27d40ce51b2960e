/**
 * Side by side with upstream for a real provider: k8s.io/cloud-provider-vsphere
 * initializes the same simulated VMs' Nodes once inside the upstream
 * cloud-controller-manager (k8s.io/cloud-provider's app with the provider
 * linked in, as vSphere's own CCM runs it: plugins/vsphere-bridge/cmd/upstream-ccm)
 * and once under the host through the bridge; the Nodes must agree field by
 * field (providerID, labels, taints, addresses).
 *
 * The upstream CCM has no --node-selector, so it runs on a control plane of
 * its own, as the admin (as in test/integration/parity); the host runs on the
 * shared one, scoped by its selector, as the shipped ServiceAccount. The
 * Nodes are created the same way on both.
 */
import test from 'ava';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriteStream } from 'node:fs';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { execa } from 'execa';
import { ControlPlane } from '../../controlplane/controlplane.js';
import { freePorts, get } from '../../controlplane/probe.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { createExternalNode, deleteScopedNodes, testScope, waitNodeInitialized } from '../../helpers/nodes.js';
import { removeProviderIdentity } from '../../helpers/provider-identity.js';
import { startProviderHost } from '../../helpers/provider-host.js';
import { startVcsim, vsphereBinaries, vsphereCloudConfig, vsphereProviderIdentity, type VcsimVm } from '../../helpers/vsphere.js';
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

/** Creates the VMs' Nodes as kubelet --cloud-provider=external would, waits until a CCM initialized them, and returns them. */
async function initializedNodes(core: CoreV1Api, vms: VcsimVm[], labels: Record<string, string>, who: string): Promise<Record<string, NodeView>> {
  for (const vm of vms) await createExternalNode(core, vm.name, labels);
  const out: Record<string, NodeView> = {};
  for (const vm of vms) out[vm.name] = view(await waitNodeInitialized(core, vm.name, who));
  return out;
}

test('node initialization by k8s.io/cloud-provider-vsphere: the host through the bridge and the upstream CCM linking the provider make the same Nodes', async (t) => {
  t.timeout(10 * 60_000);
  const { upstream, provider } = await vsphereBinaries();
  const scope = testScope('vs-parity');
  const dir = await mkdtemp(join(tmpdir(), 'ccm-vsphere-parity-'));
  const sim = await startVcsim(`${scope.prefix}-`);
  const vms = sim.vms.slice(0, 2);
  const admin = await testKubeConfig();
  try {
    const cloudConfig = join(dir, 'vsphere.yaml');
    await writeFile(cloudConfig, vsphereCloudConfig(sim, scope.prefix));

    // Upstream, on a control plane of its own.
    let theirs: Record<string, NodeView>;
    const cp = await ControlPlane.start({ controllerManager: false });
    try {
      const [port] = await freePorts(1);
      const logFile = join(dir, 'upstream-ccm.log');
      const ccm = execa(
        upstream,
        [
          '--cloud-provider=vsphere',
          `--cloud-config=${cloudConfig}`,
          `--kubeconfig=${cp.kubeconfigPath}`,
          '--controllers=cloud-node',
          '--cluster-name=test',
          '--leader-elect=false',
          '--bind-address=127.0.0.1',
          `--secure-port=${port}`,
        ],
        { reject: false, stdin: 'ignore', all: true, buffer: false },
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
          { what: 'upstream-ccm (vSphere linked in) healthy', timeoutMs: 120_000 },
        );
        theirs = await initializedNodes(cp.kubeConfig().makeApiClient(CoreV1Api), vms, scope.labels, 'the upstream CCM');
      } finally {
        ccm.kill('SIGTERM');
        const kill = setTimeout(() => ccm.kill('SIGKILL'), 15_000);
        await ccm;
        clearTimeout(kill);
      }
    } finally {
      await cp.stop();
    }

    // Ours, on the shared control plane, the provider through the bridge.
    const kubeconfig = join(dir, 'provider-kubeconfig');
    await writeFile(kubeconfig, (await vsphereProviderIdentity(admin, scope.prefix)).exportConfig(), { mode: 0o600 });
    const running = await startProviderHost(
      dir,
      { name: 'vsphere', executable: async () => provider },
      'exec',
      {},
      ['--controllers=cloud-node', `--node-selector=${scope.selector}`],
      { env: { VSPHERE_CLOUD_CONFIG: cloudConfig, KUBECONFIG: kubeconfig } },
    );
    let ours: Record<string, NodeView>;
    try {
      ours = await initializedNodes(admin.makeApiClient(CoreV1Api), vms, scope.labels, 'the host');
    } finally {
      await running.stop();
    }

    t.deepEqual(ours, theirs);
    for (const vm of vms) t.is(ours[vm.name]?.providerID, `vsphere://${vm.uuid}`, 'the comparison is of initialized Nodes');
  } finally {
    await sim.stop();
    await deleteScopedNodes(admin.makeApiClient(CoreV1Api), scope.selector);
    await removeProviderIdentity(admin, scope.prefix);
  }
});
