/**
 * The bridged real providers as shipped for a cluster: each
 * deploy/providers/<name> rendering (the real kustomize, as
 * `kubectl apply -k`) is run as its pod would run (test/helpers/pod-runner.ts:
 * one replica, each container a process with exactly its args and env,
 * mapped as the table there says) against the shared control plane and the
 * provider's local stand-in, and must become ready and initialize a Node with
 * the provider's own providerID and zone.
 *
 * Images: the host container runs deploy/Dockerfile's host layout
 * (test/helpers/image-layout.ts); the provider container runs the binary
 * built as deploy/providers/Dockerfile builds it (BRIDGED_BUILD, checked by
 * test/unit/deploy/provider-image.test.ts). The host authenticates as the
 * pod's ServiceAccount, the provider as its own (the token Secret of
 * deploy/components/provider-identity mounted at its in-cluster token path);
 * the rendered RBAC, vSphere's credentials namespace included, is applied as
 * rendered, in both RBAC modes (alone and with
 * deploy/components/per-controller-rbac), and neither may meet a 403: the
 * host's are counted by its client (rest_client_requests_total), the
 * provider's found in kube-apiserver's audit log by its token's credential
 * id. The cloud config Secret holds the stand-in's config; what a
 * cloud instance would give the pod and this machine cannot is added to the
 * provider's environment, and listed per provider below.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testAuditLogPath, testKubeConfig } from '../../controlplane/shared.js';
import { auditLogFromNow, credentialIdOf, type AuditEvent } from '../../helpers/audit.js';
import { buildImageLayout } from '../../helpers/image-layout.js';
import { PROVIDER_RENDERINGS, renderProvider, type ProviderRendering } from '../../helpers/manifests.js';
import { awsCloudConfig, startMoto, MOTO_CLIENT_ENV, seedCluster } from '../../helpers/moto.js';
import { createExternalNode, deleteScopedNodes, testScope, waitNodeInitialized } from '../../helpers/nodes.js';
import { openstackBinaries, openstackCloudConfig, startOpenStackStandin } from '../../helpers/openstack.js';
import { probe, runPod, type ContainerImage } from '../../helpers/pod-runner.js';
import { awsCloudBinary } from '../../helpers/providers.js';
import { scrapeMetrics } from '../../helpers/scraper.js';
import { startVcsim, vsphereBinaries, vsphereCloudConfig } from '../../helpers/vsphere.js';
import { waitFor } from '../../helpers/wait.js';

/** The stand-in a provider's pod runs against, as the test sets it up. */
interface Cloud {
  /** The cloud config Secret's files. */
  secretFiles: Record<string, string>;
  /** Added to the provider container's environment (what the cloud gives a pod elsewhere). */
  providerEnv?: Record<string, string>;
  /** An instance of the stand-in, as the Node kubelet --cloud-provider=external registers for it (name only), and what the provider must set. */
  node: { name: string; providerID: string; zone: string };
  stop(): Promise<void>;
}

interface ProviderCase {
  name: ProviderRendering;
  binary(): Promise<string>;
  start(prefix: string): Promise<Cloud>;
  /**
   * The one refusal the provider's own client is expected to meet, if any (see the case): its log line, and the
   * requests the API server refuses it (`verb resource namespace`): the first is required, the others allowed.
   */
  refused?: { log: RegExp; audit: [string, ...string[]] };
}

