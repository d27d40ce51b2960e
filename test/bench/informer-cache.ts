/**
 * Memory of the Nodes informer cache: 1,000 Nodes shaped like a kubelet's
 * (50 images, the kubelet's default cap; attached volumes; conditions; three
 * managedFields entries) are created, then a fresh process syncs one Nodes
 * informer that keeps objects as listed, and another the host's (which drops
 * fields no controller reads, host/kube/cache-transforms.ts). The upstream
 * column is client-go's Nodes informer as the upstream CCM builds it (a
 * shared informer factory, no transform), and the same with managedFields
 * dropped, each in a Go process of its own (tools/upstream-ccm/cmd/client-bench).
 */
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { execa } from 'execa';
import { patchOptions } from '../helpers/kube-patch.js';
import { clientBenchOf, ensureUpstreamCcm } from '../helpers/upstream-ccm.js';
import { f1, int, type BenchSection } from './section.js';

const CHILD = fileURLToPath(new URL('./informer-cache-child.js', import.meta.url));
const NODES = 1000;
const IMAGES = 50;
const CREATE_CONCURRENCY = 32;

interface CacheFigures {
  mode: 'raw' | 'host' | 'plain' | 'trimmed';
  nodes: number;
  cacheHeapMb: number;
  rssMb: number;
}

const CACHE_LABELS: Record<CacheFigures['mode'], string> = {
  raw: 'ours, objects as listed',
  host: "ours, host's (cache-transforms.ts)",
  plain: 'upstream: client-go, as the upstream CCM (no transform)',
  trimmed: 'upstream: client-go, managedFields dropped',
};

const hex = (i: number, len: number) => i.toString(16).padStart(len, '0');

/** A Node as a kubelet on a cloud VM registers it (sizes typical of a production node). */
export function kubeletNode(name: string, run: string, i: number): V1Node {
  const zone = `zone-${i % 3}`;
  return {
    metadata: {
      name,
      labels: {
        'bench-run': run,
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/instance-type': 'm5.xlarge',
        'topology.kubernetes.io/region': 'region-1',
        'topology.kubernetes.io/zone': zone,
        'node-role.kubernetes.io/worker': '',
      },
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        'csi.volume.kubernetes.io/nodeid': `{"ebs.csi.aws.com":"i-${hex(i, 17)}"}`,
      },
    },
    spec: { providerID: `aws:///${zone}/i-${hex(i, 17)}`, podCIDR: `10.${i >> 8}.${i & 255}.0/24`, podCIDRs: [`10.${i >> 8}.${i & 255}.0/24`] },
    status: {
      addresses: [
        { type: 'InternalIP', address: `172.16.${i >> 8}.${i & 255}` },
        { type: 'Hostname', address: name },
        { type: 'InternalDNS', address: `${name}.region-1.compute.internal` },
      ],
      capacity: { cpu: '4', memory: '16101496Ki', pods: '110', 'ephemeral-storage': '104845292Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0' },
      allocatable: {
        cpu: '3920m',
        memory: '15119480Ki',
        pods: '110',
        'ephemeral-storage': '95551679124',
        'hugepages-1Gi': '0',
        'hugepages-2Mi': '0',
      },
      conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({
        type,
        status: type === 'Ready' ? 'True' : 'False',
        reason: type === 'Ready' ? 'KubeletReady' : `KubeletHasNo${type}`,
        message: type === 'Ready' ? 'kubelet is posting ready status' : `kubelet has no ${type.toLowerCase()}`,
        lastHeartbeatTime: new Date(),
        lastTransitionTime: new Date(),
      })),
      nodeInfo: {
        machineID: hex(i, 32),
        systemUUID: `ec2${hex(i, 5)}-0000-0000-0000-000000000000`,
        bootID: `${hex(i, 8)}-0000-4000-8000-000000000000`,
        kernelVersion: '6.1.0-1234-aws',
        osImage: 'Ubuntu 22.04.4 LTS',
        containerRuntimeVersion: 'containerd://1.7.12',
        kubeletVersion: 'v1.34.4',
        kubeProxyVersion: 'v1.34.4',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
      images: Array.from({ length: IMAGES }, (_, k) => ({
        names: [
          `registry.example.com/team-${k % 7}/service-${k}@sha256:${hex(k * 7919 + 1, 64)}`,
          `registry.example.com/team-${k % 7}/service-${k}:v1.${k}.0`,
        ],
        sizeBytes: 50_000_000 + k * 1_000_000,
      })),
      volumesInUse: Array.from({ length: 4 }, (_, k) => `kubernetes.io/csi/ebs.csi.aws.com^vol-${hex(i * 4 + k, 17)}`),
      volumesAttached: Array.from({ length: 4 }, (_, k) => ({ name: `kubernetes.io/csi/ebs.csi.aws.com^vol-${hex(i * 4 + k, 17)}`, devicePath: '' })),
    },
  };
}

