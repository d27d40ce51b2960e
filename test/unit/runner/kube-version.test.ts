/**
 * The test control plane's Kubernetes version is a setting: CCM_KUBE_VERSION
 * picks it (each version is built into its own cache directory), the host's
 * target is the default, and `npm run test:kube-latest` runs the suite on the
 * newest (docs/support-matrix.md says what ran there).
 */
import { readFileSync } from 'node:fs';
import test from 'ava';
import { cachedBinaries, K8S_LATEST_VERSION, K8S_VERSION, kubeVersion } from '../../controlplane/binaries.js';

const ROWS: { env: string | undefined; want: string | RegExp }[] = [
  { env: undefined, want: K8S_VERSION },
  { env: '', want: K8S_VERSION },
  { env: 'v1.37.2', want: 'v1.37.2' },
  { env: ' v1.36.3 ', want: 'v1.36.3' },
  { env: '1.37.2', want: /CCM_KUBE_VERSION=1\.37\.2 is not a Kubernetes release such as v1\.37\.2/ },
  { env: 'latest', want: /is not a Kubernetes release/ },
  { env: 'v1.37.2; rm -rf /', want: /is not a Kubernetes release/ },
];

for (const r of ROWS) {
  test(`CCM_KUBE_VERSION=${JSON.stringify(r.env)}`, (t) => {
    const env = r.env === undefined ? {} : { CCM_KUBE_VERSION: r.env };
    if (typeof r.want === 'string') t.is(kubeVersion(env), r.want);
    else t.throws(() => kubeVersion(env), { message: r.want });
  });
}

test('each Kubernetes version has its own binaries; etcd is shared', (t) => {
  const a = cachedBinaries('/c', 'v1.34.4');
  const b = cachedBinaries('/c', 'v1.37.2');
  t.is(a.kubeApiserver, '/c/kube-apiserver-v1.34.4/kube-apiserver');
  t.is(b.kubeApiserver, '/c/kube-apiserver-v1.37.2/kube-apiserver');
  t.is(b.kubeControllerManager, '/c/kube-controller-manager-v1.37.2/kube-controller-manager');
  t.regex(b.hollowKubelet, /^\/c\/hollow-kubelet-v1\.37\.2-[0-9a-f]{12}\/hollow-kubelet$/);
  t.is(a.etcd, b.etcd);
});

test('npm run test:kube-latest runs the suite on K8S_LATEST_VERSION', (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
  t.is(pkg.scripts['test:kube-latest'], `CCM_KUBE_VERSION=${K8S_LATEST_VERSION} npm test --`);
});
