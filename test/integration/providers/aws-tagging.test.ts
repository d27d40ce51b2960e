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
 *
 * Fencing (ConfigureRequest.controllers_lease), sidecar layout with leader
 * election, the host a real process: the leading host is SIGKILLed (no
 * Configure with no controllers follows); the provider stops its tagging
 * controller when the lease the host last renewed runs out, before a new
 * host can take the Lease; a Node created after that is not seen until the
 * new leader's Configure starts the controller again.
 *
 * | step | what must hold |
 * |------|----------------|
 * | host 1 leads | <prefix>-a tagged and labelled |
 * | host 1 SIGKILLed | the provider logs the lease expired (lease at most --leader-elect-renew-deadline) and stops the controller |
 * | <prefix>-b created, host 2 started | <prefix>-b tagged, first seen after host 2's Configure restarted the controller |
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { awsCloudConfig, startMoto, MOTO_CLIENT_ENV, seedCluster } from '../../helpers/moto.js';
import { startProviderHost, type ProviderMode } from '../../helpers/provider-host.js';
import { AWS_CLOUD_PROVIDER } from '../../helpers/providers.js';
import { providerKubeconfigFile } from '../../helpers/provider-identity.js';
import { waitFor } from '../../helpers/wait.js';
import { kubeconfigFile, startHostProcess, type HostProcess } from '../../helpers/host-process.js';
import { leaderElectArgs, TEST_LEASE } from '../../helpers/ha-host-process.js';
import { grantLease } from '../../helpers/service-account.js';
import { startSidecar } from '../../helpers/sidecar.js';

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
      const seeded = await seedCluster(moto, { cluster: prefix, instances: 2, net });
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

const LEASE_EXPIRED = 'provider controllers lease expired';

test("sidecar with leader election: a SIGKILLed host's provider stops the tagging controller when its lease runs out, before a new leader starts it", async (t) => {
  t.timeout(300_000);
  const prefix = `awstag-fence-${randomBytes(3).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
  const admin = await testKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const moto = await startMoto(dir, REGION);
  const [nodeA, nodeB] = [`${prefix}-a`, `${prefix}-b`];
  const hosts: HostProcess[] = [];
  await core.createNamespace({ body: { metadata: { name: prefix } } });
  t.teardown(async () => {
    for (const h of hosts) await h.kill().catch(() => undefined);
    for (const n of [nodeA, nodeB]) await core.deleteNode({ name: n }).catch(() => undefined);
    await core.deleteNamespace({ name: prefix }).catch(() => undefined);
    await moto.stop();
  });
  await grantLease(admin, prefix, 'ccm');
  const seeded = await seedCluster(moto, { cluster: prefix, instances: 2, net: 73 });
  const [instanceA, instanceB] = seeded.instances.map((i) => i.id) as [string, string];
  const configPath = join(dir, 'cloud.conf');
  await writeFile(configPath, awsCloudConfig(moto, seeded, prefix));
  const providerLog = join(dir, 'provider.log');
  const sidecar = await startSidecar(
    await AWS_CLOUD_PROVIDER.executable(dir),
    dir,
    { CLOUD_CONFIG: configPath, KUBECONFIG: await providerKubeconfig(dir), ...MOTO_CLIENT_ENV },
    { inheritEnv: false, logPath: providerLog },
  );
  t.teardown(() => sidecar.stop());
  const args = [
    '--cloud-provider=aws',
    `--plugin-endpoint=${sidecar.endpoint}`,
    `--cloud-config=${configPath}`,
    '--cluster-name=test',
    `--kubeconfig=${await kubeconfigFile(dir)}`,
    '--controllers=cloud-node,tagging',
    '--tags=Key1=Val1,Key2=Val2',
    '--resources=instance',
    `--node-selector=${SELECTOR_LABEL}=${prefix}`,
    `--watch-namespace=${prefix}`,
    '--secure-port=0',
    // Short timings (TEST_LEASE): the test waits seconds for a dead leader's Lease.
    ...leaderElectArgs(prefix),
    '-v=2',
  ];
  const createNode = (name: string, instance: string) =>
    core.createNode({
      body: {
        metadata: { name, labels: { 'kubernetes.io/hostname': name, [SELECTOR_LABEL]: prefix } },
        spec: { providerID: `aws:///${AZ}/${instance}` },
      },
    });
  const tagged = (instance: string, log: string) =>
    waitFor(
      async () => {
        const r = await moto.ctl<{ tags: Record<string, string> }>('instance-tags', { id: instance });
        return r.tags.Key1 === 'Val1' ? r.tags : undefined;
      },
      { what: `instance ${instance} tagged by the provider's tagging controller`, timeoutMs: 120_000, log },
    );

  const host1 = await startHostProcess(args, join(dir, 'host1.log'));
  hosts.push(host1);
  await createNode(nodeA, instanceA);
  await tagged(instanceA, providerLog);
  await waitFor(async () => (await core.readNode({ name: nodeA })).metadata?.labels?.[TAGGED_LABEL], {
    what: `the tagging controller's label on ${nodeA}`,
    log: providerLog,
  });

  const killedAt = Date.now();
  await host1.kill();
  hosts.splice(hosts.indexOf(host1), 1);
  const expired = await waitFor(async () => (await readFile(providerLog, 'utf8')).split('\n').find((l) => l.includes(LEASE_EXPIRED)), {
    what: `the provider's "${LEASE_EXPIRED}" once its host was SIGKILLed`,
    timeoutMs: 60_000,
    log: providerLog,
  });
  const line = JSON.parse(expired) as { time: string; lease: string; controllers: string };
  t.is(line.controllers, 'tagging');
  // Go's Duration string: at most the renew deadline (what is left of the fresh leader lease at the last renewal).
  t.true(/^[\d.]+(ms|s)$/.test(line.lease) && parseFloat(line.lease) / (line.lease.endsWith('ms') ? 1000 : 1) <= TEST_LEASE.renewS, line.lease);
  t.log(
    `provider stopped its controllers ${Date.parse(line.time) - killedAt} ms after the SIGKILL (lease ${line.lease}; Lease duration ${TEST_LEASE.durationS}s)`,
  );

  await createNode(nodeB, instanceB);
  const host2 = await startHostProcess(args, join(dir, 'host2.log'));
  hosts.push(host2);
  await tagged(instanceB, providerLog);
  const lines = (await readFile(providerLog, 'utf8')).split('\n');
  const expiredAt = lines.findIndex((l) => l.includes(LEASE_EXPIRED));
  const restartedAt = lines.findIndex((l, i) => i > expiredAt && l.includes('provider controller started'));
  const firstSeenB = lines.findIndex((l) => l.includes(`Node: ${nodeB},`));
  t.true(restartedAt > expiredAt, "host 2's Configure started the controller again after it stopped");
  t.true(
    firstSeenB > restartedAt,
    `${nodeB} was first seen by the controller host 2 started, not by host 1's (line ${firstSeenB}, restart at line ${restartedAt})`,
  );
  t.is(lines.filter((l) => l.includes(LEASE_EXPIRED)).length, 1, 'the lease expired once: host 2 renews it');
});
