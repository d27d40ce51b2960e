/**
 * Two local clouds as two providers of one host (--providers-config), for
 * the multi-provider tests: "east" spawned by the host (exec mode, the first
 * entry, so the default provider) and "west" a sidecar the host dials, each
 * with its own state directory and provider name (so its providerIDs are
 * `east://…` and `west://…`). West can be SIGKILLed and started again.
 *
 * The host runs in process as the shipped ServiceAccount, fails on a 403
 * (checkForbiddenOnStop) and must be node-scoped (assertNodeScoped).
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHost } from '../../host/app.js';
import { parseHostArgs } from '../../host/config/flags.js';
import { createLogger } from '../../host/log.js';
import { freePorts } from '../controlplane/probe.js';
import { checkForbiddenOnStop } from './forbidden.js';
import { ALLOW_SIMULATION, LOCAL_PLUGIN } from './localcloud.js';
import { logFile } from './log-file.js';
import { assertNodeScoped } from './node-scope.js';
import { hostKubeConfig } from './service-account.js';
import { startSidecar, type Sidecar } from './sidecar.js';

export type CloudName = 'east' | 'west';

const [ALLOW_NAME, ALLOW_VALUE] = ALLOW_SIMULATION.split('=') as [string, string];

/** A local cloud's environment: its state under `dir`, its provider name, the simulation guard's consent, then `extra`. */
export function localCloudEnv(dir: string, name: string, extra: Record<string, string> = {}): Record<string, string> {
  return { LOCALCLOUD_STATE_DIR: join(dir, name), [ALLOW_NAME]: ALLOW_VALUE, LOCALCLOUD_PROVIDER_NAME: name, ...extra };
}

/** A providers-file entry (YAML lines) for a local cloud the host spawns, with `keys` (e.g. `routes: true`) before its environment. */
export function execEntry(name: string, env: Record<string, string>, keys: string[] = []): string {
  const lines = [`  - name: ${name}`, `    pluginPath: ${LOCAL_PLUGIN}`, ...keys.map((k) => `    ${k}`), '    pluginEnv:'];
  for (const [k, v] of Object.entries(env)) lines.push(`      - ${k}=${v}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Prepares a local cloud named `name` to run as a sidecar the host dials
 * (state `dir/<name>`, sockets `dir/<name>-sockets`, log `dir/<name>.log`,
 * through a launcher of its own as a container's entrypoint would) and
 * returns how to start it: each call starts it again on the same socket
 * (after it was killed, as the kubelet restarts a container).
 */
export async function localCloudSidecar(dir: string, name: string, extra: Record<string, string> = {}): Promise<() => Promise<Sidecar>> {
  const launcher = join(dir, `${name}-provider`);
  await writeFile(launcher, `#!/bin/sh\nexec '${process.execPath}' '${LOCAL_PLUGIN}' "$@"\n`, { mode: 0o755 });
  const sockets = join(dir, `${name}-sockets`);
  await mkdir(sockets, { mode: 0o700 });
  return () => startSidecar(launcher, sockets, localCloudEnv(dir, name, extra), { logPath: join(dir, `${name}.log`) });
}

/** A providers-file entry for a provider the host dials. */
export function endpointEntry(name: string, endpoint: string): string {
  return `  - name: ${name}\n    pluginEndpoint: ${endpoint}\n`;
}

/** Writes `dir/providers.yaml` with `entries`; its path. */
export async function writeProvidersFile(dir: string, entries: string[]): Promise<string> {
  const file = join(dir, 'providers.yaml');
  await writeFile(file, `providers:\n${entries.join('')}`);
  return file;
}

/**
 * Starts a host in process on `--providers-config=providersFile` with
 * `flags` (the controllers, cluster name, scope, ...) and what every test
 * host here has: its own free port on 127.0.0.1, no leader election, a 20 s
 * plugin start timeout, -v=2, its log in `dir/host.log`. Rejects when it
 * does not start (the refusal tests read the message).
 */
export async function startProvidersHost(dir: string, providersFile: string, flags: string[], port?: number) {
  const securePort = port ?? (await freePorts(1))[0]!;
  const parsed = parseHostArgs([
    `--providers-config=${providersFile}`,
    `--secure-port=${securePort}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
    '--plugin-start-timeout=20s',
    '-v=2',
    ...flags,
  ]);
  if ('errors' in parsed) throw new Error(`bad test host flags: ${parsed.errors.join('; ')}`);
  assertNodeScoped(parsed.config);
  const logPath = join(dir, 'host.log');
  const log = createLogger({ verbosity: 2, destination: logFile(logPath) });
  const host = await startHost(parsed.config, { log, kubeConfig: await hostKubeConfig() });
  return Object.assign(checkForbiddenOnStop(host, logPath), { port: securePort });
}

export type ProvidersHost = Awaited<ReturnType<typeof startProvidersHost>>;

export interface TwoLocalCloudsOptions {
  /** Prefix of the temp directory holding both clouds' state, the sockets and the logs. */
  tmpPrefix: string;
  /** Host flags besides those startProvidersHost sets. */
  flags: string[];
  /** East's and west's environment besides localCloudEnv's. */
  eastEnv?: Record<string, string>;
  westEnv?: Record<string, string>;
  /** Keys of east's providers entry, e.g. `routes: true`. */
  eastKeys?: string[];
}

/** Two local clouds in one running host. One object for a whole test file: `west` changes when west is started again. */
export interface TwoLocalClouds {
  dir: string;
  host: ProvidersHost;
  /** The west sidecar as it runs now. */
  west: Sidecar;
  /** Starts west again (after it was killed) on the same socket, and makes it `west`. */
  restartWest(): Promise<Sidecar>;
  /** A cloud's state directory, for the local cloud CLI. */
  stateOf(cloud: CloudName): string;
  /** Stops the host, then west. */
  stop(): Promise<void>;
}

/** Starts west as a sidecar, writes the providers file (east in exec mode, then west) and starts the host. */
export async function startTwoLocalClouds(opts: TwoLocalCloudsOptions): Promise<TwoLocalClouds> {
  const dir = await mkdtemp(join(tmpdir(), opts.tmpPrefix));
  const startWest = await localCloudSidecar(dir, 'west', opts.westEnv);
  const west = await startWest();
  try {
    const file = await writeProvidersFile(dir, [
      execEntry('east', localCloudEnv(dir, 'east', opts.eastEnv), opts.eastKeys),
      endpointEntry('west', west.endpoint),
    ]);
    const host = await startProvidersHost(dir, file, opts.flags);
    const clouds: TwoLocalClouds = {
      dir,
      host,
      west,
      async restartWest() {
        clouds.west = await startWest();
        return clouds.west;
      },
      stateOf: (cloud) => join(dir, cloud),
      async stop() {
        await host.stop();
        await clouds.west.stop();
      },
    };
    return clouds;
  } catch (err) {
    await west.stop();
    throw err;
  }
}
