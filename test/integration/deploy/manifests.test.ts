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
} from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { renderKustomization } from '../../helpers/kustomize.js';
import { DEPLOY_DIR, PROVIDER_RENDERINGS, RENDERINGS, manifestFiles, renderDeploy, renderProvider, renderingName } from '../../helpers/manifests.js';

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
    'components/monitoring/kustomization.yaml',
    'components/per-controller-rbac/kustomization.yaml',
    'components/sidecar/kustomization.yaml',
    'overlays/exec/kustomization.yaml',
    'overlays/sidecar/kustomization.yaml',
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
        objects.some((o) => o.metadata?.name === 'system:cloud-controller-manager'),
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
    t.is(provider!.image, `ghcr.io/grpc-ccm/ccm-provider-${p}:v0.1.0`, name);
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
    // Everything else is the sidecar flavour's, the local provider's own volume and variable left out.
    const strip = (s: typeof spec) => ({
      ...s,
      containers: s.containers.map((c) => ({
        ...c,
        args: c.args?.filter((a) => !/^--cloud-(provider|config)/.test(a)),
        image: undefined,
        env: c.name === 'provider' ? undefined : c.env,
        volumeMounts: c.volumeMounts?.filter((m) => !['cloud-config', 'cloud-state'].includes(m.name)),
      })),
      volumes: s.volumes?.filter((v) => !['cloud-config', 'cloud-state'].includes(v.name)),
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
