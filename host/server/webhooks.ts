/**
 * The host's admission webhook server (--webhook-secure-port): one HTTPS
 * server for every admission webhook the running controllers serve (the
 * PersistentVolume label webhook, the Service validation webhook), each at
 * its own path. A controller adds its webhook when it starts and removes it
 * when it stops; the server listens while at least one webhook is served
 * (the certificate is loaded or made when it starts).
 *
 * Bounds: a request body over MAX_BODY_BYTES gets 413; a request that has
 * not arrived whole within REQUEST_TIMEOUT_MS is dropped, so a slow client
 * cannot hold a connection (each handler bounds its own work: the API
 * server's timeoutSeconds is the outer limit).
 *
 * Only the API server may call it: every request except GET /healthz must
 * authenticate (a client certificate of the client CA, or a token the API
 * server accepts; anonymous gets 401) and be allowed `create` on the
 * webhook's non-resource path (SubjectAccessReview; 403 otherwise).
 */
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { VolumeConfig } from '../config/volumes.js';
import { webhookCert } from '../controllers/volume/webhook-cert.js';
import { errorMessage, type Logger } from '../log.js';
import { DelegatedGuard, type RequestGuard } from './guard.js';
import type { RequestAuth } from './delegated-auth.js';
import { createGuardedHttpsServer } from './server.js';
import { loadSniCerts } from './sni.js';

/**
 * Largest request body accepted: an AdmissionReview carries the object and,
 * on UPDATE, the old object (each at most etcd's 1.5 MiB).
 */
export const MAX_WEBHOOK_BODY_BYTES = 3 * 1024 * 1024;
/** Longest time for a request's headers and body to arrive. */
const REQUEST_TIMEOUT_MS = 10_000;

/** The parts of an AdmissionReview v1 request the host's webhooks read. */
export interface AdmissionRequest<T = unknown> {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  operation?: string;
  namespace?: string;
  name?: string;
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
}

/** An AdmissionReview v1 response. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string };
  patchType?: 'JSONPatch';
  patch?: string;
  /** Shown by kubectl as "Warning: ..." (at most a few short lines). */
  warnings?: string[];
}

/**
 * One webhook: answers one admission request. Contract: never throws for a
 * request it cannot judge (it answers allowed or denied itself); a throw is
 * answered 400 and the API server applies its failurePolicy.
 */
export type AdmissionHandler = (request: AdmissionRequest) => Promise<AdmissionResponse>;

export interface WebhookServerDeps {
  config: VolumeConfig;
  requestAuth: () => Promise<RequestAuth>;
  log: Logger;
}

/** The shared server; `serve` adds a webhook, its result removes it. */
export class WebhookServer {
  private readonly handlers = new Map<string, AdmissionHandler>();
  private server?: Server;
  private guard?: RequestGuard;
  /** The start (or stop) in progress: serve/remove calls run one after another. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly d: WebhookServerDeps) {}

  /** Whether --webhook-secure-port asks for a server at all. */
  get enabled(): boolean {
    return this.d.config.webhookPort > 0;
  }

  get port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  /**
   * Serves `handler` at `path` (starting the server if it is the first);
   * resolves with the function that removes it again (stopping the server
   * after the last). Throws when the server cannot start (e.g. the port is
   * taken). Not idempotent: one path is served by one caller at a time.
   */
  async serve(path: string, handler: AdmissionHandler): Promise<() => Promise<void>> {
    if (!this.enabled) throw new Error('the webhook server is disabled (--webhook-secure-port=0)');
    if (this.handlers.has(path)) throw new Error(`webhook path ${path} is already served`);
    await this.serial(async () => {
      this.handlers.set(path, handler);
      if (!this.server) {
        try {
          await this.start();
        } catch (err) {
          this.handlers.delete(path);
          throw err;
        }
      }
      this.d.log.info({ address: this.d.config.webhookBindAddress, port: this.port, path }, 'admission webhook serving');
    });
    return () =>
      this.serial(async () => {
        this.handlers.delete(path);
        if (this.handlers.size === 0) await this.stop();
      });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async start(): Promise<void> {
    const cfg = this.d.config;
    const cert = await webhookCert({ tls: cfg.webhookTls, certDir: cfg.webhookCertDir });
    this.d.log.info({ certificate: cert.source }, 'webhook certificate');
    this.guard ??= new DelegatedGuard({ auth: await this.d.requestAuth(), anonymous: false, log: this.d.log });
    const server = createGuardedHttpsServer(
      {
        cert: cert.cert,
        key: cert.key,
        minVersion: cfg.webhookTlsMinVersion,
        ciphers: cfg.webhookTlsCiphers,
        ecdhCurve: cfg.webhookTlsCurves,
        sni: await loadSniCerts(cfg.webhookSniCerts),
      },
      this.guard,
      (req, res) => void this.handle(req, res),
    );
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.headersTimeout = REQUEST_TIMEOUT_MS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(cfg.webhookPort, cfg.webhookBindAddress, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  private async stop(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const reply = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    try {
      if (req.method === 'GET' && req.url === '/healthz') return reply(200, 'ok');
      if (!(await this.guard!.admit(req, res))) return;
      const handler = req.method === 'POST' ? this.handlers.get(req.url?.split('?')[0] ?? '') : undefined;
      if (!handler) return reply(404, 'not found');
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > MAX_WEBHOOK_BODY_BYTES) return reply(413, 'request too large');
        chunks.push(chunk as Buffer);
      }
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { apiVersion?: string; request?: AdmissionRequest };
      if (!review.request?.uid) return reply(400, 'not an AdmissionReview with a request');
      const response = await handler(review.request);
      reply(200, { apiVersion: review.apiVersion ?? 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
    } catch (err) {
      this.d.log.warn({ err: errorMessage(err) }, 'bad admission request');
      if (!res.headersSent) reply(400, `bad request: ${errorMessage(err)}`);
    }
  }
}
