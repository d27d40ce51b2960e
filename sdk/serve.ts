/**
 * `serve(provider)`: the main function of a provider executable.
 *
 * Exec mode (the host launched us; CCM_PLUGIN_MAGIC_COOKIE matches):
 *   negotiate the protocol from CCM_PLUGIN_PROTOCOL_VERSIONS, listen on the
 *   unix socket named by CCM_PLUGIN_ENDPOINT (0600), print the one handshake
 *   line on stdout and never write to stdout again (console output goes to
 *   stderr), and exit 0 after a graceful stop on: stdin EOF (the host died),
 *   a Shutdown RPC (within its grace period), SIGTERM or SIGINT.
 *
 * Sidecar mode (no magic cookie, but an endpoint from `opts.endpoint`,
 *   CCM_PROVIDER_ENDPOINT or `--endpoint=unix:///path.sock`): listen there,
 *   no handshake, no stdin watching. GetPluginInfo reports a random instance
 *   id generated at start, so a host can tell this process from the next one
 *   behind the same socket. A Shutdown RPC only aborts in-flight calls; the
 *   provider keeps serving the next host. SIGTERM/SIGINT stop it, remove the
 *   socket and exit 0.
 *
 * Both modes: cloud calls answer FAILED_PRECONDITION/NOT_CONFIGURED and Probe
 * answers ready=false until the first successful Configure.
 *
 * `probe` as the first argument: the process is the kubelet's exec probe of
 * a running provider instead (sdk/probe.ts: one line, exit 0 or 1).
 *
 * Anything else (run by hand, wrong cookie, no common protocol, unusable
 * socket) prints one message on stderr and exits 1.
 */
import { startTracing } from './tracing.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { DEFAULT_SHUTDOWN_GRACE_MS } from './builtin.js';
import { createProviderLogger } from './log.js';
import {
  ENV_ENDPOINT,
  ENV_INSTANCE_ID,
  ENV_PROTOCOL_VERSIONS,
  ENV_SIDECAR_ENDPOINT,
  formatHandshake,
  MAGIC_COOKIE_KEY,
  MAGIC_COOKIE_VALUE,
  negotiateVersion,
  parseVersionList,
  SUPPORTED_PROTOCOL_VERSIONS,
  unixSocketPath,
} from './protocol.js';
import { probeIfAsked } from './probe.js';
import type { CloudProvider } from './provider.js';
import { MIN_CLOSE_MS, startProviderServer, type ProviderServer } from './server.js';
import { removeSocketFileSync } from './socket.js';
import { guardStdout, writeHandshakeLine, writeStderrSync } from './stdio.js';

/** Printed on stderr (exit 1) when the executable is run without the host. */
export const NOT_BY_HAND_MESSAGE =
  'This binary is a ccm provider plugin; it is started by cloud-controller-manager, not by hand (set --plugin-path on the host).';

/** Extra time past the grace period before a stuck stop is abandoned and the process exits anyway. */
const EXIT_BACKSTOP_MS = 2_000;

/** Options of serve(). All optional; the defaults are what executables want. */
export interface ServeOptions {
  /** Sidecar endpoint (`unix:///abs/path.sock`); overrides env and argv. Ignored in exec mode. */
  endpoint?: string;
  /** Logger for the SDK's own lines; defaults to createProviderLogger(providerName). */
  logger?: Logger;
  /** Environment to read; defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Arguments to read `--endpoint` from; defaults to process.argv.slice(2). */
  argv?: readonly string[];
  /** Install SIGTERM/SIGINT handlers (default true). */
  handleSignals?: boolean;
  /** Grace period for stops not initiated by a Shutdown RPC (signals, stdin EOF, handle.stop). Default 5 s. */
  stopGraceMs?: number;
}

/** A running provider. */
export interface ServeHandle {
  /** Where the provider listens: `unix:///abs/path.sock`. */
  endpoint: string;
  mode: 'exec' | 'sidecar';
  /** Protocol major in use (negotiated in exec mode, the newest supported in sidecar mode). */
  protocolVersion: number;
  /** What GetPluginInfo reports as instance_id: the launch nonce (exec) or a random id of this process (sidecar). */
  instanceId: string;
  /**
   * Stops serving (bounded by stopGraceMs plus provider.close time), removes
   * the socket and detaches the stdin and signal listeners. Does not exit the
   * process. Idempotent.
   */
  stop(): Promise<void>;
}

