/**
 * The PersistentVolume label admission webhook (upstream moved the
 * PersistentVolumeLabel admission plugin into the cloud-controller-manager
 * as a webhook): an HTTPS server answering AdmissionReview v1 requests for
 * PersistentVolume CREATE with a JSON patch that adds the cloud's topology
 * labels and matching node affinity to PVs of our drivers (spec.csi.driver),
 * each asking the provider that serves the driver (host/volume-provisioners.ts).
 *
 * Answers:
 *  - not a PV of our driver, or nothing to add: allowed, no patch;
 *  - the cloud has no such volume (NOT_FOUND) or answered invalid labels:
 *    denied with one line naming the problem (the PV would be wrong);
 *  - the cloud is unavailable or slow (more than LABEL_LOOKUP_TIMEOUT_MS):
 *    allowed without labels; the persistentvolume-label-controller adds them
 *    once the cloud answers. So a cloud outage never blocks PV creation,
 *    matching failurePolicy Ignore for the webhook being down.
 *
 * Only the API server may call it: every request except GET /healthz must
 * authenticate (a client certificate signed by the client CA, or a token the
 * API server accepts; anonymous requests get 401) and be allowed `create` on
 * the non-resource path /mutate-v1-persistentvolume (SubjectAccessReview;
 * 403 otherwise), so nobody else learns a volume's zone through it. The API
 * server presents those credentials from its AdmissionConfiguration's
 * kubeconfig (docs/secure-serving.md).
 */
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { Volumes } from '../../cloud-volumes.js';
import { CloudCallError, InvalidCloudResponseError } from '../../errors.js';
import { errorMessage, type Logger } from '../../log.js';
import { sanitizeMessage } from '../../kube/message-text.js';
import type { RequestGuard } from '../../server/guard.js';
import { createGuardedHttpsServer, type ServingTls } from '../../server/server.js';
import { labelPatch } from './pv-labels.js';

/** Path the MutatingWebhookConfiguration points at. */
const PV_LABEL_WEBHOOK_PATH = '/mutate-v1-persistentvolume';
/** Longest wait for GetVolumeLabels inside a webhook call (the API server's timeout is 5 s in deploy/volumes/). */
const LABEL_LOOKUP_TIMEOUT_MS = 4_000;
/** Largest request body accepted (an AdmissionReview of one PV is a few KiB). */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

interface AdmissionRequest {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  operation?: string;
  object?: V1PersistentVolume;
}

interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string };
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
}

export interface PvLabelWebhookOptions {
  /**
   * The volumes serving a provisioner (CSI driver) name, or undefined when no
   * provider of the host serves it (such a PV is allowed untouched, without a
   * cloud call).
   */
  volumesFor: (driver: string) => Volumes | undefined;
  cert: string;
  key: string;
  /** `--webhook-tls-min-version`, `-cipher-suites`, `-curve-preferences` and `-sni-cert-key`, compiled. */
  tls?: Pick<ServingTls, 'minVersion' | 'ciphers' | 'ecdhCurve' | 'sni'>;
  bindAddress: string;
  port: number;
  /** Admits only callers allowed to use the webhook (anonymous requests refused). */
  guard: RequestGuard;
  log: Logger;
}

class LookupTimeout extends Error {}

/** Decides the answer for one admission request. Exported for unit tests. */
export async function admit(
  req: AdmissionRequest,
  driver: string,
  volumes: Volumes,
  timeoutMs = LABEL_LOOKUP_TIMEOUT_MS,
): Promise<AdmissionResponse> {
  const pv = req.object;
  const allowed: AdmissionResponse = { uid: req.uid, allowed: true };
  if (req.kind?.kind !== 'PersistentVolume' || req.operation !== 'CREATE' || !pv || pv.spec?.csi?.driver !== driver) return allowed;
  const handle = pv.spec.csi.volumeHandle;
  let labels: Record<string, string>;
  let timer: NodeJS.Timeout | undefined;
  try {
    labels = await Promise.race([
      volumes.getVolumeLabels(handle),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new LookupTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (err) {
    const final = err instanceof InvalidCloudResponseError || (err instanceof CloudCallError && !err.transient);
    if (final) {
      return {
        uid: req.uid,
        allowed: false,
        status: { code: 403, message: sanitizeMessage(`cannot label PersistentVolume for volume ${handle}: ${errorMessage(err)}`) },
      };
    }
    return {
      ...allowed,
      warnings: [
        sanitizeMessage(`topology labels not added yet (cloud unavailable: ${errorMessage(err)}); the cloud-controller-manager adds them later`),
      ],
    };
  } finally {
    clearTimeout(timer);
  }
  const ops = labelPatch(pv, labels);
  if (ops.length === 0) return allowed;
  return { ...allowed, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') };
}

/** The running webhook server. */
export class PvLabelWebhook {
  private server?: Server;

  constructor(private readonly o: PvLabelWebhookOptions) {}

  get port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async start(): Promise<void> {
    const server = createGuardedHttpsServer(
      { ...this.o.tls, cert: this.o.cert, key: this.o.key },
      this.o.guard,
      (req, res) => void this.handle(req, res),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.o.port, this.o.bindAddress, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.o.log.info({ address: this.o.bindAddress, port: this.port, path: PV_LABEL_WEBHOOK_PATH }, 'PersistentVolume label webhook serving');
  }

  async stop(): Promise<void> {
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
      if (!(await this.o.guard.admit(req, res))) return;
      if (req.method !== 'POST' || req.url?.split('?')[0] !== PV_LABEL_WEBHOOK_PATH) return reply(404, 'not found');
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > MAX_BODY_BYTES) return reply(413, 'request too large');
        chunks.push(chunk as Buffer);
      }
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { apiVersion?: string; request?: AdmissionRequest };
      if (!review.request?.uid) return reply(400, 'not an AdmissionReview with a request');
      const driver = review.request.object?.spec?.csi?.driver;
      const volumes = driver === undefined ? undefined : this.o.volumesFor(driver);
      const response = volumes && driver ? await admit(review.request, driver, volumes) : { uid: review.request.uid, allowed: true };
      if (!response.allowed || response.patch || response.warnings) {
        this.o.log.info(
          {
            pv: review.request.object?.metadata?.name,
            allowed: response.allowed,
            patched: !!response.patch,
            why: response.status?.message ?? response.warnings?.[0],
          },
          'admission of PersistentVolume',
        );
      }
      reply(200, { apiVersion: review.apiVersion ?? 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
    } catch (err) {
      this.o.log.warn({ err: errorMessage(err) }, 'bad admission request');
      if (!res.headersSent) reply(400, `bad request: ${errorMessage(err)}`);
    }
  }
}
