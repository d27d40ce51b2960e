/**
 * The load-balancer conditions the service controller keeps on a Service
 * (issue 33 item 2; names and reasons after KEP-4631, which proposed them and
 * stalled; upstream writes no conditions): LoadBalancerProvisioning and
 * LoadBalancerServing, each with a reason and a message, computed from the
 * outcome of a sync. Pure functions; the controller writes what they return.
 *
 * Writes: `conditionPatch` returns only the conditions whose status, reason,
 * message or observedGeneration differ from the Service's (so an unchanged
 * outcome costs no write), each keeping its lastTransitionTime unless its
 * status changes. The patch is a strategic merge of status.conditions, which
 * merges by type: other writers' conditions are never touched.
 */
import type { V1Condition, V1LoadBalancerIngress, V1Service } from '@kubernetes/client-node';
import { ServiceConditionReasons as R, ServiceConditions } from '../../names.js';

/** What the last sync of a Service that wants a load balancer came to. */
export type LbOutcome =
  /** The load balancer was ensured; `ingress` is its status as written. */
  | { kind: 'ensured'; ingress: readonly V1LoadBalancerIngress[] }
  /** The provider answered "not ready yet" (RetryInfo): retried after `retryAfterMs`. */
  | { kind: 'waiting'; message: string; retryAfterMs: number }
  /** The provider answered "not now" (DEFERRED) with its `reason`: retried after `retryAfterMs` (undefined: the backoff). */
  | { kind: 'deferred'; reason: string; message: string; retryAfterMs: number | undefined }
  /** The sync failed; `unsupported`: the Service asks for what cannot be made (not a cloud failure). */
  | { kind: 'error'; message: string; unsupported: boolean };

/** The condition types this controller owns on a Service. */
export const LB_CONDITION_TYPES: readonly string[] = [ServiceConditions.LB_PROVISIONING, ServiceConditions.LB_SERVING];

/** Longest condition message written (the API allows 32768; a provider's message could be longer). */
const MAX_MESSAGE = 1024;

type Desired = Pick<V1Condition, 'type' | 'status' | 'reason' | 'message'>;

function clip(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE - 1)}…`;
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? 'with backoff' : `in ${Math.round(ms / 1000)}s`;
}

/** The two conditions an outcome gives a Service (`svc` as cached: a load balancer serving before keeps LoadBalancerServing True). */
export function desiredConditions(svc: V1Service, outcome: LbOutcome): [Desired, Desired] {
  const serving = (ingress: readonly V1LoadBalancerIngress[]): Desired => ({
    type: ServiceConditions.LB_SERVING,
    status: 'True',
    reason: R.SERVING,
    message: clip(`Load balancer serving at ${ingress.map((i) => i.ip ?? i.hostname).join(', ')}`),
  });
  const previous = svc.status?.loadBalancer?.ingress ?? [];
  // A failed or deferred update of a load balancer that serves leaves it serving the Service as it was (KEP-4631: Provisioning=True, Serving=True).
  const notServing = (reason: string, message: string): Desired =>
    previous.length > 0 ? serving(previous) : { type: ServiceConditions.LB_SERVING, status: 'False', reason, message: clip(message) };
  const provisioning = (status: 'True' | 'False', reason: string, message: string): Desired => ({
    type: ServiceConditions.LB_PROVISIONING,
    status,
    reason,
    message: clip(message),
  });
  switch (outcome.kind) {
    case 'ensured':
      return [
        provisioning('False', R.COMPLETE, 'Ensured load balancer'),
        outcome.ingress.length > 0
          ? serving(outcome.ingress)
          : { type: ServiceConditions.LB_SERVING, status: 'False', reason: R.PROVISIONING, message: 'The provider reported no address yet' },
      ];
    case 'waiting':
      return [
        provisioning('True', R.PROVISIONING, `${outcome.message}; retried ${seconds(outcome.retryAfterMs)}`),
        notServing(R.PROVISIONING, outcome.message),
      ];
    case 'deferred':
      return [
        provisioning('True', R.DEFERRED, `${outcome.reason}: ${outcome.message}; retried ${seconds(outcome.retryAfterMs)}`),
        notServing(outcome.reason, outcome.message),
      ];
    case 'error':
      return [
        provisioning('False', R.ERROR, `${outcome.message}; retried with backoff`),
        notServing(outcome.unsupported ? R.UNSUPPORTED : R.INFRASTRUCTURE, outcome.message),
      ];
  }
}

/**
 * The conditions of `desired` that differ from the Service's, ready to write:
 * lastTransitionTime is `now` when the status changes (or the condition is
 * new), else kept; observedGeneration is the Service's generation. Empty
 * when nothing changed.
 */
export function conditionPatch(svc: V1Service, desired: readonly Desired[], now: Date): V1Condition[] {
  const current = svc.status?.conditions ?? [];
  const generation = svc.metadata?.generation;
  const out: V1Condition[] = [];
  for (const d of desired) {
    const have = current.find((c) => c.type === d.type);
    if (
      have &&
      have.status === d.status &&
      have.reason === d.reason &&
      have.message === d.message &&
      (generation === undefined || have.observedGeneration === generation)
    )
      continue;
    const statusChanged = !have || have.status !== d.status || !have.lastTransitionTime;
    out.push({
      type: d.type,
      status: d.status,
      reason: d.reason,
      message: d.message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: statusChanged ? now : have.lastTransitionTime,
    });
  }
  return out;
}

/** Whether the Service carries a condition this controller owns. */
export function hasLbConditions(svc: V1Service): boolean {
  return (svc.status?.conditions ?? []).some((c) => LB_CONDITION_TYPES.includes(c.type));
}

/**
 * A JSON patch removing this controller's conditions from the Service, or
 * undefined when it has none. Each removal is guarded by `test` ops on the
 * Service's uid and on the condition as cached (type, status, reason), so a
 * condition another writer changed meanwhile (or a list that moved) makes
 * the API server refuse the whole patch instead of removing the wrong entry.
 */
export function removalPatch(svc: V1Service): object[] | undefined {
  const current = svc.status?.conditions ?? [];
  const ops: object[] = [];
  // Highest index first: each removal leaves the lower indexes in place.
  for (let i = current.length - 1; i >= 0; i--) {
    const c = current[i]!;
    if (!LB_CONDITION_TYPES.includes(c.type)) continue;
    ops.push(
      { op: 'test', path: `/status/conditions/${i}/type`, value: c.type },
      { op: 'test', path: `/status/conditions/${i}/status`, value: c.status },
      { op: 'test', path: `/status/conditions/${i}/reason`, value: c.reason },
      { op: 'remove', path: `/status/conditions/${i}` },
    );
  }
  if (ops.length === 0) return undefined;
  return [{ op: 'test', path: '/metadata/uid', value: svc.metadata?.uid ?? '' }, ...ops];
}

/** Whether the provider's reason changed or the Service just entered a deferral (for the one Normal event). */
export function entersDeferral(svc: V1Service, reason: string): boolean {
  const have = (svc.status?.conditions ?? []).find((c) => c.type === ServiceConditions.LB_PROVISIONING);
  return !(have?.reason === R.DEFERRED && have.message?.startsWith(`${reason}: `));
}
