/**
 * The authentication and authorization filter in front of the host's HTTPS
 * handlers, answering like k8s.io/apiserver: 401 Unauthorized for rejected
 * credentials (or no credentials where anonymous requests are not allowed),
 * 403 Forbidden (`forbidden: User "…" cannot get path "/metrics"`) when the
 * user may not, 500 when the API server could not be asked; bodies are
 * meta/v1 Status objects.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage, type Logger } from '../log.js';
import { ANONYMOUS } from './authn.js';
import { verbOf } from './authz.js';
import type { RequestAuth } from './delegated-auth.js';

/** Decides whether a request may go on; when not, it has answered it. */
export interface RequestGuard {
  /** Whether the TLS server should ask clients for a certificate (checked by `admit`, never required). */
  readonly requestsClientCerts: boolean;
  /** CA certificates (PEM) client certificates are verified against now. */
  readonly clientCaPems: readonly string[];
  /** Calls `fn` when clientCaPems changed; returns the unsubscribe. */
  onTrustChange(fn: () => void): () => void;
  admit(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

export interface DelegatedGuardOptions {
  auth: RequestAuth;
  /** Whether a request without credentials goes on as system:anonymous (else 401). */
  anonymous: boolean;
  log: Logger;
}

export class DelegatedGuard implements RequestGuard {
  constructor(private readonly o: DelegatedGuardOptions) {}

  get requestsClientCerts(): boolean {
    return this.o.auth.clientCertsWanted;
  }

  get clientCaPems(): readonly string[] {
    return this.o.auth.authenticator.clientCas.map((c) => c.toString());
  }

  onTrustChange(fn: () => void): () => void {
    return this.o.auth.onTrustChange(fn);
  }

  async admit(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const path = new URL(req.url ?? '/', 'https://host.invalid').pathname;
    const authn = await this.o.auth.authenticator.authenticate(req);
    if ('refused' in authn || ('anonymous' in authn && !this.o.anonymous)) {
      this.o.log.debug({ path, reason: 'refused' in authn ? authn.refused : 'no credentials' }, 'request not authenticated');
      sendStatus(res, 401, 'Unauthorized', 'Unauthorized');
      return false;
    }
    const user = 'user' in authn ? authn.user : ANONYMOUS;
    const verb = verbOf(req.method);
    let decision;
    try {
      decision = await this.o.auth.authorizer.authorize(user, path, verb);
    } catch (err) {
      this.o.log.warn({ path, user: user.name, err: errorMessage(err) }, 'cannot authorize request');
      sendStatus(res, 500, 'InternalError', `Internal Server Error: ${JSON.stringify(path)}: authorization failed: ${errorMessage(err)}`);
      return false;
    }
    if (!decision.allowed) {
      this.o.log.debug({ path, user: user.name, verb, reason: decision.reason }, 'request forbidden');
      sendStatus(
        res,
        403,
        'Forbidden',
        `forbidden: User ${JSON.stringify(user.name)} cannot ${verb} path ${JSON.stringify(path)}${decision.reason ? `: ${decision.reason}` : ''}`,
      );
      return false;
    }
    return true;
  }
}

function sendStatus(res: ServerResponse, code: number, reason: string, message: string): void {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details: {}, code });
  res.writeHead(code, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
