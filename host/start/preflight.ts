/**
 * Start-up steps before anything runs: configuration warnings, each
 * provider's --cloud-config bytes, and the API server (kubeconfig loaded, its secrets
 * registered for redaction, the server reachable).
 */
import type { HostConfig } from '../config/config.js';
import { readCloudConfig } from '../config/cloud-config.js';
import { HostStartError } from '../errors.js';
import { getVersion } from '../kube/api.js';
import { isForbidden, isNotFound, makeClients, type KubeClients } from '../kube/client.js';
import { currentUser, loadKubeConfig, type KubeConfigData } from '../kube/kubeconfig.js';
import { errorMessage, type Logger } from '../log.js';
import { CLUSTER_UID_NAMESPACE, COMPONENT_NAME } from '../names.js';
import { registerCloudConfigSecrets, registerEnvSecrets, registerSecret, untrackedSecrets } from '../redact.js';
import { HOST_VERSION } from '../version.js';

/** How long the API server may take to answer at start (upstream waits up to 10 s). */
const API_CHECK_TIMEOUT_MS = 10_000;

/** Logs what the operator should know about the configuration before start. */
export function warnAboutConfig(config: HostConfig, log: Logger): void {
  if (config.clusterNameDefaulted) {
    log.warn(
      { clusterName: config.clusterName },
      '--cluster-name is left at its default: cloud objects of clusters sharing one account may collide; set a unique --cluster-name',
    );
  }
  for (const w of config.warnings) log.warn({ warning: w }, 'configuration warning');
}

/**
 * Each provider's cloud config bytes, by provider name (--cloud-config, or
 * each provider's `cloudConfig` in --providers-config): empty without one,
 * or when it is optional and the file does not exist.
 */
export async function loadCloudConfigs(config: HostConfig, log: Logger): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const several = config.providers.length > 1;
  for (const p of config.providers) {
    if (!p.cloudConfigPath) {
      out.set(p.name, Buffer.alloc(0));
      continue;
    }
    const bytes = await readCloudConfig(p.cloudConfigPath, { optional: p.cloudConfigOptional }).catch((err: unknown) => {
      throw several && err instanceof HostStartError ? new HostStartError(`provider ${p.name} of --providers-config: ${err.message}`) : err;
    });
    if (!bytes) {
      log.info(
        { path: p.cloudConfigPath, ...(several ? { provider: p.name } : {}) },
        'the --cloud-config file does not exist: starting with an empty cloud config (--cloud-config-optional); restart the host after creating it',
      );
    }
    out.set(p.name, bytes ?? Buffer.alloc(0));
  }
  return out;
}

/**
 * Loads the kubeconfig (`given`, else --kubeconfig/--master), registers every
 * secret the host knows of for redaction, and checks that the API server
 * answers. Rejects with HostStartError naming the problem.
 */
export async function connectToApiServer(
  config: HostConfig,
  cloudConfigs: ReadonlyMap<string, Buffer>,
  given: KubeConfigData | undefined,
  log: Logger,
): Promise<KubeConfigData> {
  let kc: KubeConfigData;
  let versionClient: KubeClients;
  try {
    kc = given ?? loadKubeConfig({ kubeconfig: config.kubeconfig, master: config.master });
    versionClient = makeClients(kc, { userAgent: `${COMPONENT_NAME}/${HOST_VERSION}` });
  } catch (err) {
    throw new HostStartError(errorMessage(err));
  }
  for (const bytes of cloudConfigs.values()) registerCloudConfigSecrets(bytes);
  for (const p of config.providers) registerEnvSecrets(p.pluginEnv);
  registerSecret(currentUser(kc)?.token);
  if (untrackedSecrets() > 0) {
    log.warn(
      { untracked: untrackedSecrets() },
      'some secret values of --cloud-config or --plugin-env are too many or too long (a single line over 4 KiB) to be redacted from logs and events: keep bulky secrets in files the provider reads',
    );
  }
  try {
    await checkApiServer(versionClient);
  } finally {
    versionClient.connections.destroy();
  }
  return kc;
}

/** Fails fast, with one line, when the API server cannot be reached. */
async function checkApiServer(clients: KubeClients): Promise<void> {
  const server = clients.rest.server;
  const deadline = Date.now() + API_CHECK_TIMEOUT_MS;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await getVersion(clients.rest, { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) });
      return;
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new HostStartError(`cannot reach the API server at ${server}: ${errorMessage(last)}; check --kubeconfig/--master`);
}

/**
 * The cluster UID the host sends to the provider (RequestMeta.cluster_uid,
 * Configure): --cluster-uid when given, else the uid of the kube-system
 * Namespace, read live (it outlives every workload and differs between two
 * clusters that share a --cluster-name). Rejects with HostStartError when it
 * cannot be read: without it the orphan sweep could not tell this cluster's
 * load balancers from a neighbour's.
 */
export async function readClusterUid(config: HostConfig, kc: KubeConfigData, log: Logger): Promise<string> {
  if (config.clusterUid) {
    log.info({ clusterUid: config.clusterUid }, 'cluster UID from --cluster-uid');
    return config.clusterUid;
  }
  const clients = makeClients(kc, { userAgent: `${COMPONENT_NAME}/${HOST_VERSION}` });
  const deadline = Date.now() + API_CHECK_TIMEOUT_MS;
  let last: unknown;
  try {
    while (Date.now() < deadline) {
      try {
        const ns = await clients.core.readNamespace(
          { name: CLUSTER_UID_NAMESPACE },
          { signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())) },
        );
        const uid = ns.metadata?.uid ?? '';
        if (!uid) throw new HostStartError(`the ${CLUSTER_UID_NAMESPACE} Namespace has no metadata.uid; pass --cluster-uid`);
        log.info({ clusterUid: uid }, `cluster UID: the uid of the ${CLUSTER_UID_NAMESPACE} Namespace`);
        return uid;
      } catch (err) {
        if (err instanceof HostStartError) throw err;
        if (isForbidden(err) || isNotFound(err)) {
          throw new HostStartError(
            `cannot read the ${CLUSTER_UID_NAMESPACE} Namespace for the cluster UID: ${errorMessage(err)}; grant get on namespaces/${CLUSTER_UID_NAMESPACE} or pass --cluster-uid`,
          );
        }
        last = err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    clients.connections.destroy();
  }
  throw new HostStartError(`cannot read the ${CLUSTER_UID_NAMESPACE} Namespace for the cluster UID: ${errorMessage(last)}; or pass --cluster-uid`);
}
