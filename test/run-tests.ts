/**
 * `npm test`: makes sure the control-plane binaries exist (building them on
 * the first run, with progress), starts ONE real etcd + kube-apiserver for
 * the whole run, runs every test file with ava against it
 * (CCM_TEST_KUBECONFIG), stops the control plane, and prints a closing
 * `tests: N passed, N failed` line. Exit code: ava's.
 *
 * Artifacts: the test processes get TMPDIR set to one artifacts folder, so
 * every test's temporary directory (host logs, local cloud state and
 * journal, plugin sockets) is made there. When a test fails, kube-apiserver's
 * audit log is copied in too and the folder is kept and named on the last
 * lines; on success it is removed.
 */
import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { DEFAULT_OPTIONS } from '../host/config/options.js';
import { ensureBinaries } from './controlplane/binaries.js';
import { ControlPlane } from './controlplane/controlplane.js';
import { prepareKustomize } from './helpers/kustomize.js';
import { preparePromtool } from './helpers/promtool.js';
import { prepareTestProviders } from './helpers/providers.js';
import { prepareHostIdentity } from './helpers/service-account.js';
import { ensureUpstreamCcm } from './helpers/upstream-ccm.js';
import { openstackBinaries } from './helpers/openstack.js';
import { prepareImages } from './helpers/images.js';
import { prepareRelease } from './helpers/release.js';
import { vsphereBinaries } from './helpers/vsphere.js';
import { StreamText, summarize } from './ava-summary.js';

/**
 * Whether a test host elected on the host's default Lease. Test files run
 * hosts at the same time, so such a host waits for (or blocks) every other
 * file's: a failure by timing only, hence this check on the whole run.
 */
async function defaultLeaseTaken(kc: KubeConfig): Promise<boolean> {
  const name = DEFAULT_OPTIONS.leaderElectResourceName;
  const namespace = DEFAULT_OPTIONS.leaderElectResourceNamespace;
  try {
    await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name, namespace });
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const t0 = Date.now();
  process.stderr.write('[test] checking control-plane binaries (first run builds them from Go modules)\n');
  await ensureBinaries({ onProgress: (line) => process.stderr.write(`[controlplane] ${line}\n`) });
  await prepareTestProviders((line) => process.stderr.write(`[providers] ${line}\n`));
  // k8s.io/cloud-provider-vsphere through the bridge, and its simulator (test/integration/providers/vsphere-bridge.test.ts).
  await vsphereBinaries((line) => process.stderr.write(`[providers] ${line}\n`));
  // k8s.io/cloud-provider-openstack through the bridge (test/integration/providers/openstack-bridge.test.ts).
  await openstackBinaries((line) => process.stderr.write(`[providers] ${line}\n`));
  await prepareKustomize((line) => process.stderr.write(`[kustomize] ${line}\n`));
  // Checks the shipped alerts (test/integration/deploy/monitoring.test.ts).
  await preparePromtool((line) => process.stderr.write(`[promtool] ${line}\n`));
  // deploy/Dockerfile's host image and deploy/providers/Dockerfile's AWS image, built with buildah (test/integration/deploy/images.test.ts).
  await prepareImages((line) => process.stderr.write(`[images] ${line}\n`));
  // The release command on a copy of the checkout: the host image for amd64 and arm64 as one OCI index (test/integration/release/release.test.ts).
  await prepareRelease((line) => process.stderr.write(`[release] ${line}\n`));
  // The differential suite's other side (test/integration/parity): built here, once per source change, so no test waits for it.
  await ensureUpstreamCcm((line) => process.stderr.write(`[upstream-ccm] ${line}\n`));
  const cp = await ControlPlane.start({ auditLog: true });
  process.stderr.write(`[test] control plane ready at ${cp.server} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  // Test hosts authenticate as the shipped ServiceAccount, under the shipped RBAC.
  const hostKubeconfigPath = join(cp.dir, 'host-kubeconfig');
  await prepareHostIdentity(cp.kubeConfig(), hostKubeconfigPath);
  // Short: plugin socket paths under it must stay within the 108-byte limit.
  const artifacts = await mkdtemp(join(tmpdir(), 'ccm-test-'));
  const stdout = new StreamText();
  const stderr = new StreamText();
  const stop = async () => {
    await cp.stop().catch((err) => process.stderr.write(`[test] control plane stop failed: ${String(err)}\n`));
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(143)));
  // The CLI is not an exported subpath: find it next to the package's main entry.
  const avaCli = join(dirname(createRequire(import.meta.url).resolve('ava')), 'cli.mjs');
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [avaCli, ...process.argv.slice(2)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        CCM_TEST_KUBECONFIG: cp.kubeconfigPath,
        CCM_TEST_HOST_KUBECONFIG: hostKubeconfigPath,
        TMPDIR: artifacts,
        CCM_TEST_ARTIFACTS: artifacts,
      },
    });
    child.stdout.on('data', (d: Buffer) => {
      stdout.push(d);
      process.stdout.write(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr.push(d);
      process.stderr.write(d);
    });
    child.on('close', (c) => resolve(c ?? 1));
  });
  const leaseTaken = await defaultLeaseTaken(cp.kubeConfig());
  const kept = code !== 0 || leaseTaken;
  if (kept) await copyFile(cp.auditLogPath, join(artifacts, 'kube-apiserver-audit.log')).catch(() => undefined);
  await stop();
  if (!kept) await rm(artifacts, { recursive: true, force: true }).catch(() => undefined);
  else process.stdout.write(`\nartifacts (host logs, local cloud state and journals, kube-apiserver audit log): ${artifacts}\n`);
  const counts = summarize(stdout.value(), stderr.value());
  const { passed, skipped } = counts;
  let failed = counts.failed;
  if (code !== 0 && failed === 0) failed = 1; // ava failed before printing anything countable
  if (leaseTaken) {
    const lease = `${DEFAULT_OPTIONS.leaderElectResourceNamespace}/${DEFAULT_OPTIONS.leaderElectResourceName}`;
    process.stderr.write(
      `[test] a test host elected on the default Lease ${lease}: give every test host --leader-elect=false or a Lease of its own\n`,
    );
    failed++;
  }
  process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  return leaseTaken && code === 0 ? 1 : code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`[test] ${err instanceof Error ? err.message : String(err)}\n`);
    process.stdout.write('\ntests: 0 passed, 1 failed\n');
    process.exit(1);
  },
);
