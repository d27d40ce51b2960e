/**
 * The PersistentVolume label admission webhook (upstream moved the
 * PersistentVolumeLabel admission plugin into the cloud-controller-manager
 * as a webhook): the handler, served by the host's webhook server
 * (host/server/webhooks.ts), answering AdmissionReview v1 requests for
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
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { Volumes } from '../../cloud-volumes.js';
import { CloudCallError, InvalidCloudResponseError } from '../../errors.js';
import { errorMessage, type Logger } from '../../log.js';
import { sanitizeMessage } from '../../kube/message-text.js';
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from '../../server/webhooks.js';
import { labelPatch } from './pv-labels.js';

/** Path the MutatingWebhookConfiguration points at. */
export const PV_LABEL_WEBHOOK_PATH = '/mutate-v1-persistentvolume';
/** Longest wait for GetVolumeLabels inside a webhook call (the API server's timeout is 5 s in deploy/volumes/). */
const LABEL_LOOKUP_TIMEOUT_MS = 4_000;

class LookupTimeout extends Error {}

/** Decides the answer for one admission request. Exported for unit tests. */
export async function admit(
  req: AdmissionRequest<V1PersistentVolume>,
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

/**
 * The webhook's handler (served by host/server/webhooks.ts at
 * PV_LABEL_WEBHOOK_PATH): asks the volumes serving each PV's driver;
 * `volumesFor` gives undefined for a driver no provider of the host serves
 * (such a PV is allowed untouched, without a cloud call).
 */
export function pvLabelHandler(volumesFor: (driver: string) => Volumes | undefined, log: Logger): AdmissionHandler {
  return async (raw) => {
    const request = raw as AdmissionRequest<V1PersistentVolume>;
    const driver = request.object?.spec?.csi?.driver;
    const volumes = driver === undefined ? undefined : volumesFor(driver);
    const response = volumes && driver ? await admit(request, driver, volumes) : { uid: request.uid, allowed: true };
    if (!response.allowed || response.patch || response.warnings) {
      log.info(
        {
          pv: request.object?.metadata?.name,
          allowed: response.allowed,
          patched: !!response.patch,
          why: response.status?.message ?? response.warnings?.[0],
        },
        'admission of PersistentVolume',
      );
    }
    return response;
  };
}