export const informerCacheSection: BenchSection = {
  name: 'informer-cache',
  async run(ctx) {
    const cp = await ctx.controlPlane();
    const core = cp.kubeConfig().makeApiClient(CoreV1Api);
    const run = `cache-${Date.now().toString(36)}`;
    ctx.log(`informer-cache: creating ${NODES} kubelet-like nodes`);
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_CONCURRENCY }, async () => {
        while (next < NODES) {
          const i = next++;
          const node = kubeletNode(`bench-${run}-${i}`, run, i);
          await core.createNode({ body: node, fieldManager: 'kubelet' });
          // A status heartbeat and the IPAM controller's write: two more managedFields entries, as on a real node.
          await core.patchNodeStatus(
            { name: node.metadata!.name!, body: { status: { conditions: node.status!.conditions } }, fieldManager: 'kubelet' },
            patchOptions('strategic'),
          );
          await core.patchNode(
            { name: node.metadata!.name!, body: { spec: { podCIDR: node.spec!.podCIDR } }, fieldManager: 'kube-controller-manager' },
            patchOptions('merge'),
          );
        }
      }),
    );
    const rows: CacheFigures[] = [];
    const clientBench = clientBenchOf(await ensureUpstreamCcm((l) => ctx.log(l)));
    try {
      for (const mode of ['raw', 'host'] as const) {
        ctx.log(`informer-cache: ${mode}`);
        const { stdout } = await execa(process.execPath, ['--expose-gc', CHILD, cp.kubeconfigPath, `bench-run=${run}`, mode]);
        rows.push(JSON.parse(stdout.trim().split('\n').pop()!) as CacheFigures);
      }
      for (const mode of ['plain', 'trimmed'] as const) {
        ctx.log(`informer-cache: client-go, ${mode}`);
        const { stdout } = await execa(clientBench, ['informer', cp.kubeconfigPath, `bench-run=${run}`, mode]);
        rows.push(JSON.parse(stdout.trim()) as CacheFigures);
      }
    } finally {
      await core.deleteCollectionNode({ labelSelector: `bench-run=${run}` });
    }
    const markdown = `## Nodes informer cache

${int(NODES)} Nodes shaped like a kubelet's on a cloud VM (${IMAGES} images, the kubelet's default cap; 4 attached volumes;
4 conditions; managedFields of the kubelet and kube-controller-manager), cached by one Nodes informer in a fresh process.
Heap is the live heap the synced cache added (after full GCs: V8's heapUsed, Go's HeapAlloc); RSS is the whole
process. Upstream: client-go's Nodes informer as the upstream CCM builds it (\`informers.NewSharedInformerFactory\`,
no transform), and the same with managedFields dropped by an informer transform, each in a Go process of its own
(\`tools/upstream-ccm/cmd/client-bench\`), one after the other with ours on the same Nodes.

| cache | nodes | heap of the cache (MB) | process RSS (MB) |
|---|---|---|---|
${rows.map((r) => `| ${CACHE_LABELS[r.mode]} | ${int(r.nodes)} | **${f1(r.cacheHeapMb)}** | ${f1(r.rssMb)} |`).join('\n')}
`;
    return { markdown, figures: { settings: { nodes: NODES, images: IMAGES }, rows } };
  },
};