/** How serve() will run, decided from the environment and arguments. */
export type ServeMode =
  | { kind: 'exec'; endpoint: string | undefined; hostVersions: number[]; instanceId: string }
  | { kind: 'sidecar'; endpoint: string }
  | { kind: 'refuse'; message: string };

/** `--endpoint=X` or `--endpoint X` from `argv`, if present. */
export function endpointFromArgv(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--endpoint=')) return a.slice('--endpoint='.length);
    if (a === '--endpoint' && i + 1 < argv.length) return argv[i + 1];
  }
  return undefined;
}

/**
 * Exec mode when the magic cookie matches; sidecar mode when no cookie is set
 * and an endpoint is given (opts, then env, then argv); refuse otherwise.
 */
export function resolveMode(env: NodeJS.ProcessEnv, argv: readonly string[], endpoint?: string): ServeMode {
  const cookie = env[MAGIC_COOKIE_KEY];
  if (cookie === MAGIC_COOKIE_VALUE) {
    return {
      kind: 'exec',
      endpoint: env[ENV_ENDPOINT] || undefined,
      hostVersions: parseVersionList(env[ENV_PROTOCOL_VERSIONS]),
      instanceId: env[ENV_INSTANCE_ID] ?? '',
    };
  }
  const sidecar = endpoint || env[ENV_SIDECAR_ENDPOINT] || endpointFromArgv(argv);
  if (cookie === undefined && sidecar) return { kind: 'sidecar', endpoint: sidecar };
  return { kind: 'refuse', message: NOT_BY_HAND_MESSAGE };
}

/** The stderr message for a host whose protocol versions we do not speak. */
export function versionMismatchMessage(host: readonly number[], plugin: readonly number[] = SUPPORTED_PROTOCOL_VERSIONS): string {
  const hint =
    host.length === 0
      ? `the host set no valid ${ENV_PROTOCOL_VERSIONS}`
      : Math.max(...host) > Math.max(...plugin)
        ? 'upgrade the plugin'
        : 'upgrade the host';
  return `This provider speaks ccm protocol versions ${plugin.join(',')}; the host offered ${host.join(',') || 'none'}: ${hint}.`;
}

