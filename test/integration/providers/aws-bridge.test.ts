/**
 * k8s.io/cloud-provider-aws, unmodified, under the host through the Go
 * bridge (plugins/aws-bridge, docs/providers/aws.md), in exec mode
 * (--plugin-path) and in sidecar mode (--plugin-endpoint): the real host,
 * the real kube-apiserver, the provider as a real process talking to moto
 * (test/helpers/moto.ts), a local AWS stand-in on 127.0.0.1 that the test
 * seeds and inspects with boto3 (test/helpers/moto-aws.py).
 *
 * Nothing leaves the machine: the cloud config points EC2, ELB and ELBv2 at
 * moto (ServiceOverride sections, whose Service must be the SDK's exact
 * ServiceID), IMDS is off (AWS_EC2_METADATA_DISABLED), VPC + SubnetID +
 * KubernetesClusterID stand in for the metadata of the machine the provider
 * would run on, and HTTP(S)_PROXY point at a closed loopback port, so any
 * other AWS endpoint the provider might call fails at once on this machine
 * (Go never proxies loopback, so moto and the API server are reached).
 *
 * The provider's own Kubernetes client (Initialize: events; SetInformers: a
 * node informer) runs as a ServiceAccount of its own with only those rights,
 * not as the host's.
 *
 * One test per mode, one host each, running the node, node lifecycle and
 * service controllers against one moto server seeded with a VPC, an internet
 * gateway, a cluster-tagged subnet and security group, and t3.medium
 * instances:
 *   - Nodes with providerID aws:///<az>/<instance id> are initialized with
 *     the provider's zone, region, instance type and zone-id labels and its
 *     addresses; a Node without one, named as AWS names nodes (the
 *     instance's private DNS name), gets its providerID from the provider's
 *     lookup by name;
 *   - a LoadBalancer Service gets a classic ELB in moto (ingress: the ELB's
 *     DNS name) whose instances follow the initialized nodes;
 *   - the provider's own metrics (cloudprovider_aws_api_*, and its process's
 *     Go runtime and memory as ccm_plugin_go_*, ccm_plugin_process_*) appear
 *     on the host's /metrics, labelled plugin="aws";
 *   - a stopped instance gets its Node the shutdown taint; a terminated one
 *     gets its Node deleted, and leaves the ELB;
 *   - deleting the Service deletes the ELB.
 * And one test on moto as it is (without the fidelity fix that gives a new
 * ELB AWS's default health check): the provider panics in
 * EnsureLoadBalancer, which the bridge answers INTERNAL while the process
 * keeps serving.
 */
import test, { type ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node, type V1Service } from '@kubernetes/client-node';
import { execa } from 'execa';
import { exposedNames } from '../../../host/plugin/validate-metrics.js';
import { kubeVersion } from '../../controlplane/binaries.js';
import { testKubeConfig } from '../../controlplane/shared.js';
import { checkRealProviderKit, serveTestHook, type InstanceHook, type PinnedFailure, type TestHookServer } from '../../helpers/real-provider-kit.js';
import { ensureNamespace, LB_FINALIZER, lbService, serviceEvents } from '../../helpers/lb.js';
import { bundleMetrics, fromProviderProcess, isExposed } from '../../helpers/monitoring.js';
import { awsCloudConfig, startMoto, type Moto, MOTO_CLIENT_ENV, seedCluster, SEED_DEFAULTS, type MotoSeeded } from '../../helpers/moto.js';
import { startProviderHost, type ProviderHost, type ProviderMode } from '../../helpers/provider-host.js';
import { AWS_BRIDGE_DIR, AWS_CLOUD_PROVIDER } from '../../helpers/providers.js';
import { providerKubeconfigFile } from '../../helpers/provider-identity.js';
import { waitFor } from '../../helpers/wait.js';
import { ANNOTATION_REFERENCES, renderReference } from '../../../tools/annotation-docs.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const SHUTDOWN = 'node.cloudprovider.kubernetes.io/shutdown';
const SELECTOR_LABEL = 'ccm-test/aws-bridge';
const REGION = 'us-east-1';
const AZ = SEED_DEFAULTS.az;
const INSTANCE_TYPE = SEED_DEFAULTS.type;
/** The provider's zone-id label (k8s.io/cloud-provider-aws pkg/providers/v1/well_known_labels.go). */
const ZONE_ID_LABEL = 'topology.k8s.aws/zone-id';
/** The ServiceAccount the provider's own client uses (not the host's). */
const PROVIDER_SA = { namespace: 'kube-system', name: 'ccm-test-aws-provider' } as const;

