/**
 * The shipped images, built and run: deploy/Dockerfile's `host` target and
 * deploy/providers/Dockerfile for the AWS provider, built as shipped by
 * buildah with local bases (test/helpers/images.ts says which and why), and
 * the deploy/providers/aws rendering run from them: each container is its
 * image's entrypoint, user and working directory, chrooted into the image's
 * root filesystem, with the pod's args and env (test/helpers/pod-runner.ts),
 * and the provider container's exec probes (`/ccm-provider probe`) run in
 * its image as the kubelet would,
 * against the shared control plane and moto. The pod must become ready,
 * initialize a Node with the instance's providerID and zone, and serve a
 * LoadBalancer Service with a classic ELB, meeting no 403.
 *
 * What a cloud instance would give the pod and this machine cannot (IMDS, the
 * instance role) is the provider's environment, as in
 * run-provider-manifests.test.ts.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { CoreV1Api, type V1Service } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { imageRootfs, prepareImages, rootfsCommand, type ImageRootfs, type TestImages } from '../../helpers/images.js';
import { lbService } from '../../helpers/lb.js';
import { renderProvider } from '../../helpers/manifests.js';
import { awsCloudConfig, MOTO_CLIENT_ENV, seededMotoFor } from '../../helpers/moto.js';
import { createExternalNode, testScope, waitNodeInitialized } from '../../helpers/nodes.js';
import { probe, runPod } from '../../helpers/pod-runner.js';
import { REPO } from '../../helpers/providers.js';
import { scrapeMetrics } from '../../helpers/scraper.js';
import { waitFor } from '../../helpers/wait.js';

const NS = `deployimg-${randomBytes(3).toString('hex')}`;
const say = (line: string) => process.stderr.write(`[images] ${line}\n`);
let images: TestImages;

test.before(async () => {
  // run-tests.js built them before the run; a file run alone builds them here.
  images = await prepareImages(say);
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});

test.after.always(async () => {
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  await core.deleteNamespace({ name: NS }).catch(() => undefined);
});

/** A fresh container of `image`, removed at the test's end. */
async function container(t: { teardown(fn: () => Promise<void>): void }, image: string): Promise<ImageRootfs> {
  const r = await imageRootfs(images.store, image);
  t.teardown(() => r.remove());
  return r;
}

/** Runs `argv` inside the image as its process would run (its user, root and working directory). */
async function runIn(r: ImageRootfs, argv: string[]): Promise<string> {
  const [file, args] = rootfsCommand(r, [], argv);
  return (await execa(file, args, { env: { HOME: '/', ...r.env }, extendEnv: false, timeout: 60_000 })).stdout.trim();
}