/** Prints `message` on stderr and exits 1. */
function fail(message: string): never {
  writeStderrSync(message + '\n');
  process.exit(1);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Process hooks (stdin, signals) with one detach. */
class ProcessHooks {
  private readonly detachers: (() => void)[] = [];

  onSignals(handler: (signal: NodeJS.Signals) => void): void {
    for (const sig of ['SIGTERM', 'SIGINT'] as const) {
      process.on(sig, handler);
      this.detachers.push(() => process.removeListener(sig, handler));
    }
  }

  onStdinEof(handler: () => void): void {
    const stdin = process.stdin;
    for (const ev of ['end', 'close', 'error'] as const) stdin.on(ev, handler);
    stdin.resume(); // Data is discarded; only EOF matters.
    this.detachers.push(() => {
      for (const ev of ['end', 'close', 'error'] as const) stdin.removeListener(ev, handler);
      stdin.on('error', () => undefined);
      stdin.destroy();
    });
  }

  detach(): void {
    for (const d of this.detachers.splice(0)) d();
  }
}

/**
 * Serves `provider` until the process is told to stop; see the module comment
 * for the modes. Resolves once listening (after the handshake in exec mode).
 * Never resolves in the refusal cases: the process exits 1 instead.
 */
export async function serve(provider: CloudProvider, opts: ServeOptions = {}): Promise<ServeHandle> {
  const env = opts.env ?? process.env;
  const argv = opts.argv ?? process.argv.slice(2);
  // `<provider> probe ...` is the kubelet's exec probe of a running provider (sdk/probe.ts), never a server.
  await probeIfAsked(argv, env);
  const mode = resolveMode(env, argv, opts.endpoint);
  if (mode.kind === 'refuse') fail(mode.message);
  const log = (opts.logger ?? createProviderLogger(provider.info.providerName || 'provider')).child({ component: 'ccm-sdk' });
  const stopGraceMs = opts.stopGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const hooks = new ProcessHooks();
  let server: ProviderServer | undefined;
  let exiting = false;

  // OpenTelemetry traces, only when the OTEL_* variables ask (tracing.ts): the host passes its own on.
  const tracing = await startTracing('ccm-provider', (message) => log.warn(message));
  const stopWith = async (graceMs: number): Promise<void> => {
    hooks.detach();
    await server?.stop(graceMs);
    await tracing.stop();
  };
  /**
   * Graceful stop, then exit 0; a stop that hangs past its bound still exits.
   * The signal handlers stay: a signal during the stop (the host closes stdin
   * and may send SIGTERM right after) exits at once, and every exit from here
   * on removes the socket first, so a hurried stop leaves no file behind.
   */
  const stopAndExit = (reason: string, graceMs: number): void => {
    if (exiting) return;
    exiting = true;
    log.info({ reason, graceMs }, 'provider stopping');
    const path = socketPath;
    if (path) process.once('exit', () => removeSocketFileSync(path));
    setTimeout(
      () => {
        log.warn({ reason }, 'provider stop did not finish; exiting anyway');
        process.exit(0);
      },
      graceMs + MIN_CLOSE_MS + EXIT_BACKSTOP_MS,
    ).unref();
    void (server?.stop(graceMs) ?? Promise.resolve()).then(() => tracing.stop()).then(() => process.exit(0));
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (exiting) {
      log.warn({ signal }, 'second signal during stop; exiting now');
      process.exit(1);
    }
    stopAndExit(signal, stopGraceMs);
  };

  let protocolVersion: number;
  let socketPath: string | undefined;
  if (mode.kind === 'exec') {
    guardStdout();
    // EPIPE on the standard streams after the host died must not crash a stop in progress.
    process.stdout.on('error', () => undefined);
    process.stderr.on('error', () => undefined);
    const negotiated = negotiateVersion(mode.hostVersions, SUPPORTED_PROTOCOL_VERSIONS);
    if (negotiated === undefined) fail(versionMismatchMessage(mode.hostVersions));
    protocolVersion = negotiated;
    socketPath = mode.endpoint ? unixSocketPath(mode.endpoint) : undefined;
    if (!socketPath) fail(`${ENV_ENDPOINT}=${JSON.stringify(mode.endpoint ?? '')} is not a unix:///absolute/path endpoint; the host must set it.`);
  } else {
    protocolVersion = Math.max(...SUPPORTED_PROTOCOL_VERSIONS);
    socketPath = unixSocketPath(mode.endpoint);
    if (!socketPath) fail(`sidecar endpoint ${JSON.stringify(mode.endpoint)} is not a unix:///absolute/path endpoint.`);
  }

  // Sidecar mode has no launch nonce: a per-process id lets the host notice a restart.
  const instanceId = mode.kind === 'exec' ? mode.instanceId : randomUUID();
  try {
    server = await startProviderServer(provider, {
      socketPath,
      protocolVersion,
      instanceId,
      log,
      // Sidecar mode: Shutdown only aborts in-flight calls (see LifecycleService docs).
      onShutdown: mode.kind === 'exec' ? (graceMs) => stopAndExit('shutdown requested', graceMs) : undefined,
    });
  } catch (err) {
    fail(`cannot serve on ${socketPath}: ${errorText(err)}`);
  }

  // Hooks go in before the handshake: the host may signal or close stdin the
  // moment it reads the line, and a signal with no handler kills the process.
  if (opts.handleSignals ?? true) hooks.onSignals(onSignal);
  if (mode.kind === 'exec') {
    hooks.onStdinEof(() => stopAndExit('stdin closed', stopGraceMs));
    writeHandshakeLine(formatHandshake({ protocol: protocolVersion, network: 'unix', address: socketPath }));
  }
  log.info({ mode: mode.kind, endpoint: server.endpoint, protocolVersion, instanceId }, 'provider serving');

  return {
    endpoint: server.endpoint,
    mode: mode.kind,
    protocolVersion,
    instanceId,
    stop: () => stopWith(stopGraceMs),
  };
}
