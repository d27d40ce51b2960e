/**
 * The sidecar provider container's exec probes (deploy/components/sidecar),
 * run as shipped: deploy/overlays/local-demo-sidecar rendered by the real
 * kustomize and run by test/helpers/pod-runner.ts, whose kubelet stand-in
 * (test/helpers/kubelet-container.ts) runs the container's startup, liveness
 * and readiness probes with their rendered periods, timeouts and thresholds,
 * each probe the image's own executable (`main.js probe`, sdk/probe.ts) in
 * the image layout.
 *
 * The provider passes its startup and readiness probes (configured by the
 * host) and a Node is initialized. Then it is SIGSTOPped (alive, its socket
 * accepting connections, answering nothing): its liveness probe fails until
 * the kubelet restarts the container; the host redials the new process and
 * configures it (the readiness probe, which asks IdentityService/Probe,
 * passes again), and goes on: a second Node is initialized through it.
 * The built images run the same probes in images.test.ts.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { buildImageLayout, type ImageLayout } from '../../helpers/image-layout.js';
import { localcloud } from '../../helpers/localcloud.js';
import { renderDeploy } from '../../helpers/manifests.js';
import { createExternalNode, deleteScopedNodes, testScope, waitNodeInitialized } from '../../helpers/nodes.js';
import { probe, runPod } from '../../helpers/pod-runner.js';
import { waitFor } from '../../helpers/wait.js';

const scope = testScope('provprobe');
const NS = `provprobe-${randomBytes(3).toString('hex')}`;
let layout: ImageLayout;

test.before(async () => {
  layout = await buildImageLayout(await mkdtemp(join(tmpdir(), 'ccm-image-')));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});

test.after.always(async () => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await deleteScopedNodes(core, scope.selector);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
});

test('local-demo-sidecar: a wedged provider fails its liveness probe and is restarted; the host configures the new process and goes on', async (t) => {
  t.timeout(8 * 60_000);
  const admin = await testKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const objects = await renderDeploy({ overlay: 'sidecar', perController: false });
  const pod = await runPod(t, objects, admin, {
    images: {
      'ghcr.io/grpc-ccm/cloud-controller-manager': { entrypoint: layout.hostMain, node: true, host: true },
      'ghcr.io/grpc-ccm/ccm-provider-local': { entrypoint: layout.localPlugin, node: true, host: false, paths: { '/app': layout.app } },
    },
    namespace: NS,
    nodeSelector: scope.selector,
    provisionerName: `${scope.prefix}.deploy.test`,
  });
  const spec = pod.deployment.spec!.template.spec!;
  const hostContainer = spec.containers[0]!;
  const rendered = spec.containers.find((c) => c.name === 'provider')!;
  // What this test relies on is shipped: an exec liveness probe of the provider's own executable.
  t.deepEqual(rendered.livenessProbe?.exec?.command?.slice(0, 3), ['node', '/app/dist/plugins/local/main.js', 'probe']);
  const provider = pod.others.find((c) => c.name === 'provider')!;
  const log = pod.host.logPath;
  const events = () => `${provider.name} events:\n${provider.events.join('\n')}`;

  await waitFor(() => provider.ready || undefined, { what: 'the provider container ready (its readiness probe)', timeoutMs: 90_000, log });
  await waitFor(() => probe(hostContainer.readinessProbe, pod.ports), { what: 'the host readinessProbe', timeoutMs: 90_000, log });
  t.is(provider.restarts, 0, events());

  /** A Node of the local cloud, initialized by the pod's host. */
  const initialize = async (suffix: string) => {
    const name = `${scope.prefix}-${suffix}`;
    await localcloud(pod.volumes.get('cloud-state')!, 'instance', 'add', name, '--zone', 'probe-a', '--address', '127.0.4.9');
    await createExternalNode(core, name, scope.labels);
    const node = await waitNodeInitialized(core, name, `the host (${suffix})`);
    t.true(node.spec?.providerID?.startsWith('local://'), node.spec?.providerID);
  };
  await initialize('before');

  // Wedged: alive, its socket accepting connections, answering nothing.
  const wedgedPid = provider.pid;
  const stoppedAt = Date.now();
  provider.signal('SIGSTOP');
  await waitFor(() => provider.restarts >= 1 || undefined, {
    what: 'the kubelet restarting the wedged provider (liveness probe)',
    timeoutMs: 180_000,
    log: provider.logPath,
  });
  const restartedAfterS = Math.round((Date.now() - stoppedAt) / 1000);
  t.not(provider.pid, wedgedPid, 'a new process');
  t.true(
    provider.events.some((e) => /^Liveness probe failed: probe failed: unix:\/\/\S+: no answer to grpc\.health\.v1 Check within 3s/.test(e)),
    events(),
  );
  t.true(provider.events.includes('Container provider failed liveness probe, will be restarted'), events());

  // Ready again: IdentityService/Probe answers ready only once the host has configured the new process.
  await waitFor(() => provider.ready || undefined, { what: 'the restarted provider ready (configured by the host)', timeoutMs: 180_000, log });
  await waitFor(() => probe(hostContainer.readinessProbe, pod.ports), { what: 'the host ready again', timeoutMs: 180_000, log });
  await initialize('after');
  t.is(provider.restarts, 1, events());
  // Measured, not asserted: the shipped probe settings bound this (3 failures 10 s apart, 10 s grace).
  t.log(`restarted ${restartedAfterS} s after the SIGSTOP, ready again ${Math.round((Date.now() - stoppedAt) / 1000)} s after it; ${events()}`);

  t.is(await pod.host.stop(), 0, 'the host stops cleanly');
  t.is(await provider.stop(), 0, 'the provider stops cleanly');
});
