/**
 * The two CCMs that run side by side on one control plane and one local cloud
 * (the bench's sections and the differential suite, test/integration/parity):
 * - ours: the host, with the local cloud as its exec-mode plugin;
 * - upstream: the upstream Go cloud-controller-manager built from
 *   tools/upstream-ccm (upstream-ccm.ts), whose `grpc` cloud provider forwards
 *   every cloudprovider.Interface call to the local cloud running as a sidecar.
 */
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { freePorts, get } from '../controlplane/probe.js';
import { LOCAL_PLUGIN } from './localcloud.js';
import { ALLOW_SIMULATION_ENV } from '../../plugins/local/simulation-guard.js';
import { startSidecar } from './sidecar.js';
import { waitFor } from './wait.js';

const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));

/**
 * Which CCM runs: our host (with V8 flags, if any), or the upstream Go CCM with the gRPC forwarder.
 * `providersConfig` (ours only) runs the providers that file lists (`--providers-config`) instead of
 * one local cloud on `state`; the file then says each provider's environment.
 */
export type Side = { kind: 'ours'; nodeFlags: string[]; providersConfig?: string } | { kind: 'upstream'; bin: string };

/** Settings both sides get as the same flags. */
export interface CommonSettings {
  /** --controllers, e.g. `cloud-node` or `service`. */
  controllers: string;
  qps: number;
  burst: number;
  /** Upstream-named flags with the same meaning on both sides, e.g. `--concurrent-service-syncs=10`. */
  flags: string[];
  /** The kubeconfig this side runs with (default: the control plane's admin). */
  kubeconfig?: string;
  /** --cluster-name (default: bench). */
  clusterName?: string;
}

export interface RunningCcm {
  pid: number;
  /** The secure port it serves /healthz and /metrics on (127.0.0.1). */
  port: number;
  /** Where the CCM's (and, upstream, the sidecar's) output goes. */
  logFile: string;
  /** Upstream only: the local cloud sidecar's pid (ours spawns its providers as its children). */
  sidecarPid?: number;
  stop(): Promise<void>;
}

function commonFlags(cp: ControlPlane, s: CommonSettings, port: number): string[] {
  return [
    `--kubeconfig=${s.kubeconfig ?? cp.kubeconfigPath}`,
    `--cluster-name=${s.clusterName ?? 'bench'}`,
    `--controllers=${s.controllers}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    `--kube-api-qps=${s.qps}`,
    `--kube-api-burst=${s.burst}`,
    ...s.flags,
  ];
}

async function stopChild(child: ResultPromise): Promise<void> {
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await child;
  clearTimeout(t);
}

/**
 * Starts `side` against the local cloud state directory `state` (which must
 * hold its instances and knobs already); resolves once it serves. `pluginEnv`
 * goes to the local cloud on both sides. Logs go under `dir`.
 */
export async function startCcm(
  cp: ControlPlane,
  side: Side,
  s: CommonSettings,
  state: string,
  dir: string,
  pluginEnv: Record<string, string> = {},
): Promise<RunningCcm> {
  const env = { LOCALCLOUD_STATE_DIR: state, LOCALCLOUD_JOURNAL: 'all', [ALLOW_SIMULATION_ENV]: 'true', ...pluginEnv };
  const [port] = await freePorts(1);
  if (side.kind === 'ours') {
    const logFile = join(dir, 'host.log');
    const providerFlags = side.providersConfig
      ? [`--providers-config=${side.providersConfig}`]
      : ['--cloud-provider=local', ...Object.entries(env).map(([k, v]) => `--plugin-env=${k}=${v}`)];
    const host = execa(process.execPath, [...side.nodeFlags, HOST_MAIN, ...providerFlags, ...commonFlags(cp, s, port!)], {
      reject: false,
      stdin: 'ignore',
      all: true,
      buffer: false,
    });
    host.all!.pipe(createWriteStream(logFile));
    let started = false;
    host.all!.on('data', (d: Buffer) => {
      if (d.toString().includes('cloud-controller-manager started')) started = true;
    });
    await waitFor(
      () => {
        if (host.exitCode !== undefined && host.exitCode !== null) throw new Error(`host exited ${host.exitCode}; see ${logFile}`);
        return started;
      },
      { what: 'host started', timeoutMs: 60_000 },
    );
    return { pid: host.pid!, port: port!, logFile, stop: () => stopChild(host) };
  }
  // The compiled plugin is a .js file: a launcher runs it with this Node, as a container's entrypoint would.
  const launcher = join(dir, 'localcloud-sidecar');
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`, { mode: 0o755 });
  const sidecar = await startSidecar(launcher, dir, env);
  const logFile = join(dir, 'upstream-ccm.log');
  const ccm = execa(side.bin, ['--cloud-provider=grpc', ...commonFlags(cp, s, port!)], {
    env: { CCM_PROVIDER_ENDPOINT: sidecar.endpoint },
    reject: false,
    stdin: 'ignore',
    all: true,
    buffer: false,
  });
  ccm.all!.pipe(createWriteStream(logFile));
  const healthy = () =>
    get(`https://127.0.0.1:${port}/healthz`, { insecure: true }).then(
      (r) => r.status === 200,
      () => false,
    );
  await waitFor(
    async () => {
      if (ccm.exitCode !== undefined && ccm.exitCode !== null) throw new Error(`upstream-ccm exited ${ccm.exitCode}; see ${logFile}`);
      return healthy();
    },
    { what: 'upstream-ccm healthy', timeoutMs: 60_000 },
  );
  return {
    pid: ccm.pid!,
    port: port!,
    logFile,
    sidecarPid: sidecar.pid,
    async stop() {
      await stopChild(ccm);
      await sidecar.stop();
    },
  };
}
