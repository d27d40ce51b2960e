/**
 * cloud-provider-aws's tagging controller, through the host: the real
 * command line of its docs (test/fixtures/real-command-lines.json,
 * "aws-tagging": --controllers=*,tagging --tags=... --resources=instance)
 * starts the host with the AWS provider (plugins/aws-bridge) in exec and in
 * sidecar mode against moto (test/helpers/moto.ts, as
 * aws-bridge.test.ts). The provider declares those flags and the controller
 * (GetPluginInfo provider_flags/provider_controllers); the host passes them
 * in Configure, and the tagging controller runs in the provider process: a
 * Node's EC2 instance gets the tags, and the Node the controller's label.
 * The provider's own ServiceAccount gets what the tagging controller needs
 * besides aws-bridge.test.ts's rights (nodes patch, for its label).
 *
 * The controller acts only in the host's scope (ConfigureRequest
 * node_selector, watch_namespace): a Node outside the host's --node-selector
 * whose providerID names an instance of this test's moto is never tagged nor
 * labelled. Without that, the two modes running at once tagged each other's
 * instance ids in their own moto and labelled each other's Nodes, and the
 * other provider then skipped its own Node as "already tagged".
 *
 * | Node | labels | what the provider's tagging controller does |
 * |------|--------|---------------------------------------------|
 * | <prefix>-a | in the host's --node-selector | tags instance 0 (Key1, Key2), labels the Node |
 * | <prefix>-outside | another value of the selector's label | nothing: instance 1 untagged, Node unlabelled |
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { awsCloudConfig, startMoto, MOTO_CLIENT_ENV } from '../../helpers/moto.js';
import { startProviderHost, type ProviderMode } from '../../helpers/provider-host.js';
import { AWS_CLOUD_PROVIDER } from '../../helpers/providers.js';
import { providerKubeconfigFile } from '../../helpers/provider-identity.js';
import { waitFor } from '../../helpers/wait.js';

const REGION = 'us-east-1';
const AZ = 'us-east-1a';
const SELECTOR_LABEL = 'ccm-test/aws-tagging';
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
/** The label the tagging controller puts on a Node whose instance it tagged (pkg/controllers/tagging). */
const TAGGED_LABEL = 'k8s.io/cloud-provider-aws';
const PROVIDER_SA = { namespace: 'kube-system', name: 'ccm-test-aws-tagging-provider' } as const;

const LINE = (
  JSON.parse(readFileSync(new URL('../../../../test/fixtures/real-command-lines.json', import.meta.url), 'utf8')) as {
    lines: { id: string; args: string[] }[];
  }
).lines.find((l) => l.id === 'aws-tagging')!;

async function providerKubeconfig(dir: string): Promise<string> {
  return providerKubeconfigFile(await testKubeConfig(), dir, PROVIDER_SA, 'ccm-test:aws-tagging-provider', [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch', 'update'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  ]);
}

for (const [mode, net] of [
  ['exec', 71],
  ['sidecar', 72],
] as [ProviderMode, number][]) {
  test(`${mode}: the docs' tagging command line starts the host, and the tagging controller in the provider tags a Node's instance`, async (t) => {
    const prefix = `awstag-${mode}-${randomBytes(3).toString('hex')}`;
    const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
    const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
    const moto = await startMoto(dir, REGION);
    const node = `${prefix}-a`;
    const outside = `${prefix}-outside`;
    try {
      const seeded = await moto.ctl<{ vpc: string; subnet: string; instances: { id: string }[] }>('seed', {
        cluster: prefix,
        az: AZ,
        instances: 2,
        type: 't3.medium',
        net,
      });
      const instance = seeded.instances[0]!.id;
      const outsideInstance = seeded.instances[1]!.id;
      const configPath = join(dir, 'cloud.conf');
      await writeFile(configPath, awsCloudConfig(moto, seeded, prefix));
      // The line as the docs give it, but for its --cloud-provider (startProviderHost's) and --v.
      const args = LINE.args.filter((a) => !/^--(cloud-provider|v)=/.test(a));
      t.deepEqual(args, ['--controllers=*,tagging', '--tags=Key1=Val1,Key2=Val2', '--resources=instance']);
      const running = await startProviderHost(
        dir,
        AWS_CLOUD_PROVIDER,
        mode,
        undefined,
        ['--controllers=cloud-node,tagging', ...args.slice(1), `--node-selector=${SELECTOR_LABEL}=${prefix}`, `--watch-namespace=${prefix}`],
        {
          cloudConfigFile: configPath,
          env: {
            CLOUD_CONFIG: configPath,
            KUBECONFIG: await providerKubeconfig(dir),
            ...MOTO_CLIENT_ENV,
          },
        },
      );
      try {
        const info = running.host.supervisor.identity?.info;
        t.true(info?.providerFlags.includes('tags') && info.providerFlags.includes('resources'), 'the provider declares its flags');
        t.deepEqual(info?.providerControllers, ['tagging'], 'and its controller');
        // Created first, so an unscoped controller would meet it before the Node it must tag.
        await core.createNode({
          body: {
            metadata: { name: outside, labels: { 'kubernetes.io/hostname': outside, [SELECTOR_LABEL]: `${prefix}-outside` } },
            spec: { providerID: `aws:///${AZ}/${outsideInstance}` },
          },
        });
        await core.createNode({
          body: {
            metadata: { name: node, labels: { 'kubernetes.io/hostname': node, [SELECTOR_LABEL]: prefix } },
            spec: { providerID: `aws:///${AZ}/${instance}`, taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }] },
          },
        });
        const log = mode === 'sidecar' ? join(dir, 'provider.log') : join(dir, 'host.log');
        const tags = await waitFor(
          async () => {
            const r = await moto.ctl<{ tags: Record<string, string> }>('instance-tags', { id: instance });
            return r.tags.Key1 === 'Val1' && r.tags.Key2 === 'Val2' ? r.tags : undefined;
          },
          { what: `instance ${instance} tagged by the provider's tagging controller (${mode})`, timeoutMs: 120_000, log },
        );
        t.is(tags.Key1, 'Val1');
        const labelled = await waitFor(async () => (await core.readNode({ name: node })).metadata?.labels?.[TAGGED_LABEL], {
          what: `the tagging controller's label on ${node}`,
          log,
        });
        t.truthy(labelled);
        t.regex(await readFile(log, 'utf8'), /provider controller started/);
        // Checked after the Node in scope is done: the one outside the host's --node-selector is not the provider's either.
        t.is((await core.readNode({ name: outside })).metadata?.labels?.[TAGGED_LABEL], undefined, `${outside} is outside the host's scope`);
        t.deepEqual(
          (await moto.ctl<{ tags: Record<string, string> }>('instance-tags', { id: outsideInstance })).tags.Key1,
          undefined,
          `instance ${outsideInstance} (of ${outside}) untagged`,
        );
      } finally {
        await running.stop();
      }
    } finally {
      await core.deleteNode({ name: node }).catch(() => undefined);
      await core.deleteNode({ name: outside }).catch(() => undefined);
      await moto.stop();
    }
  });
}
