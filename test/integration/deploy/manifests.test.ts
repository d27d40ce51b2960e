/**
 * Every shipped manifest (deploy/**.yaml) passes a server-side dry run
 * against the real kube-apiserver, and the pods they describe meet the
 * "restricted" Pod Security Standard except for hostNetwork, the one
 * documented exception (checked by the API server's PodSecurity admission).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubernetesObject, type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import { testKubeConfig } from '../../controlplane/shared.js';
import { loadManifest, manifestFiles } from '../../helpers/manifests.js';

test('every manifest file passes a server-side apply dry run', async (t) => {
  const kc = await testKubeConfig();
  const api = KubernetesObjectApi.makeApiClient(kc);
  const files = await manifestFiles();
  t.true(files.includes('rbac.yaml') && files.includes('deployment-sidecar.yaml') && files.includes('deployment-exec.yaml'), files.join(', '));
  for (const file of files) {
    const objects = await loadManifest(file);
    t.true(objects.length > 0, `${file} holds objects`);
    for (const obj of objects) {
      const what = `${file}: ${obj.kind}/${obj.metadata?.name}`;
      // Server-side apply works whether or not the object exists already.
      const out = await api
        .patch(obj, undefined, 'All', 'ccm-manifest-test', true, PatchStrategy.ServerSideApply)
        .catch((err: { body?: unknown; message?: string }) => {
          t.fail(`${what}: ${JSON.stringify(err.body ?? err.message)}`);
          return undefined;
        });
      if (out) t.is(out.kind, obj.kind, what);
    }
  }
});

/** The Deployments of deploy/. */
async function deployments(): Promise<{ file: string; d: V1Deployment }[]> {
  const out: { file: string; d: V1Deployment }[] = [];
  for (const file of await manifestFiles()) {
    for (const obj of await loadManifest(file)) if (obj.kind === 'Deployment') out.push({ file, d: obj as V1Deployment });
  }
  return out;
}

test('both Deployments follow the recommended shape', async (t) => {
  const found = await deployments();
  t.deepEqual(found.map((f) => f.file).sort(), ['deployment-exec.yaml', 'deployment-sidecar.yaml']);
  for (const { file, d } of found) {
    const spec = d.spec!.template.spec!;
    t.is(d.spec?.replicas, 2, file);
    t.true(spec.hostNetwork, file);
    t.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' }, file);
    const tol = (key: string) => spec.tolerations?.find((x) => x.key === key);
    t.truthy(tol('node.cloudprovider.kubernetes.io/uninitialized'), file);
    t.truthy(tol('node-role.kubernetes.io/control-plane'), file);
    t.like(tol('node.kubernetes.io/not-ready'), { effect: 'NoExecute', tolerationSeconds: 300 }, file);
    t.is(spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.topologyKey, 'kubernetes.io/hostname', file);
    t.is(spec.serviceAccountName, 'cloud-controller-manager', file);
    const host = spec.containers.find((c) => c.name === 'cloud-controller-manager')!;
    t.true(host.args!.includes('--leader-elect=true'), file);
    t.is(host.livenessProbe?.httpGet?.scheme, 'HTTPS', `${file}: --secure-port serves HTTPS only`);
    t.is(host.readinessProbe?.httpGet?.scheme, 'HTTPS', `${file}: --secure-port serves HTTPS only`);
    t.like(spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, file);
    for (const c of spec.containers) {
      t.like(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } }, `${file} ${c.name}`);
    }
    if (file === 'deployment-sidecar.yaml') {
      t.is(spec.containers.length, 2);
      const sock = spec.volumes!.find((v) => v.name === 'plugin-socket');
      t.truthy(sock?.emptyDir, 'socket directory is an emptyDir');
      t.true(host.args!.some((a) => a.startsWith('--plugin-endpoint=unix:///run/ccm-plugin/')));
      for (const c of spec.containers) t.true(c.volumeMounts!.some((m) => m.name === 'plugin-socket'), `${c.name} mounts the socket directory`);
    } else {
      t.is(spec.containers.length, 1);
      t.true(host.args!.some((a) => a.startsWith('--plugin-path=')));
    }
  }
});

test('the pods are admitted at Pod Security "restricted" without hostNetwork, and hostNetwork is their only violation', async (t) => {
  const kc = await testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = `pss-${randomBytes(4).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: namespace, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } } } });
  t.teardown(() => core.deleteNamespace({ name: namespace }).then(() => undefined, () => undefined));
  for (const { file, d } of await deployments()) {
    const template = structuredClone(d.spec!.template);
    // Only kube-system may use the system-* priority classes; not a security setting.
    delete template.spec!.priorityClassName;
    const pod = (hostNetwork: boolean): V1Pod => {
      const spec = structuredClone(template.spec!);
      if (!hostNetwork) {
        delete spec.hostNetwork;
        spec.dnsPolicy = 'ClusterFirst';
      }
      return { apiVersion: 'v1', kind: 'Pod', metadata: { name: `ccm-${hostNetwork ? 'host' : 'pod'}`, namespace, labels: template.metadata?.labels }, spec };
    };
    await t.notThrowsAsync(core.createNamespacedPod({ namespace, body: pod(false), dryRun: 'All' }), `${file} without hostNetwork is restricted`);
    const err = await core.createNamespacedPod({ namespace, body: pod(true), dryRun: 'All' }).then(
      () => undefined,
      (e: { body?: string }) => String(e.body ?? e),
    );
    t.truthy(err, `${file} with hostNetwork is refused at restricted`);
    const message = (JSON.parse(err ?? '{}') as { message?: string }).message ?? '';
    const violations = /violates PodSecurity "restricted:latest": (.*)$/.exec(message)?.[1] ?? '';
    // hostNetwork pods get hostPort = containerPort by default: the same exception.
    const kinds = violations.split(/, (?=[a-z])/).map((v) => v.replace(/ \(.*$/, ''));
    t.deepEqual([...new Set(kinds)].sort(), ['host namespaces', 'hostPort'], `${file}: ${violations}`);
  }
});

test('nothing shipped grants access to Secrets, Pods or RBAC objects, or uses wildcards', async (t) => {
  for (const file of await manifestFiles()) {
    for (const obj of (await loadManifest(file)) as (KubernetesObject & { rules?: { resources?: string[]; verbs?: string[]; apiGroups?: string[] }[] })[]) {
      for (const rule of obj.rules ?? []) {
        const what = `${file} ${obj.kind}/${obj.metadata?.name}`;
        t.false((rule.resources ?? []).some((r) => ['secrets', 'pods', '*'].includes(r.split('/')[0]!)), what);
        t.false((rule.verbs ?? []).includes('*'), what);
        t.false((rule.apiGroups ?? []).some((g) => g === '*' || g === 'rbac.authorization.k8s.io'), what);
      }
    }
  }
});
