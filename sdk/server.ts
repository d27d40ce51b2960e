/**
 * The gRPC server behind every serving mode (exec, sidecar, in-process):
 * registers Identity, Lifecycle, grpc.health.v1 and each present provider
 * service, binds a unix socket (mode 0600), and stops in bounded time.
 * Process-level behaviour (handshake, stdin, signals, exit) is serve.ts's.
 */
import { chmod } from 'node:fs/promises';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import type { Logger } from 'pino';
import { ConfigureState, identityService, lifecycleService, shuttingDownError } from './builtin.js';
import { bindProviderService, InFlight, type DispatchDeps } from './dispatch.js';
import { IdentityServiceService } from '../proto/gen/ccm/provider/v1/identity.js';
import { LifecycleServiceService } from '../proto/gen/ccm/provider/v1/lifecycle.js';
import { GRPC_MESSAGE_SIZE_OPTIONS, HEALTH_SERVICE_NAME } from './protocol.js';
import type { CloudProvider } from './provider.js';
import { PROVIDER_SERVICES, providerService } from './services.js';
import { prepareSocketPath, removeSocketFile } from './socket.js';
import { within } from './within.js';

/** Longest wait for grpc-js to bind the socket. */
const BIND_TIMEOUT_MS = 10_000;
/** After in-flight calls finished, longest wait for open streams (e.g. health Watch) before forcing. */
const DRAIN_STREAMS_MS = 1_000;
/** Open streams always get this long, so an answered Shutdown is flushed even with a zero grace period. */
const MIN_DRAIN_STREAMS_MS = 200;
/** provider.close() always gets at least this long, even when the grace period is spent. */
export const MIN_CLOSE_MS = 1_000;

/** How a provider server is set up. */
export interface ProviderServerConfig {
  /** Absolute path of the unix socket to listen on. */
  socketPath: string;
  /** Protocol major reported by GetPluginInfo. */
  protocolVersion: number;
  /** Reported by GetPluginInfo: the launch nonce in exec mode, an id unique to this process otherwise. */
  instanceId: string;
  log: Logger;
  /**
   * Runs after a Shutdown RPC was answered (exec mode: stop and exit). When
   * absent, Shutdown only aborts in-flight calls and the server keeps serving.
   */
  onShutdown?: (graceMs: number) => void;
}

/** A running provider server. */
export interface ProviderServer {
  /** `unix:///abs/path.sock`. */
  readonly endpoint: string;
  readonly socketPath: string;
  /**
   * Stops serving: refuses new calls (UNAVAILABLE), aborts in-flight calls'
   * signals, waits up to `graceMs` for them, closes the listener and
   * connections, calls provider.close() (bounded), removes the socket file.
   * Idempotent: later calls return the first call's promise. Never rejects.
   */
  stop(graceMs: number): Promise<void>;
}

function bind(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`binding ${socketPath} took longer than ${BIND_TIMEOUT_MS} ms`)), BIND_TIMEOUT_MS);
    // grpc-js reports a meaningless port (1) for unix sockets; only the error matters.
    server.bindAsync(`unix://${socketPath}`, ServerCredentials.createInsecure(), (err) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    });
  });
}

/**
 * Builds, binds and starts the server for `provider`. Rejects (with nothing
 * left listening) when the socket path is unusable or binding fails.
 */
export async function startProviderServer(provider: CloudProvider, cfg: ProviderServerConfig): Promise<ProviderServer> {
  const { log, socketPath } = cfg;
  const inFlight = new InFlight();
  const deps: DispatchDeps = { inFlight, log };
  const server = new Server({ ...GRPC_MESSAGE_SIZE_OPTIONS });
  const health = new HealthImplementation({ '': 'SERVING', [HEALTH_SERVICE_NAME]: 'SERVING' });

  const configureState = new ConfigureState();
  server.addService(IdentityServiceService, identityService(provider, cfg, configureState, deps));
  server.addService(LifecycleServiceService, lifecycleService(provider, configureState, deps, cfg.onShutdown));
  health.addToServer(server);
  // Cloud calls before the first Configure answer NOT_CONFIGURED (LifecycleService.Configure).
  const cloudDeps: DispatchDeps = { ...deps, precondition: () => configureState.refusal() };
  for (const entry of PROVIDER_SERVICES) {
    const impl = providerService(provider, entry.key);
    if (impl) server.addService(entry.definition, bindProviderService(entry.definition, impl, cloudDeps));
  }

  await prepareSocketPath(socketPath);
  try {
    // Created owner-only: a chmod after the bind alone would leave a moment in
    // which the socket is open to others.
    const previousUmask = process.umask(0o177);
    try {
      await bind(server, socketPath);
    } finally {
      process.umask(previousUmask);
    }
    await chmod(socketPath, 0o600);
  } catch (err) {
    server.forceShutdown();
    await removeSocketFile(socketPath);
    throw err;
  }
  log.debug({ socket: socketPath }, 'provider server listening');

  let stopping: Promise<void> | undefined;
  const doStop = async (graceMs: number): Promise<void> => {
    const deadline = Date.now() + graceMs;
    const reason = shuttingDownError();
    inFlight.close(reason);
    inFlight.abortAll(reason);
    health.setStatus('', 'NOT_SERVING');
    health.setStatus(HEALTH_SERVICE_NAME, 'NOT_SERVING');
    if (!(await within(inFlight.idle(), graceMs))) {
      log.warn({ inFlight: inFlight.size, graceMs }, 'in-flight calls outlived the grace period');
    }
    const streamsMs = Math.min(DRAIN_STREAMS_MS, Math.max(MIN_DRAIN_STREAMS_MS, deadline - Date.now()));
    if (!(await within(new Promise<void>((resolve) => server.tryShutdown(() => resolve())), streamsMs))) {
      server.forceShutdown();
    }
    if (provider.close) {
      const closeMs = Math.max(MIN_CLOSE_MS, deadline - Date.now());
      const closing = Promise.resolve()
        .then(() => provider.close?.call(provider))
        .catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : String(err) }, 'provider close failed'));
      if (!(await within(closing, closeMs))) log.warn({ closeMs }, 'provider close did not finish in time');
    }
    await removeSocketFile(socketPath);
    log.debug({ socket: socketPath }, 'provider server stopped');
  };

  return {
    endpoint: `unix://${socketPath}`,
    socketPath,
    stop: (graceMs: number) => (stopping ??= doStop(graceMs)),
  };
}
