/**
 * Per-controller credentials for `--use-service-account-credentials` (upstream
 * controller-manager's "dynamic client builder"). The host's own credentials
 * are used only to get or create a controller's ServiceAccount (kube-system/
 * upstream's client name, names.ts ControllerServiceAccounts) and to request tokens for it (TokenRequest API); each controller's API
 * clients, and its Event clients, then authenticate with that token, so the
 * API server sees (and RBAC authorizes) the controller, not the host.
 *
 * Contract of {@link ServiceAccountCredentials}:
 * - `clientsFor(name, opts)` returns clients at once; nothing is requested
 *   until their first API call. That call (and any later one that finds the
 *   token due for renewal) first ensures the ServiceAccount exists (get, then
 *   create; AlreadyExists counts as success, so it is idempotent and safe
 *   across replicas) and requests a token of `expirationSeconds`.
 * - A token is renewed once 80% of its lifetime has passed. If renewal fails
 *   the still-valid token keeps being used and renewal is retried with
 *   backoff; only when no valid token is left does a request fail, with an
 *   Error naming the ServiceAccount and the cause (the caller's normal retry
 *   with backoff applies). Concurrent requests share one renewal.
 * - One token source per ServiceAccount name, shared by all clients made for
 *   it (cloud-node and cloud-node-lifecycle share `node-controller`).
 * The connection settings (server, CA, TLS options, proxy) come from the
 * host's KubeConfig; only the user is replaced.
 */
import type { CoreV1Api } from './api.js';
import { KubeCredentials, type Authenticator, type RequestAuth } from './credentials.js';
import { currentCluster, singleConfig, type KubeConfigData } from './kubeconfig.js';
import { errorMessage, type Logger } from '../log.js';
import { isNotFound, isConflict, makeClients, type KubeClients, type MakeClientsOptions } from './client.js';
import { Backoff } from './backoff.js';

/** Namespace of the controllers' ServiceAccounts (upstream: kube-system, fixed). */
const CONTROLLER_SERVICE_ACCOUNT_NAMESPACE = 'kube-system';
/** Lifetime asked for each token (upstream's dynamic client builder asks one hour). */
const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** Share of a token's lifetime after which it is renewed. */
const RENEW_AFTER_FRACTION = 0.8;
/** A token this close to expiry is not used any more (clock skew, request latency). */
const EXPIRY_MARGIN_MS = 10_000;

export interface ServiceAccountCredentialsOptions {
  /** The host's connection; its user gets/creates ServiceAccounts and requests tokens. */
  kc: KubeConfigData;
  /** Client with the host's credentials for those calls. */
  hostCore: CoreV1Api;
  log: Logger;
  namespace?: string;
  expirationSeconds?: number;
}

export class ServiceAccountCredentials {
  private readonly sources = new Map<string, TokenSource>();

  constructor(private readonly o: ServiceAccountCredentialsOptions) {}

  /** Clients authenticating as ServiceAccount `<namespace>/<name>` (see the file comment). */
  clientsFor(name: string, opts: MakeClientsOptions): KubeClients {
    let source = this.sources.get(name);
    if (!source) {
      source = new TokenSource(this.o, name);
      this.sources.set(name, source);
    }
    return makeClients(this.o.kc, { ...opts, auth: source });
  }
}

/** Token of one ServiceAccount, applied to requests as their credentials. */
class TokenSource implements Authenticator {
  private current?: { credentials: KubeCredentials; renewAt: number; expiresAt: number };
  private renewing?: Promise<void>;
  private nextAttemptAt = 0;
  private lastError?: string;
  private readonly backoff = new Backoff({ initialMs: 1000, maxMs: 60_000, jitter: 0.1 });
  private readonly namespace: string;
  private readonly log: Logger;

  constructor(
    private readonly o: ServiceAccountCredentialsOptions,
    private readonly name: string,
  ) {
    this.namespace = o.namespace ?? CONTROLLER_SERVICE_ACCOUNT_NAMESPACE;
    this.log = o.log.child({ serviceAccount: `${this.namespace}/${name}` });
  }

  getName(): string {
    return `serviceaccount:${this.namespace}:${this.name}`;
  }

  async authenticate(): Promise<RequestAuth> {
    const now = Date.now();
    if (!this.current || now >= this.current.renewAt) {
      if (!this.renewing && now >= this.nextAttemptAt) this.renewing = this.renew().finally(() => (this.renewing = undefined));
      // Wait for the renewal only when there is no usable token left.
      if (!this.current || now >= this.current.expiresAt - EXPIRY_MARGIN_MS) {
        await this.renewing;
        if (!this.current || Date.now() >= this.current.expiresAt - EXPIRY_MARGIN_MS) {
          throw new Error(`no token for ServiceAccount ${this.namespace}/${this.name}: ${this.lastError ?? 'renewal pending'}`);
        }
      }
    }
    return this.current.credentials.authenticate();
  }

  private async renew(): Promise<void> {
    try {
      await this.ensureServiceAccount();
      const expirationSeconds = this.o.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS;
      const requestedAt = Date.now();
      const tr = await this.o.hostCore.createNamespacedServiceAccountToken({
        namespace: this.namespace,
        name: this.name,
        body: { spec: { expirationSeconds, audiences: [] } },
      });
      const token = tr.status?.token;
      if (!token) throw new Error('TokenRequest answered without a token');
      // The server may shorten the lifetime; trust its expiry, not our request.
      const stamp = tr.status?.expirationTimestamp ? new Date(tr.status.expirationTimestamp).getTime() : NaN;
      const expiresAt = Number.isFinite(stamp) ? stamp : requestedAt + expirationSeconds * 1000;
      this.current = { credentials: this.credentialsWith(token), expiresAt, renewAt: requestedAt + (expiresAt - requestedAt) * RENEW_AFTER_FRACTION };
      this.lastError = undefined;
      this.backoff.reset();
      this.log.debug({ expiresAt: new Date(expiresAt).toISOString() }, 'controller token renewed');
    } catch (err) {
      this.lastError = errorMessage(err);
      const delayMs = this.backoff.next();
      this.nextAttemptAt = Date.now() + delayMs;
      this.log.warn({ err: this.lastError, retryInMs: delayMs }, 'cannot get a token for the controller ServiceAccount');
    }
  }

  /** Get, then create if missing (as upstream); a concurrent create by another replica is fine. */
  private async ensureServiceAccount(): Promise<void> {
    try {
      await this.o.hostCore.readNamespacedServiceAccount({ namespace: this.namespace, name: this.name });
      return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    try {
      await this.o.hostCore.createNamespacedServiceAccount({
        namespace: this.namespace,
        body: { metadata: { name: this.name, namespace: this.namespace } },
      });
      this.log.info('created the controller ServiceAccount');
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }

  /** The host's cluster (server, CA, TLS options) with this token as the only user. */
  private credentialsWith(token: string): KubeCredentials {
    return new KubeCredentials(singleConfig(currentCluster(this.o.kc)!, { name: this.getName(), token }));
  }
}