test.serial(
  'the host image runs the Node version deploy/Dockerfile ships, as 65532, from /app; the provider image is the static binary alone',
  async (t) => {
    const dockerfile = await readFile(join(REPO, 'deploy/Dockerfile'), 'utf8');
    // node:<x.y.z>-<variant> (a release pins its built images by digest: docs/releasing.md), or node:<major>-<variant>@sha256 with the version in a comment.
    const exact = /^ARG NODE_IMAGE=node:((\d+)\.\d+\.\d+)-[a-z-]+(?:@sha256:[0-9a-f]{64})?$/m.exec(dockerfile);
    const digest = /^ARG NODE_IMAGE=node:(\d+)-[^@\s]*@sha256:[0-9a-f]{64}$/m.exec(dockerfile);
    const shipped = exact ? [exact[0], exact[2]] : digest;
    t.truthy(shipped, "deploy/Dockerfile's NODE_IMAGE default is an upstream node image by its exact version or digest");
    const pinned = exact ? [exact[0], exact[1]] : /pinned by digest\s*(?:#\s*)?\((\d+\.\d+\.\d+)\)/.exec(dockerfile);
    t.truthy(pinned, 'deploy/Dockerfile names the shipped Node version');

    const host = await container(t, images.host);
    t.deepEqual(
      { entrypoint: host.entrypoint, user: host.user, workingDir: host.workingDir },
      { entrypoint: ['node', '/app/dist/host/main.js'], user: '65532:65532', workingDir: '/app' },
    );
    const version = await runIn(host, ['node', '--version']);
    t.is(version, `v${pinned![1]}`, 'the tested Node is the pinned one');
    t.is(version.split('.')[0], `v${shipped![1]}`, "the tested Node's major is the shipped image's");
    t.is(await runIn(host, ['node', '-e', 'console.log(`${process.getuid()} ${process.cwd()}`)']), '65532 /app');
    // Production dependencies only: the compiler and the test runner stay in the build stage.
    t.is(await runIn(host, ['node', '-e', 'try{require.resolve("typescript");console.log("dev")}catch{console.log("prod")}']), 'prod');

    const provider = await container(t, images.provider);
    t.deepEqual({ entrypoint: provider.entrypoint, user: provider.user }, { entrypoint: ['/ccm-provider'], user: '65532:65532' });
    // Static (CGO_ENABLED=0): the base has no libc and no shell; the next test runs it.
    const { stdout: listing } = await execa('sh', [
      '-c',
      `ls -d ${provider.path}/ccm-provider ${provider.path}/bin/sh ${provider.path}/lib 2>&1 || true`,
    ]);
    t.regex(listing, /\/ccm-provider$/m, 'the binary is at /ccm-provider');
    t.notRegex(listing, /^\S+\/(bin\/sh|lib)$/m, 'no shell, no libc in the provider image');
  },
);

test.serial(
  'deploy/providers/aws from the built images: the pod becomes ready, initializes a Node from moto and serves a LoadBalancer with an ELB',
  async (t) => {
    t.timeout(10 * 60_000);
    const admin = await testKubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    const scope = testScope('deploy-img');
    const { moto, seeded } = await seededMotoFor(t, core, scope, { tmpPrefix: 'ccm-deploy-img-', net: 48 });
    const instance = seeded.instances[0]!;

    const pod = await runPod(t, await renderProvider('aws'), admin, {
      images: {
        'ghcr.io/grpc-ccm/cloud-controller-manager': { rootfs: await container(t, images.host), host: true },
        'ghcr.io/grpc-ccm/ccm-provider-aws': { rootfs: await container(t, images.provider), host: false },
      },
      namespace: NS,
      nodeSelector: scope.selector,
      provisionerName: `${scope.prefix}.deploy.test`,
      secretFiles: { 'cloud.conf': awsCloudConfig(moto, seeded, scope.prefix) },
      // On EC2: the instance role's credentials and IMDS. Here: moto's dummy credentials, IMDS off, any other endpoint refused locally.
      extraEnv: {
        provider: {
          ...MOTO_CLIENT_ENV,
        },
      },
    });
    const hostContainer = pod.deployment.spec!.template.spec!.containers[0]!;
    const log = pod.host.logPath;
    await waitFor(() => probe(hostContainer.readinessProbe, pod.ports), { what: 'readinessProbe of the host image', timeoutMs: 120_000, log });
    t.true(await probe(hostContainer.livenessProbe, pod.ports), 'livenessProbe');
    // The provider container's exec probes run in the provider image (`/ccm-provider probe`, chrooted into its root filesystem, as the pod's
    // kubelet would run them): its startup probe passed, and its readiness probe, which asks Probe, passes once the host configured it.
    const provider = pod.others.find((c) => c.name === 'provider')!;
    await waitFor(() => provider.ready || undefined, {
      what: "the provider image's readinessProbe (/ccm-provider probe --ready)",
      timeoutMs: 120_000,
      log,
    });
    t.is(provider.restarts, 0, `never restarted: ${provider.events.join('\n')}`);

    await createExternalNode(core, instance.privateDns, scope.labels);
    const node = await waitNodeInitialized(core, instance.privateDns, 'the pod of the built images');
    t.is(node.spec?.providerID, `aws:///us-east-1a/${instance.id}`);
    t.is(node.metadata?.labels?.['topology.kubernetes.io/zone'], 'us-east-1a');

    // A LoadBalancer Service: a classic ELB in moto, named as upstream names it, its DNS name the ingress.
    const created = await core.createNamespacedService({ namespace: NS, body: lbService('web', NS, [{ port: 80 }]) });
    const elbName = `a${created.metadata!.uid!.replaceAll('-', '')}`.slice(0, 32);
    const svc = await waitFor(
      async () => {
        const s: V1Service = await core.readNamespacedService({ name: 'web', namespace: NS });
        return s.status?.loadBalancer?.ingress?.[0]?.hostname ? s : undefined;
      },
      { what: 'ingress of web', timeoutMs: 180_000, log },
    );
    const elbs = (await moto.ctl<{ loadBalancers: { name: string; dns: string; tags: Record<string, string> }[] }>('describe-elbs')).loadBalancers;
    const elb = elbs.find((l) => l.name === elbName);
    t.truthy(elb, `moto holds the ELB ${elbName}`);
    t.is(svc.status!.loadBalancer!.ingress![0]!.hostname, elb!.dns, "the ingress is the ELB's DNS name");
    t.is(elb!.tags[`kubernetes.io/cluster/${scope.prefix}`], 'owned');

    // The rendered RBAC was enough for both containers: not one 403.
    const metricsPort = hostContainer.ports!.find((p) => p.name === 'metrics')!.containerPort;
    const metrics = await scrapeMetrics(pod.ports.get(metricsPort)!);
    t.deepEqual(
      metrics.split('\n').filter((l) => l.startsWith('rest_client_requests_total') && l.includes('code="403"')),
      [],
    );
    // Removed as the Service goes: the ELB too (the finalizer is the host's).
    await core.deleteNamespacedService({ name: 'web', namespace: NS });
    await waitFor(
      async () =>
        (await moto.ctl<{ loadBalancers: { name: string }[] }>('describe-elbs')).loadBalancers.every((l) => l.name !== elbName) ? true : undefined,
      { what: `ELB ${elbName} deleted`, timeoutMs: 120_000, log },
    );
    t.is(await pod.host.stop(), 0, 'the host stops cleanly on SIGTERM');
    t.is(await provider.stop(), 0, 'the provider stops cleanly on SIGTERM');
    const refusals = (await readFile(provider.logPath, 'utf8')).split('\n').filter((l) => /forbidden|\b403\b/i.test(l));
    t.deepEqual(refusals, [], `the provider's own client met no 403 (${provider.logPath})`);
  },
);
