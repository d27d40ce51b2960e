/**
 * Test support for provider authors: serve a provider inside the test
 * process on a temporary unix socket and talk to it with the generated
 * clients, exactly as the host would, without a child process.
 *
 *   const p = await startInProcess(myProvider);
 *   const info = await unary(p.clients.identity.getPluginInfo.bind(p.clients.identity), {});
 *   await p.close();
 *
 * The server behaves as in sidecar mode: no handshake, no stdin watching, and
 * Shutdown only aborts in-flight calls. Like the host, startInProcess sends
 * Configure before it resolves (an empty config unless `configure` says
 * otherwise; `configure: false` leaves the provider answering NOT_CONFIGURED).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { createProviderLogger } from './log.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from './protocol.js';
import type { CloudProvider } from './provider.js';
import { startProviderServer } from './server.js';
import { createProviderClients, unary as unaryCall, type ProviderClients } from './clients.js';
import type { ConfigureRequest } from '../proto/gen/ccm/provider/v1/lifecycle.js';

export { unary, createProviderClients, type ProviderClients, type UnaryOptions, type HealthClient } from './clients.js';

/** Grace period close() gives in-flight calls. */
export const IN_PROCESS_STOP_GRACE_MS = 2_000;

/** Options of startInProcess. */
export interface InProcessOptions {
  /** Echoed by GetPluginInfo (default "in-process"). */
  instanceId?: string;
  /** Protocol major reported (default: the newest this SDK speaks). */
  protocolVersion?: number;
  /** Logger for the SDK's lines (default: stderr at CCM_PLUGIN_LOG_LEVEL, else warn). */
  logger?: Logger;
  /**
   * Sent as Configure before startInProcess resolves, as the host does at
   * start (default: an empty cloud config). `false` leaves the provider
   * unconfigured: its cloud calls then answer NOT_CONFIGURED.
   */
  configure?: ConfigureRequest | false;
}

/** A provider served inside the test process. */
export interface InProcessProvider {
  /** `unix:///tmp/ccm-sdk-XXXX/provider.sock`. */
  endpoint: string;
  /** Typed clients for every service, on one channel. */
  clients: ProviderClients;
  /** Closes the clients, stops the server (provider.close runs), removes the temp dir. Idempotent. */
  close(): Promise<void>;
}

/** Serves `provider` on a fresh temporary unix socket in this process. */
export async function startInProcess(provider: CloudProvider, opts: InProcessOptions = {}): Promise<InProcessProvider> {
  const dir = await mkdtemp(join(tmpdir(), 'ccm-sdk-'));
  const log = opts.logger ?? createProviderLogger('in-process', { level: process.env.CCM_PLUGIN_LOG_LEVEL ? undefined : 'warn' });
  let server;
  try {
    server = await startProviderServer(provider, {
      socketPath: join(dir, 'provider.sock'),
      protocolVersion: opts.protocolVersion ?? Math.max(...SUPPORTED_PROTOCOL_VERSIONS),
      instanceId: opts.instanceId ?? 'in-process',
      log,
    });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const clients = createProviderClients(server.endpoint);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      clients.close();
      await server.stop(IN_PROCESS_STOP_GRACE_MS);
      await rm(dir, { recursive: true, force: true });
    })());
  if (opts.configure !== false) {
    const request = opts.configure ?? {
      cloudConfig: Buffer.alloc(0),
      clusterName: '',
      clusterUid: '',
      hostVersion: 'in-process',
      providerArgs: [],
      controllers: [],
      nodeSelector: '',
      watchNamespace: '',
    };
    try {
      await unaryCall(clients.lifecycle.configure.bind(clients.lifecycle), request);
    } catch (err) {
      await close();
      throw err;
    }
  }
  return {
    endpoint: server.endpoint,
    clients,
    close,
  };
}