type Seeded = MotoSeeded;

type Instance = Seeded['instances'][number];

interface MotoElb {
  name: string;
  dns: string;
  instances: string[];
  ports: [number, number][];
  tags: Record<string, string>;
}

/** The provider's RBAC: what its Initialize (events) and its node informer need, nothing else. */
async function providerKubeconfig(dir: string): Promise<string> {
  return providerKubeconfigFile(await testKubeConfig(), dir, PROVIDER_SA, 'ccm-test:aws-cloud-provider', [
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  ]);
}

const initialized = (n: V1Node) => !(n.spec?.taints ?? []).some((x) => x.key === UNINITIALIZED);

async function readService(core: CoreV1Api, namespace: string, name: string): Promise<V1Service | undefined> {
  return core.readNamespacedService({ name, namespace }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });
}

async function nodeGone(core: CoreV1Api, name: string): Promise<boolean> {
  return core.readNode({ name }).then(
    () => false,
    (err: { code?: number }) => err.code === 404,
  );
}

/** The provider's log lines: in exec mode the host logs them (source plugin-stderr), a sidecar's go to provider.log. */
async function providerLog(dir: string, mode: ProviderMode): Promise<string> {
  if (mode === 'sidecar') return readFile(join(dir, 'provider.log'), 'utf8');
  const host = await readFile(join(dir, 'host.log'), 'utf8');
  return host
    .split('\n')
    .filter((l) => l.includes('"source":"plugin-stderr"'))
    .join('\n');
}

/** One test's AWS: moto seeded for cluster `prefix`, a host running the AWS provider in `mode` against it. */
interface AwsCluster {
  mode: ProviderMode;
  prefix: string;
  dir: string;
  core: CoreV1Api;
  moto: Moto;
  seeded: Seeded;
  running: ProviderHost;
  /** Registers a Node as kubelet --cloud-provider=external does, with providerID aws:///<az>/<instanceId> when given. */
  register(name: string, instanceId?: string): Promise<void>;
  waitInitialized(name: string): Promise<V1Node>;
  /** moto's classic load balancers. */
  elbs(): Promise<MotoElb[]>;
}

/**
 * Starts moto (`net`: the second octet of its VPC, so that names by private
 * DNS differ between tests), seeds it with `instances` instances, starts a
 * host with the AWS provider in `mode`, runs `body`, and removes it all.
 * `motoAsIs`: moto without the fidelity fixes of moto-server.py.
 */
async function withAwsHost(
  mode: ProviderMode,
  opts: { net: number; instances: number; motoAsIs?: boolean },
  body: (c: AwsCluster) => Promise<void>,
): Promise<void> {
  const prefix = `aws-${mode}-${randomBytes(3).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  const moto = await startMoto(dir, REGION, { fidelityFixes: !opts.motoAsIs });
  const nodes: string[] = [];
  try {
    const seeded = await seedCluster(moto, { cluster: prefix, instances: opts.instances, net: opts.net });
    const configPath = join(dir, 'cloud.conf');
    await writeFile(configPath, awsCloudConfig(moto, seeded, prefix));
    const running = await startProviderHost(
      dir,
      AWS_CLOUD_PROVIDER,
      mode,
      undefined,
      [
        '--controllers=cloud-node,cloud-node-lifecycle,service',
        `--node-selector=${SELECTOR_LABEL}=${prefix}`,
        `--watch-namespace=${prefix}`,
        '--node-monitor-period=2s',
        '--node-status-update-frequency=2s',
      ],
      {
        // The host's --cloud-config is the same file: the bridge checks they agree (bridge.CloudConfigFile).
        cloudConfigFile: configPath,
        env: {
          CLOUD_CONFIG: configPath,
          KUBECONFIG: await providerKubeconfig(dir),
          ...MOTO_CLIENT_ENV,
        },
      },
    );
    try {
      await ensureNamespace(core, prefix);
      await body({
        mode,
        prefix,
        dir,
        core,
        moto,
        seeded,
        running,
        async register(name, instanceId) {
          nodes.push(name);
          await core.createNode({
            body: {
              metadata: { name, labels: { 'kubernetes.io/hostname': name, [SELECTOR_LABEL]: prefix } },
              spec: {
                ...(instanceId ? { providerID: `aws:///${AZ}/${instanceId}` } : {}),
                taints: [{ key: UNINITIALIZED, value: 'true', effect: 'NoSchedule' }],
              },
            },
          });
        },
        waitInitialized: (name) =>
          waitFor(
            async () => {
              const n = await core.readNode({ name });
              return initialized(n) ? n : undefined;
            },
            { what: `node ${name} initialized by the AWS provider (${mode})`, timeoutMs: 120_000, log: join(dir, 'host.log') },
          ),
        elbs: () => moto.ctl<{ loadBalancers: MotoElb[] }>('describe-elbs').then((r) => r.loadBalancers),
      });
    } finally {
      await running.stop();
    }
  } finally {
    for (const name of nodes) await core.deleteNode({ name }).catch(() => undefined);
    await core.deleteNamespace({ name: prefix }).catch(() => undefined);
    await moto.stop();
  }
}

