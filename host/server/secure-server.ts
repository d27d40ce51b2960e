/**
 * The `--secure-port` server as the host starts it: its certificate
 * (serving-cert.ts), TLS settings, and the delegated authentication and
 * authorization guard (anonymous requests reach the always-allowed paths).
 */
import type { Registry } from 'prom-client';
import type { HostConfig } from '../config/config.js';
import { HostStartError } from '../errors.js';
import { errorMessage, type Logger } from '../log.js';
import type { RequestAuth } from './delegated-auth.js';
import { DelegatedGuard } from './guard.js';
import { servingCert } from './serving-cert.js';
import { startHealthServer, type HealthServer } from './server.js';

export interface SecureServerDeps {
  /** The host's delegated authentication and authorization (built on first call). */
  auth: () => Promise<RequestAuth>;
  registry: Registry;
  log: Logger;
}

/** Starts the server on `--bind-address:--secure-port`; rejects with a HostStartError saying what to change. */
export async function startSecureServer(config: HostConfig, deps: SecureServerDeps): Promise<HealthServer> {
  let guard: DelegatedGuard;
  let cert;
  try {
    guard = new DelegatedGuard({ auth: await deps.auth(), anonymous: true, log: deps.log.child({ component: 'health-server' }) });
    cert = await servingCert(config.serving, config.bindAddress);
  } catch (err) {
    throw new HostStartError(errorMessage(err));
  }
  deps.log.info({ certificate: cert.source }, 'serving certificate');
  const tls = { cert: cert.cert, key: cert.key, minVersion: config.serving.tlsMinVersion, ciphers: config.serving.tlsCiphers };
  return startHealthServer({ bindAddress: config.bindAddress, port: config.securePort, tls, guard, registry: deps.registry, log: deps.log });
}
