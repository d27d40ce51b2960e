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
import { COMPONENT_NAME, K8S_VERSION } from '../names.js';
import { HOST_VERSION } from '../version.js';
import { DelegatedGuard } from './guard.js';
import { servingCert } from './serving-cert.js';
import { startHealthServer, type HealthServer } from './server.js';

export interface SecureServerDeps {
  /** The host's delegated authentication and authorization (built on first call). */
  auth: () => Promise<RequestAuth>;
  registry: Registry;
  log: Logger;
}

/** When this process started, for /statusz (upstream: the process start time). */
const PROCESS_START = new Date(Date.now() - Math.round(process.uptime() * 1000));

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
  const tls = {
    cert: cert.cert,
    key: cert.key,
    minVersion: config.serving.tlsMinVersion,
    ciphers: config.serving.tlsCiphers,
    ecdhCurve: config.serving.tlsCurves,
  };
  return startHealthServer({
    bindAddress: config.bindAddress,
    port: config.securePort,
    tls,
    guard,
    registry: deps.registry,
    log: deps.log,
    zpages: {
      component: COMPONENT_NAME,
      startTime: PROCESS_START,
      binaryVersion: HOST_VERSION,
      emulationVersion: K8S_VERSION.replace(/^v(\d+\.\d+)\..*$/, '$1'),
      flags: config.flagz ?? {},
    },
  });
}
