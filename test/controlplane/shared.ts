/**
 * The control plane a test process talks to. The test runner starts one for
 * the whole suite and passes its kubeconfig in CCM_TEST_KUBECONFIG; a test
 * file run on its own starts a private one, stopped when the process ends.
 */
import { dirname, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ControlPlane } from './controlplane.js';

let shared: Promise<KubeConfig> | undefined;
/** The control plane started by this process (a test file run on its own), if any. */
let own: ControlPlane | undefined;

/**
 * Returns a KubeConfig for the suite's control plane: loaded from
 * CCM_TEST_KUBECONFIG when set (throws if that file cannot be read), else
 * from a ControlPlane started on first call in this process (throws the start
 * error, e.g. missing binaries or apiserver log tail). Concurrent and later
 * calls share the same cluster; each gets its own KubeConfig object.
 */
export async function testKubeConfig(): Promise<KubeConfig> {
  shared ??= load();
  const kc = new KubeConfig();
  kc.loadFromString((await shared).exportConfig());
  return kc;
}

async function load(): Promise<KubeConfig> {
  const path = process.env.CCM_TEST_KUBECONFIG;
  const kc = new KubeConfig();
  if (path) {
    try {
      kc.loadFromFile(path);
    } catch (err) {
      throw new Error(`cannot load CCM_TEST_KUBECONFIG=${path} (${(err as Error).message}); is the suite's control plane still running?`, {
        cause: err,
      });
    }
    return kc;
  }
  const cp = await ControlPlane.start({ auditLog: true });
  own = cp;
  // Graceful stop once nothing else is pending; if the process exits some
  // other way, ControlPlane's own 'exit' hook SIGKILLs and cleans up.
  process.once('beforeExit', () => void cp.stop());
  kc.loadFromFile(cp.kubeconfigPath);
  return kc;
}

/**
 * Path of kube-apiserver's audit log of the same control plane (writes to
 * Services, claims, PVs and Nodes; see ControlPlane's AUDIT_POLICY): next to
 * CCM_TEST_KUBECONFIG when the runner started it (with the audit log on), else
 * that of the control plane this process started.
 */
export async function testAuditLogPath(): Promise<string> {
  await testKubeConfig();
  const path = process.env.CCM_TEST_KUBECONFIG;
  return path ? join(dirname(path), 'audit.log') : own!.auditLogPath;
}
