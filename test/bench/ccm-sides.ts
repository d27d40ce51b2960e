/**
 * The two CCMs a side-by-side bench section runs, one after the other, on the
 * same control plane and a fresh local cloud each:
 * - ours: the host, with the local cloud as its exec-mode plugin;
 * - upstream: the upstream Go cloud-controller-manager built from
 *   tools/upstream-ccm, whose `grpc` cloud provider forwards every
 *   cloudprovider.Interface call to the local cloud running as a sidecar.
 * Plus what both are measured with: the CCM process's CPU and RSS from /proc,
 * the cloud calls from the local cloud's journal, and writes from the
 * kube-apiserver's request counter.
 */
import { createWriteStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import type { ControlPlane } from '../controlplane/controlplane.js';
import { freePorts, get } from '../controlplane/probe.js';
import { LOCAL_PLUGIN } from '../helpers/localcloud.js';
import { readJournal } from '../../plugins/local/journal.js';
import { startSidecar } from '../helpers/sidecar.js';
import { waitFor } from '../helpers/wait.js';

const HOST_MAIN = fileURLToPath(new URL('../../host/main.js', import.meta.url));

/** Which CCM runs: our host (with V8 flags, if any), or the upstream Go CCM with the gRPC forwarder. */
export type Side = { kind: 'ours'; nodeFlags: string[] } | { kind: 'upstream'; bin: string };

/** Settings both sides get as the same flags. */
export interface CommonSettings {
  /** --controllers, e.g. `cloud-node` or `service`. */
  controllers: string;
  qps: number;
  burst: number;
  /** Upstream-named flags with the same meaning on both sides, e.g. `--concurrent-service-syncs=10`. */
  flags: string[];
}

export interface RunningCcm {
  pid: number;
  /** Where the CCM's (and, upstream, the sidecar's) output goes. */
  logFile: string;
  stop(): Promise<void>;
}

/** `VmHWM` (peak) or `VmRSS` (now) of `pid`, in MiB (the bench tables say so). */
export async function rssMb(pid: number, field: 'VmHWM' | 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** User+system CPU seconds `pid` has used so far. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Sum of kube-apiserver's apiserver_request_total for `resource` and the given verbs. */
export async function apiRequests(cp: ControlPlane, resource: string, verbs: string[]): Promise<number> {
  const r = await get(`${cp.server}/metrics`, { insecure: true, token: cp.token, timeoutMs: 10_000 });
  if (r.status !== 200) throw new Error(`kube-apiserver /metrics answered ${r.status}`);
  let n = 0;
  for (const m of r.body.matchAll(/^apiserver_request_total\{([^}]*)\} (\d+)/gm)) {
    const labels = m[1]!;
    if (labels.includes(`resource="${resource}"`) && verbs.some((v) => labels.includes(`verb="${v}"`))) n += Number(m[2]);
  }
  return n;
}

/** Write verbs as apiserver_request_total names them. */
export const WRITE_VERBS = ['POST', 'CREATE', 'PATCH', 'PUT', 'UPDATE'];

/** Calls in the local cloud's journal (LOCALCLOUD_JOURNAL=all: one line per call), optionally only `method`s. */
export async function journaledCalls(state: string, method?: RegExp): Promise<number> {
  const entries = await readJournal(state);
  return method ? entries.filter((e) => method.test(e.method)).length : entries.length;
}

function commonFlags(cp: ControlPlane, s: CommonSettings, port: number): string[] {
  return [
    `--kubeconfig=${cp.kubeconfigPath}`,
    '--cluster-name=bench',
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
  const env = { LOCALCLOUD_STATE_DIR: state, LOCALCLOUD_JOURNAL: 'all', ...pluginEnv };
  const [port] = await freePorts(1);
  if (side.kind === 'ours') {
    const logFile = join(dir, 'host.log');
    const pluginEnvFlags = Object.entries(env).map(([k, v]) => `--plugin-env=${k}=${v}`);
    const host = execa(process.execPath, [...side.nodeFlags, HOST_MAIN, '--cloud-provider=local', ...commonFlags(cp, s, port!), ...pluginEnvFlags], {
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
    return { pid: host.pid!, logFile, stop: () => stopChild(host) };
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
    logFile,
    async stop() {
      await stopChild(ccm);
      await sidecar.stop();
    },
  };
}

/** `ours ÷ upstream` as `0.84×`, or a dash when upstream is 0. */
export const ratio = (ours: number, upstream: number) => (upstream > 0 ? `${(ours / upstream).toFixed(2)}×` : '—');

/** A markdown table row per setting for one figure: `| what | setting | ours | upstream | ratio |`. */
export function sideBySideRows<F>(
  results: { label: string; ours: F; upstream: F }[],
  what: string,
  pick: (f: F) => number,
  fmt: (n: number) => string,
  bold = false,
): string {
  return results
    .map(({ label, ours, upstream }) => {
      const o = fmt(pick(ours));
      return `| ${what} | ${label} | ${bold ? `**${o}**` : o} | ${fmt(pick(upstream))} | ${ratio(pick(ours), pick(upstream))} |`;
    })
    .join('\n');
}
