/**
 * The Service validation admission webhook (issue 33, protocol 1.1): the API
 * server asks it on every CREATE and UPDATE of a Service (the
 * ValidatingWebhookConfiguration in deploy/volumes/ sends only Services of
 * type LoadBalancer), and it runs the check the service controller runs
 * before every ensure (`LoadBalancers.annotationProblems`, the provider's
 * schema from GetProviderSchema) against the provider that serves the
 * Service, chosen as the controller chooses it (its loadBalancerClass, or the
 * provider of Services without a class: LbClassResolver.forService).
 *
 * Answers:
 *  - not of type LoadBalancer, being deleted, or no provider of the host
 *    serves its class: allowed;
 *  - the provider publishes no usable schema: allowed (it checks its input
 *    itself, as before protocol 1.1);
 *  - its annotations fit: allowed, with one warning per deprecated annotation
 *    (kubectl prints "Warning: annotation X is deprecated; use Y instead");
 *  - a problem the request introduces: denied, with the provider's lines
 *    (annotation, value, what is allowed). On UPDATE a problem the old object
 *    already had is only a warning, so a Service stored before the schema can
 *    still be changed (and fixed);
 *  - the provider is not ready (its plugin is starting or restarting, so its
 *    schema is not known): --service-validation-failure-policy decides, as
 *    the API server's failurePolicy decides for the webhook being down:
 *    Ignore allows (the check before ensure still catches a bad annotation),
 *    Fail denies with one line saying so.
 *
 * The check is in memory (no cloud or API call), bounded by the request
 * body (host/server/webhooks.ts).
 */
import type { V1Service } from '@kubernetes/client-node';
import type { LoadBalancers } from '../../cloud-load-balancers.js';
import { LbClassResolver, type LbClassProvider } from '../../lb-classes.js';
import type { Logger } from '../../log.js';
import { sanitizeMessage } from '../../kube/message-text.js';
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from '../../server/webhooks.js';

/** Path the ValidatingWebhookConfiguration points at. */
export const SERVICE_VALIDATION_WEBHOOK_PATH = '/validate-v1-service';
/** Warnings returned at most (the API server keeps a few short ones). */
const MAX_WARNINGS = 5;

/** What the webhook does when it cannot check (the provider is not ready). */
export type FailurePolicy = 'Ignore' | 'Fail';

/** A load-balancer provider as the webhook sees it. */
export interface AdmissionProvider extends LbClassProvider {
  lbs: Pick<LoadBalancers, 'annotationProblems' | 'annotationDeprecations'>;
  /** Whether its plugin is ready now (so its schema is the current one). */
  ready(): boolean;
}

export interface ServiceAdmissionOptions {
  providers: readonly AdmissionProvider[];
  failurePolicy: FailurePolicy;
  log: Logger;
}

/** Decides the answer for one admission request. Exported for unit tests. */
export function admitService(
  request: AdmissionRequest<V1Service>,
  resolver: LbClassResolver<AdmissionProvider>,
  policy: FailurePolicy,
): AdmissionResponse {
  const allowed: AdmissionResponse = { uid: request.uid, allowed: true };
  const svc = request.object;
  if (request.kind?.kind !== 'Service' || (request.operation !== 'CREATE' && request.operation !== 'UPDATE') || !svc) return allowed;
  if (svc.metadata?.deletionTimestamp) return allowed;
  const p = resolver.forService(svc);
  if (!p?.lbs.annotationProblems) return allowed;
  if (!p.ready()) {
    if (policy === 'Ignore') return allowed;
    return deny(
      request.uid,
      `cannot check the Service's annotations: load-balancer provider ${p.name} is not ready (--service-validation-failure-policy=Fail)`,
    );
  }
  const problems = p.lbs.annotationProblems(svc.metadata?.annotations);
  const old = request.operation === 'UPDATE' ? request.oldObject : undefined;
  // Problems the old object already had under the same provider: the update does not introduce them.
  const before = new Set(old && resolver.forService(old) === p ? p.lbs.annotationProblems(old.metadata?.annotations) : []);
  const introduced = problems.filter((x) => !before.has(x));
  if (introduced.length > 0) return deny(request.uid, introduced.join('; '));
  const warnings = [...(p.lbs.annotationDeprecations?.(svc.metadata?.annotations) ?? []), ...problems].map((w) => sanitizeMessage(w));
  return warnings.length > 0 ? { ...allowed, warnings: warnings.slice(0, MAX_WARNINGS) } : allowed;
}

function deny(uid: string, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { code: 400, message: sanitizeMessage(message) } };
}

/** The handler served at SERVICE_VALIDATION_WEBHOOK_PATH; logs each denial and each warning. */
export function serviceValidationHandler(o: ServiceAdmissionOptions): AdmissionHandler {
  const resolver = new LbClassResolver(o.providers);
  return (raw) => {
    const request = raw as AdmissionRequest<V1Service>;
    const response = admitService(request, resolver, o.failurePolicy);
    if (!response.allowed || response.warnings) {
      o.log.info(
        {
          service: `${request.namespace ?? ''}/${request.name ?? request.object?.metadata?.name ?? ''}`,
          operation: request.operation,
          allowed: response.allowed,
          dryRun: request.dryRun === true,
          why: response.status?.message ?? response.warnings?.join('; '),
        },
        'admission of Service',
      );
    }
    return Promise.resolve(response);
  };
}
