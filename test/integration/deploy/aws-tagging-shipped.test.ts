/**
 * The AWS tagging controller in the pod as shipped: deploy/providers/aws
 * rendered by the real kustomize (alone and with
 * deploy/components/per-controller-rbac), run by test/helpers/pod-runner.ts
 * against moto (test/helpers/moto.ts), with the docs' tagging command line
 * (test/fixtures/real-command-lines.json "aws-tagging":
 * --controllers=*,tagging --tags=... --resources=instance) appended to the
 * host's arguments, as an operator's kustomization adds them. The tagging
 * controller runs in the provider process on the provider's own
 * ServiceAccount and RBAC as rendered (deploy/providers/aws/rbac.yaml): the
 * Node's instance gets the tags, the Node the controller's label, and the
 * API server refuses the provider nothing (its requests found in the audit
 * log by its token's credential id).
 *
 * | RBAC mode of the host | what must hold |
 * |-----------------------|----------------|
 * | single identity       | instance tagged, Node labelled, no 403 for the provider |
 * | per-controller-rbac   | the same |
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import { testAuditLogPath, testKubeConfig } from '../../controlplane/shared.js';
import { auditLogFromNow, credentialIdOf } from '../../helpers/audit.js';
import { buildImageLayout } from '../../helpers/image-layout.js';
import { renderProvider } from '../../helpers/manifests.js';
import { awsCloudConfig, MOTO_CLIENT_ENV, seededMotoFor } from '../../helpers/moto.js';
import { createExternalNode, testScope, waitNodeInitialized } from '../../helpers/nodes.js';
import { runPod } from '../../helpers/pod-runner.js';
import { awsCloudBinary } from '../../helpers/providers.js';
import { waitFor } from '../../helpers/wait.js';

/** The label the tagging controller puts on a Node whose instance it tagged (pkg/controllers/tagging). */
const TAGGED_LABEL = 'k8s.io/cloud-provider-aws';
const LINE = (
  JSON.parse(readFileSync(new URL('../../../../test/fixtures/real-command-lines.json', import.meta.url), 'utf8')) as {
    lines: { id: string; args: string[] }[];
  }
).lines.find((l) => l.id === 'aws-tagging')!;

const NS = `awstagship-${randomBytes(3).toString('hex')}`;
let hostMain = '';

test.before(async () => {
  hostMain = (await buildImageLayout(await mkdtemp(join(tmpdir(), 'ccm-image-')))).hostMain;
  await (await testKubeConfig()).makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
});

test.after.always(async () => {
  await (
    await testKubeConfig()
  )
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: NS })
    .catch(() => undefined);
});

for (const [perController, net] of [
  [false, 73],
  [true, 74],
] as const) {
  const name = `deploy/providers/aws${perController ? ' + per-controller-rbac' : ''}`;
  test.serial(`${name} with the docs' tagging command line: the provider tags a Node's instance and labels the Node, without a 403`, async (t) => {
    t.timeout(6 * 60_000);
    const admin = await testKubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    const scope = testScope(`awstagship-${perController ? 'pc' : 'si'}`);
    const { moto, seeded } = await seededMotoFor(t, core, scope, { tmpPrefix: 'ccm-awstagship-', net });
    const instance = seeded.instances[0]!;

    // The docs' line, but for --cloud-provider and --v (the rendering has its own), appended to the host's arguments.
    const args = LINE.args.filter((a) => !/^--(cloud-provider|v)=/.test(a));
    t.deepEqual(args, ['--controllers=*,tagging', '--tags=Key1=Val1,Key2=Val2', '--resources=instance']);
    const rendered = await renderProvider('aws', perController);
    const deployment = rendered.find((o): o is V1Deployment => o.kind === 'Deployment')!;
    deployment.spec!.template.spec!.containers[0]!.args!.push(...args);

    const audit = await auditLogFromNow(await testAuditLogPath());
    const pod = await runPod(t, rendered, admin, {
      images: {
        'ghcr.io/grpc-ccm/cloud-controller-manager': { entrypoint: hostMain, node: true, host: true },
        'ghcr.io/grpc-ccm/ccm-provider-aws': { entrypoint: await awsCloudBinary(), node: false, host: false },
      },
      namespace: NS,
      nodeSelector: scope.selector,
      provisionerName: `${scope.prefix}.awstagship.test`,
      secretFiles: { 'cloud.conf': awsCloudConfig(moto, seeded, scope.prefix) },
      extraEnv: { provider: { ...MOTO_CLIENT_ENV } },
    });

    await createExternalNode(core, instance.privateDns, scope.labels);
    await waitNodeInitialized(core, instance.privateDns, "the aws provider's pod");
    const label = await waitFor(async () => (await core.readNode({ name: instance.privateDns })).metadata?.labels?.[TAGGED_LABEL], {
      what: `the tagging controller's label on ${instance.privateDns}`,
      timeoutMs: 120_000,
      log: pod.others[0]!.logPath,
    });
    t.truthy(label, 'the Node has the label');
    const { tags } = await moto.ctl<{ tags: Record<string, string> }>('instance-tags', { id: instance.id });
    t.like(tags, { Key1: 'Val1', Key2: 'Val2' }, "the Node's instance has the tags");

    t.is(await pod.host.stop(), 0, 'the host stops cleanly');
    const [provider] = pod.others;
    t.is(await provider!.stop(), 0, 'the provider stops cleanly');
    t.deepEqual(
      (await readFile(provider!.logPath, 'utf8')).split('\n').filter((l) => /forbidden|\b403\b/i.test(l)),
      [],
      `the provider's own client met no 403 (${provider!.logPath})`,
    );
    const id = pod.identities.get('provider')!.credentialId;
    const events = await audit.events();
    const labelPatches = events.filter(
      (e) => credentialIdOf(e) === id && e.verb === 'patch' && e.objectRef?.resource === 'nodes' && e.objectRef.name === instance.privateDns,
    );
    t.true(
      labelPatches.some((e) => e.responseStatus?.code === 200),
      'the provider patched the Node with its own token',
    );
    t.deepEqual(
      events
        .filter((e) => credentialIdOf(e) === id && e.responseStatus?.code === 403)
        .map((e) => `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`),
      [],
      'the API server refused the provider nothing',
    );
  });
}
