/**
 * The local demos start: each rendering of deploy/overlays/local-demo-* (the
 * real kustomize, as `kubectl apply -k`; the only renderings that run the
 * simulated cloud, which they allow explicitly) is run as its pod would run, with real
 * processes against the shared control plane, and must become ready
 * (readinessProbe) and initialize a node. The RBAC and ServiceAccount come
 * from the rendered output, and the host authenticates with a token of the
 * ServiceAccount the Deployment names.
 *
 * One replica of the pod runs (the standby of the second replica is covered
 * by test/integration/ha/). Each container becomes a process running its
 * image's entrypoint (deploy/Dockerfile, IMAGES below) with exactly the
 * container's args and env, mapped as the table in test/helpers/pod-runner.ts
 * says. The bridged real providers' renderings (deploy/providers/) are run by
 * run-provider-manifests.test.ts.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { scrapeMetrics } from '../../helpers/scraper.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { localcloud } from '../../helpers/localcloud.js';
import { renderDeploy, renderingName, type Rendering } from '../../helpers/manifests.js';
import { buildImageLayout, type ImageLayout } from '../../helpers/image-layout.js';
import { deleteScopedNodes, testScope } from '../../helpers/nodes.js';
import { probe, runPod, type ContainerImage } from '../../helpers/pod-runner.js';
import { waitFor } from '../../helpers/wait.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
/** The message the host logs when --cloud-config-optional finds no file. */
const NO_CLOUD_CONFIG = 'the --cloud-config file does not exist';

/** What deploy/Dockerfile builds, by image name without the tag, in the image layout built before the tests. */
function imagesOf(layout: ImageLayout): Record<string, ContainerImage> {
  return {
    'ghcr.io/grpc-ccm/cloud-controller-manager': { entrypoint: layout.hostMain, node: true, host: true },
    'ghcr.io/grpc-ccm/cloud-controller-manager-local': {
      entrypoint: layout.hostMain,
      node: true,
      host: true,
      files: { '/opt/ccm/plugins/ccm-provider-local.js': layout.localPlugin },
    },
    'ghcr.io/grpc-ccm/ccm-provider-local': { entrypoint: layout.localPlugin, node: true, host: false, paths: { '/app': layout.app } },
  };
}
let IMAGES: Record<string, ContainerImage> = {};

interface Case extends Rendering {
  /** Whether the optional cloud config Secret exists. */
  secret: boolean;
}

/** Every rendering, each flavour with and without the Secret. */
const CASES: Case[] = [
  { overlay: 'exec', perController: false, secret: false },
  { overlay: 'exec', perController: true, secret: true },
  { overlay: 'sidecar', perController: false, secret: true },
  { overlay: 'sidecar', perController: true, secret: false },
];

const scope = testScope('deployrun');
const NS = `deployrun-${randomBytes(3).toString('hex')}`;

test.before(async () => {
  IMAGES = imagesOf(await buildImageLayout(await mkdtemp(join(tmpdir(), 'ccm-image-'))));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});

test.after.always(async () => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await deleteScopedNodes(core, scope.selector);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
});

for (const c of CASES) {
  const name = `${renderingName(c)}, ${c.secret ? 'with' : 'without'} the cloud config Secret`;
  test.serial(`${name}: the host starts, becomes ready and initializes a node`, async (t) => {
    const admin = await testKubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    const pod = await runPod(t, await renderDeploy(c), admin, {
      images: IMAGES,
      namespace: NS,
      nodeSelector: scope.selector,
      provisionerName: `${scope.prefix}.deploy.test`,
      // The Secret the manifest expects: key cloud-config.json (deploy/base/deployment.yaml).
      secretFiles: c.secret ? { 'cloud-config.json': JSON.stringify({ zone: 'deploy-zone', region: 'deploy-region' }) } : undefined,
    });
    const hostContainer = pod.deployment.spec!.template.spec!.containers[0]!;
    const log = pod.host.logPath;
    await waitFor(() => probe(hostContainer.readinessProbe, pod.ports), { what: `${name}: readinessProbe`, timeoutMs: 90_000, log });
    t.true(await probe(hostContainer.livenessProbe, pod.ports), 'livenessProbe');
    t.is((await readFile(log, 'utf8')).includes(NO_CLOUD_CONFIG), !c.secret, 'an empty cloud config only without the Secret');
    // The host has the pod's identity; the local provider, which needs no API, has none (deploy/components/sidecar).
    t.is(pod.identities.get('cloud-controller-manager')?.serviceAccount.name, pod.deployment.spec!.template.spec!.serviceAccountName);
    if (c.overlay === 'sidecar') t.is(pod.identities.get('provider'), undefined, 'the provider container has no API token');

    // The provider's state is the cloud-state volume (exec: --plugin-env; sidecar: the provider's env).
    const nodeName = `${scope.prefix}-${c.overlay}${c.perController ? '-pc' : ''}`;
    await localcloud(pod.volumes.get('cloud-state')!, 'instance', 'add', nodeName, '--zone', 'deploy-a', '--address', '127.0.4.1');
    await core.createNode({
      body: {
        metadata: { name: nodeName, labels: { ...scope.labels, 'kubernetes.io/hostname': nodeName } },
        spec: { taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
      },
    });
    const node = await waitFor(
      async () => {
        const n: V1Node = await core.readNode({ name: nodeName });
        return (n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED) ? undefined : n;
      },
      { what: `${name}: node ${nodeName} initialized`, timeoutMs: 90_000, log },
    );
    t.true(node.spec?.providerID?.startsWith('local://'), node.spec?.providerID);
    t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'deploy-a');

    // The rendered RBAC was enough: not one 403 (per identity, in the host's own metrics).
    const metricsPort = hostContainer.ports!.find((p) => p.name === 'metrics')!.containerPort;
    const metrics = await scrapeMetrics(pod.ports.get(metricsPort)!);
    t.deepEqual(
      metrics.split('\n').filter((l) => l.startsWith('rest_client_requests_total') && l.includes('code="403"')),
      [],
    );
    t.is(await pod.host.stop(), 0, 'the host stops cleanly');
    for (const o of pod.others) t.is(await o.stop(), 0, `${o.name} stops cleanly`);
  });
}
