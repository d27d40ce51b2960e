/**
 * What deploy/ renders to (the real kustomize, as `kubectl apply -k`): every
 * flavour, with and without the per-controller RBAC component, passes a
 * server-side dry run against the real kube-apiserver; its pods meet the
 * "restricted" Pod Security Standard except for hostNetwork, the one
 * documented exception (checked by the API server's PodSecurity admission);
 * and no YAML file lies outside a kustomization (so nothing can be applied
 * twice by `kubectl apply -R -f`). run-manifests.test.ts starts what they
 * render.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  loadYaml,
  type KubernetesObject,
  type V1Deployment,
  type V1Pod,
  type V1PodDisruptionBudget,
  type V1Probe,
} from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { renderKustomization } from '../../helpers/kustomize.js';
import {
  DEPLOY_DIR,
  OVERLAYS,
  PROVIDER_RENDERINGS,
  RENDERINGS,
  localDemoDir,
  manifestFiles,
  renderDeploy,
  renderProvider,
  renderingName,
} from '../../helpers/manifests.js';
import { TOKEN_PATH } from '../../helpers/pod-runner.js';
import { ALLOW_SIMULATION_ENV } from '../../../plugins/local/simulation-guard.js';

/** The package's version (dist/test/integration/deploy → the repository root). */
const VERSION = (JSON.parse(await readFile(new URL('../../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Every flavour's rendering, then each bridged provider's (`providers/<name>`), by name. */
async function deployments(): Promise<{ name: string; objects: KubernetesObject[] }[]> {
  return [
    ...(await Promise.all(RENDERINGS.map(async (r) => ({ name: renderingName(r), objects: await renderDeploy(r) })))),
    ...(await Promise.all(PROVIDER_RENDERINGS.map(async (p) => ({ name: `providers/${p}`, objects: await renderProvider(p) })))),
  ];
}

/** Every rendering, plus deploy/volumes, by name. */
async function everything(): Promise<{ name: string; objects: KubernetesObject[] }[]> {
  return [...(await deployments()), { name: 'volumes', objects: await renderKustomization(join(DEPLOY_DIR, 'volumes')) }];
}

function only<T extends KubernetesObject>(objects: KubernetesObject[], kind: string): T {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`want exactly one ${kind}, found ${found.length}`);
  return found[0] as T;
}

test('every rendering passes a server-side apply dry run', async (t) => {
  const api = KubernetesObjectApi.makeApiClient(await testKubeConfig());
  for (const { name, objects } of await everything()) {
    t.true(objects.length > 0, `${name} renders objects`);
    for (const obj of objects) {
      const what = `${name}: ${obj.kind}/${obj.metadata?.name}`;
      // A namespace the rendering ships is applied for real: a dry run of the objects in it needs it to exist.
      const dryRun = obj.kind === 'Namespace' ? undefined : 'All';
      // Server-side apply works whether or not the object exists already.
      const out = await api
        .patch(obj, undefined, dryRun, 'ccm-manifest-test', true, PatchStrategy.ServerSideApply)
        .catch((err: { body?: unknown; message?: string }) => {
          t.fail(`${what}: ${JSON.stringify(err.body ?? err.message)}`);
          return undefined;
        });
      if (out) t.is(out.kind, obj.kind, what);
    }
  }
});

test('every YAML file under deploy/ is named by the kustomization of its directory', async (t) => {
  const files = await manifestFiles();
  const kustomizations = files.filter((f) => f.endsWith('/kustomization.yaml'));
  t.deepEqual(kustomizations.sort(), [
    'base/kustomization.yaml',
    'components/exec/kustomization.yaml',
    'components/monitoring/kustomization.yaml',
    'components/per-controller-rbac/kustomization.yaml',
    'components/provider-identity/kustomization.yaml',
    'components/sidecar/kustomization.yaml',
    'overlays/local-demo-exec/kustomization.yaml',
    'overlays/local-demo-sidecar/kustomization.yaml',
    'providers/aws/kustomization.yaml',
    'providers/openstack/kustomization.yaml',
    'providers/vsphere/kustomization.yaml',
    'volumes/kustomization.yaml',
  ]);
  const named = new Set<string>();
  for (const k of kustomizations) {
    const doc = loadYaml<{ resources?: string[]; patches?: { path?: string }[] }>(await readFile(join(DEPLOY_DIR, k), 'utf8'));
    for (const p of [...(doc.resources ?? []), ...(doc.patches ?? []).flatMap((x) => (x.path ? [x.path] : []))]) named.add(join(dirname(k), p));
  }
  for (const f of files.filter((x) => !x.endsWith('/kustomization.yaml'))) t.true(named.has(f), `${f} is not named by a kustomization.yaml`);
});

test('every rendering follows the recommended shape', async (t) => {
  for (const r of RENDERINGS) {
    const name = renderingName(r);
    const objects = await renderDeploy(r);
    const d = only<V1Deployment>(objects, 'Deployment');
    const spec = d.spec!.template.spec!;
    t.is(d.spec?.replicas, 2, name);
    t.true(spec.hostNetwork, name);
    t.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' }, name);
    const tol = (key: string) => spec.tolerations?.find((x) => x.key === key);
    t.truthy(tol('node.cloudprovider.kubernetes.io/uninitialized'), name);
    t.truthy(tol('node-role.kubernetes.io/control-plane'), name);
    t.like(tol('node.kubernetes.io/not-ready'), { effect: 'NoExecute', tolerationSeconds: 300 }, name);
    t.is(
      spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.topologyKey,
      'kubernetes.io/hostname',
      name,
    );
    t.like(spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, name);
    for (const c of spec.containers) {
      t.like(
        c.securityContext,
        { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        `${name} ${c.name}`,
      );
    }
    const host = spec.containers[0]!;
    t.is(host.name, 'cloud-controller-manager', `${name}: overlays append to containers/0`);
    t.true(host.args!.includes('--leader-elect=true'), name);
    // Liveness is the host process only; readiness the plugin, controllers and webhook.
    t.is(host.livenessProbe?.httpGet?.path, '/healthz', name);
    t.is(host.readinessProbe?.httpGet?.path, '/readyz', name);
    t.is(host.livenessProbe?.httpGet?.scheme, 'HTTPS', `${name}: --secure-port serves HTTPS only`);
    t.is(host.readinessProbe?.httpGet?.scheme, 'HTTPS', `${name}: --secure-port serves HTTPS only`);
    t.is(spec.volumes?.find((v) => v.name === 'cloud-config')?.secret?.optional, true, name);
    t.true(host.args!.includes('--cloud-config-optional=true'), `${name}: the optional Secret is optional for the host too`);

    const pdb = only<V1PodDisruptionBudget>(objects, 'PodDisruptionBudget');
    t.deepEqual(pdb.spec?.selector?.matchLabels, d.spec?.selector.matchLabels, `${name}: the budget covers the pods`);
    t.is(pdb.spec?.maxUnavailable, 1, name);

    // The Deployment runs as a ServiceAccount the rendering ships, and only that one.
    t.deepEqual(
      objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata?.name),
      [spec.serviceAccountName],
      name,
    );
    if (r.perController) {
      t.is(spec.serviceAccountName, 'cloud-controller-manager-host', name);
      t.true(host.args!.includes('--use-service-account-credentials=true'), name);
      t.false(
        objects.some((o) => o.metadata?.name === 'system:grpc-cloud-controller-manager'),
        `${name}: no single-identity ClusterRole`,
      );
    } else {
      t.is(spec.serviceAccountName, 'cloud-controller-manager', name);
      t.false(
        host.args!.some((a) => a.startsWith('--use-service-account-credentials')),
        name,
      );
    }
    if (r.overlay === 'sidecar') {
      t.is(spec.containers.length, 2, name);
      t.truthy(spec.volumes!.find((v) => v.name === 'plugin-socket')?.emptyDir, `${name}: socket directory is an emptyDir`);
      t.true(
        host.args!.some((a) => a.startsWith('--plugin-endpoint=unix:///run/ccm-plugin/')),
        name,
      );
      for (const c of spec.containers)
        t.true(
          c.volumeMounts!.some((m) => m.name === 'plugin-socket'),
          `${name}: ${c.name} mounts the socket directory`,
        );
    } else {
      t.is(spec.containers.length, 1, name);
      t.true(
        host.args!.some((a) => a.startsWith('--plugin-path=')),
        name,
      );
      // Something other than the host must reap what it kills when a provider exits (docs/protocol.md).
      t.true(spec.shareProcessNamespace, `${name}: the pause process is PID 1`);
    }
  }
});

/** Each bridged provider: its config file, the variable its main.go reads it from, its image. */
const PROVIDER_SHAPE = {
  aws: { file: '/etc/ccm/cloud.conf', env: 'CLOUD_CONFIG' },
  vsphere: { file: '/etc/ccm/vsphere.conf', env: 'VSPHERE_CLOUD_CONFIG' },
  openstack: { file: '/etc/ccm/cloud.conf', env: 'OPENSTACK_CLOUD_CONFIG' },
} as const;

test('each bridged provider renders the sidecar flavour with its own image and a required cloud config both containers read', async (t) => {
  const sidecar = only<V1Deployment>(await renderDeploy({ overlay: 'sidecar', perController: false }), 'Deployment').spec!.template.spec!;
  for (const p of PROVIDER_RENDERINGS) {
    const name = `providers/${p}`;
    const spec = only<V1Deployment>(await renderProvider(p), 'Deployment').spec!.template.spec!;
    const [host, provider] = spec.containers;
    t.is(spec.containers.length, 2, name);
    t.is(host!.name, 'cloud-controller-manager', name);
    t.is(provider!.name, 'provider', name);
    t.is(host!.image, sidecar.containers[0]!.image, `${name}: the host image is the shipped one`);
    // The package's version; a release pins the digest it built (docs/releasing.md).
    t.regex(provider!.image!, new RegExp(`^ghcr\\.io/grpc-ccm/ccm-provider-${p}:v${VERSION.replace(/\./g, '\\.')}(@sha256:[0-9a-f]{64})?$`), name);
    const { file, env } = PROVIDER_SHAPE[p];
    t.deepEqual(
      host!.args!.filter((a) => /^--cloud-(provider|config)/.test(a)),
      [`--cloud-provider=${p}`, `--cloud-config=${file}`, '--cloud-config-optional=false'],
      `${name}: the host names the provider and requires the file`,
    );
    t.deepEqual(
      provider!.env?.map((e) => ({ name: e.name, value: e.value })),
      [{ name: env, value: file }],
      `${name}: the provider reads the same file`,
    );
    t.like(
      spec.volumes?.find((v) => v.name === 'cloud-config')?.secret,
      { secretName: 'cloud-controller-manager-cloud-config', optional: false },
      name,
    );
    for (const c of [host!, provider!])
      t.like(
        c.volumeMounts?.find((m) => m.name === 'cloud-config'),
        { mountPath: '/etc/ccm', readOnly: true },
        `${name} ${c.name}`,
      );
    // The probes run the provider image's own binary: the bridge's entrypoint here, node and the local cloud's main in the demo.
    for (const probe of [provider!.startupProbe, provider!.livenessProbe, provider!.readinessProbe])
      t.deepEqual(probe?.exec?.command?.slice(0, 2), ['/ccm-provider', 'probe'], `${name}: the provider's probes run /ccm-provider probe`);
    const probeArgs = (probe: V1Probe | undefined): V1Probe | undefined => {
      const command = probe?.exec?.command;
      return command ? { ...probe, exec: { command: command.slice(command.indexOf('probe')) } } : probe;
    };
    // Everything else is the sidecar flavour's, the local provider's own volume and variable left out.
    const strip = (s: typeof spec) => ({
      ...s,
      containers: s.containers.map((c) => ({
        ...c,
        startupProbe: probeArgs(c.startupProbe),
        livenessProbe: probeArgs(c.livenessProbe),
        readinessProbe: probeArgs(c.readinessProbe),
        args: c.args?.filter((a) => !/^--cloud-(provider|config)/.test(a)),
        image: undefined,
        env: c.name === 'provider' ? undefined : c.env,
        volumeMounts: c.volumeMounts?.filter((m) => !['cloud-config', 'cloud-state'].includes(m.name)),
      })),
      // The provider's token volume: none in the demo, its own ServiceAccount's here (the test below).
      volumes: s.volumes?.filter((v) => !['cloud-config', 'cloud-state', 'provider-api-token'].includes(v.name)),
    });
    t.deepEqual(strip(spec), strip(sidecar), `${name}: otherwise the sidecar flavour`);
  }
});

test('the pods are admitted at Pod Security "restricted" without hostNetwork, and hostNetwork is their only violation', async (t) => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = `pss-${randomBytes(4).toString('hex')}`;
  await core.createNamespace({
    body: {
      metadata: {
        name: namespace,
        labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' },
      },
    },
  });
  t.teardown(() =>
    core.deleteNamespace({ name: namespace }).then(
      () => undefined,
      () => undefined,
    ),
  );
  const flavours = (await deployments()).filter(({ name }) => !name.includes('per-controller'));
  for (const { name, objects } of flavours) {
    const d = only<V1Deployment>(objects, 'Deployment');
    const template = structuredClone(d.spec!.template);
    // Only kube-system may use the system-* priority classes; not a security setting.
    delete template.spec!.priorityClassName;
    const pod = (hostNetwork: boolean): V1Pod => {
      const spec = structuredClone(template.spec!);
      if (!hostNetwork) {
        delete spec.hostNetwork;
        spec.dnsPolicy = 'ClusterFirst';
      }
      return {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `ccm-${hostNetwork ? 'host' : 'pod'}`, namespace, labels: template.metadata?.labels },
        spec,
      };
    };
    await t.notThrowsAsync(core.createNamespacedPod({ namespace, body: pod(false), dryRun: 'All' }), `${name} without hostNetwork is restricted`);
    const err = await core.createNamespacedPod({ namespace, body: pod(true), dryRun: 'All' }).then(
      () => undefined,
      (e: { body?: string }) => String(e.body ?? e),
    );
    t.truthy(err, `${name} with hostNetwork is refused at restricted`);
    const message = (JSON.parse(err ?? '{}') as { message?: string }).message ?? '';
    const violations = /violates PodSecurity "restricted:latest": (.*)$/.exec(message)?.[1] ?? '';
    // hostNetwork pods get hostPort = containerPort by default: the same exception.
    const kinds = violations.split(/, (?=[a-z])/).map((v) => v.replace(/ \(.*$/, ''));
    t.deepEqual([...new Set(kinds)].sort(), ['host namespaces', 'hostPort'], `${name}: ${violations}`);
  }
});

/**
 * The one Secret rule shipped: the vSphere provider watches the Secrets of its
 * config's secretNamespace, a namespace of its own (deploy/providers/vsphere/rbac.yaml).
 */
const VSPHERE_SECRETS = { kind: 'Role', namespace: 'vsphere-cloud-credentials', verbs: ['get', 'list', 'watch'] };

test("nothing shipped grants access to Secrets (but vSphere's own namespace), Pods or RBAC objects, or uses wildcards", async (t) => {
  for (const { name, objects } of await everything()) {
    for (const obj of objects as (KubernetesObject & { rules?: { resources?: string[]; verbs?: string[]; apiGroups?: string[] }[] })[]) {
      for (const rule of obj.rules ?? []) {
        const what = `${name} ${obj.kind}/${obj.metadata?.name}`;
        const secrets = (rule.resources ?? []).includes('secrets');
        if (secrets && name === 'providers/vsphere') {
          t.deepEqual(
            { kind: obj.kind, namespace: obj.metadata?.namespace, verbs: rule.verbs, resources: rule.resources },
            { ...VSPHERE_SECRETS, resources: ['secrets'] },
            what,
          );
          continue;
        }
        t.false(
          (rule.resources ?? []).some((r) => ['secrets', 'pods', '*'].includes(r.split('/')[0]!)),
          what,
        );
        t.false((rule.verbs ?? []).includes('*'), what);
        t.false(
          (rule.apiGroups ?? []).some((g) => g === '*' || g === 'rbac.authorization.k8s.io'),
          what,
        );
      }
    }
  }
});

/** The host's --cloud-provider in a rendered Deployment (undefined: none). */
function cloudProvider(d: V1Deployment): string | undefined {
  const args = d.spec!.template.spec!.containers[0]!.args ?? [];
  return args.find((a) => a.startsWith('--cloud-provider='))?.slice('--cloud-provider='.length);
}

test('no default runs the simulated cloud: only deploy/overlays/local-demo-* name it, and each allows it explicitly', async (t) => {
  // Every kustomization under deploy/ that renders a Deployment, by directory.
  const rendered: { dir: string; deployment: V1Deployment }[] = [];
  for (const k of (await manifestFiles()).filter((f) => f.endsWith('/kustomization.yaml') && !f.startsWith('components/'))) {
    const dir = dirname(k);
    const objects = await renderKustomization(join(DEPLOY_DIR, dir));
    const d = objects.find((o): o is V1Deployment => o.kind === 'Deployment');
    if (d) rendered.push({ dir, deployment: d });
  }
  const want = [
    { dir: 'base', provider: undefined },
    ...OVERLAYS.map((f) => ({ dir: localDemoDir(f), provider: 'local' })),
    ...PROVIDER_RENDERINGS.map((p) => ({ dir: `providers/${p}`, provider: p })),
  ].sort((a, b) => a.dir.localeCompare(b.dir));
  t.deepEqual(
    rendered.map(({ dir, deployment }) => ({ dir, provider: cloudProvider(deployment) })).sort((a, b) => a.dir.localeCompare(b.dir)),
    want,
    'the base names no provider (applied alone, the host exits naming the missing flag); each provider names its own',
  );
  const allowance = `${ALLOW_SIMULATION_ENV}=true`;
  for (const { dir, deployment } of rendered) {
    const spec = deployment.spec!.template.spec!;
    const allowed = [
      ...spec.containers[0]!.args!.filter((a) => a === `--plugin-env=${allowance}`),
      ...spec.containers.flatMap((c) => (c.env ?? []).filter((e) => e.name === ALLOW_SIMULATION_ENV).map((e) => `${c.name}: ${e.name}=${e.value}`)),
    ];
    if (cloudProvider(deployment) === 'local') {
      t.true(dir.startsWith('overlays/local-demo-'), `${dir}: the local cloud only in a directory named as its demo`);
      // The local provider refuses to start without it (plugins/local/simulation-guard.ts; run-manifests.test.ts starts these).
      t.deepEqual(allowed, [dir.endsWith('exec') ? `--plugin-env=${allowance}` : `provider: ${allowance}`], dir);
    } else {
      t.deepEqual(allowed, [], `${dir}: no allowance for a simulation`);
    }
  }
});

/** What each bridged provider's own client may do (deploy/providers/<name>/rbac.yaml): `verb group/resource` cluster-wide, `@namespace` when namespaced. */
const PROVIDER_RULES: Record<(typeof PROVIDER_RENDERINGS)[number], string[]> = {
  // patch: the provider-owned tagging controller labels the Nodes whose instances it tagged.
  aws: ['get /nodes', 'list /nodes', 'watch /nodes', 'patch /nodes', ...eventRules()],
  openstack: ['get /nodes', 'list /nodes', 'watch /nodes', ...eventRules()],
  vsphere: [
    'get /nodes',
    'list /nodes',
    'watch /nodes',
    'get /secrets@vsphere-cloud-credentials',
    'list /secrets@vsphere-cloud-credentials',
    'watch /secrets@vsphere-cloud-credentials',
  ],
};
function eventRules(): string[] {
  return ['', 'events.k8s.io'].flatMap((g) => ['create', 'patch', 'update'].map((v) => `${v} ${g}/events`));
}

type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[]; resourceNames?: string[] };
type RbacObject = KubernetesObject & {
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
};

/** The rules the rendering's own roles grant ServiceAccount `sa`, flattened as in PROVIDER_RULES, sorted. */
function grantedTo(objects: KubernetesObject[], sa: { namespace: string; name: string }): string[] {
  const rbac = objects as RbacObject[];
  const out = new Set<string>();
  for (const b of rbac.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
    if (!(b.subjects ?? []).some((s) => s.kind === 'ServiceAccount' && s.name === sa.name && s.namespace === sa.namespace)) continue;
    const role = rbac.find(
      (o) =>
        o.kind === b.roleRef!.kind &&
        o.metadata?.name === b.roleRef!.name &&
        (o.kind === 'ClusterRole' || o.metadata?.namespace === b.metadata?.namespace),
    );
    // A built-in role (the delegated-auth bindings of deploy/base/rbac-delegated-auth.yaml): not the provider's concern here.
    if (!role) continue;
    const where = b.kind === 'RoleBinding' ? `@${b.metadata?.namespace}` : '';
    for (const r of role.rules ?? [])
      for (const g of r.apiGroups ?? [''])
        for (const res of r.resources ?? [])
          for (const v of r.verbs ?? []) out.add(`${v} ${g}/${res}${r.resourceNames ? `#${r.resourceNames.join('|')}` : ''}${where}`);
  }
  return [...out].sort();
}

const PROVIDER_SA = { namespace: 'kube-system', name: 'cloud-controller-manager-provider' };

test("the provider container never runs as the host: no API token in the demos, its own ServiceAccount with only its provider's rules in deploy/providers, with either RBAC mode", async (t) => {
  const cases: { name: string; objects: KubernetesObject[]; own: (typeof PROVIDER_RENDERINGS)[number] | undefined }[] = [
    ...(await Promise.all(
      RENDERINGS.filter((r) => r.overlay === 'sidecar').map(async (r) => ({
        name: renderingName(r),
        objects: await renderDeploy(r),
        own: undefined,
      })),
    )),
    ...(await Promise.all(
      PROVIDER_RENDERINGS.flatMap((p) =>
        [false, true].map(async (pc) => ({
          name: `providers/${p}${pc ? ' + per-controller-rbac' : ''}`,
          objects: await renderProvider(p, pc),
          own: p,
        })),
      ),
    )),
  ];
  for (const { name, objects, own } of cases) {
    const spec = only<V1Deployment>(objects, 'Deployment').spec!.template.spec!;
    const [host, provider] = spec.containers;
    t.false(
      (host!.volumeMounts ?? []).some((m) => m.mountPath === TOKEN_PATH),
      `${name}: the host container keeps the pod's token`,
    );
    // A mount at the token path keeps the pod's (the host's) token out of the container (ServiceAccount admission).
    const mount = (provider!.volumeMounts ?? []).find((m) => m.mountPath === TOKEN_PATH);
    t.truthy(mount, `${name}: the provider container mounts its own token path`);
    t.true(mount?.readOnly, name);
    const volume = spec.volumes!.find((v) => v.name === mount?.name)!;
    if (own === undefined) {
      t.truthy(volume.emptyDir, `${name}: the local provider needs no API: an empty directory, no token`);
      t.false(
        objects.some((o) => o.metadata?.name === PROVIDER_SA.name),
        name,
      );
      continue;
    }
    t.falsy(volume.emptyDir, name);
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata?.name === volume.secret?.secretName) as
      (KubernetesObject & { type?: string }) | undefined;
    t.like(
      secret,
      {
        type: 'kubernetes.io/service-account-token',
        metadata: { namespace: 'kube-system', annotations: { 'kubernetes.io/service-account.name': PROVIDER_SA.name } },
      },
      `${name}: the token of the provider's own ServiceAccount`,
    );
    t.not(spec.serviceAccountName, PROVIDER_SA.name, `${name}: the pod (the host) runs as another`);
    t.deepEqual(
      volume.secret?.items?.map((i) => i.key),
      ['token', 'ca.crt', 'namespace'],
      `${name}: what an in-cluster client reads, required (the pod waits for the token controller)`,
    );
    t.truthy(
      objects.find((o) => o.kind === 'ServiceAccount' && o.metadata?.name === PROVIDER_SA.name && o.metadata?.namespace === PROVIDER_SA.namespace),
      name,
    );
    t.deepEqual(grantedTo(objects, PROVIDER_SA), [...PROVIDER_RULES[own]].sort(), `${name}: exactly what the provider reads`);
    // And the host's identity grants the provider nothing it did not have: the host's rules name no provider-only resource.
    t.false(
      grantedTo(objects, { namespace: 'kube-system', name: spec.serviceAccountName! }).some((r) => r.includes('secrets')),
      `${name}: the host reads no Secrets`,
    );
  }
});