const CASES: ProviderCase[] = [
  {
    name: 'aws',
    binary: () => awsCloudBinary(),
    async start(prefix) {
      const dir = await mkdtemp(join(tmpdir(), 'ccm-deploy-aws-'));
      const moto = await startMoto(dir, 'us-east-1');
      try {
        const seeded = await seedCluster(moto, { cluster: prefix, instances: 1, net: 47 });
        const instance = seeded.instances[0]!;
        return {
          // The cloud config points every AWS API at moto and names the VPC, subnet and cluster IMDS would give.
          secretFiles: { 'cloud.conf': awsCloudConfig(moto, seeded, prefix) },
          // On EC2: the instance role's credentials and IMDS. Here: moto's dummy credentials, IMDS off, any other endpoint refused locally.
          providerEnv: {
            ...MOTO_CLIENT_ENV,
          },
          // Named as AWS names nodes: the provider finds the instance by its private DNS name.
          node: { name: instance.privateDns, providerID: `aws:///us-east-1a/${instance.id}`, zone: 'us-east-1a' },
          stop: () => moto.stop(),
        };
      } catch (err) {
        await moto.stop();
        throw err;
      }
    },
  },
  {
    name: 'vsphere',
    binary: async () => (await vsphereBinaries()).provider,
    // Without NSX-T the provider still starts a Secret informer for all
    // namespaces (Initialize asks for the NSX-T secret informer of
    // NamespaceAll before finding it has no NSX-T config) and never reads it.
    // The rendering does not grant that (docs/providers/vsphere.md): its
    // reflector is refused, retries with backoff and changes nothing else.
    refused: {
      log: /failed to list \*v1\.Secret: secrets is forbidden: .* cannot list resource \\"secrets\\" in API group \\"\\" at the cluster scope/,
      // The reflector's list, and the streaming watch client-go tries before it (WatchListClient).
      audit: ['list secrets (cluster)', 'watch secrets (cluster)'],
    },
    async start(prefix) {
      const sim = await startVcsim(`${prefix}-`);
      const vm = sim.vms[0]!;
      return {
        // secretNamespace: the credentials namespace the rendering ships (deploy/providers/vsphere/rbac.yaml).
        secretFiles: { 'vsphere.conf': vsphereCloudConfig(sim, 'vsphere-cloud-credentials') },
        // Without zone/region tag categories in vCenter the provider sets no zone.
        node: { name: vm.name, providerID: `vsphere://${vm.uuid}`, zone: '' },
        stop: () => sim.stop(),
      };
    },
  },
  {
    name: 'openstack',
    binary: async () => (await openstackBinaries()).provider,
    async start(prefix) {
      const standin = await startOpenStackStandin();
      const server = standin.addServer(`${prefix}-0`, '10.0.0.10', 'nova-az1');
      return {
        secretFiles: { 'cloud.conf': openstackCloudConfig(standin) },
        node: { name: server.name, providerID: `openstack:///${server.id}`, zone: 'nova-az1' },
        async stop() {
          await standin.stop();
          if (standin.unknown.length > 0)
            throw new Error(`the provider asked the OpenStack stand-in what it does not serve: ${standin.unknown.join(', ')}`);
        },
      };
    },
  },
];

const NS = `deployprov-${randomBytes(3).toString('hex')}`;
/** deploy/components/provider-identity's ServiceAccount. */
const PROVIDER_SA = { namespace: 'kube-system', name: 'cloud-controller-manager-provider' };
let hostMain = '';

test.before(async () => {
  hostMain = (await buildImageLayout(await mkdtemp(join(tmpdir(), 'ccm-image-')))).hostMain;
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});

test.after.always(async () => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
});

test('a case for every provider rendering', (t) => {
  t.deepEqual(
    CASES.map((c) => c.name),
    [...PROVIDER_RENDERINGS],
  );
});

/** The provider SA's requests the API server refused, as `verb resource namespace` (or `(cluster)`), sorted, without repeats. */
function refusals(events: AuditEvent[], credentialId: string): string[] {
  const out = new Set<string>();
  for (const e of events)
    if (credentialIdOf(e) === credentialId && e.responseStatus?.code === 403)
      out.add(`${e.verb} ${e.objectRef?.resource ?? e.requestURI} ${e.objectRef?.namespace ?? '(cluster)'}`);
  return [...out].sort();
}