/** Deletes Service `name` and waits until it is gone (the host removed its finalizer after deleting the load balancer). */
async function deleteService(c: AwsCluster, name: string): Promise<void> {
  await c.core.deleteNamespacedService({ name, namespace: c.prefix });
  await waitFor(async () => (await readService(c.core, c.prefix, name)) === undefined, {
    what: `Service ${name} gone (finalizer removed)`,
    timeoutMs: 120_000,
    log: join(c.dir, 'host.log'),
  });
}

/**
 * The provider process's metrics on the host's /metrics (the bridge exports
 * its k8s.io/component-base registry through GetMetrics), labelled with the
 * plugin: cloud-provider-aws's own AWS API latency after its calls, and the
 * process's Go runtime and memory. Every provider metric the monitoring
 * bundle (deploy/components/monitoring) queries is served, or (a counter
 * nothing has incremented yet, which the registry leaves out) defined by the
 * pinned cloud-provider-aws.
 */
async function providerMetrics(t: ExecutionContext, c: AwsCluster): Promise<void> {
  const text = await waitFor(
    async () => {
      const all = await c.running.host.metrics.registry.metrics();
      return /^cloudprovider_aws_api_request_duration_seconds_count\{plugin="aws",request="[^"]+"\} [1-9]/m.test(all) ? all : undefined;
    },
    { what: `cloudprovider_aws_api_request_duration_seconds on the host's /metrics (${c.mode})`, log: join(c.dir, 'host.log') },
  );
  t.regex(text, /^# TYPE cloudprovider_aws_api_request_duration_seconds histogram$/m, 'the upstream name and type');
  t.regex(text, /^ccm_plugin_go_goroutines\{plugin="aws"\} [1-9]/m, "the provider process's Go runtime");
  t.regex(text, /^ccm_plugin_process_resident_memory_bytes\{plugin="aws"\} [1-9]/m, "the provider process's memory");
  t.is(text.match(/^# TYPE process_resident_memory_bytes /gm)?.length, 1, "the host's own family once, not the provider's");
  const exposed = exposedNames(text);
  const defined = await awsProviderMetricNames();
  const missing = [...(await bundleMetrics()).keys()].filter((n) => fromProviderProcess(n) && !isExposed(n, exposed) && !defined.has(n));
  t.deepEqual(missing, [], 'provider metrics the monitoring bundle queries');
}

/** The metric names the pinned k8s.io/cloud-provider-aws defines (pkg/providers/v1/aws_metrics.go). */
async function awsProviderMetricNames(): Promise<Set<string>> {
  const dir = (await execa('go', ['list', '-m', '-f', '{{.Dir}}', 'k8s.io/cloud-provider-aws'], { cwd: AWS_BRIDGE_DIR })).stdout.trim();
  const source = await readFile(join(dir, 'pkg', 'providers', 'v1', 'aws_metrics.go'), 'utf8');
  return new Set([...source.matchAll(/Name:\s*"([a-z_]+)"/g)].map((m) => m[1]!));
}

async function scenario(t: ExecutionContext, c: AwsCluster): Promise<void> {
  const { mode, prefix, dir, core, moto, seeded } = c;
  const [ia, ib, ic, id] = seeded.instances as [Instance, Instance, Instance, Instance];
  const [na, nb, nc] = ['a', 'b', 'c'].map((s) => `${prefix}-${s}`) as [string, string, string];
  const identity = c.running.host.supervisor.identity;
  t.is(identity?.capabilities.providerName, 'aws');
  t.regex(identity?.info?.vendorVersion ?? '', /^k8s\.io\/cloud-provider-aws v1\.34\.\d+$/, 'the provider reports the module it was built from');

  // Node initialization, by providerID, and by name for a Node without one.
  await c.register(na, ia.id);
  await c.register(nb, ib.id);
  await c.register(id.privateDns); // no providerID: the provider finds the instance by its private DNS name
  for (const [name, inst] of [
    [na, ia],
    [nb, ib],
    [id.privateDns, id],
  ] as const) {
    const node = await c.waitInitialized(name);
    const labels = node.metadata?.labels ?? {};
    t.is(labels['topology.kubernetes.io/zone'], AZ);
    t.is(labels['topology.kubernetes.io/region'], REGION);
    t.is(labels['node.kubernetes.io/instance-type'], INSTANCE_TYPE);
    if (seeded.zoneId) t.is(labels[ZONE_ID_LABEL], seeded.zoneId, "the provider's additional label, from DescribeAvailabilityZones");
    t.is(node.spec?.providerID, `aws:///${AZ}/${inst.id}`, name === id.privateDns ? 'found by name (InstanceID), as upstream sets it' : 'kept');
    const addrs = await waitFor(
      async () => {
        const a = (await core.readNode({ name })).status?.addresses ?? [];
        return a.some((x) => x.type === 'InternalIP') ? a : undefined;
      },
      { what: `addresses of ${name}` },
    );
    t.true(
      addrs.some((a) => a.type === 'InternalIP' && a.address === inst.privateIp),
      JSON.stringify(addrs),
    );
    t.true(
      addrs.some((a) => a.type === 'InternalDNS' && a.address === inst.privateDns),
      JSON.stringify(addrs),
    );
  }

  // A LoadBalancer Service: a classic ELB in moto, on the initialized nodes' instances.
  const created = await core.createNamespacedService({ namespace: prefix, body: lbService('web', prefix, [{ port: 80 }]) });
  const elbName = `a${created.metadata!.uid!.replaceAll('-', '')}`.slice(0, 32);
  const svc = await waitFor(
    async () => {
      const s = await readService(core, prefix, 'web');
      return s?.status?.loadBalancer?.ingress?.[0]?.hostname ? s : undefined;
    },
    { what: `ingress of web (${mode})`, timeoutMs: 180_000, log: join(dir, 'host.log') },
  );
  t.true(svc.metadata!.finalizers!.includes(LB_FINALIZER));
  const elb = (await c.elbs()).find((l) => l.name === elbName);
  t.truthy(elb, `moto holds the ELB ${elbName}`);
  t.is(svc.status!.loadBalancer!.ingress![0]!.hostname, elb!.dns, "the ingress is the ELB's DNS name");
  t.deepEqual(elb!.ports, [[80, svc.spec!.ports![0]!.nodePort!]], 'listener: the service port to its nodePort');
  t.is(elb!.tags[`kubernetes.io/cluster/${prefix}`], 'owned');
  const backends = (ids: string[]) =>
    waitFor(async () => ((await c.elbs()).find((l) => l.name === elbName)?.instances.join(',') === [...ids].sort().join(',') ? true : undefined), {
      what: `ELB instances ${ids.join(',')} (${mode})`,
      timeoutMs: 120_000,
      log: join(dir, 'host.log'),
    });
  await backends([ia.id, ib.id, id.id]);
  await providerMetrics(t, c);

  // A new node joins the ELB once initialized.
  await c.register(nc, ic.id);
  await c.waitInitialized(nc);
  await backends([ia.id, ib.id, ic.id, id.id]);

  // A stopped instance: its (kubelet-less, so not Ready) Node gets the shutdown taint.
  await moto.ctl('stop-instances', { ids: [ib.id] });
  await waitFor(async () => ((await core.readNode({ name: nb })).spec?.taints ?? []).some((x) => x.key === SHUTDOWN), {
    what: `shutdown taint on ${nb} (${mode})`,
    timeoutMs: 120_000,
    log: join(dir, 'host.log'),
  });

  // A terminated instance: its Node is deleted, and the ELB deregisters it.
  await moto.ctl('terminate-instances', { ids: [ic.id] });
  await waitFor(() => nodeGone(core, nc), { what: `node ${nc} deleted (${mode})`, timeoutMs: 120_000, log: join(dir, 'host.log') });
  await backends([ia.id, ib.id, id.id]);

  // A misspelled value of an annotation the AWS schema lists (plugins/aws-bridge/schema.go):
  // the host refuses it before any cloud call, so no ELB and no finalizer. (An
  // unlisted key is not refused: the prefix is shared with the AWS Load
  // Balancer Controller, whose own keys are no misspellings.)
  const typo = await core.createNamespacedService({
    namespace: prefix,
    body: lbService('typo', prefix, [{ port: 80 }], {}, { 'service.beta.kubernetes.io/aws-load-balancer-backend-protocol': 'htp' }),
  });
  const warning = await waitFor(async () => (await serviceEvents(core, typo)).find((e) => e.reason === 'InvalidLoadBalancerAnnotation'), {
    what: `InvalidLoadBalancerAnnotation on typo (${mode})`,
    timeoutMs: 60_000,
    log: join(dir, 'host.log'),
  });
  t.is(warning.type, 'Warning');
  t.regex(warning.message ?? '', /aws-load-balancer-backend-protocol/);
  const typoElb = `a${typo.metadata!.uid!.replaceAll('-', '')}`.slice(0, 32);
  t.false(
    (await c.elbs()).some((l) => l.name === typoElb),
    'no ELB for the misspelled Service',
  );
  t.deepEqual((await readService(core, prefix, 'typo'))?.metadata?.finalizers ?? [], [], 'no finalizer: no cloud call was made');
  await core.deleteNamespacedService({ namespace: prefix, name: 'typo' });

  // Delete: the ELB goes with the Service.
  await deleteService(c, 'web');
  t.false(
    (await c.elbs()).some((l) => l.name === elbName),
    'no ELB left in moto once the Service is gone',
  );
  t.true((await serviceEvents(core, svc)).some((e) => e.reason === 'DeletedLoadBalancer'));

  // What the provider logged: its own client reached the API server with
  // the rights it has, and no AWS request went anywhere but moto (one
  // would have met the closed proxy port).
  const log = await providerLog(dir, mode);
  // The control plane's version (CCM_KUBE_VERSION may pick another than the host's target).
  t.true(log.includes(`git version: ${kubeVersion()}.`), "Initialize's client (the provider's ServiceAccount) reached the API server");
  t.regex(log, /Setting up informers for Cloud/, 'the bridge gave the cloud its informers');
  t.notRegex(log, /proxyconnect|127\.0\.0\.1:9\b/, 'no request to an AWS endpoint other than moto');
  t.notRegex(log, /forbidden/i);
  // Structured: klog's lines (the provider's own logging) arrive as the SDK's JSON lines, none in klog's text format.
  t.regex(log, /"component":"klog"/);
  t.notRegex(log, /^[IWEF]\d{4} \d\d:\d\d|"msg":"[IWEF]\d{4} \d\d:\d\d/m, "no line in klog's text format");
  t.notRegex(await readFile(join(dir, 'host.log'), 'utf8'), /plugin configuration warning/, "the host's --cloud-config is the provider's file");
}

test('plugins/aws-bridge: go vet passes, and k8s.io/cloud-provider-aws comes from the module proxy as go.mod pins it, not replaced', async (t) => {
  const vet = await execa('go', ['vet', './...'], { cwd: AWS_BRIDGE_DIR, reject: false, all: true });
  t.is(vet.exitCode, 0, vet.all);
  const list = await execa('go', ['list', '-m', '-f', '{{.Path}} {{.Version}} {{.Replace}}', 'k8s.io/cloud-provider-aws', 'k8s.io/cloud-provider'], {
    cwd: AWS_BRIDGE_DIR,
  });
  const [aws, upstream] = list.stdout.split('\n');
  t.regex(aws ?? '', /^k8s\.io\/cloud-provider-aws v1\.34\.\d+ <nil>$/);
  t.is(upstream, `k8s.io/cloud-provider v0.34.4 <nil>`, "the bridge's k8s.io/cloud-provider (bridge.UpstreamVersion)");
});

for (const mode of ['exec', 'sidecar'] as const) {
  test(`k8s.io/cloud-provider-aws through the bridge, ${mode} mode: node initialization, lifecycle and a classic ELB on moto`, async (t) => {
    t.timeout(360_000);
    // Each mode its own VPC range: the Node named by private DNS name differs between the two tests.
    await withAwsHost(mode, { net: mode === 'exec' ? 42 : 43, instances: 4 }, (c) => scenario(t, c));
  });
}

test('a panic inside cloud-provider-aws answers that call INTERNAL; the provider process keeps serving (exec mode)', async (t) => {
  t.timeout(360_000);
  // moto as it is: a new ELB has no health check, and the provider's
  // ensureLoadBalancerHealthCheck dereferences it (a nil pointer panic).
  await withAwsHost('exec', { net: 44, instances: 2, motoAsIs: true }, async (c) => {
    const [ia, ib] = c.seeded.instances as [Instance, Instance];
    const [na, nb] = [`${c.prefix}-a`, `${c.prefix}-b`];
    await c.register(na, ia.id);
    await c.waitInitialized(na);
    const created = await c.core.createNamespacedService({ namespace: c.prefix, body: lbService('web', c.prefix, [{ port: 80 }]) });
    const failed = await waitFor(
      async () => (await serviceEvents(c.core, created)).find((e) => e.reason === 'SyncLoadBalancerFailed' && /panicked/.test(e.message ?? '')),
      { what: 'SyncLoadBalancerFailed naming the panic', timeoutMs: 120_000, log: join(c.dir, 'host.log') },
    );
    t.regex(failed.message ?? '', /EnsureLoadBalancer panicked: runtime error: invalid memory address or nil pointer dereference/);
    t.falsy((await readService(c.core, c.prefix, 'web'))?.status?.loadBalancer?.ingress?.length, 'no ingress from a call that failed');
    // The same process answers the next calls: a new Node is initialized, and the ELB made before the panic is deleted with the Service.
    await c.register(nb, ib.id);
    await c.waitInitialized(nb);
    t.true(
      (await c.elbs()).some((l) => l.tags[`kubernetes.io/cluster/${c.prefix}`] === 'owned'),
      'the ELB was created before the panic',
    );
    await deleteService(c, 'web');
    t.deepEqual(await c.elbs(), [], 'EnsureLoadBalancerDeleted removed it');
    const pids = new Set([...(await providerLog(c.dir, 'exec')).matchAll(/"pid":(\d+)/g)].map((m) => m[1]));
    t.is(pids.size, 1, `one provider process throughout: ${[...pids].join(', ')}`);
  });
});

/**
 * The kit's test hook on moto: an instance of the cluster in the seeded
 * subnet whose private DNS name is the kit's node name (moto-aws.py
 * run-named-instance), as AWS names nodes; and its Node, registered as its
 * kubelet would with --provider-id. The provider needs that Node: ListRoutes
 * names each route's target through its node informer (instanceIDToNodeName),
 * and an instance route with no Node fails the whole list, and with it every
 * route call of the bridge, which lists first.
 */
function motoInstanceHook(core: CoreV1Api, moto: Moto, seeded: Seeded, cluster: string): InstanceHook {
  return {
    async createInstance(name) {
      const i = await moto.ctl<{ id: string; az: string }>('run-named-instance', {
        cluster,
        subnet: seeded.subnet,
        securityGroup: seeded.securityGroup,
        type: INSTANCE_TYPE,
        name,
      });
      const providerID = `aws:///${i.az}/${i.id}`;
      await core
        .createNode({ body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, [SELECTOR_LABEL]: cluster } }, spec: { providerID } } })
        .catch((err: { code?: number }) => {
          if (err.code !== 409) throw err;
        });
      return providerID;
    },
    async deleteInstance(name) {
      await moto.ctl('terminate-named-instances', { name });
      await core.deleteNode({ name }).catch((err: { code?: number }) => {
        if (err.code !== 404) throw err;
      });
    },
  };
}

/**
 * What the kit reports against cloud-provider-aws's own answers, pinned (and
 * listed in docs/providers/aws.md). The bridge passes the provider's errors on
 * as upstream's controllers see them: turning them into "not found" would
 * have the host delete Nodes the upstream CCM keeps. The kit's machine names
 * (cct<run>-…) are normalized.
 */
const AWS_KIT_FAILURES: PinnedFailure[] = [
  // The kit's made-up providerID is not aws:///<zone>/<instance id>: the provider refuses its format with an error, not "not found".
  { id: 'instances/absent', message: 'InstanceExists: INTERNAL/CLOUD_API_ERROR: Invalid format for AWS instance (aws://cct<run>-absent-id)' },
  // By name, an unknown node is an error ("not found" in its text), not cloudprovider.InstanceNotFound.
  {
    id: 'instances/legacy',
    message:
      'NodeAddresses: want NOT_FOUND/INSTANCE_NOT_FOUND, got NodeAddresses: INTERNAL/CLOUD_API_ERROR: could not look up instance ID for node "cct<run>-absent": node "cct<run>-absent" not found',
  },
  {
    id: 'zones/absent',
    message:
      'GetZoneByProviderId: want NOT_FOUND/INSTANCE_NOT_FOUND, got GetZoneByProviderId: INTERNAL/CLOUD_API_ERROR: Invalid format for AWS instance (aws://cct<run>-absent-id)',
  },
];

test("docs/providers/aws-annotations.md is the bridged AWS provider's schema (plugins/aws-bridge/schema.go) as the kit renders it (npm run docs:annotations -- aws)", async (t) => {
  t.timeout(120_000);
  const aws = ANNOTATION_REFERENCES.find((r) => r.name === 'aws')!;
  const rendered = await renderReference(aws, await AWS_CLOUD_PROVIDER.executable(tmpdir()));
  t.is(rendered, await readFile(aws.file, 'utf8'), 'stale: run npm run docs:annotations -- aws');
  // No owned prefix: the AWS Load Balancer Controller reads keys of its own under service.beta.kubernetes.io/aws-load-balancer- (schema.go).
  t.regex(rendered, /^## Owned prefixes\n\nNone: /m, 'no owned prefix');
  t.regex(
    rendered,
    /`service\.beta\.kubernetes\.io\/aws-load-balancer-type` \| enum \| `nlb`, `nlb-ip`, `external`/,
    'the type annotation, external included',
  );
});

test('the conformance kit against k8s.io/cloud-provider-aws through the bridge (exec), on moto with a test hook: instances, load balancers and routes pass, what it does not serve is skipped, its own answers for absent machines pinned', async (t) => {
  t.timeout(360_000);
  const prefix = `aws-kit-${randomBytes(3).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), `ccm-${prefix}-`));
  const moto = await startMoto(dir, REGION);
  const core = (await testKubeConfig()).makeApiClient(CoreV1Api);
  let hook: TestHookServer | undefined;
  try {
    const seeded = await seedCluster(moto, { cluster: prefix, instances: 1, net: 45 });
    const configPath = join(dir, 'cloud.conf');
    await writeFile(configPath, awsCloudConfig(moto, seeded, prefix));
    const env = {
      CLOUD_CONFIG: configPath,
      KUBECONFIG: await providerKubeconfig(dir),
      ...MOTO_CLIENT_ENV,
    };
    hook = await serveTestHook(motoInstanceHook(core, moto, seeded, prefix));
    await checkRealProviderKit(t, {
      path: await AWS_CLOUD_PROVIDER.executable(dir),
      env,
      // The host sends the same file with --cloud-config (bridge.CloudConfigFile checks they agree).
      cloudConfig: await readFile(configPath),
      hookCommand: hook.command,
      failures: AWS_KIT_FAILURES,
      pass: [
        'launch/handshake',
        'setup/hooks',
        'lifecycle/not-configured',
        'identity/provider-schema',
        'instances/foreign-provider-id',
        'instances/test-instance',
        'instances/exists-and-shutdown',
        'instances/bare-node',
        'zones/test-instance',
        'load-balancers/ensure-twice',
        'load-balancers/delete-twice',
        'routes/create-twice',
        'routes/conflict',
        'routes/paging',
        'routes/delete-twice',
        'cleanup/no-leftovers',
      ],
    });
  } finally {
    await hook?.stop();
    await core.deleteCollectionNode({ labelSelector: `${SELECTOR_LABEL}=${prefix}` }).catch(() => undefined);
    await moto.stop();
  }
});