for (const c of CASES)
  for (const perController of [false, true]) {
    const name = `deploy/providers/${c.name}${perController ? ' + per-controller-rbac' : ''}`;
    test.serial(
      `${name}: the host and the provider start as rendered, each as its own ServiceAccount, become ready and initialize a node from the stand-in, without a 403`,
      async (t) => {
        t.timeout(10 * 60_000);
        const admin = await testKubeConfig();
        const core = admin.makeApiClient(CoreV1Api);
        const scope = testScope(`deploy-${c.name}`);
        const images: Record<string, ContainerImage> = {
          'ghcr.io/grpc-ccm/cloud-controller-manager': { entrypoint: hostMain, node: true, host: true },
          [`ghcr.io/grpc-ccm/ccm-provider-${c.name}`]: { entrypoint: await c.binary(), node: false, host: false },
        };
        const cloud = await c.start(scope.prefix);
        t.teardown(async () => {
          await deleteScopedNodes(core, scope.selector);
          await cloud.stop();
        });
        const audit = await auditLogFromNow(await testAuditLogPath());
        const pod = await runPod(t, await renderProvider(c.name, perController), admin, {
          images,
          namespace: NS,
          nodeSelector: scope.selector,
          provisionerName: `${scope.prefix}.deploy.test`,
          secretFiles: cloud.secretFiles,
          extraEnv: cloud.providerEnv ? { provider: cloud.providerEnv } : undefined,
        });
        const hostContainer = pod.deployment.spec!.template.spec!.containers[0]!;
        const log = pod.host.logPath;
        await waitFor(() => probe(hostContainer.readinessProbe, pod.ports), { what: `${c.name}: readinessProbe`, timeoutMs: 120_000, log });
        t.true(await probe(hostContainer.livenessProbe, pod.ports), 'livenessProbe');
        // The provider container's exec probes (`/ccm-provider probe`, the Go SDK's, run as the kubelet would): ready once its host configured it.
        const [provider] = pod.others;
        await waitFor(() => provider!.ready || undefined, { what: `${c.name}: the provider's readinessProbe`, timeoutMs: 120_000, log });
        t.is(provider!.restarts, 0, provider!.events.join('\n'));

        await createExternalNode(core, cloud.node.name, scope.labels);
        const node = await waitNodeInitialized(core, cloud.node.name, `the ${c.name} provider's pod`);
        t.is(node.spec?.providerID, cloud.node.providerID);
        t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'] ?? '', cloud.node.zone);
        t.true(
          (node.status?.addresses ?? []).some((a) => a.type === 'InternalIP'),
          'the provider gave an InternalIP',
        );

        // The rendered RBAC was enough for both containers: not one 403.
        const metricsPort = hostContainer.ports!.find((p) => p.name === 'metrics')!.containerPort;
        const metrics = await scrapeMetrics(pod.ports.get(metricsPort)!);
        t.deepEqual(
          metrics.split('\n').filter((l) => l.startsWith('rest_client_requests_total') && l.includes('code="403"')),
          [],
        );
        t.is(await pod.host.stop(), 0, 'the host stops cleanly');
        t.is(await provider!.stop(), 0, 'the provider stops cleanly');
        const logged = (await readFile(provider!.logPath, 'utf8')).split('\n').filter((l) => /forbidden|\b403\b/i.test(l));
        t.deepEqual(
          logged.filter((l) => !c.refused?.log.test(l)),
          [],
          `the provider's own client met no 403${c.refused ? ' but the expected one' : ''} (${provider!.logPath})`,
        );
        // Pinned both ways: when a provider release stops it, the case and its doc change.
        if (c.refused)
          t.true(
            logged.some((l) => c.refused!.log.test(l)),
            `the expected refusal is still there (${provider!.logPath})`,
          );

        // Who the provider was, as the API server saw it: its own ServiceAccount, never the host's.
        const identity = pod.identities.get('provider');
        t.deepEqual(identity?.serviceAccount, PROVIDER_SA, 'the provider runs as its own ServiceAccount');
        t.not(pod.identities.get('cloud-controller-manager')?.serviceAccount.name, PROVIDER_SA.name);
        // A provider whose client-go reads with a streaming list (vSphere's) has only watches on Nodes, and a watch is
        // logged as complete when it ends: the provider has just stopped, so its completion may still be on the way.
        const readNodes = (e: AuditEvent) => credentialIdOf(e) === identity!.credentialId && e.objectRef?.resource === 'nodes';
        const events = await waitFor(async () => ((all) => (all.some(readNodes) ? all : undefined))(await audit.events()), {
          what: "the provider's Node requests in the audit log",
          timeoutMs: 60_000,
        }).catch(() => audit.events());
        t.true(events.some(readNodes), 'the provider read Nodes with its own token (the audit log has its requests)');
        const refused = refusals(events, identity!.credentialId);
        t.deepEqual(
          refused.filter((r) => !c.refused?.audit.includes(r)),
          [],
          'the API server refused the provider nothing else',
        );
        if (c.refused) t.true(refused.includes(c.refused.audit[0]), `the expected refusal is in the audit log too: ${refused.join(', ')}`);
      },
    );
  }
